//! How a waiting acquire hears that a lock was released (or a permit
//! given back, a latch opened): one shared Redis subscription per channel
//! per client, and the local wake-ups its messages cause.
//!
//! Waiters for a lock join its release channel; the first one in the process
//! makes the client `SUBSCRIBE`, the last one to leave makes it
//! `UNSUBSCRIBE`. Subscriptions ride on the client's own multiplexed
//! connection as RESP3 pushes, and redis-rs re-subscribes them after a
//! reconnect. Three rules keep wake-ups from being lost:
//!
//! * **Subscribe, then retry.** A waiter retries the acquire once its
//!   subscription is confirmed, so a release between its first attempt and
//!   the subscription is seen by that retry.
//! * **Stored permits.** A message wakes one local waiter with
//!   [`Notify::notify_one`], which keeps the permit when nobody is waiting at
//!   that instant, so the next waiter to wait takes it at once.
//! * **Bounded sleeps.** A waiter never sleeps longer than the holder's
//!   remaining TTL or its own remaining wait, so a lost message (or a holder
//!   that crashed and sent none) costs at most the rest of the lease.
//!
//! * **Counted messages.** Each channel counts the messages it received; a
//!   waiter notes the count before an attempt and does not go to sleep if it
//!   moved meanwhile, so a message that arrived while it was attempting
//!   (and woke nobody, or stored its permit for someone else) is not lost.
//!
//! What a message wakes depends on the primitive ([`Wakes`]): a lock's
//! release wakes one waiter per process, whatever the number of waiters in
//! it, so the Redis commands caused by a hand-off do not grow with the
//! number of local waiters; a write unlock of a read-write lock wakes every
//! waiting reader (and one writer), an opened latch every waiter; a
//! semaphore's message wakes as many as it announces permits. A woken waiter that is cancelled before it could retry passes the
//! wake-up on ([`Baton`]). When the connection drops, every waiter is woken
//! to re-check, since messages may have been lost meanwhile.
//!
//! Subscribe and unsubscribe requests are handled in order by one task per
//! client, which compares what is wanted (waiters present) with what is
//! subscribed, so a quick leave-and-rejoin can never end unsubscribed. A
//! failed `SUBSCRIBE` is retried while waiters remain (they poll meanwhile and
//! switch to waiting once it works), and so is a subscription that may have
//! been lost (a disconnection, a sharded channel whose slot moved): its
//! waiters poll from the moment it may be gone until it is confirmed again,
//! so no waiter sleeps on a subscription that is not there, whatever the
//! new one waits for (#37); a channel whose `SUBSCRIBE` or
//! `UNSUBSCRIBE` failed is treated as possibly subscribed, so it is always
//! unsubscribed once unwanted; after a disconnection every wanted channel is
//! subscribed again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};

use crate::connection::{Connection, Push, Pushes};

/// The state of one channel's subscription, as waiters see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubState {
    Pending,
    Ready,
    /// Not confirmed: `SUBSCRIBE` failed, or the subscription may be gone
    /// (the connection dropped, or the server dropped a sharded
    /// subscription whose slot moved) until the manager makes it again.
    /// Waiters fall back to polling meanwhile, so a release is heard within
    /// a poll step however long the new subscription takes (#37).
    Failed,
}

/// The client's subscription registry; cheap to share.
#[derive(Clone)]
pub(crate) struct Subscriptions {
    shared: Arc<Shared>,
}

struct Shared {
    /// Channels with at least one waiter. A std mutex: held only for map
    /// updates, and waiters leave from `Drop`.
    channels: Mutex<HashMap<String, Channel>>,
    /// Work for the manager task.
    reconcile: mpsc::UnboundedSender<Request>,
    /// How many times the connection dropped: what may have happened to
    /// the server meanwhile is for others to check (a restart, see
    /// [`crate::restart`]).
    disconnections: watch::Sender<u64>,
}

struct Channel {
    /// Waiters on `notify`: all but a read-write lock's readers.
    waiters: usize,
    /// Waiters on `readers`.
    readers: usize,
    state: Arc<ChannelState>,
}

