//! Whether a phase did what its report claims, so that a pass means
//! something: every client kind that took part acquired something, every
//! process ended as it should (cleanly, or killed by the nemesis), every
//! fault's signals and commands succeeded and the faults aimed at holders
//! hit holders, and once the faults stopped every plain lock name was
//! acquired again (by a client, or by the recovery probe that contends
//! with them) within one wait of being free.

use serde::{Deserialize, Serialize};

use super::{Check, Class, Hold, Violation};
use crate::nemesis::{Fault, FaultKind};

/// How a client process ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Exit {
    pub(crate) process: String,
    /// Its exit code (`None`: ended by a signal).
    pub(crate) code: Option<i32>,
    /// The run killed it for not stopping in time.
    #[serde(default)]
    pub(crate) overran: bool,
}

/// What the run saw of a phase besides the histories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    /// The client kinds that took part.
    pub(crate) kinds: Vec<String>,
    pub(crate) exits: Vec<Exit>,
    /// How long the recovery probe took to acquire each plain lock name
    /// once the faults had stopped, contending with the clients, in ms
    /// (`None`: not within its wait). A plain lock is not fair, so a probe
    /// that loses every race is no failure by itself: recovery is judged
    /// on everyone's acquisitions ([`check`]).
    pub(crate) recovery_ms: Vec<(String, Option<u64>)>,
    /// What the collector of `--gc-ms` did, when it ran (#40).
    #[serde(default)]
    pub(crate) gc: Option<crate::gc::GcTally>,
}

/// The bound on recovery: a name free again is taken within one wait of a
/// client.
pub(crate) fn recovery_bound_ms(wait_ms: u64) -> u64 {
    wait_ms
}

/// The phase's validity violations, and each probed name's recovery: how
/// long after the faults stopped (`nemesis_end`, Unix µs) it was next
/// acquired, by anyone, in ms (`None`: not within one wait of being free).
pub(crate) fn check(
    check: &Check,
    kind: FaultKind,
    faults: &[Fault],
    outcome: &Outcome,
    wait_ms: u64,
    nemesis_end: u64,
) -> (Vec<Violation>, Vec<(String, Option<u64>)>) {
    let mut out = Vec::new();
    let mut invalid = |line: String| out.push(Class::Invalid.line(line));
    // A kind that ran and lost every race (refused as busy after its whole
    // wait, each time) was exercised: a lock that is not fair promises it
    // no turn, and a kill phase that kills one holder after another leaves
    // a client that polls behind those woken at the lease's end (redis-py,
    // stop 45's CI). Whether it ever acquired is judged on the whole run
    // ([`starved`]).
    for k in &outcome.kinds {
        let acquired = check.acquired_by.get(k).copied().unwrap_or(0);
        if acquired == 0 && check.refused_by.get(k).copied().unwrap_or(0) == 0 {
            invalid(format!("{k} acquired nothing"));
        }
    }
    // A collector that never got through the keys checked nothing.
    if outcome.gc.as_ref().is_some_and(|gc| gc.runs == 0) {
        invalid("the collector (--gc-ms) never ran through the keys".to_owned());
    }
    for e in &outcome.exits {
        let killed = faults
            .iter()
            .any(|f| f.kind == FaultKind::Kill && f.target == e.process);
        if e.overran {
            invalid(format!(
                "{} did not stop at the end of the phase",
                e.process
            ));
        } else if e.code != Some(0) && !killed {
            invalid(format!(
                "{} exited with {}",
                e.process,
                e.code
                    .map_or_else(|| "a signal".to_owned(), |c| c.to_string())
            ));
        }
    }
    for f in faults.iter().filter(|f| !f.ok) {
        invalid(format!(
            "the nemesis's {} of {} failed",
            kind.as_str(),
            f.target
        ));
    }
    if kind != FaultKind::None && faults.is_empty() {
        invalid("no fault was injected".to_owned());
    }
    if matches!(
        kind,
        FaultKind::Pause | FaultKind::Kill | FaultKind::Partition
    ) && !faults.is_empty()
        && !check.faults.iter().any(|s| s.hit)
    {
        invalid(format!("no {} hit a holder", kind.as_str()));
    }
    let mut recovered = Vec::new();
    for (name, _) in &outcome.recovery_ms {
        let holds: Vec<&Hold> = check.holds.iter().filter(|h| h.name == *name).collect();
        // Free from the end of the holds in progress when the faults
        // stopped.
        let free_from = holds
            .iter()
            .filter(|h| h.start < nemesis_end && h.end > nemesis_end)
            .map(|h| h.end)
            .fold(nemesis_end, u64::max);
        let next = holds
            .iter()
            .map(|h| h.start)
            .filter(|&s| s >= free_from)
            .min();
        let ms = next
            .filter(|&s| s - free_from <= recovery_bound_ms(wait_ms) * 1000)
            .map(|s| (s - nemesis_end) / 1000);
        if ms.is_none() {
            out.push(Class::Recovery.line(format!(
                "{name} was not acquired within {} ms of being free once the faults stopped",
                recovery_bound_ms(wait_ms)
            )));
        }
        recovered.push((name.clone(), ms));
    }
    (out, recovered)
}

/// The client kinds of a run that acquired nothing in any phase, each
/// with the line that makes the run invalid (a kind that only lost races
/// in one phase must win one somewhere, or the run did not test it).
pub(crate) fn starved<'a>(
    phases: impl IntoIterator<Item = (&'a Outcome, &'a Check)>,
) -> Vec<Violation> {
    let mut kinds: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for (outcome, check) in phases {
        for k in &outcome.kinds {
            *kinds.entry(k).or_default() += check.acquired_by.get(k).copied().unwrap_or(0);
        }
    }
    kinds
        .into_iter()
        .filter(|(_, n)| *n == 0)
        .map(|(k, _)| Class::Invalid.line(format!("{k} acquired nothing in the whole run")))
        .collect()
}
