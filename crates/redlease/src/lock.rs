//! [`Lock`]: the exclusive lock (plain or fair) as a user sees it, and its
//! single acquire attempt. Waiting is the waiting engine's ([`crate::wait`]),
//! holding the holding engine's ([`crate::hold`]), re-entry the owner
//! scope's ([`crate::scope`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::cancel::Withdrawal;
use crate::error::{Error, wrong_type_message};
use crate::front::{self, Begin, Patience};
use crate::guard::LockGuard;
use crate::hold::{Expiry, Grant, Hold, LeaseMode};
use crate::kind::{AcquireOptions, Kind};
use crate::metrics::{self, Outcome};
use crate::pubsub::Wakes;
use crate::scope::Reentry;
use crate::scripts::commands;
use crate::scripts::lock::Acquired;
use crate::shared::Handle;
use crate::wait::{Attempt, Contender};
use crate::{name, release, scope};

mod together;

/// A handle to one named lock; made by [`Client::lock`](crate::Client::lock).
///
/// Cheap to clone, and holds nothing in Redis by itself: each successful
/// acquire returns a [`LockGuard`], and each guard is a separate hold.
///
/// # Lease modes
///
/// By default the lock uses the **watchdog**: its lease is the client's
/// [watchdog timeout](crate::ClientBuilder::watchdog_timeout) and the
/// client renews it every third of that for as long as the guard lives, so
/// work of any length stays protected and a crashed holder frees the lock
/// within one timeout. [`Lock::lease`] selects a **fixed lease** instead: no
/// renewal, the lock expires after the lease whatever happens. The two modes
/// are never mixed on one guard.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
///
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:lock:modes");
///
/// // Watchdog mode: renewed for as long as the guard lives.
/// let guard = lock.try_lock().await?;
/// assert_eq!(guard.expires_at(), None);
/// guard.unlock().await?;
///
/// // A fixed lease: expires 10 s after the acquire, whatever happens.
/// let guard = lock.lease(Duration::from_secs(10)).try_lock().await?;
/// assert!(guard.expires_at().is_some());
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Lock {
    handle: Handle,
    kind: Kind,
    /// `None`: watchdog mode.
    lease: Option<Duration>,
}

impl Lock {
    /// A lock of `kind` on the handle's name (made by
    /// [`Client::lock`](crate::Client::lock) and its siblings).
    pub(crate) fn new(handle: Handle, kind: Kind) -> Lock {
        Lock {
            handle,
            kind,
            lease: None,
        }
    }

