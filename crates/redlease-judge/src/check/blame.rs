//! Two holds of one name at once, and the one fault that explains them.
//!
//! A fault explains an overlap only in the way it can cause one:
//!
//! * **a pause or a partition** of the process of one of the two holds (the
//!   *hit* hold), during that hold or its acquire, with the other acquired
//!   after the hit hold's lease could have run out (for a renewed hold, a
//!   third of a lease after the fault began at the earliest, and never
//!   before one lease after its acquire was sent); and, for a client that
//!   tells its holders (redlease), the other acquired and the hit hold over
//!   not long after the fault ended (it is told of the loss at its next
//!   step), for one that cannot tell, the hit hold over once its work is
//!   done, however long that is after the fault (the others may take the
//!   lock all that while);
//! * **a restart** (Redis empty again), between a hold acquired before it
//!   and one acquired after it, not long after;
//! * **a Cluster failover**, also on a name of another shard, when it
//!   stalled the renewals of a redlease holder until its lease lapsed
//!   (redis-rs's cluster connection stops every request while it refreshes
//!   its slot map, #37): the other acquired after the lease could have
//!   lapsed and within a lease of the cluster settling, the holder over at
//!   its next step (the `renewals stalled` cause);
//! * **a failover**, the same way, for a name of the failed shard; in a
//!   Sentinel failover the hold whose lock was lost may also have been
//!   taken on the old master by a client that had not yet followed the
//!   switch (within [`FOLLOW_US`] of it), and a client known to follow late
//!   (redis-py's `Sentinel`, [`Traits::follows_late`]) may hold on the old
//!   master until it is made a replica (the `Stale` cause).
//!
//! Anything else is a violation, and so is an overlap the fault would
//! explain but that lasted longer than it can make one last. Each fault's
//! count and longest excused overlap go into the report.

use serde::{Deserialize, Serialize};

use super::holds::Hold;
use super::{Class, Params, Traits, Violation};
use crate::nemesis::{Fault, FaultKind};

/// How long after a Sentinel switch (every Sentinel naming the new master)
/// a client that follows it (redlease, Redisson) may still take a lock or
/// a token on the old master: both ask the Sentinels at once on
/// `+switch-master` and every second besides, and an attempt sent just
/// before may be answered later. The long run saw up to 1.76 s
/// (docs/JUDGE.md, the report's "latest lost hold asked after its
/// failover").
pub(crate) const FOLLOW_US: u64 = 3_000_000;

/// Why two holds overlapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Cause {
    /// A holder was stopped during its hold, past its lease.
    Pause,
    /// A holder was cut off from Redis during its hold, past its lease.
    Partition,
    /// Redis restarted empty: a lock taken before was lost.
    Restart,
    /// A failover lost a lock not yet on the replica that took over, or
    /// taken on the old master just after the switch.
    Failover,
    /// A client that follows a Sentinel switch late held on the old master.
    Stale,
    /// A Cluster failover of another shard stalled a redlease client's
    /// renewals until its lease lapsed: redis-rs's cluster connection
    /// stops every request while it refreshes its slot map (#37); the
    /// holder was told by its own clock.
    Stall,
    /// No single fault explains it: a violation.
    Unexplained,
}

impl Cause {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cause::Pause => "pause",
            Cause::Partition => "partition",
            Cause::Restart => "restart",
            Cause::Failover => "failover",
            Cause::Stale => "stale master",
            Cause::Stall => "renewals stalled",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// Two holds of one name at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Overlap {
    pub(crate) name: String,
    pub(crate) first: String,
    pub(crate) second: String,
    /// The two holds (indices into the phase's holds before sorting),
    /// the first begun first.
    #[serde(skip)]
    pub(crate) holds: (usize, usize),
    /// How long both were held, in µs.
    pub(crate) overlap_us: u64,
    pub(crate) cause: Cause,
    /// The fault that explains it (its index in the nemesis's log).
    pub(crate) fault: Option<usize>,
    /// Which of the two the fault hit (whose lock it took): 0 the first,
    /// 1 the second.
    #[serde(skip)]
    pub(crate) hit: usize,
    /// Whether #29's broad blame ([`broad`]) excused it, for comparison.
    #[serde(default)]
    pub(crate) broad: bool,
}

/// What one fault excused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FaultStat {
    pub(crate) excused: u64,
    pub(crate) longest_us: u64,
    /// A pause, a kill or a partition found its target holding.
    #[serde(default)]
    pub(crate) hit: bool,
    /// How long after a failover ended a hold it took was asked for, at
    /// most, in µs: after a Sentinel switch, how long the clients that
    /// follow it went on taking locks on the old master.
    #[serde(default)]
    pub(crate) late_us: u64,
}

/// The overlaps of a phase, and each fault's share.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blamed {
    pub(crate) overlaps: Vec<Overlap>,
    pub(crate) stats: Vec<FaultStat>,
}

