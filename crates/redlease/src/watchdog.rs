//! The watchdog: the one renewal engine. One task per client renews
//! everything the client holds without a fixed lease: locks (plain, fair,
//! write, string layout), read holds of read-write locks, and expirable
//! semaphores' permits. Each is an entry of the registry, [`Kept`] saying
//! which script renews it; every number of the schedule is in
//! [`schedule`].
//!
//! Every [`period`] (a third of the timeout, counted from the start of the
//! last round) the task renews every entry, the oldest renewals first, in
//! batches of up to [`BATCH`](schedule::BATCH) entries of one kind per
//! script call, with up to [`IN_FLIGHT`](schedule::IN_FLIGHT) calls
//! pipelined on the connection (`round.rs`). Each script checks that the
//! entry is still ours and extends it in one step: a lock's owner field
//! ([`scripts::lock::renew`]), a read hold's field and timeout keys
//! ([`scripts::rwlock::renew_reads`]), a permit's id in its semaphore's
//! zset ([`scripts::expirable::renew_all`]). On a cluster a round first
//! asks which master serves which slot (`CLUSTER SLOTS`) and batches the
//! locks by master ([`scripts::lock::renew_on_node`], a script allowed to
//! touch keys of every slot of its node), so a round costs about as many
//! calls as on one node; a lock whose slot the master no longer serves (a
//! migration, a failover since the map was read) is renewed again in a
//! batch of its own slot, which the connection routes and redirects like
//! any command. A server that refuses the per-master script (Redis 6 knows
//! no script flags) gets per-slot batches from then on. Read holds and
//! permits are always batched by slot (a semaphore's permits share its
//! slot). Rules, the same for every kind:
//!
//! * An entry the script reports as not ours (key gone, another owner,
//!   a permit released by id or reclaimed, a key of another type) is
//!   dropped from the registry and its guard is told
//!   [`LostReason::OwnerChanged`].
//! * A failed renewal (error or timeout) is retried every
//!   [`retry_interval`] while each entry's *deadline* still lies ahead. The
//!   deadline is when the lease could have expired by our monotonic clock:
//!   the send time of the last successful renewal (or of the acquire) plus
//!   the timeout; Redis ran the renewal after we sent it, so the lease lasts
//!   at least that long. At the deadline the guard is told
//!   [`LostReason::RenewalFailed`], on time even while a renewal is in flight.
//! * Unlock deregisters the entry synchronously *before* the release is
//!   sent. A renewal already in flight can still reach Redis after the
//!   release, but it is owner-checked and owner fields (and permit ids) are
//!   unique per acquisition, so it finds nothing and extends nothing:
//!   Redisson's "zombie renewal" race (their issue #7272) cannot happen.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::{Instant, sleep_until};

use crate::metrics::Label;

use crate::connection::{Connection, SlotId};
use crate::lost::{LostReason, LostSignal};
use crate::metrics;

mod round;
pub(crate) mod schedule;

use round::renew_all;
use schedule::{period, retry_interval};

/// What a registered entry keeps alive under its key, which picks the
/// script that renews it.
#[derive(Clone)]
pub(crate) enum Kept {
    /// A hold on a lock (plain, fair or write, on Redisson's lock hash, or
    /// the string layout's lock): its owner field
    /// ([`scripts::lock::renew`](crate::scripts::lock::renew)).
    Lock(Arc<str>),
    /// A read hold of a read-write lock: its owner field; its timeout keys
    /// are renewed too
    /// ([`scripts::rwlock::renew_reads`](crate::scripts::rwlock::renew_reads)).
    Read(Arc<str>),
    /// A permit of an expirable semaphore: its raw id, a member of the
    /// semaphore's `{name}:timeout` zset whose score is its expiry
    /// ([`scripts::expirable::renew_all`](crate::scripts::expirable::renew_all)).
    Permit([u8; 16]),
}

/// The client's handle on its watchdog task and registry.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    /// For the hash slot of each lock registered on a cluster.
    conn: Connection,
}

struct Shared {
    /// A std mutex: it is held only to copy or update entries, never across
    /// an `.await`, and guard `Drop` must be able to take it without a
    /// runtime.
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Wakes the task when a lock is registered: its deadline may be earlier
    /// than the one the task is sleeping towards (a slow acquire reply).
    registered: Notify,
    timeout: Duration,
    /// The lease sent with each renewal: the timeout rounded *up* to whole
    /// milliseconds, so Redis never expires a key before our deadline.
    timeout_ms: u64,
    /// Whether a cluster's rounds batch by master: cleared for good when the
    /// server refuses the per-master script.
    per_node: AtomicBool,
}

struct State {
    entries: HashMap<u64, Entry>,
    /// When the task will next wake by itself; a lock registered with an
    /// earlier deadline must wake it sooner.
    wake_at: Option<Instant>,
}

struct Entry {
    key: Arc<str>,
    /// The key's hash slot on a cluster, which batches group by.
    slot: Option<SlotId>,
    kept: Kept,
    /// The metrics label of the lock or semaphore, for renewals and losses.
    label: Label,
    /// When the lease could have expired by our clock.
    deadline: Instant,
    lost: LostSignal,
}

