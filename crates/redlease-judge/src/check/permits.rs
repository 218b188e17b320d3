//! The semaphores: never more permits held at once than the semaphore has,
//! unless one fault explains a holder's permit being gone (the expirable
//! semaphore's permits expire when their holder stops renewing them; the
//! plain semaphore's never do, so only lost data explains it there); and at
//! the end (read as soon as every client has stopped) none lost or
//! invented. A permit held by a process that died is still taken (for
//! good, the plain semaphore's, as in Redisson; until its lease runs out,
//! the expirable one's), and an acquire or release of unknown outcome may
//! or may not have counted. A restart or a failover loses the count, so a
//! phase with one does not judge the end.

use std::collections::BTreeMap;

use super::blame::{Blamed, explain};
use super::holds::{History, Release};
use super::{Check, Class, Finals, Params};
use crate::nemesis::{Fault, FaultKind};
use crate::workload::{PERMITS, Workload};

pub(crate) fn check(
    history: &History,
    _blamed: &Blamed,
    faults: &[Fault],
    finals: &Finals,
    p: Params,
    out: &mut Check,
) {
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, h) in history.holds.iter().enumerate() {
        if matches!(h.w, Workload::Sem | Workload::Xsem) {
            by_name.entry(&h.name).or_default().push(i);
        }
    }
    for (name, mut same) in by_name {
        same.sort_by_key(|&i| history.holds[i].start);
        for (k, &j) in same.iter().enumerate() {
            let b = &history.holds[j];
            let inside: Vec<usize> = same[..k]
                .iter()
                .copied()
                .filter(|&i| {
                    history.holds[i].end > b.start && history.holds[i].process != b.process
                })
                .collect();
            if (inside.len() as u64) < PERMITS {
                continue;
            }
            let excused = inside
                .iter()
                .any(|&i| explain(&history.holds[i], b, faults, p).is_some())
                || (b.w == Workload::Sem
                    && invented(
                        faults,
                        name,
                        same[..k].iter().map(|&i| &history.holds[i]),
                        b,
                    ));
            if !excused {
                let who: Vec<&str> = inside
                    .iter()
                    .map(|&i| history.holds[i].process.as_str())
                    .collect();
                out.violations.push(Class::PermitExcess.line(format!(
                    "{name}: {} took a permit while {} held all {PERMITS}",
                    b.process,
                    who.join(", ")
                )));
            }
        }
    }
    let data_lost = faults.iter().any(|f| {
        f.ok && matches!(
            f.kind,
            FaultKind::Restart | FaultKind::Sentinel | FaultKind::Cluster
        )
    });
    for (name, available) in &finals.permits {
        let w = crate::workload::of_name(name).unwrap_or(Workload::Sem);
        let (unknown_acquires, unknown_releases) = history
            .permit_unknowns
            .get(name)
            .copied()
            .unwrap_or_default();
        if w == Workload::Sem {
            out.permits_unknown += unknown_acquires;
        }
        if data_lost {
            continue;
        }
        let total = PERMITS as i64;
        // Held by a process that died holding: taken for good (the plain
        // semaphore's), or until its lease runs out (the expirable one's;
        // the end is read at once).
        let dead = (history.holds.iter())
            .filter(|h| h.name == *name && h.release == Release::Never)
            .count() as i64;
        let high = match w {
            Workload::Sem => total - dead,
            _ => total,
        };
        let low = total - dead - (unknown_acquires + unknown_releases) as i64;
        if *available < low || *available > high {
            out.violations.push(Class::PermitCount.line(format!(
                "{name}: {available} available at the end, where {low} to {high} can be"
            )));
        }
    }
}

/// Whether a fault that loses data may have invented a permit of the plain
/// semaphore `name` before hold `b` began, for good: a permit taken where
/// the fault lost it (on a Sentinel switch's old master, whose writes the
/// new one never sees, or not yet replicated, or on a server restarted
/// empty) and given back afterwards where the count did not know it was
/// taken. Its permits never expire, so the count stays one too high: an
/// earlier hold acquired before the fault settled and released after it
/// began, before `b`, explains every excess after it (found by #37's
/// first run of the Sentinel phase: a holder granted on the old master
/// 0.7 s after the switch, released on the new one, and three holders at
/// once 4 s later).
fn invented<'a>(
    faults: &[Fault],
    name: &str,
    earlier: impl Iterator<Item = &'a super::Hold> + Clone,
    b: &super::Hold,
) -> bool {
    faults.iter().any(|f| {
        let loses = f.ok
            && match f.kind {
                FaultKind::Restart | FaultKind::Sentinel => true,
                FaultKind::Cluster => f.names.is_empty() || f.names.iter().any(|n| n == name),
                _ => false,
            };
        let settled = f.settled.unwrap_or(f.end).max(f.end);
        loses
            && earlier.clone().any(|h| {
                h.invoked < settled
                    && h.end > f.start
                    && matches!(h.release, Release::Ok(at) if at <= b.start)
            })
    })
}
