//! The metrics the library records, through the `metrics` crate's
//! facade.
//!
//! The library installs no recorder: with none installed a call records
//! nothing and allocates nothing (each series' key is built once per label
//! and client, when first recorded: #28). Install one (for example
//! `metrics-exporter-prometheus`, as in the crate's `prometheus` example)
//! to collect them.
//!
//! Every metric but [`RETRIES`] carries the label [`LOCK_LABEL`], whose
//! value is the lock name's prefix up to its last `:` ([`lock_label`]), so
//! that `stock:sku:42` and `stock:sku:43` are counted together as
//! `stock:sku` and the number of series stays bounded whatever the keys
//! hold. Acquire outcomes and losses carry a second label,
//! [`OUTCOME_LABEL`] or [`REASON_LABEL`]; retries only [`REASON_LABEL`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use ::metrics::{
    Key, Level, Metadata, SharedString, Unit, describe_counter, describe_gauge, describe_histogram,
    with_recorder,
};

use crate::lost::LostReason;

/// Counter: acquire scripts sent to Redis, one per attempt (a waiting
/// acquire makes several).
pub const ACQUIRE_ATTEMPTS: &str = "redlease_acquire_attempts_total";
/// Counter: acquire calls by how they ended, labelled [`OUTCOME_LABEL`]:
/// `acquired`, `reentered`, `busy`, `error` or `cancelled`. Every
/// primitive's acquires count (`try_lock`, `try_lock_for` and `lock` of
/// locks, multi-locks and RedLocks; the semaphores' `try_acquire`,
/// `try_acquire_for` and `acquire`; a latch's `wait_for` and `wait`), each
/// under its name's [`LOCK_LABEL`].
pub const ACQUIRES: &str = "redlease_acquires_total";
/// Histogram, seconds: how long acquire calls took, from the call to its
/// outcome, labelled [`OUTCOME_LABEL`] as [`ACQUIRES`]. For a `busy` outcome
/// this is the wait that was given up.
pub const WAIT_SECONDS: &str = "redlease_wait_seconds";
/// Histogram, seconds: how long locks were held, from the acquire until
/// the guard let go (unlock or drop; a lost lock counts until then too).
/// Re-entries are counted in their outer hold.
pub const HOLD_SECONDS: &str = "redlease_hold_seconds";
/// Gauge: locks held now by this process (re-entries not counted twice).
pub const HELD: &str = "redlease_held";
/// Counter: successful watchdog renewals, one per lock renewed.
pub const RENEWALS: &str = "redlease_renewals_total";
/// Counter: watchdog renewals that failed (connection or server error), one
/// per lock in the failed batch. The watchdog retries; a lock is lost only
/// when failures last until its lease could have expired.
pub const RENEWAL_FAILURES: &str = "redlease_renewal_failures_total";
/// Counter: locks lost while held, labelled [`REASON_LABEL`]:
/// `owner_changed` or `renewal_failed` when the watchdog finds out, or
/// `expired` for a fixed lease that ran out before its guard let go
/// (counted when it lets go).
pub const LOST: &str = "redlease_lost_total";
/// Counter: unlocks that Redis refused because the caller no longer owned
/// the lock (it had expired, been deleted or been taken over).
pub const UNLOCK_NOT_OWNER: &str = "redlease_unlock_not_owner_total";

/// Counter: requests sent again, labelled [`REASON_LABEL`] with why: the
/// server said the command did not run (`moved`, `ask`, `tryagain`,
/// `clusterdown`, `masterdown`, `loading`, `readonly`: a failover or a
/// migration under way, or `other`), or its reply was lost (`timeout`,
/// `connection`). Counted by waiting acquires, releases, changes of a
/// count and watchdog rounds, once per retry, inside the caller's wait or
/// the lease (#37). The one metric without [`LOCK_LABEL`]: a retry is the
/// connection's, and one watchdog round renews many names.
pub const RETRIES: &str = "redlease_retries_total";