impl Watchdog {
    pub(crate) fn start(
        conn: Connection,
        timeout: Duration,
        stop: oneshot::Receiver<()>,
    ) -> Watchdog {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: HashMap::new(),
                wake_at: None,
            }),
            next_id: AtomicU64::new(1),
            registered: Notify::new(),
            timeout,
            timeout_ms: timeout.as_nanos().div_ceil(1_000_000) as u64,
            per_node: AtomicBool::new(true),
        });
        tokio::spawn(run(shared.clone(), conn.clone(), stop));
        Watchdog { shared, conn }
    }

    /// Starts renewing what `kept` says is held under `key`, acquired by a
    /// request sent at `sent_at`. Returns the id to deregister it with.
    pub(crate) fn register(
        &self,
        key: Arc<str>,
        kept: Kept,
        label: Label,
        sent_at: Instant,
        lost: LostSignal,
    ) -> u64 {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let deadline = sent_at + self.shared.timeout;
        let entry = Entry {
            slot: self.conn.slot(&key),
            key,
            kept,
            label,
            deadline,
            lost,
        };
        let mut state = self.shared.lock();
        state.entries.insert(id, entry);
        // Usually the new deadline lies beyond the task's next wake-up (the
        // next round is at most a third of a timeout away), so the hot path
        // does not wake it.
        if state.wake_at.is_none_or(|w| deadline < w) {
            self.shared.registered.notify_one();
        }
        id
    }

    /// Stops renewing a lock. Idempotent.
    pub(crate) fn deregister(&self, id: u64) {
        self.shared.lock().entries.remove(&id);
    }

    /// Whether a registered lock's deadline has passed, even if the task has
    /// not run since to report it (a process resumed after a pause runs its
    /// tasks in no set order).
    pub(crate) fn overdue(&self, id: u64, now: Instant) -> bool {
        self.shared
            .lock()
            .entries
            .get(&id)
            .is_some_and(|e| e.deadline <= now)
    }

    /// How many holds and permits are being renewed.
    pub(crate) fn len(&self) -> usize {
        self.shared.lock().entries.len()
    }

    /// The names of the locks being renewed, each once (not the
    /// semaphores').
    pub(crate) fn names(&self) -> Vec<Arc<str>> {
        let mut names: Vec<Arc<str>> = (self.shared.lock().entries.values())
            .filter(|e| !matches!(e.kept, Kept::Permit(_)))
            .map(|e| e.key.clone())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock is held cannot leave an entry half-updated
        // (every update is one insert, remove or field store), so a poisoned
        // mutex is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells every lock whose deadline has passed that it is lost, then
    /// picks the next wake-up with `plan` (given the earliest deadline still
    /// ahead) and records it. One critical section, so a lock registered at
    /// any moment is either seen by `plan` or sees the recorded wake-up.
    fn expire_and_plan(
        &self,
        now: Instant,
        plan: impl FnOnce(Option<Instant>) -> Instant,
    ) -> Instant {
        let mut lost = Vec::new();
        let mut state = self.lock();
        state.entries.retain(|_, e| {
            if e.deadline <= now {
                // Counted before the guard is told: whoever `lost()` wakes
                // finds the loss counted.
                metrics::lost(&e.label, LostReason::RenewalFailed);
                e.lost.set(LostReason::RenewalFailed);
                lost.push(e.key.clone());
                false
            } else {
                true
            }
        });
        let wake = plan(state.entries.values().map(|e| e.deadline).min());
        state.wake_at = Some(wake);
        drop(state);
        // Logged after the lock is let go: acquires and unlocks take it.
        for key in lost {
            tracing::warn!(key = %key, "lost: renewals failed until its lease could have expired");
        }
        wake
    }
}

type Round = Pin<Box<dyn Future<Output = bool> + Send>>;

