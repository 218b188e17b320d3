//! [`PermitGuard`]: one acquired permit, its renewal, its release, and the
//! release of an acquire whose outcome is unknown ([`Pending`]).
//!
//! A permit is no hold on a lock hash (it has an id, not an owner field),
//! so it has a guard of its own rather than a [`crate::hold::Hold`]; but a
//! renewed permit is renewed as holds are, by the client's watchdog
//! ([`crate::watchdog`]), in batches of its own kind.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use super::{expect_released, to_hex};
use crate::connection::Connection;
use crate::count;
use crate::error::Error;
use crate::lost::{LostReason, LostSignal};
use crate::scripts::Latch;
use crate::scripts::expirable::{self as scripts, Release};
use crate::shared::{Handle, Shared};
use crate::watchdog::Kept;

/// How a permit's lease is kept: never both.
pub(super) enum Lease {
    /// Renewed by the client's watchdog while the guard lives, with the
    /// watchdog's timeout as the lease.
    Renewed {
        /// When the acquire was sent: the lease started no earlier.
        sent_at: Instant,
    },
    /// Never renewed; gone at `expires_at` by our clock (the acquire was
    /// sent before `expires_at` minus the lease, so Redis, whose clock
    /// scored it, expires it no earlier).
    Fixed { expires_at: Instant },
}

/// One acquired permit of an
/// [`ExpirableSemaphore`](crate::ExpirableSemaphore). Release it with
/// [`release`](PermitGuard::release).
///
/// Dropping a guard without `release` stops its renewal and releases the
/// permit in the background on the current Tokio runtime: it never blocks
/// and never panics, but nobody learns whether the release worked. With no
/// runtime (dropped on a plain thread) it only stops the renewal, and the
/// permit comes back to the pool when its lease ends.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let exports = client.expirable_semaphore("doc:expirable:guard");
/// exports.try_set_total(2).await?;
/// let permit = exports.acquire().await?; // renewed while it lives
/// // ... the export ...
/// permit.release().await?;
/// assert_eq!(exports.available_permits().await?, 2);
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the guard releases the permit at once; hold it for the work and call `release().await`"]
#[clippy::has_significant_drop]
pub struct PermitGuard {
    client: Shared,
    name: Arc<str>,
    /// The id in Redis: raw bytes, as Redisson's scripts store it.
    raw: [u8; 16],
    /// The id as Redisson's API shows it: 32 lowercase hex digits.
    id: String,
    /// When a fixed lease ends, moved by `extend`; `None` when renewed.
    expires_at: Option<Mutex<Instant>>,
    /// A renewed permit's id in the watchdog's registry; `None` for a
    /// fixed lease, and once the renewal stopped.
    watchdog_id: Option<u64>,
    /// Set by the watchdog.
    lost: LostSignal,
    /// False once a release reply arrived: Drop has nothing left to do.
    armed: bool,
    /// The release's request id, made when it is first sent and kept for
    /// Drop's repeat: the record it names makes a repeat answer as the
    /// first did (#37).
    release_request: Option<Arc<str>>,
}

impl PermitGuard {
    pub(super) fn new(handle: &Handle, raw: [u8; 16], lease: Lease) -> PermitGuard {
        let lost = LostSignal::new();
        let (client, name) = (handle.client.clone(), handle.name.clone());
        let (expires_at, watchdog_id) = match lease {
            Lease::Fixed { expires_at } => (Some(Mutex::new(expires_at)), None),
            Lease::Renewed { sent_at } => {
                let id = client.watchdog().register(
                    name.clone(),
                    Kept::Permit(raw),
                    handle.label.clone(),
                    sent_at,
                    lost.clone(),
                );
                (None, Some(id))
            }
        };
        PermitGuard {
            client,
            name,
            raw,
            id: to_hex(&raw),
            expires_at,
            watchdog_id,
            lost,
            armed: true,
            release_request: None,
        }
    }