/// Gauge: elections this process leads now ([`crate::Election`]); the
/// election's lock counts in [`HELD`] too.
pub const LEADING: &str = "redlease_leading";
/// Counter: leaderships won, one per campaign that returned leading.
pub const ELECTED: &str = "redlease_elected_total";
/// Counter: changes of leader seen by observers
/// ([`Election::observe`](crate::Election::observe)), one per change per
/// observer.
pub const LEADER_CHANGES: &str = "redlease_leader_changes_total";
/// The label naming the lock's group; see [`lock_label`].
pub const LOCK_LABEL: &str = "lock";
/// The label on [`ACQUIRES`] and [`WAIT_SECONDS`].
pub const OUTCOME_LABEL: &str = "outcome";
/// The label on [`LOST`] and [`RETRIES`].
pub const REASON_LABEL: &str = "reason";

/// The longest label value, in bytes: a prefix longer than this is cut (at
/// a character boundary), so a key with a long variable part before its
/// last `:` still makes a short label.
const MAX_LABEL_LEN: usize = 64;

/// The [`LOCK_LABEL`] value for a lock name: its prefix up to (not
/// including) the last `:`, at most 64 bytes, or `(none)` for a name
/// without `:`.
///
/// # Examples
///
/// ```
/// assert_eq!(redlease::metrics::lock_label("stock:sku:42"), "stock:sku");
/// assert_eq!(redlease::metrics::lock_label("lock:{order}:7"), "lock:{order}");
/// assert_eq!(redlease::metrics::lock_label("nightly-report"), "(none)");
/// ```
pub fn lock_label(name: &str) -> &str {
    let Some(end) = name.rfind(':') else {
        // The whole name would be one series per key in the worst case.
        return "(none)";
    };
    let mut end = end.min(MAX_LABEL_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// A lock's label of its own (a RedLock's, which spans clients); a
/// client's handles take theirs from [`Labels`]. Shared by its guards:
/// recording a metric then clones an `Arc`, not the string.
pub(crate) fn shared_label(name: &str) -> Label {
    Label(Arc::new(Series {
        value: SharedString::from(Arc::<str>::from(lock_label(name))),
        keys: Default::default(),
    }))
}

/// The labels a client's handles share, by value: a handle per order id
/// (`client.lock(format!("order:{id}"))`) then costs one lookup, not a
/// [`Label`] of its own with its slots (about 1.3 KiB, which the scale
/// bench found on every held lock: #28). Label values are bounded by
/// design ([`lock_label`]); past [`Labels::MAX`] of them, new ones are not
/// kept.
#[derive(Default)]
pub(crate) struct Labels(Mutex<HashMap<Box<str>, Label>>);

impl Labels {
    /// The most label values kept.
    const MAX: usize = 1024;

    /// The label of lock `name`.
    pub(crate) fn of(&self, name: &str) -> Label {
        let value = lock_label(name);
        // A panic elsewhere while holding the lock leaves the map whole.
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(label) = kept.get(value) {
            return label.clone();
        }
        let label = shared_label(name);
        if kept.len() < Self::MAX {
            kept.insert(value.into(), label.clone());
        }
        label
    }
}

/// A lock handle's [`LOCK_LABEL`] value with the keys of its series, each
/// built when first recorded and kept: the `counter!` macros built a key
/// (a `Vec` of labels, hashed) on every call, six per lock and unlock even
/// with no recorder installed (#28's profile). Cheap to clone.
#[derive(Clone)]
pub(crate) struct Label(Arc<Series>);

struct Series {
    value: SharedString,
    keys: Keys,
}

/// One slot per series a lock records under its label.
#[derive(Default)]
struct Keys {
    attempts: OnceLock<Key>,
    acquires: [OnceLock<Key>; Outcome::COUNT],
    waits: [OnceLock<Key>; Outcome::COUNT],
    held: OnceLock<Key>,
    hold_seconds: OnceLock<Key>,
    renewals: OnceLock<Key>,
    renewal_failures: OnceLock<Key>,
    lost: [OnceLock<Key>; LostReason::COUNT],
    unlock_not_owner: OnceLock<Key>,
}

impl Label {
    /// Series `name` under this label (and `extra`, if any), its key built
    /// in `slot` the first time.
    fn key<'a>(
        &'a self,
        slot: &'a OnceLock<Key>,
        name: &'static str,
        extra: Option<(&'static str, &'static str)>,
    ) -> &'a Key {
        slot.get_or_init(|| {
            let mut labels = vec![::metrics::Label::new(LOCK_LABEL, self.0.value.clone())];
            labels.extend(extra.map(|(k, v)| ::metrics::Label::new(k, v)));
            Key::from_parts(name, labels)
        })
    }
}

