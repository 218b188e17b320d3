//! The watchdog: one task per client renews every watchdog-mode lock it holds.
//!
//! Every `timeout / 3` the task renews all registered locks in batches of
//! [`BATCH`] keys per `EVALSHA` of [`scripts::RENEW`], which checks the owner
//! field and re-`PEXPIRE`s in one step. Rules:
//!
//! * A lock the script reports as not ours (key gone, or another owner) is
//!   dropped from the registry and its guard is told
//!   [`LostReason::OwnerChanged`].
//! * A failed renewal (error or timeout) is retried every
//!   [`retry_interval`] while each lock's *deadline* still lies ahead. The
//!   deadline is when the lease could have expired by our monotonic clock:
//!   the send time of the last successful renewal (or of the acquire) plus
//!   the timeout; Redis ran the `PEXPIRE` after we sent it, so the key lives
//!   at least that long. At the deadline the guard is told
//!   [`LostReason::RenewalFailed`], on time even while a renewal is in flight.
//! * Unlock deregisters the lock synchronously *before* the release is sent.
//!   A renewal already in flight can still reach Redis after the release, but
//!   it is owner-checked and owner fields are unique per acquisition, so it
//!   finds no field and extends nothing: Redisson's "zombie renewal" race
//!   (their issue #7272) cannot happen.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, sleep_until};

use crate::LostReason;
use crate::scripts;

/// Locks renewed per script call (Redisson's `lockWatchdogBatchSize`).
const BATCH: usize = 100;

/// The signal a guard waits on in [`LockGuard::lost`](crate::LockGuard::lost).
pub(crate) type LostSender = Arc<watch::Sender<Option<LostReason>>>;

/// The client's handle on its watchdog task and registry.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

struct Shared {
    /// A std mutex: it is held only to copy or update entries, never across
    /// an `.await`, and guard `Drop` must be able to take it without a
    /// runtime.
    entries: Mutex<HashMap<u64, Entry>>,
    next_id: AtomicU64,
    timeout: Duration,
    timeout_ms: u64,
}

struct Entry {
    key: Arc<str>,
    field: Arc<str>,
    /// When the lease could have expired by our clock.
    deadline: Instant,
    lost: LostSender,
}

impl Watchdog {
    pub(crate) fn start(
        conn: ConnectionManager,
        timeout: Duration,
        stop: oneshot::Receiver<()>,
    ) -> Watchdog {
        let shared = Arc::new(Shared {
            entries: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            timeout,
            timeout_ms: timeout.as_millis() as u64,
        });
        tokio::spawn(run(shared.clone(), conn, stop));
        Watchdog { shared }
    }

    /// Starts renewing a lock whose acquire was sent at `sent_at`. Returns
    /// the id to deregister it with.
    pub(crate) fn register(
        &self,
        key: Arc<str>,
        field: Arc<str>,
        sent_at: Instant,
        lost: LostSender,
    ) -> u64 {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let entry = Entry {
            key,
            field,
            deadline: sent_at + self.shared.timeout,
            lost,
        };
        self.shared.lock().insert(id, entry);
        id
    }

    /// Stops renewing a lock. Idempotent.
    pub(crate) fn deregister(&self, id: u64) {
        self.shared.lock().remove(&id);
    }

    /// How many locks are being renewed.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shared.lock().len()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Entry>> {
        // A panic while the lock is held cannot leave an entry half-updated
        // (every update is one insert, remove or field store), so a poisoned
        // mutex is still consistent.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells every lock whose deadline has passed that it is lost, and
    /// returns the earliest deadline still ahead.
    fn expire_overdue(&self, now: Instant) -> Option<Instant> {
        let mut entries = self.lock();
        entries.retain(|_, e| {
            if e.deadline <= now {
                tracing::warn!(key = %e.key, "lock lost: renewals failed until its lease could have expired");
                e.lost.send_replace(Some(LostReason::RenewalFailed));
                false
            } else {
                true
            }
        });
        entries.values().map(|e| e.deadline).min()
    }
}

/// How long to wait before retrying after a failed renewal round.
fn retry_interval(period: Duration) -> Duration {
    period.min(Duration::from_secs(1))
}