    /// Selects a fixed lease: the lock expires `lease` after it is acquired
    /// and is never renewed. A lease under 1 ms is rejected when the lock is
    /// used.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:lease").lease(Duration::from_millis(50));
    /// let guard = lock.try_lock().await?;
    /// // Never renewed: the lease runs out on its own.
    /// assert_eq!(guard.lost().await, redlease::LostReason::Expired);
    ///
    /// // Under 1 ms is refused when the lock is used.
    /// let lock = client.lock("doc:lock:lease").lease(Duration::from_micros(10));
    /// assert!(lock.try_lock().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(mut self, lease: Duration) -> Lock {
        self.lease = Some(lease);
        self
    }

    /// The lock's name, which is also its Redis key.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:name");
    /// assert_eq!(lock.name(), "doc:lock:name");
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// Makes one attempt to acquire the lock.
    ///
    /// # Errors
    ///
    /// An error for which [`is_busy`](Error::is_busy) is true when another
    /// owner holds the lock; [`is_invalid_argument`](Error::is_invalid_argument)
    /// for a bad name or lease; [`is_wrong_type`](Error::is_wrong_type) when
    /// the key holds a non-lock value;
    /// [`is_not_replicated`](Error::is_not_replicated) when the client
    /// [requires replicas](crate::ClientBuilder::require_replicas) and too
    /// few acknowledged (the lock was released again); connection and server
    /// errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future never leaves a lock held by nobody: if the acquire
    /// request may already have been sent, a release of this attempt's owner
    /// field is sent after it in the background (same connection, so it runs
    /// after the acquire), and the lock is free again within one round trip.
    /// A re-entry in an owner scope ([`scope`](crate::scope)) that is
    /// cancelled leaves the hold count as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:try-lock");
    /// let guard = lock.try_lock().await?;
    ///
    /// // A second acquisition is another owner, even in the same task.
    /// let e = lock.try_lock().await.unwrap_err();
    /// assert!(e.is_busy());
    /// assert_eq!(e.key(), Some("doc:lock:try-lock"));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock(&self) -> Result<LockGuard, Error> {
        front::acquire(self, Patience::Once).await
    }

    /// Tries to acquire the lock until `wait` has passed.
    ///
    /// After a first failed attempt the waiter subscribes to the lock's
    /// release channel (shared with every other waiter for this lock in the
    /// client), retries once, then sleeps until a release message arrives,
    /// never longer than the holder's remaining lease nor past the end of
    /// `wait`, where it makes one last attempt. A release by any client,
    /// Redisson included, wakes it. A `wait` of zero is
    /// [`try_lock`](Lock::try_lock).
    ///
    /// # Errors
    ///
    /// An error for which [`is_busy`](Error::is_busy) is true when the lock
    /// stayed held for the whole wait; it carries how long it waited
    /// ([`Error::waited`]). Lost connections and time-outs are retried until
    /// the wait ends, and then reported as they are; any other error ends the
    /// wait at once.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Lock::try_lock): dropping the future (for example
    /// under `tokio::time::timeout`) leaves no lock behind. It also leaves the
    /// release channel, unsubscribing if it was the client's last waiter on
    /// it, and hands a wake-up it had received but not used to the next local
    /// waiter. A fair waiter gives up its place in the queue in the
    /// background, waking the next waiter if the lock is free.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:try-lock-for");
    /// let holder = lock.try_lock().await?;
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_millis(50)).await;
    ///     holder.unlock().await
    /// });
    /// // Woken by the holder's release, long before the 5 s are up.
    /// let guard = lock.try_lock_for(Duration::from_secs(5)).await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock_for(&self, wait: Duration) -> Result<LockGuard, Error> {
        // A wait of zero is one attempt: for a fair lock, "no wait" never
        // joins the queue.
        front::acquire(self, Patience::within(wait)).await
    }

    /// Waits until the lock is acquired, as [`try_lock_for`](Lock::try_lock_for)
    /// with no time limit.
    ///
    /// # Errors
    ///
    /// Never busy. Invalid input and server errors end the wait; lost
    /// connections and time-outs are retried (with backoff up to 256 ms) for
    /// as long as it waits, so bound it with `tokio::time::timeout` if Redis
    /// may stay down.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock_for`](Lock::try_lock_for).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:lock");
    /// // Bounded all the same, in case Redis stays down.
    /// let guard = tokio::time::timeout(Duration::from_secs(30), lock.lock())
    ///     .await
    ///     .expect("acquired within 30 s")?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lock(&self) -> Result<LockGuard, Error> {
        front::acquire(self, Patience::Forever).await
    }

    /// One attempt for a composite of locks (one master of a [`RedLock`](crate::RedLock)):
    /// re-entry in an owner scope, else one acquire; busy with the holder's
    /// time to live. No span or metrics of its own: the member's acquire
    /// counts as an attempt.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Lock::try_lock).
    pub(crate) async fn attempt_once(&self) -> Result<Attempt<LockGuard>, Error> {
        match front::Primitive::begin(self, Patience::Once).await? {
            Begin::Held(guard, _) => Ok(Attempt::Acquired(guard)),
            Begin::Contend(mut waiter) => waiter.attempt_once().await,
        }
    }

    /// Validates the input and returns the lease to request, in ms.
    fn prepare(&self) -> Result<u64, Error> {
        name::validate(&self.handle.name)?;
        match self.lease {
            Some(lease) => name::lease_millis("lease", lease),
            None => name::lease_millis("watchdog timeout", self.handle.client.watchdog_timeout()),
        }
        .map_err(|e| e.with_key(&self.handle.name))
    }

    /// Runs the acquire script once (and, when the client requires
    /// replicas, waits for their acknowledgement). For a fair lock,
    /// `enqueue` makes a failed attempt join the queue (or refresh its place
    /// in it).
    ///
    /// `fresh` says that no other hold shares `field` (it is not an owner
    /// scope's), so that its withdrawal may be repeated until answered.
    async fn attempt(
        &self,
        lease_ms: u64,
        field: &Arc<str>,
        enqueue: bool,
        fresh: bool,
    ) -> Result<Attempt<LockGuard>, Error> {
        let conn = self.handle.client.acquire_conn();
        // Armed until we know the outcome: if this future is dropped while
        // the request may be in Redis, the field is released behind it.
        let mut pending = Withdrawal::pending_acquire(
            conn,
            self.kind,
            &self.handle.name,
            field,
            lease_ms,
            self.withdrawal_retry(lease_ms, fresh),
        );
        let options = AcquireOptions {
            lease_ms,
            fencing: self.handle.client.fencing(),
            queue_lease_ms: self.handle.client.watchdog_timeout().as_millis() as u64,
            publish: conn.publish(),
        };
        let call = self
            .kind
            .acquire(&self.handle.name, field, options, enqueue);
        let sent_at = Instant::now();
        metrics::acquire_attempt(&self.handle.label);
        let token = match call.run::<Acquired>(conn).await {
            Ok(Acquired::Granted(token)) => token,
            Ok(Acquired::Busy(ttl)) => {
                pending.disarm();
                return Ok(Attempt::Busy(ttl));
            }
            Err(err) => {
                // An error reply from Redis means the script refused or never
                // ran. Anything else (no reply, a late reply, a reply we could
                // not parse) leaves the outcome unknown, so the pending
                // release stays armed.
                if err.code().is_some() {
                    pending.disarm();
                }
                let mut err = Error::from(err).with_key(&self.handle.name);
                if err.is_wrong_type() {
                    err = self.wrong_type(conn, err).await;
                }
                tracing::debug!(key = %self.handle.name, error = %err, "acquire failed");
                return Err(err);
            }
        };
        let lease_end = self.lease.map(|lease| sent_at + lease);
        if let Some(replicas) = self.handle.client.replicas() {
            // Still armed: cancelled or failed here, the acquisition is
            // withdrawn in the background. Not acknowledged, it has been
            // withdrawn already.
            let acked = replicas
                .acknowledge(self.kind, &self.handle.name, field, lease_ms, lease_end)
                .await;
            if let Err(e) = acked {
                if e.is_not_replicated() {
                    pending.disarm();
                }
                return Err(e);
            }
        }
        pending.disarm();
        Ok(Attempt::Acquired(
            self.granted(field, lease_ms, sent_at, token),
        ))
    }

    /// How the withdrawal of an acquisition by a `fresh` field (see
    /// [`attempt`](Lock::attempt)) with a lease of `lease_ms` is retried:
    /// until answered, for as long as what it takes back could last (the
    /// lease, and for a fair lock its queue lease too); for a shared field,
    /// only while the server says it did not run.
    fn withdrawal_retry(&self, lease_ms: u64, fresh: bool) -> release::Retry {
        let lease = Duration::from_millis(lease_ms);
        if !fresh {
            return release::Retry::NotRun(lease);
        }
        let queue_lease = match self.kind.is_queued() {
            true => self.handle.client.watchdog_timeout(),
            false => Duration::ZERO,
        };
        release::Retry::For(lease.max(queue_lease))
    }

    /// A `WRONGTYPE` from an acquire, reworded to say what the lock key
    /// holds (one `TYPE`, on this error path only). A key of the lock's own
    /// type, or gone by then, leaves the error as it was: another of the
    /// lock's keys (its fencing counter, a fair queue) was the wrong type,
    /// or the key changed since.
    async fn wrong_type(&self, conn: &crate::connection::Connection, err: Error) -> Error {
        let (own, expected) = match self.kind.is_string() {
            true => ("string", "a lock of the string layout"),
            false => ("hash", "a lock hash"),
        };
        let name = &self.handle.name;
        match commands::what_key_holds(conn, name, own).await {
            Some(holds) => err.reworded(wrong_type_message("lock", name, Some(&holds), expected)),
            None => err,
        }
    }

    /// The guard of an acquisition Redis granted to `field` with `token`,
    /// its request sent at `sent_at` (a fixed lease counts from then), held
    /// and renewed from now on, and remembered by the current owner scope.
    fn granted(
        &self,
        field: &Arc<str>,
        lease_ms: u64,
        sent_at: Instant,
        token: Option<u64>,
    ) -> LockGuard {
        tracing::debug!(key = %self.handle.name, "lock acquired");
        let grant = Grant {
            field: field.clone(),
            lease_ms,
            mode: self
                .lease
                .map_or(LeaseMode::Watchdog, |lease| LeaseMode::Fixed {
                    expires_at: Expiry::new(sent_at + lease, lease_ms),
                }),
            sent_at,
            token,
            label: self.handle.label.clone(),
        };
        let guard = LockGuard::new(Hold::new(
            self.handle.client.clone(),
            self.kind,
            self.handle.name.clone(),
            grant,
        ));
        scope::remember(self.handle.client.id(), self.kind, &guard);
        guard
    }
}