struct ChannelState {
    notify: Notify,
    /// A read-write lock's waiting readers, apart from its writers: a write
    /// unlock wakes them all, but only one writer.
    readers: Notify,
    subscribed: watch::Sender<SubState>,
    /// Messages received so far (and disconnections, which may have lost
    /// some).
    messages: AtomicU64,
    /// What a message wakes of the waiters on `notify`; set by the
    /// channel's first waiter (every waiter of one channel waits for the
    /// same kind of structure).
    wakes: Wakes,
}

impl Channel {
    /// Wakes the waiters a message with `payload` (an integer, if it is
    /// one) frees, as each group's [`Wakes`] says.
    fn deliver(&self, payload: Option<i64>) {
        let state = &self.state;
        // Counted before the wake-ups: a waiter reads the count after it
        // registers to be woken (`Subscription::wait`), so it either sees
        // the count moved or is registered in time for the wake-up.
        state.messages.fetch_add(1, Ordering::AcqRel);
        let groups = [
            (&state.notify, self.waiters, state.wakes),
            (&state.readers, self.readers, Wakes::Reader),
        ];
        for (notify, waiters, wakes) in groups {
            if waiters == 0 {
                continue;
            }
            let wake = wakes.how_many(payload);
            if wake >= waiters {
                // Every waiter, and a stored permit for one that is between
                // attempts.
                notify.notify_waiters();
                notify.notify_one();
            } else {
                for _ in 0..wake {
                    notify.notify_one();
                }
            }
        }
    }
}

impl ChannelState {
    /// The waiters a subscription waits with.
    fn notify(&self, reader: bool) -> &Notify {
        if reader { &self.readers } else { &self.notify }
    }

    /// Wakes every waiter to re-check, counting a message: some may have
    /// been lost.
    fn wake_all(&self) {
        self.messages.fetch_add(1, Ordering::AcqRel);
        for notify in [&self.notify, &self.readers] {
            notify.notify_waiters();
            notify.notify_one();
        }
    }
}

/// What a message on a channel wakes, by the primitive that waits on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wakes {
    /// Every message wakes one waiter: a lock's release, or a read-write
    /// lock's release for its waiting writers.
    One,
    /// A read-write lock's waiting reader: a write unlock (`1`) wakes every
    /// reader, since all of them may go; any other message one reader
    /// (besides one writer).
    Reader,
    /// `n` wakes up to `n` waiters: the permits a semaphore announces.
    Count,
    /// Every message wakes every waiter: a count-down latch, whose `0`
    /// opens it; its `1` (armed again, or deleted, which reads as open) is
    /// rare, and a re-check of the count is cheap.
    All,
}

impl Wakes {
    /// How many waiters a message with `payload` (an integer, if it is one)
    /// wakes; `usize::MAX` for all of them.
    fn how_many(self, payload: Option<i64>) -> usize {
        match (self, payload) {
            (Wakes::One, _) => 1,
            (Wakes::Reader, Some(1)) => usize::MAX,
            (Wakes::Reader, _) => 1,
            (Wakes::Count, Some(n)) => usize::try_from(n).unwrap_or(0),
            // Not a number: someone else's message; a check is cheap.
            (Wakes::Count, None) => 1,
            (Wakes::All, _) => usize::MAX,
        }
    }
}