impl Blamed {
    pub(crate) fn violations(&self) -> Vec<Violation> {
        self.overlaps
            .iter()
            .filter(|o| o.cause == Cause::Unexplained)
            .map(|o| {
                Class::UnexplainedOverlap.line(format!(
                    "{}: {} and {} held it together for {} ms",
                    o.name,
                    o.first,
                    o.second,
                    o.overlap_us / 1000
                ))
            })
            .collect()
    }

    /// The cause of the overlap of holds `x` and `y`, if they overlapped.
    pub(crate) fn cause_of(&self, x: usize, y: usize) -> Option<Cause> {
        self.overlaps
            .iter()
            .find(|o| o.holds == (x, y) || o.holds == (y, x))
            .map(|o| o.cause)
    }
}

/// Whether two holds of one name exclude each other.
pub(crate) fn conflict(a: &Hold, b: &Hold) -> bool {
    a.name == b.name && a.id != b.id && (a.w.is_exclusive() || b.w.is_exclusive())
}

/// Every pair of conflicting holds at once, each blamed.
pub(crate) fn overlaps(holds: &[Hold], faults: &[Fault], p: Params) -> Blamed {
    let mut order: Vec<usize> = (0..holds.len()).collect();
    order.sort_by_key(|&i| (&holds[i].name, holds[i].start));
    let mut out = Blamed {
        overlaps: Vec::new(),
        stats: vec![FaultStat::default(); faults.len()],
    };
    for (k, &i) in order.iter().enumerate() {
        let a = &holds[i];
        for &j in &order[k + 1..] {
            let b = &holds[j];
            if b.name != a.name || b.start >= a.end {
                // Sorted by name and start: b and every later hold begin
                // after a, or are of another name.
                break;
            }
            if !conflict(a, b) || a.process == b.process {
                continue;
            }
            let overlap_us = a.end.min(b.end) - b.start;
            let (cause, fault, hit) = match explain(a, b, faults, p) {
                Some((cause, f, hit)) => (cause, Some(f), hit),
                None => (Cause::Unexplained, None, 0),
            };
            if let Some(f) = fault {
                let taken = if hit == 0 { a } else { b };
                let stat = &mut out.stats[f];
                stat.excused += 1;
                stat.longest_us = stat.longest_us.max(overlap_us);
                if cause == Cause::Failover {
                    let late = taken.invoked.saturating_sub(faults[f].end);
                    stat.late_us = stat.late_us.max(late);
                }
            }
            out.overlaps.push(Overlap {
                name: a.name.clone(),
                first: a.process.clone(),
                second: b.process.clone(),
                holds: (i, j),
                overlap_us,
                cause,
                fault,
                hit,
                broad: broad(a, b, faults),
            });
        }
    }
    out
}

/// The one fault that explains holds `a` and `b` (`a` begun first) being
/// held at once: its cause, its index, and which hold it hit (0: `a`).
pub(crate) fn explain(
    a: &Hold,
    b: &Hold,
    faults: &[Fault],
    p: Params,
) -> Option<(Cause, usize, usize)> {
    for (i, f) in faults.iter().enumerate().filter(|(_, f)| f.ok) {
        let found = match f.kind {
            FaultKind::Pause | FaultKind::Partition => {
                let cause = match f.kind {
                    FaultKind::Pause => Cause::Pause,
                    _ => Cause::Partition,
                };
                if hit(a, b, f, p) {
                    Some((cause, 0))
                } else if hit(b, a, f, p) {
                    Some((cause, 1))
                } else {
                    None
                }
            }
            FaultKind::Restart => lost_with_data(a, b, f, p).then_some((Cause::Restart, 0)),
            FaultKind::Cluster | FaultKind::Sentinel => {
                if lost_with_data(a, b, f, p) {
                    Some((Cause::Failover, 0))
                } else if f.kind == FaultKind::Cluster && stalled(a, b, f, p) {
                    Some((Cause::Stall, 0))
                } else if f.kind == FaultKind::Sentinel && lost_with_data(b, a, f, p) {
                    Some((Cause::Failover, 1))
                } else if f.kind == FaultKind::Sentinel && stale(a, b, f) {
                    Some((Cause::Stale, 0))
                } else {
                    None
                }
            }
            FaultKind::None | FaultKind::Kill => None,
        };
        if let Some((cause, which)) = found {
            return Some((cause, i, which));
        }
    }
    None
}