/// A lock's acquires, as the front drives them: re-entry first, then a
/// [`Waiter`].
impl front::Primitive for Lock {
    type Guard = LockGuard;
    type Contender<'a> = Waiter<'a>;

    const KIND: &'static str = "lock";

    fn handle(&self) -> &Handle {
        &self.handle
    }

    async fn begin(&self, patience: Patience) -> Result<Begin<LockGuard, Waiter<'_>>, Error> {
        let lease_ms = self.prepare()?;
        let fresh_field = || self.kind.owner_field(self.handle.client.new_owner_field());
        let (field, fresh) =
            match scope::reenter(&self.handle.client, self.kind, &self.handle.name).await? {
                Reentry::Reentered(guard) => return Ok(Begin::Held(guard, Outcome::Reentered)),
                Reentry::Acquire => (fresh_field(), true),
                Reentry::Downgrade(field) if patience == Patience::Once => (field, false),
                Reentry::Downgrade(field) => {
                    // The scope's write hold lets its owner read at once; if
                    // it does not, the hold is gone, and waiting as this
                    // owner could not help: a new owner waits.
                    match self.attempt(lease_ms, &field, false, false).await? {
                        Attempt::Acquired(guard) => {
                            return Ok(Begin::Held(guard, Outcome::Acquired));
                        }
                        Attempt::Busy(_) | Attempt::Short(_) => (fresh_field(), true),
                    }
                }
            };
        Ok(Begin::Contend(Waiter {
            place: Withdrawal::queue_place(
                self.handle.client.acquire_conn(),
                self.kind,
                &self.handle.name,
                &field,
                self.withdrawal_retry(lease_ms, fresh),
            ),
            lock: self,
            lease_ms,
            field,
            fresh,
        }))
    }
}