impl Subscriptions {
    /// Starts the manager and dispatch tasks; `pushes` are `conn`'s.
    pub(crate) fn start(conn: Connection, pushes: Pushes) -> Subscriptions {
        let (reconcile, requests) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            channels: Mutex::new(HashMap::new()),
            reconcile,
            disconnections: watch::channel(0).0,
        });
        let weak = Arc::downgrade(&shared);
        tokio::spawn(manage(weak.clone(), conn, requests));
        tokio::spawn(dispatch(weak, pushes));
        Subscriptions { shared }
    }

    /// Changes each time the connection drops; closed with the client.
    pub(crate) fn disconnections(&self) -> watch::Receiver<u64> {
        self.shared.disconnections.subscribe()
    }

    /// Joins `channel` as a waiter woken as `wakes` says; the subscription
    /// is shared with every other waiter of this client on that channel.
    pub(crate) fn join(&self, channel: String, wakes: Wakes) -> Subscription {
        let mut channels = self.shared.lock();
        let reader = wakes == Wakes::Reader;
        let entry = channels.entry(channel.clone()).or_insert_with(|| Channel {
            waiters: 0,
            readers: 0,
            state: Arc::new(ChannelState {
                notify: Notify::new(),
                readers: Notify::new(),
                subscribed: watch::channel(SubState::Pending).0,
                messages: AtomicU64::new(0),
                // A reader joining first: the writers that join later are
                // woken one per message.
                wakes: if reader { Wakes::One } else { wakes },
            }),
        });
        if reader {
            entry.readers += 1;
        } else {
            entry.waiters += 1;
        }
        let state = entry.state.clone();
        if entry.waiters + entry.readers == 1 {
            let _ = self
                .shared
                .reconcile
                .send(Request::Reconcile(channel.clone()));
        }
        Subscription {
            shared: self.shared.clone(),
            channel,
            state,
            reader,
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Channel>> {
        // Updates are single map operations, so a poisoned map is consistent.
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `channel` was subscribed again: its waiters stop polling (after one
    /// more attempt, for a release announced while it was not).
    fn confirm(&self, channel: &str) {
        if let Some(entry) = self.lock().get(channel) {
            entry.state.subscribed.send_replace(SubState::Ready);
        }
    }
}

/// One waiter's membership of a channel; leaving is dropping it.
pub(crate) struct Subscription {
    shared: Arc<Shared>,
    channel: String,
    state: Arc<ChannelState>,
    /// Waits on the channel's `readers`, not its `notify`.
    reader: bool,
}

impl Subscription {
    /// Returns true if and only if the subscription is confirmed already.
    pub(crate) fn is_ready(&self) -> bool {
        *self.state.subscribed.borrow() == SubState::Ready
    }

    /// Waits until the subscription is confirmed, at most `max`. Returns
    /// false if it failed or is still pending (the caller then polls).
    pub(crate) async fn ready(&self, max: Option<Duration>) -> bool {
        let mut rx = self.state.subscribed.subscribe();
        let wait = rx.wait_for(|s| *s != SubState::Pending);
        let state = match max {
            Some(max) => match tokio::time::timeout(max, wait).await {
                Ok(Ok(state)) => *state,
                _ => return false,
            },
            None => match wait.await {
                Ok(state) => *state,
                Err(_) => return false,
            },
        };
        state == SubState::Ready
    }

    /// The number of messages received on the channel so far: read it
    /// before an attempt, and give it to [`wait`](Subscription::wait).
    pub(crate) fn seen(&self) -> u64 {
        self.state.messages.load(Ordering::Acquire)
    }

    /// Sleeps until a message arrives for this channel or `max` passes
    /// (`None`: no limit); returns at once if messages arrived since the
    /// count `seen`. Returns a [`Baton`] when woken by a message.
    pub(crate) async fn wait(&self, seen: u64, max: Option<Duration>) -> Option<Baton> {
        let notified = self.state.notify(self.reader).notified();
        tokio::pin!(notified);
        // Registered before the count is read: a message after the read
        // wakes this waiter (or leaves it the stored permit).
        notified.as_mut().enable();
        let count = self.seen();
        if count != seen {
            return Some(Baton {
                state: None,
                reader: self.reader,
                messages: count,
            });
        }
        let woken = match max {
            Some(max) => tokio::time::timeout(max, notified).await.is_ok(),
            None => {
                notified.await;
                true
            }
        };
        woken.then(|| Baton {
            state: Some(self.state.clone()),
            reader: self.reader,
            messages: self.seen(),
        })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut channels = self.shared.lock();
        let last = match channels.get_mut(&self.channel) {
            Some(entry) => {
                if self.reader {
                    entry.readers -= 1;
                } else {
                    entry.waiters -= 1;
                }
                entry.waiters + entry.readers == 0
            }
            None => false,
        };
        if last {
            channels.remove(&self.channel);
            // The manager compares the registry when it comes to this
            // request, not now: a waiter that joins meanwhile keeps the
            // channel subscribed, so a quick leave-and-rejoin never ends
            // unsubscribed.
            let _ = self
                .shared
                .reconcile
                .send(Request::Reconcile(self.channel.clone()));
        }
    }
}

/// A wake-up held by the waiter it woke until that waiter has retried; if
/// the waiter is dropped first, the wake-up goes to the next local waiter.
pub(crate) struct Baton {
    /// `None` for a wake-up that took no permit (messages had arrived
    /// before the waiter slept): there is nothing to pass on.
    state: Option<Arc<ChannelState>>,
    /// The wake-up goes to a reader ([`Wakes::Reader`]).
    reader: bool,
    /// The channel's message count when the waiter woke.
    messages: u64,
}

impl Baton {
    /// The waiter has retried: the wake-up is used.
    pub(crate) fn used(mut self) {
        self.state = None;
    }

    /// The channel's message count when the waiter woke: a waiter passes
    /// on at most one wake-up per count ([`wait`](crate::wait)).
    pub(crate) fn messages(&self) -> u64 {
        self.messages
    }
}

impl Drop for Baton {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.notify(self.reader).notify_one();
        }
    }
}

/// Work for the manager task.
enum Request {
    /// Make the server's subscription to this channel match the registry.
    Reconcile(String),
    /// The connection dropped: subscribe again to every wanted channel.
    /// redis-rs re-subscribes by itself, but ignores failures in doing so.
    Resubscribe,
    /// The server dropped the sharded subscription to this channel, which
    /// may still be wanted (its slot moved to another node).
    Moved(String),
}

/// What the manager knows of a channel on the server.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Known {
    Subscribed,
    /// A `SUBSCRIBE` or `UNSUBSCRIBE` failed: it may or may not have run (a
    /// late reply is still recorded by redis-rs), so the channel may be
    /// subscribed and must be unsubscribed when no longer wanted.
    Uncertain,
}

