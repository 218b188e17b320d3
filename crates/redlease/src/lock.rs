//! The lock handle and the acquire loop.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use ::metrics::SharedString;
use redis::ScriptInvocation;
use redis::aio::ConnectionManager;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::client::Replicas;
use crate::guard::{
    Grant, Kind, LeaseMode, LockGuard, abandon_fair, release_in_background, withdraw,
};
use crate::metrics::{self, Outcome};
use crate::pubsub::{Baton, Subscription};
use crate::{Client, Error, name, scope, scripts, wait};

/// A handle to one named lock; made by [`Client::lock`].
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
#[derive(Clone, Debug)]
pub struct Lock {
    client: Client,
    kind: Kind,
    name: Arc<str>,
    /// `None`: watchdog mode.
    lease: Option<Duration>,
    /// [`metrics::lock_label`] of the name, made once.
    label: SharedString,
}

/// What one acquire attempt found.
enum Attempt {
    Acquired(LockGuard),
    /// Held by someone else, with this much time to live (`None`: the key
    /// has no expiry).
    Busy(Option<Duration>),
}

impl Lock {
    pub(crate) fn new(client: Client, kind: Kind, name: String) -> Lock {
        Lock {
            client,
            kind,
            label: metrics::shared_label(&name),
            name: name.into(),
            lease: None,
        }
    }

    /// Selects a fixed lease: the lock expires `lease` after it is acquired
    /// and is never renewed. A lease under 1 ms is rejected when the lock is
    /// used.
    pub fn lease(mut self, lease: Duration) -> Lock {
        self.lease = Some(lease);
        self
    }