type Round = Pin<Box<dyn Future<Output = bool> + Send>>;

async fn run(shared: Arc<Shared>, conn: ConnectionManager, mut stop: oneshot::Receiver<()>) {
    let period = shared.timeout / 3;
    let mut next_round = Instant::now() + period;
    let mut round: Option<Round> = None;
    loop {
        let now = Instant::now();
        let earliest = shared.expire_overdue(now);
        if round.is_none() && now >= next_round {
            round = Some(Box::pin(renew_all(shared.clone(), conn.clone())));
        }
        let wake = match (round.is_some(), earliest) {
            // While a round is in flight only deadlines can wake us early.
            (true, Some(d)) => d,
            (true, None) => now + period,
            (false, Some(d)) => d.min(next_round),
            (false, None) => next_round,
        };
        tokio::select! {
            _ = &mut stop => return,
            ok = async { round.as_mut().expect("guarded by the branch condition").await }, if round.is_some() => {
                round = None;
                next_round = Instant::now() + if ok { period } else { retry_interval(period) };
            }
            _ = sleep_until(wake) => {}
        }
    }
}

/// Renews every registered lock once; returns false if any batch failed.
async fn renew_all(shared: Arc<Shared>, mut conn: ConnectionManager) -> bool {
    let snapshot: Vec<(u64, Arc<str>, Arc<str>)> = shared
        .lock()
        .iter()
        .map(|(id, e)| (*id, e.key.clone(), e.field.clone()))
        .collect();
    let mut all_ok = true;
    for batch in snapshot.chunks(BATCH) {
        let mut call = scripts::RENEW.prepare_invoke();
        call.arg(shared.timeout_ms);
        for (_, key, field) in batch {
            call.key(&**key).arg(&**field);
        }
        let sent_at = Instant::now();
        match call.invoke_async::<Vec<i64>>(&mut conn).await {
            Ok(renewed) if renewed.len() == batch.len() => {
                let mut entries = shared.lock();
                for ((id, key, _), ok) in batch.iter().zip(renewed) {
                    if ok == 1 {
                        if let Some(e) = entries.get_mut(id) {
                            e.deadline = sent_at + shared.timeout;
                        }
                    } else if let Some(e) = entries.remove(id) {
                        tracing::warn!(key = %key, "lock lost: renewal found another owner or no key");
                        e.lost.send_replace(Some(LostReason::OwnerChanged));
                    }
                }
            }
            Ok(renewed) => {
                tracing::error!(
                    expected = batch.len(),
                    found = renewed.len(),
                    "renewal script returned the wrong number of results"
                );
                all_ok = false;
            }
            Err(err) => {
                tracing::warn!(error = %err, locks = batch.len(), "lock renewal failed; retrying");
                all_ok = false;
            }
        }
    }
    all_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_interval_is_bounded_by_period_and_one_second() {
        assert_eq!(
            retry_interval(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            retry_interval(Duration::from_millis(100)),
            Duration::from_millis(100)
        );
    }

    /// A lock whose renewals cannot succeed (nothing listens on the port) is
    /// reported lost at its deadline, judged by the client's clock.
    #[tokio::test(start_paused = true)]
    async fn overdue_lock_is_reported_lost_at_its_deadline() {
        let client = redis::Client::open("redis://127.0.0.1:1").unwrap();
        let conn = ConnectionManager::new_lazy_with_config(
            client,
            redis::aio::ConnectionManagerConfig::new().set_number_of_retries(0),
        )
        .unwrap();
        let (_stop_tx, stop_rx) = oneshot::channel();
        let dog = Watchdog::start(conn, Duration::from_millis(300), stop_rx);
        let lost: LostSender = Arc::new(watch::channel(None).0);
        let start = Instant::now();
        dog.register("k".into(), "f".into(), start, lost.clone());
        let mut rx = lost.subscribe();
        let reason = *rx.wait_for(Option::is_some).await.unwrap();
        assert_eq!(reason, Some(LostReason::RenewalFailed));
        let at = start.elapsed();
        assert!(at >= Duration::from_millis(300), "lost too early: {at:?}");
        assert!(at < Duration::from_millis(320), "lost too late: {at:?}");
        assert_eq!(dog.len(), 0);
    }
}