/// How long to wait before retrying a failed subscribe or unsubscribe.
const RETRY: Duration = Duration::from_millis(500);

/// Subscribes and unsubscribes, one request at a time, to match the
/// registry; failures are retried while they matter.
async fn manage(
    shared: std::sync::Weak<Shared>,
    conn: Connection,
    mut requests: mpsc::UnboundedReceiver<Request>,
) {
    let mut known: HashMap<String, Known> = HashMap::new();
    while let Some(request) = requests.recv().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match request {
            Request::Reconcile(channel) => {
                reconcile(&shared, &conn, &mut known, channel).await;
            }
            Request::Resubscribe => {
                // Copied out first: the registry's lock is a std mutex
                // (waiters leave from `Drop`, which cannot await a tokio
                // one), so it is never held across an await.
                let wanted: Vec<String> = shared.lock().keys().cloned().collect();
                for channel in wanted {
                    if let Err(e) = conn.subscribe(&channel).await {
                        tracing::warn!(channel, error = %e, "re-subscribe failed; retrying");
                        known.insert(channel, Known::Uncertain);
                        retry_later(&shared, Request::Resubscribe);
                        break;
                    }
                    shared.confirm(&channel);
                    known.insert(channel, Known::Subscribed);
                }
            }
            Request::Moved(channel) => moved(&shared, &conn, &mut known, channel).await,
        }
    }
}

/// A sharded subscription the server dropped. When we did not ask for it
/// (the channel is still wanted), its slot moved to another node, for
/// example in a failover: redis-rs has forgotten the channel too, so it is
/// subscribed again where the slot lives now, and its waiters re-check,
/// since a release may have been announced meanwhile.
async fn moved(
    shared: &Shared,
    conn: &Connection,
    known: &mut HashMap<String, Known>,
    channel: String,
) {
    let Some(state) = shared.lock().get(&channel).map(|c| c.state.clone()) else {
        // Our own unsubscribe's confirmation, or nobody waits any more.
        return;
    };
    match conn.resubscribe_moved(&channel).await {
        Ok(()) => {
            tracing::debug!(channel, "sharded subscription moved with its slot");
            shared.confirm(&channel);
            known.insert(channel, Known::Subscribed);
        }
        Err(e) => {
            tracing::warn!(channel, error = %e, "re-subscribe after a slot move failed; retrying");
            known.insert(channel.clone(), Known::Uncertain);
            retry_later(shared, Request::Moved(channel));
        }
    }
    state.wake_all();
}

