//! The in-process metrics recorder, and the library's numbers read from it.
//!
//! The library records through the `metrics` facade under the names in
//! [`redlease::metrics`]; the demo installs a [`Recorder`] of its own, which
//! keeps every counter and histogram sample in memory, and reads them back,
//! so the summary shows what a service's dashboard would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, SharedString, Unit};
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

/// The demo's metrics recorder: each counter and each histogram's samples,
/// by key, in memory. Gauges are not kept (the summary shows none). A
/// clone reads what the installed one records.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder {
    series: Arc<Mutex<Series>>,
}

#[derive(Debug, Default)]
struct Series {
    counters: HashMap<Key, Arc<AtomicU64>>,
    histograms: HashMap<Key, Arc<Samples>>,
}

/// A histogram's samples since they were last taken.
#[derive(Debug, Default)]
struct Samples(Mutex<Vec<f64>>);

impl Samples {
    fn take(&self) -> Vec<f64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(value);
    }
}

impl Recorder {
    fn series(&self) -> MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl metrics::Recorder for Recorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let counter = self
            .series()
            .counters
            .entry(key.clone())
            .or_default()
            .clone();
        Counter::from_arc(counter)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let samples = self
            .series()
            .histograms
            .entry(key.clone())
            .or_default()
            .clone();
        Histogram::from_arc(samples)
    }
}

/// Installs the process-wide recorder and returns a handle to read it.
///
/// # Errors
///
/// When a recorder is already installed (not the case in the `redlease`
/// binary, which installs none elsewhere).
pub(crate) fn install() -> Result<Recorder, String> {
    let recorder = Recorder::default();
    metrics::set_global_recorder(recorder.clone())
        .map_err(|_| "cannot install the metrics recorder: one is already installed".to_owned())?;
    Ok(recorder)
}

/// Reads and resets the metrics of locks labelled `label` (see
/// [`redlease::metrics::lock_label`]).
///
/// Counters go back to zero and histogram samples are taken out, so each
/// call returns what was recorded since the previous one.
pub(crate) fn take(recorder: &Recorder, label: &str) -> LockMetrics {
    let mut out = LockMetrics::default();
    let series = recorder.series();
    let labelled = |key: &Key| label_of(key, m::LOCK_LABEL) == Some(label);
    for (key, counter) in series.counters.iter().filter(|(key, _)| labelled(key)) {
        let n = counter.swap(0, Ordering::Relaxed);
        match (key.name(), label_of(key, m::OUTCOME_LABEL)) {
            (m::ACQUIRES, Some("acquired")) => out.acquired += n,
            (m::ACQUIRES, Some("busy")) => out.busy += n,
            (m::RENEWALS, _) => out.renewals += n,
            (m::RENEWAL_FAILURES, _) => out.renewal_failures += n,
            (m::LOST, _) => out.lost += n,
            (m::UNLOCK_NOT_OWNER, _) => out.unlock_not_owner += n,
            _ => {}
        }
    }
    for (key, samples) in series.histograms.iter().filter(|(key, _)| labelled(key)) {
        let samples = samples.take();
        if key.name() == m::WAIT_SECONDS && label_of(key, m::OUTCOME_LABEL) == Some("acquired") {
            out.waits.extend(samples);
        }
    }
    out
}

fn label_of<'k>(key: &'k Key, name: &str) -> Option<&'k str> {
    key.labels().find(|l| l.key() == name).map(|l| l.value())
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

    #[test]
    fn take_reads_one_label_and_resets_it() {
        let recorder = Recorder::default();
        let record = || {
            let ours = [(m::LOCK_LABEL, "demo:stock")];
            let acquired = [
                (m::LOCK_LABEL, "demo:stock"),
                (m::OUTCOME_LABEL, "acquired"),
            ];
            let busy = [(m::LOCK_LABEL, "demo:stock"), (m::OUTCOME_LABEL, "busy")];
            metrics::counter!(m::ACQUIRES, &acquired).increment(2);
            metrics::counter!(m::ACQUIRES, &busy).increment(5);
            metrics::counter!(m::ACQUIRES, m::LOCK_LABEL => "other", m::OUTCOME_LABEL => "busy")
                .increment(7);
            metrics::counter!(m::RENEWALS, &ours).increment(3);
            metrics::counter!(m::LOST, m::LOCK_LABEL => "demo:stock", m::REASON_LABEL => "expired")
                .increment(1);
            metrics::histogram!(m::WAIT_SECONDS, &acquired).record(0.25);
            metrics::histogram!(m::WAIT_SECONDS, &acquired).record(0.5);
            metrics::histogram!(m::WAIT_SECONDS, &busy).record(1.0);
            metrics::gauge!(m::HELD, &ours).increment(1.0);
        };
        metrics::with_local_recorder(&recorder, record);
        let first = take(&recorder, "demo:stock");
        assert_eq!((first.acquired, first.busy, first.renewals), (2, 5, 3));
        assert_eq!(
            (first.lost, first.renewal_failures, first.unlock_not_owner),
            (1, 0, 0)
        );
        assert_eq!(first.waits, [0.25, 0.5]);
        let again = take(&recorder, "demo:stock");
        assert_eq!((again.acquired, again.busy, again.renewals), (0, 0, 0));
        assert!(again.waits.is_empty());
        assert_eq!(take(&recorder, "other").busy, 7);
    }
}