async fn run(shared: Arc<Shared>, conn: Connection, mut stop: oneshot::Receiver<()>) {
    let period = period(shared.timeout);
    // Rounds start a period apart, counted from the start of the last one
    // (#28). Counted from its end, as they were, a round that runs long (a
    // million locks, or renewals queued behind a burst of acquires) delayed
    // a lock registered during it by its own length twice over (the rest of
    // this round, the wait, and its place in the next), and locks were lost
    // once a round took more than a third of the timeout; now a round may
    // take almost the whole timeout. A round that takes longer than a
    // period is followed at once.
    let mut next_round = Instant::now() + period;
    // Under Sentinel: a switch of master renews at once, so that a lock
    // that did not reach the promoted replica is reported lost now, not at
    // the next round.
    let mut switches = conn.switches();
    let mut round: Option<Round> = None;
    loop {
        let now = Instant::now();
        if round.is_none() && now >= next_round {
            round = Some(Box::pin(renew_all(shared.clone(), conn.clone())));
            next_round = now + period;
        }
        let in_flight = round.is_some();
        let wake = shared.expire_and_plan(now, |earliest| match (in_flight, earliest) {
            // While a round is in flight only deadlines can wake us early.
            (true, Some(d)) => d,
            (true, None) => now + period,
            (false, Some(d)) => d.min(next_round),
            (false, None) => next_round,
        });
        tokio::select! {
            _ = &mut stop => return,
            ok = async { round.as_mut().expect("guarded by the branch condition").await }, if round.is_some() => {
                round = None;
                if !ok {
                    next_round = Instant::now() + retry_interval(period);
                }
            }
            _ = sleep_until(wake) => {}
            _ = shared.registered.notified() => {}
            Ok(()) = async { switches.as_mut().expect("guarded by the branch condition").changed().await }, if switches.is_some() => {
                // A round in flight may be renewing on the old master: start
                // over on the new one (renewals are idempotent).
                round = None;
                next_round = Instant::now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::round::Select;
    use super::*;
    use crate::connection::Timeouts;

    const TIMEOUTS: Timeouts = Timeouts {
        response: Duration::from_secs(1),
        connect: Duration::from_secs(1),
    };

    /// A lock whose renewals cannot succeed (nothing listens on the port) is
    /// reported lost at its deadline, judged by the client's clock.
    #[tokio::test(start_paused = true)]
    async fn overdue_lock_is_reported_lost_at_its_deadline() {
        let conn = Connection::lazy("redis://127.0.0.1:1", TIMEOUTS);
        let (_stop_tx, stop_rx) = oneshot::channel();
        let dog = Watchdog::start(conn, Duration::from_millis(300), stop_rx);
        let lost = LostSignal::new();
        let start = Instant::now();
        dog.register(
            "k".into(),
            Kept::Lock("f".into()),
            crate::metrics::shared_label(""),
            start,
            lost.clone(),
        );
        assert_eq!(lost.wait().await, LostReason::RenewalFailed);
        let at = start.elapsed();
        assert!(at >= Duration::from_millis(300), "lost too early: {at:?}");
        assert!(at < Duration::from_millis(320), "lost too late: {at:?}");
        assert_eq!(dog.len(), 0);
    }

    /// A lock registered while a renewal round is stalled, whose deadline is
    /// earlier than every other, is still reported lost at its deadline.
    #[tokio::test(start_paused = true)]
    async fn lock_registered_during_a_stalled_round_is_lost_on_time() {
        // Accepts connections and never answers: every round stalls.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let conn = Connection::lazy(
            &format!("redis://127.0.0.1:{port}"),
            Timeouts {
                response: Duration::from_secs(5),
                connect: Duration::from_secs(5),
            },
        );
        let (_stop_tx, stop_rx) = oneshot::channel();
        let start = Instant::now();
        let dog = Watchdog::start(conn, Duration::from_millis(300), stop_rx);
        let sender = LostSignal::new;
        tokio::time::sleep(Duration::from_millis(50)).await;
        dog.register(
            "a".into(),
            Kept::Lock("f".into()),
            crate::metrics::shared_label(""),
            Instant::now(),
            sender(),
        );
        // The first round starts at 100 ms and stalls.
        tokio::time::sleep(Duration::from_millis(60)).await;
        let late = sender();
        // An acquire sent at 0 ms whose reply came late: deadline 300 ms,
        // earlier than the first lock's 350 ms.
        dog.register(
            "b".into(),
            Kept::Lock("f".into()),
            crate::metrics::shared_label(""),
            start,
            late.clone(),
        );
        late.wait().await;
        let at = start.elapsed();
        assert!(
            at >= Duration::from_millis(300) && at < Duration::from_millis(310),
            "lost at {at:?}"
        );
    }

    /// A round renews the oldest renewals first, so that a round that
    /// runs long reaches them before their deadlines (#28).
    #[tokio::test(start_paused = true)]
    async fn a_round_renews_the_oldest_renewals_first() {
        let conn = Connection::lazy("redis://127.0.0.1:1", TIMEOUTS);
        let (_stop_tx, stop_rx) = oneshot::channel();
        let dog = Watchdog::start(conn, Duration::from_secs(30), stop_rx);
        let now = Instant::now();
        // Lock i was acquired i × 100 ms ago; registered in an order that
        // is not the deadlines' (ids follow registration).
        let mut age_of = std::collections::HashMap::new();
        for i in (0..250u64).map(|i| (i * 97) % 250) {
            let sent_at = now - Duration::from_millis(i * 100);
            let id = dog.register(
                format!("k{i}").into(),
                Kept::Lock("f".into()),
                crate::metrics::shared_label(""),
                sent_at,
                LostSignal::new(),
            );
            age_of.insert(id, i);
        }
        let batches = dog.shared.batches(Select::All, None);
        let ages: Vec<Vec<u64>> = batches
            .iter()
            .map(|b| b.ids.iter().map(|id| age_of[id]).collect())
            .collect();
        assert_eq!(ages.len(), 3, "{ages:?}");
        assert_eq!(ages[0], (150..250).rev().collect::<Vec<_>>());
        assert_eq!(ages[1], (50..150).rev().collect::<Vec<_>>());
        assert_eq!(ages[2], (0..50).rev().collect::<Vec<_>>());
    }
}