    /// The lock's name, which is also its Redis key.
    pub fn name(&self) -> &str {
        &self.name
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
    pub async fn try_lock(&self) -> Result<LockGuard, Error> {
        self.observed(async {
            let lease_ms = self.prepare()?;
            if let Some(guard) = self.reenter().await? {
                return Ok((guard, Outcome::Reentered));
            }
            let started = Instant::now();
            let field = self.client.inner.new_owner_field().into();
            match self.attempt(lease_ms, &field, false).await? {
                Attempt::Acquired(guard) => Ok((guard, Outcome::Acquired)),
                Attempt::Busy(_) => Err(Error::busy(&self.name, started.elapsed())),
            }
        })
        .await
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
    pub async fn try_lock_for(&self, wait: Duration) -> Result<LockGuard, Error> {
        if wait.is_zero() {
            // For a fair lock this also keeps "no wait" from joining the
            // queue.
            return self.try_lock().await;
        }
        self.observed(async {
            let lease_ms = self.prepare()?;
            self.acquire_loop(lease_ms, Some(wait)).await
        })
        .await
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
    pub async fn lock(&self) -> Result<LockGuard, Error> {
        self.observed(async {
            let lease_ms = self.prepare()?;
            self.acquire_loop(lease_ms, None).await
        })
        .await
    }

    /// Runs an acquire call in an `acquire` span and records its outcome
    /// and duration ([`metrics::ACQUIRES`], [`metrics::WAIT_SECONDS`]),
    /// `cancelled` if the call is dropped before it ends.
    async fn observed(
        &self,
        call: impl Future<Output = Result<(LockGuard, Outcome), Error>>,
    ) -> Result<LockGuard, Error> {
        let span = tracing::debug_span!(
            "acquire",
            key = %self.name,
            outcome = tracing::field::Empty,
        );
        let mut observation = Observation {
            label: &self.label,
            started: Instant::now(),
            outcome: Outcome::Cancelled,
        };
        let result = call.instrument(span.clone()).await;
        let (result, outcome) = match result {
            Ok((guard, outcome)) => (Ok(guard), outcome),
            Err(e) if e.is_busy() => (Err(e), Outcome::Busy),
            Err(e) => (Err(e), Outcome::Error),
        };
        observation.outcome = outcome;
        span.record("outcome", outcome.as_str());
        result
    }

    /// Validates the input and returns the lease to request, in ms.
    fn prepare(&self) -> Result<u64, Error> {
        name::validate(&self.name)?;
        match self.lease {
            Some(lease) => name::lease_millis("lease", lease),
            None => name::lease_millis("watchdog timeout", self.client.inner.watchdog_timeout),
        }
        .map_err(|e| e.with_key(&self.name))
    }

    async fn acquire_loop(
        &self,
        lease_ms: u64,
        wait: Option<Duration>,
    ) -> Result<(LockGuard, Outcome), Error> {
        if let Some(guard) = self.reenter().await? {
            return Ok((guard, Outcome::Reentered));
        }
        let started = Instant::now();
        // A wait too long to represent as an instant is no wait limit.
        let deadline = wait.and_then(|w| started.checked_add(w));
        // One owner field per acquisition, reused by its attempts, except
        // after an attempt whose outcome is unknown (see below).
        let mut field: Arc<str> = self.client.inner.new_owner_field().into();
        let fair = self.kind == Kind::Fair;
        // A fair waiter must attempt again at least this often, whatever it
        // waits for: each attempt refreshes its deadline in the queue.
        let refresh = fair.then(|| self.client.inner.watchdog_timeout / 3);
        // A fair waiter's place in the queue, given up if this future is
        // dropped before the lock is acquired.
        let mut ticket = QueueTicket {
            lock: fair.then_some(self),
            field: field.clone(),
        };
        let mut subscription: Option<(Subscription, bool)> = None;
        let mut baton: Option<Baton> = None;
        let mut backoff = 0u32;
        loop {
            let outcome = self.attempt(lease_ms, &field, fair).await;
            // The wake-up that led here is used once the attempt ran; after
            // an error it may not have, and dropping the baton hands the
            // wake-up to the next local waiter.
            if let (Some(baton), Ok(_)) = (baton.take(), &outcome) {
                baton.used();
            }
            let (holder_ttl, transient) = match outcome {
                Ok(Attempt::Acquired(guard)) => {
                    ticket.lock = None;
                    return Ok((guard, Outcome::Acquired));
                }
                Ok(Attempt::Busy(ttl)) => (ttl, None),
                Err(e) if e.is_transient() => {
                    // The attempt may have taken the lock (or a place in the
                    // queue) under this field, and its release is on its way
                    // in the background: a later attempt must not be that
                    // release's victim.
                    field = self.client.inner.new_owner_field().into();
                    ticket.field = field.clone();
                    if fair {
                        subscription = None;
                    }
                    (None, Some(e))
                }
                Err(e) => return Err(e),
            };
            let remaining = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        if fair
                            && abandon_fair(self.client.inner.acquire_conn(), &self.name, &field)
                                .await
                                .is_ok()
                        {
                            ticket.lock = None;
                        }
                        return Err(
                            transient.unwrap_or_else(|| Error::busy(&self.name, now - started))
                        );
                    }
                    Some(d - now)
                }
                None => None,
            };
            if transient.is_some() {
                wait::pause_after_error(backoff, remaining).await;
                backoff = backoff.saturating_add(1);
                continue;
            }
            let (sub, subscribed) = match &mut subscription {
                // A subscription that failed has since been retried and
                // works: retry once, then wait on it.
                Some(joined) if !joined.1 && joined.0.is_ready() => {
                    joined.1 = true;
                    continue;
                }
                Some(joined) => (&joined.0, joined.1),
                None => {
                    // Subscribe, then retry once before sleeping: a release
                    // between the first attempt and the subscription is
                    // caught by the retry. A fair waiter listens on a channel
                    // of its own, on which it is woken when its turn comes.
                    let channel = if fair {
                        name::waiter_channel(&self.name, &field)
                    } else {
                        name::channel(&self.name)
                    };
                    let sub = self.client.inner.subscriptions.join(channel);
                    // Already subscribed for other local waiters: a release
                    // since our attempt has woken one of them or left a
                    // stored wake-up for us, so no retry is needed.
                    let already = sub.is_ready();
                    let subscribed = already || sub.ready(cap(remaining, refresh)).await;
                    subscription = Some((sub, subscribed));
                    if subscribed && !already {
                        continue;
                    }
                    let joined = subscription.as_ref().expect("just set");
                    (&joined.0, joined.1)
                }
            };
            let holder_expiry = holder_ttl.map(|t| t + Duration::from_millis(1));
            let sleep = cap(cap(holder_expiry, remaining), refresh);
            let span =
                tracing::debug_span!("wait", key = %self.name, woken = tracing::field::Empty);
            if subscribed {
                baton = sub.wait(sleep).instrument(span.clone()).await;
                span.record("woken", baton.is_some());
            } else {
                wait::pause(backoff, holder_ttl, sleep)
                    .instrument(span)
                    .await;
                backoff = backoff.saturating_add(1);
            }
        }
    }