/// A lock's waiting acquire, as the waiting engine drives it.
pub(crate) struct Waiter<'a> {
    lock: &'a Lock,
    lease_ms: u64,
    /// One owner field per acquisition, reused by its attempts, except
    /// after an attempt whose outcome is unknown ([`Contender::restart`]).
    field: Arc<str>,
    /// No other hold shares `field` (it is not an owner scope's).
    fresh: bool,
    /// A fair waiter's place in the queue, given up in the background if
    /// the wait is dropped before the lock is acquired.
    place: Withdrawal,
}

impl Contender for Waiter<'_> {
    type Acquired = LockGuard;

    fn name(&self) -> &str {
        &self.lock.handle.name
    }

    async fn attempt_once(&mut self) -> Result<Attempt<LockGuard>, Error> {
        // Never queued: "no wait" does not join a fair lock's queue, so
        // there is no place to give up.
        self.place.disarm();
        (self.lock)
            .attempt(self.lease_ms, &self.field, false, self.fresh)
            .await
    }

    async fn attempt(&mut self) -> Result<Attempt<LockGuard>, Error> {
        let queued = self.lock.kind.is_queued();
        let outcome = (self.lock)
            .attempt(self.lease_ms, &self.field, queued, self.fresh)
            .await;
        if let Ok(Attempt::Acquired(_)) = &outcome {
            self.place.disarm();
        }
        outcome
    }

    fn channel(&self) -> String {
        self.lock
            .kind
            .wake_channel(&self.lock.handle.name, &self.field)
    }

    fn wakes(&self) -> Wakes {
        self.lock.kind.wakes()
    }

    fn refresh(&self) -> Option<Duration> {
        // Each attempt refreshes a fair waiter's deadline in the queue,
        // which lasts one watchdog timeout.
        let queue_lease = self.lock.handle.client.watchdog_timeout();
        (self.lock.kind.is_queued()).then(|| crate::watchdog::schedule::period(queue_lease))
    }

    fn restart(&mut self) {
        self.field = (self.lock.kind).owner_field(self.lock.handle.client.new_owner_field());
        self.fresh = true;
        let retry = self.lock.withdrawal_retry(self.lease_ms, true);
        self.place.set_field(&self.field, retry);
    }

    async fn give_up(&mut self) {
        if !self.lock.kind.is_queued() {
            return;
        }
        let lock = self.lock;
        let conn = lock.handle.client.acquire_conn();
        let left = release::withdraw(
            conn,
            lock.kind,
            &lock.handle.name,
            &self.field,
            self.lease_ms,
        )
        .await;
        // Failed, the place is given up in the background when dropped.
        if left.is_ok() {
            self.place.disarm();
        }
    }
}