/// Whether pause or partition `f` of `h`'s process explains `o` holding
/// its name beside `h`: `h` was hit during its acquire or hold, `o` began
/// after `h`'s lease could have run out and not long after the fault, and
/// `h` ended not long after it.
fn hit(h: &Hold, o: &Hold, f: &Fault, p: Params) -> bool {
    if f.target != h.process || f.start >= h.end || f.end <= h.invoked {
        return false;
    }
    let Some(expiry) = earliest_expiry(h, f, p) else {
        return false;
    };
    match Traits::of(&h.client).tells_loss {
        // Told by its own clock within a lease of its last renewal, which
        // came before the fault began: over at its next step.
        true => {
            let over = f.end.max(f.start + p.lease_us() + p.lease_us() / 3) + p.step_us();
            o.start >= expiry && o.start <= f.end + p.step_us() && h.end <= over
        }
        // Goes on, untold, until its work is done.
        false => o.start >= expiry && h.end <= f.end.max(h.start) + p.longest_hold_us(),
    }
}

/// The earliest time `h`'s lock could have expired once fault `f` stopped
/// its renewals (`None`: it never expires, a plain semaphore's permit).
fn earliest_expiry(h: &Hold, f: &Fault, p: Params) -> Option<u64> {
    if !h.w.expires() {
        return None;
    }
    let traits = Traits::of(&h.client);
    let fixed = match (traits.fixed_lease, h.w, h.client.starts_with("redisson")) {
        (true, _, _) => Some(p.lease_us()),
        // Redisson's expirable permits have the fixed lease the judge's
        // Java client gives them.
        (_, crate::workload::Workload::Xsem, true) => Some(4 * p.lease_us()),
        _ => None,
    };
    Some(match fixed {
        Some(lease) => h.invoked + lease,
        // Granted after its invoke for a lease, and renewed every third of
        // a lease until the fault.
        None => (h.invoked + p.lease_us()).max(f.start + p.lease_us() / 3),
    })
}

/// Whether restart or failover `f` explains `o` holding the name of `x`
/// beside it: `x`'s lock was granted before the data was lost (on a
/// Sentinel switch's old master, up to [`FOLLOW_US`] after it), `o` after
/// the fault began and not long after it settled, and `x` ended not long
/// after `o` began.
fn lost_with_data(x: &Hold, o: &Hold, f: &Fault, p: Params) -> bool {
    if !f.names.is_empty() && !f.names.contains(&x.name) {
        return false;
    }
    let granted_before = match f.kind {
        FaultKind::Sentinel => f.end + FOLLOW_US,
        _ => f.start,
    };
    let settled = f.settled.unwrap_or(f.end).max(f.end);
    let in_time = match Traits::of(&x.client).tells_loss {
        // Told at its next renewal, or by its own clock: over a step later.
        true => {
            o.start <= settled + p.learn_us() + p.step_us()
                && x.end <= o.start + p.learn_us() + p.step_us()
        }
        // Goes on, untold, until its work is done.
        false => x.end <= x.start + p.longest_hold_us(),
    };
    x.invoked < granted_before && o.start > f.start && in_time
}

/// Whether one of `a` and `b` was taken on the old master of Sentinel
/// switch `f` by a client that follows late: granted after the switch
/// began, asked for before that master was made a replica.
fn stale(a: &Hold, b: &Hold, f: &Fault) -> bool {
    let settled = f.settled.unwrap_or(f.end).max(f.end);
    [a, b]
        .iter()
        .any(|h| Traits::of(&h.client).follows_late && h.start >= f.start && h.invoked <= settled)
}

/// #29's blame, kept to show what the narrower one judges: a pause or a
/// partition of either process at any time during either hold, or a
/// restart or a failover anywhere between the two acquires (and before the
/// first hold ended), excused the overlap.
fn broad(a: &Hold, b: &Hold, faults: &[Fault]) -> bool {
    let during = |f: &Fault, h: &Hold| f.start < h.end && f.end > h.start;
    faults.iter().any(|f| match f.kind {
        FaultKind::Pause | FaultKind::Partition => {
            (f.target == a.process && during(f, a)) || (f.target == b.process && during(f, b))
        }
        FaultKind::Restart | FaultKind::Sentinel | FaultKind::Cluster => {
            f.end > a.start && f.start < b.start
        }
        FaultKind::None | FaultKind::Kill => false,
    })
}

/// Whether Cluster failover `f` explains `o` holding the name of `h`
/// beside it by stalling the renewals of `h`'s client (whatever shard the
/// name is on): `h` was held during the failover by a client that tells
/// its holders, `o` began after `h`'s lease could have lapsed and within a
/// lease of the cluster settling, and `h` was over at its next step after
/// its client's clock told it.
fn stalled(h: &Hold, o: &Hold, f: &Fault, p: Params) -> bool {
    if !Traits::of(&h.client).tells_loss || h.start >= f.end.max(f.settled.unwrap_or(0)) {
        return false;
    }
    let Some(expiry) = earliest_expiry(h, f, p) else {
        return false;
    };
    let settled = f.settled.unwrap_or(f.end).max(f.end);
    o.start >= expiry
        && o.start <= settled + p.lease_us()
        && h.end <= o.start + p.learn_us() + p.step_us()
}
