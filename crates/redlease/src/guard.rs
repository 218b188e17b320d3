//! The guard of a held lock: unlock, ownership checks, loss notification,
//! and the best-effort release on Drop.

use std::fmt;
use std::future::pending;
use std::sync::Arc;

use ::metrics::SharedString;
use redis::aio::ConnectionManager;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};
use tracing::Instrument;

use crate::watchdog::LostSender;
use crate::{Client, Error, ErrorKind, metrics, name, scripts};

/// Why a guard's lock is no longer (or may no longer be) ours; returned by
/// [`LockGuard::lost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LostReason {
    /// The fixed lease ran out by our clock.
    Expired,
    /// A renewal found the key gone or held by another owner (deleted,
    /// force-unlocked, or expired and re-acquired).
    OwnerChanged,
    /// Renewals failed (Redis unreachable or silent) until the lease could
    /// have expired by our clock.
    RenewalFailed,
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LostReason::Expired => "the fixed lease expired",
            LostReason::OwnerChanged => "the lock was deleted or taken by another owner",
            LostReason::RenewalFailed => "renewals failed until the lease could have expired",
        })
    }
}

#[derive(Clone, Copy)]
pub(crate) enum LeaseMode {
    /// Renewed by the client's watchdog.
    Watchdog,
    /// Never renewed; gone at `expires_at` by our clock (the acquire was sent
    /// before this instant minus the lease, so Redis expires it no earlier).
    Fixed { expires_at: Instant },
}

/// What a successful acquire script returned, with what the guard needs to
/// know about the request.
pub(crate) struct Grant {
    /// The owner field the script wrote.
    pub(crate) field: Arc<str>,
    pub(crate) lease_ms: u64,
    pub(crate) mode: LeaseMode,
    /// When the acquire request was sent: the lease started no earlier.
    pub(crate) sent_at: Instant,
    pub(crate) token: u64,
    /// The lock's metrics label.
    pub(crate) label: SharedString,
}

/// A held lock. Release it with [`unlock`](LockGuard::unlock).
///
/// Dropping a guard without `unlock` releases the lock in the background on
/// the current Tokio runtime: it never blocks and never panics, but nobody
/// learns whether the release worked. With no runtime (dropped on a plain
/// thread), the guard only stops the watchdog, and the lock expires after its
/// lease.
#[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock().await`"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    client: Client,
    kind: Kind,
    name: Arc<str>,
    /// `<client-id>:<n>`, unique to this acquisition.
    field: Arc<str>,
    /// Restored by the release script when other holds of this field remain.
    lease_ms: u64,
    mode: LeaseMode,
    /// Set by the watchdog; a fixed lease is judged by its expiry instead.
    lost: LostSender,
    /// Shared with the guards that re-entered this hold in an owner scope;
    /// `None` once this guard let go of it.
    registration: Option<Arc<Registration>>,
    /// False once the release reply arrived: Drop has nothing left to do.
    armed: bool,
    /// Issued by the acquire script; see [`LockGuard::fencing_token`].
    token: u64,
    /// The lock's metrics label, for a refused unlock.
    label: SharedString,
    /// Whether Drop's release counts a refusal ([`metrics::UNLOCK_NOT_OWNER`]):
    /// not when it retries an `unlock` whose reply was lost.
    count_refusal: bool,
}

impl LockGuard {
    pub(crate) fn new(client: Client, kind: Kind, name: Arc<str>, grant: Grant) -> LockGuard {
        let Grant {
            field,
            lease_ms,
            mode,
            sent_at,
            token,
            label,
        } = grant;
        let lost: LostSender = Arc::new(watch::channel(None).0);
        let watchdog_id = match mode {
            LeaseMode::Watchdog => Some(client.inner.watchdog.register(
                name.clone(),
                field.clone(),
                label.clone(),
                sent_at,
                lost.clone(),
            )),
            LeaseMode::Fixed { .. } => None,
        };
        metrics::hold_started(&label);
        let registration = Arc::new(Registration {
            client: client.clone(),
            watchdog_id,
            label: label.clone(),
            since: Instant::now(),
            mode,
        });
        LockGuard {
            client,
            kind,
            name,
            field,
            lease_ms,
            mode,
            lost,
            registration: Some(registration),
            armed: true,
            token,
            label,
            count_refusal: true,
        }
    }

