//! The database's evidence, which does not come from what the clients
//! believed:
//!
//! * **the unfenced counter's reads**: each write reads the counter and
//!   writes it plus one; two that read one value while both ran were
//!   inside at once (a violation unless the two holds' overlap is
//!   excused), and one that read a value another write read before means
//!   the counter was set back by a stale write (a violation unless an
//!   excused overlap on the name was around between the two);
//! * **a reader's two reads** under its read lock differ only if a writer
//!   wrote between them: a violation unless the reader's hold overlapped a
//!   writer's with an excuse;
//! * **the fenced balance** of each name is a chain: every accepted write
//!   read a value no other accepted write read, and the balance is the
//!   number of accepted writes, plus at most those of unknown outcome. The
//!   holder guard (claim by token and holder, commit while the claim
//!   stands) makes each write a compare-and-set, so this chain holds
//!   whatever the lock did: it checks the pattern redlease documents and
//!   PostgreSQL, not the lock. The lock is judged by the checks above.

use std::collections::BTreeMap;

use super::blame::{Blamed, Cause};
use super::holds::History;
use super::{Check, Class, Finals, Writes};

pub(crate) fn check(history: &History, blamed: &Blamed, finals: &Finals, out: &mut Check) {
    unfenced_reads(history, blamed, out);
    readers(history, blamed, out);
    fenced(history, finals, out);
    let done = history.unfenced.iter().filter(|u| u.read.is_some()).count() as u64;
    let total: i64 = finals.rows.iter().map(|r| r.2).sum();
    out.unfenced = Writes {
        done,
        refused: 0,
        unknown: history.unfenced_unknown,
        total,
        lost: done.saturating_sub(u64::try_from(total).unwrap_or(0)),
    };
}

/// One unfenced value read by two acquisitions. Two writes that read it
/// while both ran were both inside: their holds' overlap must be excused.
/// A write that read it later than another finished means the counter was
/// set back in between, by a stale write of a holder that went on after
/// its hold was taken: an excused overlap on the name must have been
/// around between the two reads.
fn unfenced_reads(history: &History, blamed: &Blamed, out: &mut Check) {
    let mut seen: BTreeMap<(&str, i64), Vec<&super::holds::Unfenced>> = BTreeMap::new();
    for u in &history.unfenced {
        if let Some(read) = u.read {
            seen.entry((&u.name, read)).or_default().push(u);
        }
    }
    for ((name, value), mut ops) in seen {
        ops.sort_by_key(|u| u.invoked);
        for (k, x) in ops.iter().enumerate() {
            let unexcused = ops[k + 1..].iter().find(|y| {
                let (hx, hy) = (&history.holds[x.hold], &history.holds[y.hold]);
                if hx.id == hy.id {
                    return false;
                }
                match x.done > y.invoked {
                    true => blamed
                        .cause_of(x.hold, y.hold)
                        .is_none_or(|c| c == Cause::Unexplained),
                    false => !blamed.overlaps.iter().any(|o| {
                        let hit = match o.hit {
                            0 => o.holds.0,
                            _ => o.holds.1,
                        };
                        let h = &history.holds[hit];
                        o.name == name
                            && o.cause != Cause::Unexplained
                            && h.end > x.invoked
                            && h.start < y.invoked
                    }),
                }
            });
            if let Some(y) = unexcused {
                out.violations.push(Class::ReadTwice.line(format!(
                    "{name}: {} and {} both read {value} and wrote {}",
                    history.holds[x.hold].process,
                    history.holds[y.hold].process,
                    value + 1
                )));
                break;
            }
        }
    }
}

/// Readers that saw the value change, with no excused writer beside them.
fn readers(history: &History, blamed: &Blamed, out: &mut Check) {
    for r in history.reads.iter().filter(|r| r.first != r.second) {
        let excused = blamed
            .overlaps
            .iter()
            .any(|o| (o.holds.0 == r.hold || o.holds.1 == r.hold) && o.cause != Cause::Unexplained);
        if !excused {
            let h = &history.holds[r.hold];
            out.violations.push(Class::ReaderSawWrite.line(format!(
                "{}: {} read {} then {} under its read lock",
                h.name, h.process, r.first, r.second
            )));
        }
    }
}

/// The fenced balance's chain per name, and the stale writes accepted.
fn fenced(history: &History, finals: &Finals, out: &mut Check) {
    let mut per_name: BTreeMap<&str, (Vec<i64>, u64)> = BTreeMap::new();
    let (mut accepted, mut refused, mut unknown) = (0, 0, 0);
    for w in &history.fenced {
        let entry = per_name.entry(&w.name).or_default();
        match w.accepted {
            Some(true) => {
                accepted += 1;
                entry.0.extend(w.read);
            }
            Some(false) => refused += 1,
            None => {
                unknown += 1;
                entry.1 += 1;
            }
        }
    }
    let mut lost = 0;
    for (name, balance, _) in &finals.rows {
        let (mut reads, unknown) = per_name.remove(name.as_str()).unwrap_or_default();
        reads.sort_unstable();
        let n = reads.len() as i64;
        let twice = reads.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        if let Some(value) = twice {
            out.violations
                .push(Class::FencedChain.line(format!("{name}: two accepted writes read {value}")));
        }
        if *balance < n {
            lost += (n - balance) as u64;
            out.violations.push(Class::FencedChain.line(format!(
                "{name}: {n} writes accepted, the balance is {balance}"
            )));
        } else if *balance > n + unknown as i64 {
            out.violations.push(Class::FencedChain.line(format!(
                "{name}: the balance is {balance}, above {n} accepted and {unknown} unknown writes"
            )));
        }
    }
    for s in stale_writes(history) {
        out.violations.push(s);
    }
    out.fenced = Writes {
        done: accepted,
        refused,
        unknown,
        total: finals.rows.iter().map(|r| r.1).sum(),
        lost,
    };
}

/// Accepted fenced writes whose token is below one accepted before they
/// were invoked.
fn stale_writes(history: &History) -> Vec<super::Violation> {
    let mut by_name: BTreeMap<&str, Vec<&super::holds::Fenced>> = BTreeMap::new();
    for w in history.fenced.iter().filter(|w| w.accepted == Some(true)) {
        by_name.entry(&w.name).or_default().push(w);
    }
    let mut out = Vec::new();
    for (name, writes) in by_name {
        let mut done = writes.clone();
        done.sort_by_key(|w| w.completed);
        let mut invoked = writes;
        invoked.sort_by_key(|w| w.invoked);
        let (mut j, mut max) = (0, 0);
        for w in invoked {
            while j < done.len() && done[j].completed.is_some_and(|c| c < w.invoked) {
                max = max.max(done[j].token);
                j += 1;
            }
            if max > w.token {
                out.push(Class::StaleWrite.line(format!(
                    "{name}: {} wrote with token {} after {max} was accepted",
                    w.process, w.token
                )));
            }
        }
    }
    out
}
