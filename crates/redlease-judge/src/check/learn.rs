//! A holder whose hold was taken over must learn it, and must not undo its
//! successor's:
//!
//! * a release that succeeds while a later holder of the name is inside is
//!   a violation, when the released hold is the one a pause, a partition or
//!   a restart took (its lock was gone, so an owner-checked release finds
//!   another's); a failover's old master may still hold it, so those are
//!   not judged;
//! * a lock-like hold that a fault certainly took (its process paused or cut
//!   off, or Redis restarted empty, after it was granted) must not be
//!   released with success after the fault began: the release runs after
//!   the lock expired or vanished, so an owner-checked release finds it
//!   gone or another's; and, of a client that tells its holders, must not
//!   be worked on, nor released, later than one lease after the fault
//!   began without the client saying it is lost (its renewals stopped or
//!   failed from then, or found the lock gone);
//! * a hold that a fault took, of a client that tells its holders (redlease),
//!   must not be worked on after its successor began without the client
//!   saying it is lost: at once after a pause or a partition (the client's
//!   own clock ends the hold no later than Redis does), within
//!   [`Params::learn_us`] after a restart or a failover (its next renewal
//!   finds the lock gone).

use super::blame::{Blamed, Cause, conflict};
use super::holds::{Hold, Release, by_name};
use super::{Class, Params, Traits, Violation};
use crate::nemesis::{Fault, FaultKind};

/// Slack for the two clocks compared (the client's monotonic clock for its
/// lease, the wall clock of the histories).
const CLOCKS_US: u64 = 50_000;

pub(crate) fn check(
    holds: &[Hold],
    blamed: &Blamed,
    faults: &[Fault],
    p: Params,
    out: &mut Vec<Violation>,
) {
    released_inside(holds, blamed, out);
    certainly_lost(holds, faults, p, out);
    for o in &blamed.overlaps {
        let bound = match o.cause {
            Cause::Pause | Cause::Partition => CLOCKS_US,
            Cause::Restart | Cause::Failover | Cause::Stall => p.learn_us(),
            Cause::Stale | Cause::Unexplained => continue,
        };
        let (h, other) = match o.hit {
            0 => (o.holds.0, o.holds.1),
            _ => (o.holds.1, o.holds.0),
        };
        let (h, other) = (&holds[h], &holds[other]);
        if !Traits::of(&h.client).tells_loss {
            continue;
        }
        let from = other.start + bound;
        if let Some(&(t, _)) = h
            .work
            .iter()
            .find(|(t, lost)| *t > from && *lost != Some(true))
        {
            out.push(Class::NotTold.line(format!(
                "{} worked on {} {} ms after {} took it ({})",
                h.process,
                h.name,
                (t - other.start) / 1000,
                other.process,
                o.cause.as_str()
            )));
        }
    }
}

/// Releases that succeeded while a later holder was inside, the released
/// hold being the one a fault took (or none explaining the two).
fn released_inside(holds: &[Hold], blamed: &Blamed, out: &mut Vec<Violation>) {
    for same in by_name(holds).values() {
        for (k, &i) in same.iter().enumerate() {
            let a = &holds[i];
            if !matches!(a.release, Release::Ok(_)) {
                continue;
            }
            if !(a.w.is_exclusive() || a.w == crate::workload::Workload::Read) {
                continue;
            }
            // Sorted by start: the later holds that began before the
            // release was sent (one that began while it was on its way
            // may have been woken by it).
            for &j in same[k + 1..]
                .iter()
                .take_while(|&&j| holds[j].start < a.end)
            {
                let b = &holds[j];
                if !conflict(a, b) || a.process == b.process || b.start <= a.start || b.end <= a.end
                {
                    continue;
                }
                let judged = blamed.overlaps.iter().find(|o| o.holds == (i, j));
                let a_was_taken = match judged {
                    // The later hold was the stale one (it learned of its
                    // grant late): the release was right.
                    Some(o) if o.hit == 1 && matches!(o.cause, Cause::Pause | Cause::Partition) => {
                        false
                    }
                    Some(o) => !matches!(o.cause, Cause::Failover | Cause::Stale),
                    None => true,
                };
                if a_was_taken {
                    out.push(Class::ReleaseInside.line(format!(
                        "{}'s release of {} succeeded while {} held it",
                        a.process, a.name, b.process
                    )));
                }
            }
        }
    }
}

/// Holds granted before a pause or a partition of their process, or before
/// a restart: released with success after the fault began, or worked on
/// untold a lease after it.
fn certainly_lost(holds: &[Hold], faults: &[Fault], p: Params, out: &mut Vec<Violation>) {
    for f in faults.iter().filter(|f| f.ok) {
        let hit = |h: &Hold| match f.kind {
            FaultKind::Pause | FaultKind::Partition => h.process == f.target,
            FaultKind::Restart => true,
            _ => false,
        };
        for h in holds
            .iter()
            .filter(|h| hit(h) && h.start < f.start && h.end > f.start)
        {
            let lock_like = h.w.is_exclusive() || h.w == crate::workload::Workload::Read;
            // Redisson's fair release of a lock that is gone says it
            // released (by its design, not a fault's excuse): a release
            // that finds another holder is still judged, as any, by
            // `released_inside`.
            let gone_is_ok = h.w == crate::workload::Workload::Fair
                && Traits::of(&h.client).fair_release_of_gone_succeeds;
            if lock_like && !gone_is_ok && matches!(h.release, Release::Ok(_)) {
                out.push(Class::ReleaseLost.line(format!(
                    "{}'s release of {} succeeded {} ms after a {} of {} took it",
                    h.process,
                    h.name,
                    (h.end - f.start) / 1000,
                    f.kind.as_str(),
                    f.target
                )));
            }
            // Locks only: an expirable permit's guard keeps its own clock
            // (its renewals go by the permit's lease).
            if !Traits::of(&h.client).tells_loss || !lock_like {
                continue;
            }
            let from = f.start + p.lease_us() + CLOCKS_US;
            // Its work, and its release: by then it must know too.
            let released = (h.released_lost.is_some()).then_some((h.end, h.released_lost));
            let untold = (h.work.iter().copied())
                .chain(released)
                .find(|(t, lost)| *t > from && *lost != Some(true));
            if let Some((t, _)) = untold {
                out.push(Class::NotTold.line(format!(
                    "{} worked on or released {} {} ms after a {} of {} took it",
                    h.process,
                    h.name,
                    (t - f.start) / 1000,
                    f.kind.as_str(),
                    f.target
                )));
            }
        }
    }
}