    /// A guard for one more hold of `held`, re-entered in an owner scope:
    /// same owner field, lease, loss signal and fencing token, and renewed
    /// by the same watchdog registration, which lasts until the last guard
    /// of the hold lets go.
    pub(crate) fn reentered(client: Client, kind: Kind, name: Arc<str>, held: Held) -> LockGuard {
        LockGuard {
            client,
            kind,
            name,
            field: held.field,
            lease_ms: held.lease_ms,
            mode: held.mode,
            lost: held.lost,
            label: held.registration.label.clone(),
            registration: Some(held.registration),
            armed: true,
            token: held.token,
            count_refusal: true,
        }
    }

    /// What a re-entry in an owner scope needs to share this guard's hold;
    /// `None` once the guard let go of it.
    pub(crate) fn held(&self) -> Option<Held> {
        Some(Held {
            field: self.field.clone(),
            lease_ms: self.lease_ms,
            mode: self.mode,
            lost: self.lost.clone(),
            registration: self.registration.clone()?,
            token: self.token,
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner field this guard holds in the lock hash
    /// (`<client-id>:<n>`), as Redisson tools show it.
    pub fn owner(&self) -> &str {
        &self.field
    }

    /// The fencing token of this acquisition: strictly greater than every
    /// token issued before it for this lock name, by any redlease client or
    /// Redisson `RFencedLock`.
    ///
    /// A lock alone cannot stop a holder that paused past its lease (a long
    /// GC or swap, a stopped process) from writing after the next holder has
    /// started. Pass the token with every write to the protected resource,
    /// and let the resource reject a token lower than the highest it has
    /// seen, for example
    /// `UPDATE orders SET status = $2, fence = $3 WHERE id = $1 AND fence <= $3`.
    /// A read-modify-write needs two statements, a claim of the row with the
    /// token and a write conditioned on the claim; the crate's `fenced`
    /// example shows that pattern on PostgreSQL, and the README says why.
    ///
    /// Tokens are the server's clock in microseconds, or one more than the
    /// last token when that is larger, so they keep increasing after the
    /// counter key (`redisson_lock_token:{name}`) expires or Redis restarts
    /// empty, as long as the Redis server's clock does not step back. See
    /// [`ClientBuilder::fencing_counter_ttl`](crate::ClientBuilder::fencing_counter_ttl).
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// Releases the lock, checking that it is still ours. Unlocking stops the
    /// watchdog for this lock before the release is sent.
    ///
    /// # Errors
    ///
    /// An error for which [`is_not_owner`](Error::is_not_owner) is true when
    /// the lock had already expired, been deleted or been taken by another
    /// owner (whose hold is left untouched); connection and server errors as
    /// they come. After a time-out or a connection error the release may not
    /// have run, so the guard's Drop sends it once more in the background;
    /// failing that, the lock expires at the end of its lease (the watchdog
    /// has stopped renewing it).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the guard, so the release is still sent, in
    /// the background, as for any dropped guard.
    pub async fn unlock(mut self) -> Result<(), Error> {
        self.stop_watchdog();
        let span =
            tracing::debug_span!("unlock", key = %self.name, outcome = tracing::field::Empty);
        let result = release(
            &self.client.inner.conn,
            self.kind,
            &self.name,
            &self.field,
            self.lease_ms,
        )
        .instrument(span.clone())
        .await;
        let outcome = match &result {
            Ok(()) => "released",
            Err(e) if e.is_not_owner() => {
                metrics::unlock_not_owner(&self.label);
                "not_owner"
            }
            Err(_) => "error",
        };
        span.record("outcome", outcome);
        match &result {
            // Only a lost reply leaves the release undone for sure; then
            // Drop tries once more in the background. If the first one did
            // run, the retry finds nothing: no refusal to count then.
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Connection) => {
                self.count_refusal = false;
            }
            _ => self.armed = false,
        }
        result
    }

    /// Asks Redis whether this guard still holds the lock.
    ///
    /// # Errors
    ///
    /// Connection and server errors. A key that now holds a non-lock value is
    /// reported as not held.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn is_held(&self) -> Result<bool, Error> {
        let mut conn = self.client.inner.conn.clone();
        let reply: Result<bool, _> = redis::cmd("HEXISTS")
            .arg(&*self.name)
            .arg(&*self.field)
            .query_async(&mut conn)
            .await;
        match reply.map_err(|e| Error::from(e).with_key(&self.name)) {
            Err(e) if e.is_wrong_type() => Ok(false),
            other => other,
        }
    }

    /// Resolves when the library knows or must assume that the lock is no
    /// longer ours, with the reason:
    ///
    /// * watchdog mode: a renewal found the key gone or held by another owner
    ///   ([`LostReason::OwnerChanged`]), or renewals failed until the lease
    ///   could have expired by the local monotonic clock
    ///   ([`LostReason::RenewalFailed`]);
    /// * fixed lease: the lease ran out ([`LostReason::Expired`]).
    ///
    /// Pending for as long as the lock is held. Use it to stop work that
    /// must not outlive the lock, for example in `tokio::select!`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the loss is recorded in the guard, so a later call (or
    /// [`is_lost`](LockGuard::is_lost)) still sees it.
    pub async fn lost(&self) -> LostReason {
        let mut rx = self.lost.subscribe();
        let signalled = async move {
            // Copy the value out: the borrow must not live across an await.
            let reason = rx.wait_for(Option::is_some).await.map(|r| *r);
            match reason {
                Ok(reason) => reason.unwrap_or(LostReason::OwnerChanged),
                // The guard owns a sender, so the channel cannot close.
                Err(_) => pending().await,
            }
        };
        match self.mode {
            LeaseMode::Watchdog => signalled.await,
            LeaseMode::Fixed { expires_at } => tokio::select! {
                reason = signalled => reason,
                _ = sleep_until(expires_at) => LostReason::Expired,
            },
        }
    }

    /// Returns true if [`lost`](LockGuard::lost) would resolve now, or is
    /// about to: a watchdog-mode lock whose deadline has passed counts as
    /// lost at once, even if the watchdog task has not yet run to report it
    /// (as after the process was paused past its lease).
    pub fn is_lost(&self) -> bool {
        lost_now(
            &self.client,
            self.mode,
            &self.lost,
            self.registration.as_deref(),
        )
    }

    /// Lets go of the watchdog registration; renewal stops if no other
    /// guard of an owner scope shares it.
    fn stop_watchdog(&mut self) {
        self.registration = None;
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.stop_watchdog();
        if self.armed {
            release_in_background(
                &self.client.inner.conn,
                self.kind,
                &self.name,
                &self.field,
                self.lease_ms,
                self.count_refusal.then(|| self.label.clone()),
            );
        }
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.name)
            .field("owner", &self.field)
            .field("fencing_token", &self.token)
            .field(
                "mode",
                &match self.mode {
                    LeaseMode::Watchdog => "watchdog",
                    LeaseMode::Fixed { .. } => "fixed lease",
                },
            )
            .finish_non_exhaustive()
    }
}