    /// The permit's id, 32 lowercase hex digits, as Redisson's `acquire`
    /// returns it: a Java service given this id can release the permit with
    /// `release(id)`, and [`ExpirableSemaphore::release_by_id`](crate::ExpirableSemaphore::release_by_id)
    /// takes it too.
    ///
    /// The id says whose permit it is, as a lock guard's
    /// [`owner`](crate::LockGuard::owner) says whose lock: the semaphore
    /// keeps nothing else about a holder (no client id: Redisson's ids are
    /// random), [`release`](PermitGuard::release) and
    /// [`extend`](PermitGuard::extend) act only on this id, and
    /// [`admin::read`](crate::admin::read) lists the acquired permits by it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:id");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// assert_eq!(permit.id().len(), 32);
    /// assert!(permit.id().bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:guard-name");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// assert_eq!(permit.name(), "doc:expirable:guard-name");
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `None`: an expirable semaphore's permits have no fencing token.
    /// Redisson's `RPermitExpirableSemaphore` keeps no counter for them, and
    /// a semaphore lets several holders in at once, so no order of holders
    /// exists for a token to tell; the [`id`](PermitGuard::id) tells this
    /// permit from the others.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:fencing-token");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// assert_eq!(permit.fencing_token(), None);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        None
    }

    /// Releases the permit, checking that it is still this guard's, and
    /// announces it to waiters. Its renewal stops before the release is
    /// sent.
    ///
    /// # Errors
    ///
    /// An error for which [`is_not_owner`](Error::is_not_owner) is true
    /// when the permit was no longer acquired (its lease ended and it was
    /// reclaimed, or it was released by id) or had expired (it is returned
    /// to the pool all the same, as Redisson does); connection and server
    /// errors once Redis has not answered for 30 s. A release whose reply
    /// does not come (a time-out, a lost connection, a failover) is sent
    /// again until then, under one request id whose record
    /// (`redlease_request:{name}:<id>`, 40 s) makes a repeat answer
    /// as the first did (#37); if it never was answered, the guard's Drop
    /// goes on sending it in the background, and failing that, the permit
    /// comes back when its lease ends.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the guard, so the release is still sent, in
    /// the background, as for any dropped guard.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:release");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// // ... the export ...
    /// match permit.release().await {
    ///     Ok(()) => {}
    ///     Err(e) if e.is_not_owner() => eprintln!("the permit had expired: {e}"),
    ///     Err(e) => return Err(e),
    /// }
    /// assert_eq!(exports.available_permits().await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        self.stop_renewal();
        let request = self.release_request();
        let conn = self.client.conn();
        let latch = Latch {
            request: &request,
            ttl_ms: self.client.answer_ttl_ms(),
        };
        let call = scripts::release(&self.name, &self.raw, conn.publish(), Some(latch));
        let reply =
            count::send_until_answered::<Release>(conn, &call, self.client.retry_writes_for())
                .await;
        let result = match reply {
            Ok(released) => expect_released(&self.name, &self.id, released),
            Err(e) => Err(e.with_key(&self.name)),
        };
        tracing::debug!(key = %self.name, ok = result.is_ok(), "permit release");
        // Only a lost reply leaves the release undone for sure.
        if !matches!(&result, Err(e) if e.is_transient()) {
            self.armed = false;
        }
        result
    }

    /// When a fixed lease ends by this process's clock; `None` for a
    /// renewed permit, which holds for as long as the guard lives.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::{Duration, Instant};
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:expires-at");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.lease(Duration::from_secs(10)).try_acquire().await?;
    /// assert!(permit.expires_at().unwrap() <= Instant::now() + Duration::from_secs(10));
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<std::time::Instant> {
        self.fixed_end().map(Instant::into_std)
    }

    /// When the fixed lease ends now (it moves with `extend`).
    fn fixed_end(&self) -> Option<Instant> {
        self.expires_at.as_ref().map(|end| *lock(end))
    }

    /// Sets a fixed-lease permit's lease to `lease` from now, as Redisson's
    /// `updateLeaseTime`.
    ///
    /// # Errors
    ///
    /// [`is_not_owner`](Error::is_not_owner) when the permit is gone
    /// (expired and reclaimed, released by id) or already counts as lost by
    /// this guard's clock; [`is_invalid_argument`](Error::is_invalid_argument)
    /// for a lease under 1 ms or a renewed permit (its renewals keep it);
    /// connection and server errors as they come (the expiry is then left
    /// as it was).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the permit extended in Redis while the
    /// guard keeps its earlier expiry: it errs on the side of stopping early.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::{Duration, Instant};
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:extend");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.lease(Duration::from_secs(2)).try_acquire().await?;
    /// // The export takes longer than planned: 30 s from now.
    /// permit.extend(Duration::from_secs(30)).await?;
    /// assert!(permit.expires_at().unwrap() > Instant::now() + Duration::from_secs(20));
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn extend(&self, lease: std::time::Duration) -> Result<(), Error> {
        let Some(end) = &self.expires_at else {
            return Err(Error::invalid(
                "a renewed permit is kept by its renewals; only a fixed lease can be extended",
            )
            .with_key(&self.name));
        };
        let lease_ms =
            crate::name::lease_millis("lease", lease).map_err(|e| e.with_key(&self.name))?;
        if self.is_lost() {
            return Err(self.gone());
        }
        let conn = self.client.conn();
        let call = scripts::renew(&self.name, &self.raw, lease_ms, conn.publish());
        let sent = Instant::now();
        match call.run::<i64>(conn).await {
            Ok(1) => {
                *lock(end) = sent + lease;
                Ok(())
            }
            Ok(_) => Err(self.gone()),
            Err(e) => Err(Error::from(e).with_key(&self.name)),
        }
    }

    fn gone(&self) -> Error {
        Error::not_owner(&self.name).reworded(format!(
            "permit {} of semaphore {:?} is gone: it expired, or was released",
            self.id, self.name
        ))
    }

    /// Resolves when the permit is known or must be assumed no longer
    /// this guard's, with the reason:
    ///
    /// * renewed: a renewal found the permit gone ([`LostReason::OwnerChanged`]:
    ///   it expired and was reclaimed, was released by id, or the key was
    ///   overwritten), or renewals failed until the lease could have ended
    ///   by the local clock ([`LostReason::RenewalFailed`]);
    /// * fixed lease: the lease ran out ([`LostReason::Expired`]).
    ///
    /// Pending for as long as the permit is held.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the loss is recorded in the guard, so a later call (or
    /// [`is_lost`](PermitGuard::is_lost)) still sees it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    /// use redlease::LostReason;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:lost");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.lease(Duration::from_millis(50)).try_acquire().await?;
    /// tokio::select! {
    ///     reason = permit.lost() => assert_eq!(reason, LostReason::Expired), // stop work
    ///     _ = tokio::time::sleep(Duration::from_secs(10)) => unreachable!("the long export"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lost(&self) -> LostReason {
        if self.expires_at.is_none() {
            return self.lost.wait().await;
        }
        // Again after each wake-up: `extend` may have moved the end.
        while let Some(end) = self.fixed_end() {
            if Instant::now() >= end {
                return LostReason::Expired;
            }
            tokio::select! {
                reason = self.lost.wait() => return reason,
                () = sleep_until(end) => {}
            }
        }
        LostReason::Expired
    }

    /// Returns true if [`lost`](PermitGuard::lost) would resolve now, or is
    /// about to: a renewed permit whose deadline has passed counts as lost at
    /// once, even before the watchdog task has run to report it.
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
    /// let exports = client.expirable_semaphore("doc:expirable:is-lost");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.lease(Duration::from_millis(30)).try_acquire().await?;
    /// assert!(!permit.is_lost());
    /// tokio::time::sleep(Duration::from_millis(60)).await;
    /// assert!(permit.is_lost()); // the fixed lease ran out
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        let now = Instant::now();
        let expired = self.fixed_end().is_some_and(|at| now >= at);
        // The deadline before the signal, as a lock's hold reads them: the
        // watchdog drops an overdue entry and signals in one step.
        let overdue = self
            .watchdog_id
            .is_some_and(|id| self.client.watchdog().overdue(id, now));
        expired || overdue || self.lost.get().is_some()
    }

    /// The request id of this guard's release, the same each time it is
    /// sent.
    fn release_request(&mut self) -> Arc<str> {
        let client = &self.client;
        self.release_request
            .get_or_insert_with(|| client.new_owner_field())
            .clone()
    }

    fn stop_renewal(&mut self) {
        if let Some(id) = self.watchdog_id.take() {
            self.client.watchdog().deregister(id);
        }
    }
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        self.stop_renewal();
        if self.armed {
            let request = self.release_request();
            release_in_background(
                self.client.conn(),
                &self.name,
                self.raw,
                self.client.retry_writes_for(),
                Some((request, self.client.answer_ttl_ms())),
            );
        }
    }
}