impl PartialEq for Label {
    fn eq(&self, other: &Label) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0.value, f)
    }
}

/// What the macros would pass: this module, at `INFO`.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

fn counter(key: &Key) -> ::metrics::Counter {
    with_recorder(|recorder| recorder.register_counter(key, &METADATA))
}

fn gauge(key: &Key) -> ::metrics::Gauge {
    with_recorder(|recorder| recorder.register_gauge(key, &METADATA))
}

fn histogram(key: &Key) -> ::metrics::Histogram {
    with_recorder(|recorder| recorder.register_histogram(key, &METADATA))
}

/// Describes the metrics to the recorder installed now (for an exporter's
/// help text and units). Called when a client is built: an application
/// installs its recorder before it connects.
pub(crate) fn describe() {
    describe_counter!(ACQUIRE_ATTEMPTS, "acquire scripts sent to redis");
    describe_counter!(ACQUIRES, "acquire calls by outcome");
    describe_histogram!(
        WAIT_SECONDS,
        Unit::Seconds,
        "time spent in acquire calls, by outcome"
    );
    describe_histogram!(HOLD_SECONDS, Unit::Seconds, "time locks were held");
    describe_gauge!(HELD, "locks held now by this process");
    describe_counter!(RENEWALS, "watchdog renewals, one per lock renewed");
    describe_counter!(RENEWAL_FAILURES, "failed watchdog renewals, one per lock");
    describe_counter!(LOST, "locks lost while held, by reason");
    describe_counter!(
        UNLOCK_NOT_OWNER,
        "unlocks refused: the lock was no longer ours"
    );
    describe_gauge!(LEADING, "elections this process leads now");
    describe_counter!(ELECTED, "leaderships won");
    describe_counter!(LEADER_CHANGES, "changes of leader seen by observers");
    describe_counter!(
        RETRIES,
        "requests sent again after a failover error or a lost reply, by reason"
    );
}

// The recording calls, one per event, so that the places where events
// happen stay one line long. Without a recorder each is a no-op apart from
// building the key.

pub(crate) fn acquire_attempt(label: &Label) {
    counter(label.key(&label.0.keys.attempts, ACQUIRE_ATTEMPTS, None)).increment(1);
}

/// How an acquire call ended, for [`ACQUIRES`] and [`WAIT_SECONDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired,
    Reentered,
    Busy,
    Error,
    Cancelled,
}

impl Outcome {
    /// How many outcomes there are (one series each, indexed by `as usize`).
    const COUNT: usize = 5;

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Acquired => "acquired",
            Outcome::Reentered => "reentered",
            Outcome::Busy => "busy",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Records an acquire call's outcome and duration when dropped: at its end,
/// or, if the caller dropped the call first, as cancelled.
pub(crate) struct AcquireObservation<'a> {
    label: &'a Label,
    started: Instant,
    outcome: Outcome,
}

impl<'a> AcquireObservation<'a> {
    pub(crate) fn start(label: &'a Label) -> AcquireObservation<'a> {
        AcquireObservation {
            label,
            started: Instant::now(),
            outcome: Outcome::Cancelled,
        }
    }

    /// The call ended with `outcome`.
    pub(crate) fn end(&mut self, outcome: Outcome) {
        self.outcome = outcome;
    }
}

impl Drop for AcquireObservation<'_> {
    fn drop(&mut self) {
        let (label, i) = (self.label, self.outcome as usize);
        let outcome = Some((OUTCOME_LABEL, self.outcome.as_str()));
        let keys = &label.0.keys;
        counter(label.key(&keys.acquires[i], ACQUIRES, outcome)).increment(1);
        histogram(label.key(&keys.waits[i], WAIT_SECONDS, outcome))
            .record(self.started.elapsed().as_secs_f64());
    }
}

pub(crate) fn hold_started(label: &Label) {
    gauge(label.key(&label.0.keys.held, HELD, None)).increment(1.0);
}