/// One hold's watchdog registration (none for a fixed lease), shared by
/// the guards of an owner scope that re-entered it; renewal stops when the
/// last of them lets go.
pub(crate) struct Registration {
    client: Client,
    watchdog_id: Option<u64>,
    /// The hold's metrics label and start, for the hold-time histogram when
    /// the last guard lets go.
    label: SharedString,
    since: Instant,
    /// A fixed lease that ran out before the hold ended is counted as lost
    /// here: nothing watches its expiry while it is held.
    mode: LeaseMode,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(id) = self.watchdog_id {
            self.client.inner.watchdog.deregister(id);
        }
        let now = Instant::now();
        metrics::hold_ended(&self.label, now - self.since);
        if matches!(self.mode, LeaseMode::Fixed { expires_at } if now >= expires_at) {
            metrics::lost(&self.label, LostReason::Expired);
        }
    }
}

/// A hold as an owner scope shares it with the guards that re-enter it.
pub(crate) struct Held {
    pub(crate) field: Arc<str>,
    pub(crate) lease_ms: u64,
    pub(crate) mode: LeaseMode,
    pub(crate) lost: LostSender,
    pub(crate) registration: Arc<Registration>,
    pub(crate) token: u64,
}

impl Held {
    /// Whether the hold is known or must be assumed lost, as
    /// [`LockGuard::is_lost`] would answer for its guards: such a hold is not
    /// re-entered, even while its key is still in Redis.
    pub(crate) fn is_lost(&self, client: &Client) -> bool {
        lost_now(client, self.mode, &self.lost, Some(&self.registration))
    }
}