impl fmt::Debug for PermitGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermitGuard")
            .field("name", &self.name)
            .field("id", &self.id)
            .field(
                "mode",
                &if self.expires_at.is_none() {
                    "renewed"
                } else {
                    "fixed lease"
                },
            )
            .finish_non_exhaustive()
    }
}

/// An acquire request whose outcome is unknown: dropped armed, it releases
/// its permit id in the background on the connection the acquire went out
/// on, so that Redis runs the release after the acquire. The release
/// changes nothing if the acquire did not run or found no permit, so it is
/// sent again until answered, for as long as the permit's lease (#29).
pub(super) struct Pending {
    /// `None` once disarmed.
    conn: Option<Connection>,
    name: Arc<str>,
    raw: [u8; 16],
    lease: Duration,
}

impl Pending {
    pub(super) fn armed(
        conn: &Connection,
        name: &Arc<str>,
        raw: [u8; 16],
        lease: Duration,
    ) -> Pending {
        Pending {
            conn: Some(conn.clone()),
            lease,
            name: name.clone(),
            raw,
        }
    }

    pub(super) fn disarm(&mut self) {
        self.conn = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            release_in_background(&conn, &self.name, self.raw, self.lease, None);
        }
    }
}

/// Sends the release of permit `raw` on the current runtime without waiting
/// for it, and again after a time-out or a lost connection for at most
/// `retry_for` (zero: once), under `request`'s record if it has one (a
/// guard's release: it answers as an earlier attempt did; a cancelled
/// acquire's withdrawal needs none, as nothing else releases its id); does
/// nothing without a runtime (the permit then comes back when its lease
/// ends).
fn release_in_background(
    conn: &Connection,
    name: &Arc<str>,
    raw: [u8; 16],
    retry_for: Duration,
    request: Option<(Arc<str>, u64)>,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::debug!(key = %name, "no runtime to release in; the permit returns when its lease ends");
        return;
    };
    let (conn, name) = (conn.clone(), name.clone());
    // A runtime that is shutting down drops the task unpolled; the lease
    // then brings the permit back.
    drop(handle.spawn(async move {
        let latch = request.as_ref().map(|(request, ttl_ms)| Latch {
            request,
            ttl_ms: *ttl_ms,
        });
        let call = scripts::release(&name, &raw, conn.publish(), latch);
        let reply = count::send_until_answered::<Release>(&conn, &call, retry_for).await;
        match reply {
            Ok(reply) => tracing::debug!(key = %name, ?reply, "permit released in the background"),
            Err(e) => tracing::warn!(key = %name, error = %e, "background permit release failed; it returns when its lease ends"),
        }
    }));
}

/// A fixed lease's end; a poisoned lock still holds a valid instant.
fn lock(deadline: &Mutex<Instant>) -> std::sync::MutexGuard<'_, Instant> {
    deadline.lock().unwrap_or_else(|e| e.into_inner())
}
