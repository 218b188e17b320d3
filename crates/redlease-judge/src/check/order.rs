//! The fair lock grants in arrival order: a waiter that asked at least
//! [`ARRIVAL_US`] before another and was still waiting when the other got
//! the lock was overtaken. Excused when the overtaken waiter's process was
//! paused, cut off or killed while it waited (its place lapsed, as a dead
//! waiter's must), when Redis lost the queue (a restart, a failover)
//! meanwhile, or when its wait ended in an error (it may have queued again
//! under a new owner, at the end).

use std::collections::BTreeMap;

use super::holds::Request;
use super::{Class, Params, Violation};
use crate::nemesis::{Fault, FaultKind};

/// How long a waiter may take from asking to being queued.
const ARRIVAL_US: u64 = 500_000;

pub(crate) fn check(requests: &[Request], faults: &[Fault], _p: Params, out: &mut Vec<Violation>) {
    let mut by_name: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
    for r in requests {
        by_name.entry(&r.name).or_default().push(r);
    }
    for (name, mut same) in by_name {
        same.sort_by_key(|r| r.invoked);
        for (k, y) in same.iter().enumerate() {
            let Some(granted) = y.done.filter(|_| y.granted) else {
                continue;
            };
            let overtaken = same[..k].iter().find(|x| {
                x.process != y.process
                    && x.invoked + ARRIVAL_US < y.invoked
                    && !x.failed
                    && x.done.is_none_or(|d| d > granted)
                    && !excused(x, granted, faults)
            });
            if let Some(x) = overtaken {
                out.push(Class::FairOrder.line(format!(
                    "{name}: {} asked {} ms before {} and was still waiting when it got the lock",
                    x.process,
                    (y.invoked - x.invoked) / 1000,
                    y.process
                )));
            }
        }
    }
}

/// Whether a fault between `x`'s request and `until` explains it losing
/// its place.
fn excused(x: &Request, until: u64, faults: &[Fault]) -> bool {
    faults.iter().filter(|f| f.ok).any(|f| {
        let during = f.start < until && f.end.max(f.settled.unwrap_or(0)) > x.invoked;
        during
            && match f.kind {
                FaultKind::Pause | FaultKind::Partition | FaultKind::Kill => f.target == x.process,
                FaultKind::Restart | FaultKind::Sentinel => true,
                FaultKind::Cluster => f.names.is_empty() || f.names.contains(&x.name),
                FaultKind::None => false,
            }
    })
}