/// Whether a hold is lost by now: a fixed lease past its expiry, a watchdog
/// lock past its deadline (even before the watchdog task has run to report
/// it), or a loss the watchdog signalled.
fn lost_now(
    client: &Client,
    mode: LeaseMode,
    lost: &LostSender,
    registration: Option<&Registration>,
) -> bool {
    let now = Instant::now();
    // The deadline before the signal: the watchdog removes an overdue entry
    // and signals in one step, so read the other way round both could be
    // missed.
    let overdue = registration
        .and_then(|r| r.watchdog_id)
        .is_some_and(|id| client.inner.watchdog.overdue(id, now));
    let expired = matches!(mode, LeaseMode::Fixed { expires_at } if now >= expires_at);
    expired || overdue || lost.borrow().is_some()
}

/// Which protocol a lock uses: the plain lock, or the fair lock with its
/// waiting queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    Fair,
}

/// Runs the owner-checked release script once.
async fn release(
    conn: &ConnectionManager,
    kind: Kind,
    key: &str,
    field: &str,
    lease_ms: u64,
) -> Result<(), Error> {
    let mut conn = conn.clone();
    let mut call = match kind {
        Kind::Plain => {
            let mut call = scripts::RELEASE.prepare_invoke();
            call.key(key).key(name::channel(key));
            call
        }
        Kind::Fair => {
            let mut call = scripts::FAIR_RELEASE.prepare_invoke();
            call.key(key)
                .key(name::queue_key(key))
                .key(name::timeout_key(key));
            call
        }
    };
    call.arg(scripts::UNLOCK_MESSAGE).arg(lease_ms).arg(field);
    if kind == Kind::Fair {
        call.arg(name::channel(key));
    }
    let reply = call
        .invoke_async::<Option<i64>>(&mut conn)
        .await
        .map_err(|e| Error::from(e).with_key(key))?;
    tracing::debug!(key, released = ?reply, "unlock");
    match reply {
        Some(_) => Ok(()),
        None => Err(Error::not_owner(key)),
    }
}

/// Removes every trace of `field` from a fair lock: its queue entry and, if
/// it holds the lock, its hold; wakes the next waiter if that frees the lock.
pub(crate) async fn abandon_fair(
    conn: &ConnectionManager,
    key: &str,
    field: &str,
) -> Result<(), Error> {
    let mut conn = conn.clone();
    scripts::FAIR_ABANDON
        .key(key)
        .key(name::queue_key(key))
        .key(name::timeout_key(key))
        .arg(field)
        .arg(name::channel(key))
        .arg(scripts::UNLOCK_MESSAGE)
        .invoke_async::<i64>(&mut conn)
        .await
        .map(drop)
        .map_err(|e| Error::from(e).with_key(key))
}

/// Takes back an acquisition that must not stand (cancelled, or not
/// acknowledged by replicas): releases the hold of `field`, and for a fair
/// lock also removes it from the queue. `conn` must be the connection the
/// acquire went out on, so that the withdrawal reaches Redis after it.
pub(crate) async fn withdraw(
    conn: &ConnectionManager,
    kind: Kind,
    key: &str,
    field: &str,
    lease_ms: u64,
) -> Result<(), Error> {
    match kind {
        Kind::Plain => release(conn, kind, key, field, lease_ms).await,
        Kind::Fair => abandon_fair(conn, key, field).await,
    }
}

/// Sends [`withdraw`] on the current runtime without waiting for it; does nothing
/// without a runtime. Used by Drop and by cancelled acquires. A guard's
/// release passes its metrics label in `guard_label`, so that a refusal is
/// counted as an unlock of a lock no longer ours; an acquire's withdrawal
/// passes `None` (its hold may never have existed).
pub(crate) fn release_in_background(
    conn: &ConnectionManager,
    kind: Kind,
    key: &Arc<str>,
    field: &Arc<str>,
    lease_ms: u64,
    guard_label: Option<SharedString>,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::debug!(key = %key, "no runtime to release in; the lock will expire after its lease");
        return;
    };
    let (conn, key, field) = (conn.clone(), key.clone(), field.clone());
    // A runtime that is shutting down drops the task unpolled; the lease
    // then frees the lock.
    drop(handle.spawn(async move {
        match withdraw(&conn, kind, &key, &field, lease_ms).await {
            Ok(()) => tracing::debug!(key = %key, "released in the background"),
            Err(e) if e.is_not_owner() => {
                if let Some(label) = guard_label {
                    metrics::unlock_not_owner(&label);
                }
            }
            Err(e) => tracing::warn!(key = %key, error = %e, "background release failed; the lock will expire after its lease"),
        }
    }));
}
