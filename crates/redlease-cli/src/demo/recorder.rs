//! The in-process metrics recorder, and the library's numbers read from it.
//!
//! The library records through the `metrics` facade under the names in
//! [`redlease::metrics`]; the demo installs a [`DebuggingRecorder`] and
//! reads them back, so the summary shows what a service's dashboard would.

use metrics_util::CompositeKey;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use redlease::metrics as m;

/// The library's numbers for one lock label over one stretch of the run.
#[derive(Debug, Default)]
pub(crate) struct LockMetrics {
    /// `redlease_acquires_total{outcome="acquired"}`.
    pub(crate) acquired: u64,
    /// `redlease_acquires_total{outcome="busy"}`.
    pub(crate) busy: u64,
    /// `redlease_wait_seconds{outcome="acquired"}`, every sample.
    pub(crate) waits: Vec<f64>,
    /// `redlease_renewals_total`.
    pub(crate) renewals: u64,
    /// `redlease_renewal_failures_total`.
    pub(crate) renewal_failures: u64,
    /// `redlease_lost_total`, all reasons.
    pub(crate) lost: u64,
    /// `redlease_unlock_not_owner_total`.
    pub(crate) unlock_not_owner: u64,
}

/// Installs the process-wide recorder and returns the handle to read it.
///
/// # Errors
///
/// When a recorder is already installed (not the case in the `redlease`
/// binary, which installs none elsewhere).
pub(crate) fn install() -> Result<Snapshotter, String> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .map_err(|_| "cannot install the metrics recorder: one is already installed".to_owned())?;
    Ok(snapshotter)
}

/// Reads and resets the metrics of locks labelled `label` (see
/// [`redlease::metrics::lock_label`]).
///
/// A snapshot of a [`DebuggingRecorder`] drains it (counters go back to
/// zero, histogram samples are taken out), so each call returns what was
/// recorded since the previous one.
pub(crate) fn take(snapshotter: &Snapshotter, label: &str) -> LockMetrics {
    let mut out = LockMetrics::default();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if label_of(&key, m::LOCK_LABEL) != Some(label) {
            continue;
        }
        let outcome = label_of(&key, m::OUTCOME_LABEL);
        match (key.key().name(), value) {
            (m::ACQUIRES, DebugValue::Counter(n)) if outcome == Some("acquired") => {
                out.acquired += n
            }
            (m::ACQUIRES, DebugValue::Counter(n)) if outcome == Some("busy") => out.busy += n,
            (m::WAIT_SECONDS, DebugValue::Histogram(samples)) if outcome == Some("acquired") => out
                .waits
                .extend(samples.into_iter().map(|s| s.into_inner())),
            (m::RENEWALS, DebugValue::Counter(n)) => out.renewals += n,
            (m::RENEWAL_FAILURES, DebugValue::Counter(n)) => out.renewal_failures += n,
            (m::LOST, DebugValue::Counter(n)) => out.lost += n,
            (m::UNLOCK_NOT_OWNER, DebugValue::Counter(n)) => out.unlock_not_owner += n,
            _ => {}
        }
    }
    out
}

fn label_of<'k>(key: &'k CompositeKey, name: &str) -> Option<&'k str> {
    key.key()
        .labels()
        .find(|l| l.key() == name)
        .map(|l| l.value())
}

/// The `q`-quantile (0 to 1) of `samples` by the nearest-rank method, or
/// `None` for no samples. Sorts `samples`.
pub(crate) fn quantile(samples: &mut [f64], q: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    // Nearest rank: the smallest sample with at least q of them at or below.
    let rank = (q * samples.len() as f64).ceil() as usize;
    Some(samples[rank.clamp(1, samples.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_nearest_rank() {
        let mut xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantile(&mut xs, 0.5), Some(50.0));
        assert_eq!(quantile(&mut xs, 0.99), Some(99.0));
        assert_eq!(quantile(&mut xs, 1.0), Some(100.0));
        assert_eq!(quantile(&mut [7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}