pub(crate) fn hold_ended(label: &Label, held: Duration) {
    let keys = &label.0.keys;
    gauge(label.key(&keys.held, HELD, None)).decrement(1.0);
    histogram(label.key(&keys.hold_seconds, HOLD_SECONDS, None)).record(held.as_secs_f64());
}

pub(crate) fn renewals(label: &Label, locks: u64) {
    counter(label.key(&label.0.keys.renewals, RENEWALS, None)).increment(locks);
}

pub(crate) fn renewal_failures(label: &Label, locks: u64) {
    let key = label.key(&label.0.keys.renewal_failures, RENEWAL_FAILURES, None);
    counter(key).increment(locks);
}

pub(crate) fn lost(label: &Label, reason: LostReason) {
    let slot = &label.0.keys.lost[reason as usize];
    let key = label.key(slot, LOST, Some((REASON_LABEL, reason.as_label())));
    counter(key).increment(1);
}

pub(crate) fn unlock_not_owner(label: &Label) {
    let key = label.key(&label.0.keys.unlock_not_owner, UNLOCK_NOT_OWNER, None);
    counter(key).increment(1);
}

/// An election won ([`ELECTED`], [`LEADING`]). Keys built per call:
/// elections are rare events.
pub(crate) fn elected(name: &str) {
    let label = lock_label(name).to_owned();
    ::metrics::counter!(ELECTED, LOCK_LABEL => label.clone()).increment(1);
    ::metrics::gauge!(LEADING, LOCK_LABEL => label).increment(1.0);
}

/// A leadership ended, by resignation, loss or drop ([`LEADING`]).
pub(crate) fn leadership_ended(name: &str) {
    let label = lock_label(name).to_owned();
    ::metrics::gauge!(LEADING, LOCK_LABEL => label).decrement(1.0);
}

/// An observer saw a new leader, or none ([`LEADER_CHANGES`]).
pub(crate) fn leader_changed(name: &str) {
    let label = lock_label(name).to_owned();
    ::metrics::counter!(LEADER_CHANGES, LOCK_LABEL => label).increment(1);
}

/// One request sent again, for `reason` ([`RETRIES`]). The key is built
/// per call: this is the error path.
pub(crate) fn retried(reason: &'static str) {
    let key = Key::from_parts(RETRIES, vec![::metrics::Label::new(REASON_LABEL, reason)]);
    counter(&key).increment(1);
}

/// Counts per label for one watchdog batch, so that renewing thousands of
/// locks records a handful of increments, not one per lock. Labels are few,
/// so a linear search beats hashing.
#[derive(Default)]
pub(crate) struct Tally(Vec<(Label, u64)>);

impl Tally {
    pub(crate) fn add(&mut self, label: &Label) {
        match self.0.iter_mut().find(|(l, _)| l == label) {
            Some((_, n)) => *n += 1,
            None => self.0.push((label.clone(), 1)),
        }
    }

    pub(crate) fn record(self, record: fn(&Label, u64)) {
        for (label, n) in self.0 {
            record(&label, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_handles_of_one_label_share_it() {
        let labels = Labels::default();
        let (a, b) = (labels.of("order:1"), labels.of("order:2"));
        assert!(Arc::ptr_eq(&a.0, &b.0), "one label, one set of series");
        let other = labels.of("invoice:1");
        assert!(!Arc::ptr_eq(&a.0, &other.0));
        assert_ne!(a, other);
        // Past the cap, a label still works, it is just not kept.
        for i in 0..Labels::MAX + 10 {
            labels.of(&format!("group{i}:x"));
        }
        assert_eq!(labels.0.lock().unwrap().len(), Labels::MAX);
        assert_eq!(labels.of("group2000:x"), labels.of("group2000:y"));
    }

    #[test]
    fn labels_are_bounded_prefixes() {
        assert_eq!(lock_label("a:b:c"), "a:b");
        assert_eq!(lock_label(":x"), "");
        assert_eq!(lock_label("x"), "(none)");
        let long = format!("{}:1", "é".repeat(100));
        let label = lock_label(&long);
        assert!(label.len() <= MAX_LABEL_LEN && label.chars().all(|c| c == 'é'));
    }
}