    /// Runs the acquire script once.
    ///
    /// For a fair lock, `enqueue` makes a failed attempt join the queue (or
    /// refresh its place in it).
    async fn attempt(
        &self,
        lease_ms: u64,
        field: &Arc<str>,
        enqueue: bool,
    ) -> Result<Attempt, Error> {
        let inner = &self.client.inner;
        // Armed until we know the outcome: if this future is dropped while
        // the request may be in Redis, the field is released behind it.
        let mut pending = PendingAcquire {
            client: Some(self.client.clone()),
            kind: self.kind,
            name: self.name.clone(),
            field: field.clone(),
            lease_ms,
        };
        let replicas = inner.replicas.as_ref();
        let mut conn = inner.acquire_conn().clone();
        let call = self.acquire_call(lease_ms, field, enqueue);
        let sent_at = Instant::now();
        metrics::acquire_attempt(&self.label);
        let reply = call.invoke_async::<(i64, i64)>(&mut conn).await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(err) => {
                // An error reply from Redis means the script refused or never
                // ran. Anything else (no reply, a late reply, a reply we could
                // not parse) leaves the outcome unknown, so the pending
                // release stays armed.
                if err.code().is_some() {
                    pending.disarm();
                }
                let err = Error::from(err).with_key(&self.name);
                tracing::debug!(key = %self.name, error = %err, "acquire failed");
                return Err(err);
            }
        };
        let (1, token) = reply else {
            pending.disarm();
            return Ok(Attempt::Busy(
                u64::try_from(reply.1).ok().map(Duration::from_millis),
            ));
        };
        if let Some(replicas) = replicas {
            // Still armed: cancelled or failed here, the acquisition is
            // withdrawn in the background. Not acknowledged, it has been
            // withdrawn already.
            let lease_end = self.lease.map(|lease| sent_at + lease);
            match self
                .await_replicas(replicas, &mut conn, field, lease_ms, lease_end)
                .await
            {
                Ok(()) => {}
                Err(e) if e.is_not_replicated() => {
                    pending.disarm();
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        pending.disarm();
        let mode = match self.lease {
            Some(lease) => LeaseMode::Fixed {
                expires_at: sent_at + lease,
            },
            None => LeaseMode::Watchdog,
        };
        tracing::debug!(key = %self.name, "lock acquired");
        let guard = LockGuard::new(
            self.client.clone(),
            self.kind,
            self.name.clone(),
            Grant {
                field: field.clone(),
                lease_ms,
                mode,
                sent_at,
                // fence() never issues less than the server clock in
                // microseconds, which is positive.
                token: token as u64,
                label: self.label.clone(),
            },
        );
        scope::remember(self.client.id(), &guard);
        Ok(Attempt::Acquired(guard))
    }

    /// In an owner scope that holds this lock: re-enters the hold (see
    /// [`crate::scope`]). `None` outside a scope, or when the scope's hold
    /// was lost, so the caller acquires anew.
    async fn reenter(&self) -> Result<Option<LockGuard>, Error> {
        let Some(held) = scope::lookup(self.client.id(), &self.name) else {
            return Ok(None);
        };
        // Lost by our own reckoning, it may still be in Redis for a moment
        // (renewed too late, or a fixed lease by our clock): re-entering
        // would hand out a guard that nothing renews.
        if held.is_lost(&self.client) {
            return Ok(None);
        }
        let mut call = scripts::REENTER.prepare_invoke();
        call.key(&*self.name).arg(held.lease_ms).arg(&*held.field);
        let conn = self.client.inner.conn.clone();
        let undo = Undo {
            conn: conn.clone(),
            kind: self.kind,
            name: self.name.clone(),
            field: held.field.clone(),
            lease_ms: held.lease_ms,
        };
        // Run to completion in a task of its own: the owner field is shared
        // with the scope's other guards, so a cancelled caller must neither
        // leave the count raised nor release blindly (if the script never
        // ran, that would take away a hold of another guard). Whoever last
        // sees a successful reply that nobody took undoes it: the task, or
        // the dropped receiver.
        let (tx, rx) = oneshot::channel();
        let task_undo = undo.clone();
        drop(tokio::spawn(async move {
            let mut conn = conn;
            let reply = call.invoke_async::<i64>(&mut conn).await;
            if let Err(Ok(1)) = tx.send(reply) {
                task_undo.run();
            }
        }));
        let mut waiting = ReentryReply {
            rx,
            undo: Some(undo),
        };
        let reply = (&mut waiting.rx).await;
        waiting.undo = None;
        let reply = reply.map_err(|_| {
            Error::from(redis::RedisError::from(std::io::Error::other(
                "the runtime stopped during a re-entry",
            )))
        })?;
        // An error may come after the script ran (a lost reply): the count
        // may then stay raised, and the key outlives the scope's last release
        // by at most one lease, as a crashed holder's would.
        match reply.map_err(|e| Error::from(e).with_key(&self.name))? {
            1 => {
                tracing::debug!(key = %self.name, "lock re-entered");
                Ok(Some(LockGuard::reentered(
                    self.client.clone(),
                    self.kind,
                    self.name.clone(),
                    held,
                )))
            }
            // The scope's hold is gone: expired, or taken over.
            _ => Ok(None),
        }
    }

    /// The acquire script call: for a fair lock, `enqueue` makes a failed
    /// attempt join the queue (or refresh its place in it).
    fn acquire_call(&self, lease_ms: u64, field: &str, enqueue: bool) -> ScriptInvocation<'static> {
        match self.kind {
            Kind::Plain => {
                let mut call = scripts::ACQUIRE.prepare_invoke();
                call.key(&*self.name)
                    .key(name::token_key(&self.name))
                    .arg(lease_ms)
                    .arg(field)
                    .arg(self.client.inner.fencing_ttl_ms);
                call
            }
            Kind::Fair => {
                let mut call = scripts::FAIR_ACQUIRE.prepare_invoke();
                call.key(&*self.name)
                    .key(name::queue_key(&self.name))
                    .key(name::timeout_key(&self.name))
                    .key(name::token_key(&self.name))
                    .arg(lease_ms)
                    .arg(field)
                    .arg(self.client.inner.watchdog_timeout.as_millis() as u64)
                    .arg(name::channel(&self.name))
                    .arg(u8::from(enqueue))
                    .arg(scripts::UNLOCK_MESSAGE)
                    .arg(self.client.inner.fencing_ttl_ms);
                call
            }
        }
    }

    /// Waits for `replicas.count` replicas to acknowledge the acquisition
    /// just made on `conn`; if too few do, or a fixed lease ends at
    /// `lease_end` before they do, withdraws it and fails.
    async fn await_replicas(
        &self,
        replicas: &Replicas,
        conn: &mut ConnectionManager,
        field: &str,
        lease_ms: u64,
        lease_end: Option<Instant>,
    ) -> Result<(), Error> {
        let acked: i64 = redis::cmd("WAIT")
            .arg(replicas.count)
            .arg(replicas.wait.as_millis() as u64)
            .query_async(conn)
            .await
            .map_err(|e| Error::from(e).with_key(&self.name))?;
        // Acknowledged after a fixed lease ran out, the lock may be someone
        // else's already: as good as not acknowledged.
        let in_time = lease_end.is_none_or(|end| Instant::now() < end);
        if acked >= i64::from(replicas.count) && in_time {
            return Ok(());
        }
        tracing::warn!(key = %self.name, acked, required = replicas.count, "acquire not acknowledged by enough replicas; releasing it");
        match withdraw(conn, self.kind, &self.name, field, lease_ms).await {
            // Not ours any more means gone already (a lease shorter than the
            // wait): withdrawn all the same.
            Err(e) if !e.is_not_owner() => return Err(e),
            _ => {}
        }
        Err(Error::not_replicated(
            &self.name,
            acked,
            replicas.count,
            replicas.wait,
        ))
    }
}

/// Records an acquire call's outcome when dropped: at its end, or, if the
/// caller dropped the call first, as cancelled.
struct Observation<'a> {
    label: &'a SharedString,
    started: Instant,
    outcome: Outcome,
}

