//! A failover the caller never sees (#37): a redlease operation answered
//! "the server cannot serve this for now" (a redirection still unresolved,
//! a cluster or master down, a node loading) only once the time it had to
//! wait is spent, since such a command did not run and redlease sends it
//! again until then. How long each operation has:
//!
//! * an acquire, its wait;
//! * a latch wait, its own wait (its round's, at most the acquires');
//! * a release, the lease (a hold is worth releasing as long as it could
//!   still be there: redlease sends it again for the shorter of the lease
//!   and its `retry_writes_for`, 30 s by default);
//! * a count-down, `retry_writes_for` (30 s).
//!
//! Only redlease's clients are judged (Redisson's and redis-py's errors
//! are theirs), and only this kind of error: a lost reply may leave a
//! write that a repeat could apply twice, which some calls answer at once.

use std::collections::HashMap;

use super::{Class, Params, Violation};
use crate::history::{Event, Op, Type};
use crate::workload::LATCH_ROUND_MS;

/// How long redlease sends a count-down again by default, in µs.
const RETRY_WRITES_US: u64 = 30_000_000;

pub(crate) fn check(events: &[Event], params: Params, out: &mut Vec<Violation>) {
    // Each process runs one operation at a time: its last invoke is the
    // one a completion ends.
    let mut invoked: HashMap<&str, &Event> = HashMap::new();
    let mut ordered: Vec<&Event> = events
        .iter()
        .filter(|e| e.c.starts_with("redlease"))
        .collect();
    ordered.sort_by_key(|e| e.t);
    for e in ordered {
        if e.ty == Type::Invoke {
            invoked.insert(&e.p, e);
            continue;
        }
        let Some(start) = invoked.remove(e.p.as_str()) else {
            continue;
        };
        if e.ty != Type::Info || e.kind.as_deref() != Some("unavailable") {
            continue;
        }
        let had_us = match e.f {
            Op::Acquire => params.wait_ms * 1000,
            Op::Await => params.wait_ms.min(LATCH_ROUND_MS) * 1000,
            Op::Release => (params.lease_ms * 1000).min(RETRY_WRITES_US),
            Op::CountDown => RETRY_WRITES_US,
            Op::Write | Op::Unfenced | Op::Read => continue,
        };
        let took_us = e.t.saturating_sub(start.t);
        if took_us < had_us {
            out.push(Class::ErrorWithTimeLeft.line(format!(
                "{} {:?} of {} answered after {} ms of its {} ms: {}",
                e.p,
                e.f,
                e.name,
                took_us / 1000,
                had_us / 1000,
                e.err.as_deref().unwrap_or("")
            )));
        }
    }
}