async fn reconcile(
    shared: &Shared,
    conn: &Connection,
    known: &mut HashMap<String, Known>,
    channel: String,
) {
    let wanted = shared.lock().get(&channel).map(|c| c.state.clone());
    match (wanted, known.get(&channel).copied()) {
        // Its waiters left and one came back before the manager got to the
        // unsubscribe: still subscribed on the server, nothing to send.
        (Some(state), Some(Known::Subscribed)) => {
            state.subscribed.send_replace(SubState::Ready);
        }
        (Some(state), _) => match conn.subscribe(&channel).await {
            Ok(()) => {
                known.insert(channel, Known::Subscribed);
                // If every waiter left and one re-joined meanwhile, the new
                // entry has its own state; the re-join queued another
                // request, which marks it ready.
                state.subscribed.send_replace(SubState::Ready);
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "subscribe failed; waiters poll until a retry works");
                known.insert(channel.clone(), Known::Uncertain);
                state.subscribed.send_replace(SubState::Failed);
                retry_later(shared, Request::Reconcile(channel));
            }
        },
        (None, Some(_)) => match conn.unsubscribe(&channel).await {
            Ok(()) => {
                known.remove(&channel);
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "unsubscribe failed; retrying");
                known.insert(channel.clone(), Known::Uncertain);
                retry_later(shared, Request::Reconcile(channel));
            }
        },
        (None, None) => {}
    }
}

/// Queues `request` again after [`RETRY`]. The sender is held only by the
/// short-lived timer task, so the manager still ends with the client.
fn retry_later(shared: &Shared, request: Request) {
    let sender = shared.reconcile.clone();
    tokio::spawn(async move {
        tokio::time::sleep(RETRY).await;
        let _ = sender.send(request);
    });
}