impl Drop for Observation<'_> {
    fn drop(&mut self) {
        metrics::acquire_outcome(self.label, self.outcome, self.started.elapsed());
    }
}

/// The smaller of two optional limits (`None`: no limit).
fn cap(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Releases an acquire attempt whose outcome is unknown when it is dropped.
struct PendingAcquire {
    /// `None` once disarmed.
    client: Option<Client>,
    kind: Kind,
    name: Arc<str>,
    field: Arc<str>,
    lease_ms: u64,
}

impl PendingAcquire {
    fn disarm(&mut self) {
        self.client = None;
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            release_in_background(
                client.inner.acquire_conn(),
                self.kind,
                &self.name,
                &self.field,
                self.lease_ms,
                None,
            );
        }
    }
}

/// A fair waiter's place in the queue: dropped while armed (the wait was
/// cancelled), it leaves the queue in the background.
struct QueueTicket<'a> {
    /// The fair lock waited on; `None` for a plain lock or once acquired.
    lock: Option<&'a Lock>,
    field: Arc<str>,
}

impl Drop for QueueTicket<'_> {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            release_in_background(
                lock.client.inner.acquire_conn(),
                Kind::Fair,
                &lock.name,
                &self.field,
                0,
                None,
            );
        }
    }
}

/// Takes back one re-entry of a shared owner field.
#[derive(Clone)]
struct Undo {
    conn: ConnectionManager,
    kind: Kind,
    name: Arc<str>,
    field: Arc<str>,
    lease_ms: u64,
}

impl Undo {
    fn run(&self) {
        release_in_background(
            &self.conn,
            self.kind,
            &self.name,
            &self.field,
            self.lease_ms,
            None,
        );
    }
}

/// The caller's end of a re-entry. Dropped before its reply was taken (the
/// caller was cancelled), it closes the channel, so that from then on the
/// task's send fails and the task undoes a success, and undoes a success
/// that arrived before.
struct ReentryReply {
    rx: oneshot::Receiver<Result<i64, redis::RedisError>>,
    /// `None` once the reply was taken.
    undo: Option<Undo>,
}

impl Drop for ReentryReply {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            self.rx.close();
            if let Ok(Ok(1)) = self.rx.try_recv() {
                undo.run();
            }
        }
    }
}