/// Wakes waiters on release messages and on disconnection.
async fn dispatch(shared: std::sync::Weak<Shared>, mut pushes: Pushes) {
    while let Some(push) = pushes.next().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match push {
            Push::Message { channel, payload } => {
                if let Some(entry) = shared.lock().get(&channel) {
                    entry.deliver(payload);
                }
            }
            Push::ShardUnsubscribed(channel) => {
                // Unasked (the channel is still wanted), its waiters poll
                // until the manager has subscribed again where the slot
                // went.
                if let Some(entry) = shared.lock().get(&channel) {
                    entry.state.subscribed.send_replace(SubState::Failed);
                }
                let _ = shared.reconcile.send(Request::Moved(channel));
            }
            Push::Disconnected => {
                // Messages may have been lost while the connection was down;
                // everyone re-checks, and polls until the manager has made
                // every wanted channel's subscription again: the new one may
                // wait for a failover to end and the slot map to follow it,
                // which no waiter should sleep through.
                for entry in shared.lock().values() {
                    entry.state.subscribed.send_replace(SubState::Failed);
                    entry.state.wake_all();
                }
                let _ = shared.reconcile.send(Request::Resubscribe);
                shared.disconnections.send_modify(|n| *n += 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriptions() -> Subscriptions {
        // Never connects: these tests only exercise the local wake-ups.
        let timeouts = crate::connection::Timeouts {
            response: Duration::from_secs(1),
            connect: Duration::from_secs(1),
        };
        let conn = Connection::lazy("redis://127.0.0.1:1/?protocol=resp3", timeouts);
        Subscriptions::start(conn, Pushes::none())
    }

    /// A wake-up whose waiter is dropped before retrying goes to the next
    /// local waiter; a used one does not.
    #[tokio::test(start_paused = true)]
    async fn unused_wakeup_is_passed_on() {
        let subs = subscriptions();
        let (first, second) = (
            subs.join("ch".into(), Wakes::One),
            subs.join("ch".into(), Wakes::One),
        );
        first.state.notify.notify_one();
        let baton = first
            .wait(0, Some(Duration::from_secs(1)))
            .await
            .expect("woken");
        let next =
            tokio::spawn(
                async move { second.wait(0, Some(Duration::from_secs(1))).await.is_some() },
            );
        tokio::task::yield_now().await;
        drop(baton);
        assert!(next.await.unwrap(), "the unused wake-up was not passed on");

        let (first, second) = (
            subs.join("ch2".into(), Wakes::One),
            subs.join("ch2".into(), Wakes::One),
        );
        first.state.notify.notify_one();
        first
            .wait(0, Some(Duration::from_secs(1)))
            .await
            .expect("woken")
            .used();
        assert!(second.wait(0, Some(Duration::from_secs(1))).await.is_none());
    }

    /// A wake-up that arrives while nobody waits is kept for the next
    /// waiter.
    #[tokio::test(start_paused = true)]
    async fn wakeup_with_no_waiter_is_kept() {
        let subs = subscriptions();
        let waiter = subs.join("ch".into(), Wakes::One);
        waiter.state.notify.notify_one();
        assert!(
            waiter
                .wait(0, Some(Duration::from_millis(1)))
                .await
                .is_some()
        );
    }

    #[test]
    fn each_primitive_wakes_what_its_message_frees() {
        assert_eq!(Wakes::One.how_many(Some(0)), 1);
        assert_eq!(Wakes::Reader.how_many(Some(1)), usize::MAX);
        assert_eq!(Wakes::Reader.how_many(Some(0)), 1);
        assert_eq!(Wakes::Count.how_many(Some(3)), 3);
        assert_eq!(Wakes::Count.how_many(Some(-2)), 0);
        assert_eq!(Wakes::Count.how_many(None), 1);
        assert_eq!(Wakes::All.how_many(Some(0)), usize::MAX);
        assert_eq!(Wakes::All.how_many(Some(1)), usize::MAX);
    }

    /// A message that arrived while the waiter was attempting (after it
    /// read the count) ends its next sleep at once, though its permit went
    /// to another waiter.
    #[tokio::test(start_paused = true)]
    async fn a_message_during_an_attempt_is_not_slept_through() {
        let subs = subscriptions();
        let (first, second) = (
            subs.join("ch".into(), Wakes::All),
            subs.join("ch".into(), Wakes::All),
        );
        let seen = first.seen();
        // The message, as dispatch counts it, with its stored permit taken
        // by the other waiter.
        first.state.messages.fetch_add(1, Ordering::AcqRel);
        first.state.notify.notify_one();
        second
            .wait(second.seen(), Some(Duration::from_secs(1)))
            .await
            .expect("permit")
            .used();
        let woken = first.wait(seen, Some(Duration::from_secs(3600))).await;
        assert!(woken.is_some(), "slept through a message");
        assert!(
            first
                .wait(first.seen(), Some(Duration::from_millis(1)))
                .await
                .is_none(),
            "no new message, no wake-up"
        );
    }

    /// A write unlock (`1`) wakes every waiting reader and one writer; a
    /// read unlock (`0`) one of each.
    #[tokio::test(start_paused = true)]
    async fn a_write_unlock_wakes_every_reader_and_one_writer() {
        let subs = subscriptions();
        for (channel, payload, expected) in [("rw1", 1, (3, 1)), ("rw0", 0, (1, 1))] {
            let mut joined = Vec::new();
            for wakes in [
                Wakes::Reader,
                Wakes::One,
                Wakes::Reader,
                Wakes::One,
                Wakes::Reader,
            ] {
                joined.push((wakes == Wakes::Reader, subs.join(channel.into(), wakes)));
            }
            let waits = joined.iter().map(|(reader, sub)| async move {
                let baton = sub.wait(sub.seen(), Some(Duration::from_millis(10))).await;
                (*reader, baton.map(Baton::used).is_some())
            });
            let waiting = futures_util::future::join_all(waits);
            tokio::pin!(waiting);
            // Everyone is asleep before the message.
            tokio::select! {
                biased;
                _ = &mut waiting => panic!("woken before the message"),
                _ = tokio::task::yield_now() => {}
            }
            subs.shared
                .lock()
                .get(channel)
                .unwrap()
                .deliver(Some(payload));
            let woken = waiting.await;
            let count = |reader| woken.iter().filter(|w| **w == (reader, true)).count();
            assert_eq!((count(true), count(false)), expected, "message {payload}");
        }
    }
}
