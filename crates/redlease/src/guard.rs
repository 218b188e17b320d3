//! [`LockGuard`]: a held lock as its user sees it. The holding itself
//! (renewal, loss, release, Drop) is the holding engine's ([`crate::hold`]).

use std::fmt;
use std::time::Duration;

use crate::error::Error;
use crate::hold::{Held, Hold, LeaseMode};
use crate::lost::LostReason;

/// A held lock. Release it with [`unlock`](LockGuard::unlock).
///
/// Dropping a guard without `unlock` releases the lock in the background on
/// the current Tokio runtime: it never blocks and never panics, but nobody
/// learns whether the release worked. With no runtime (dropped on a plain
/// thread), the guard only stops the watchdog, and the lock expires after its
/// lease.
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
/// let lock = client.lock("doc:guard:type");
/// let guard = lock.try_lock().await?;
/// // ... the critical section ...
/// guard.unlock().await?;
///
/// // Dropped, a guard releases its lock in the background.
/// let guard = lock.try_lock().await?;
/// drop(guard);
/// let again = lock.try_lock_for(Duration::from_secs(1)).await?;
/// again.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock().await`"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    hold: Hold,
}

impl LockGuard {
    pub(crate) fn new(hold: Hold) -> LockGuard {
        LockGuard { hold }
    }

    /// What a re-entry in an owner scope needs to share this guard's hold;
    /// `None` once the guard let go of it.
    pub(crate) fn held(&self) -> Option<Held> {
        self.hold.held()
    }

    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:guard:name").try_lock().await?;
    /// assert_eq!(guard.name(), "doc:guard:name");
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.hold.name()
    }

    /// The owner field this guard holds in the lock hash
    /// (`<client-id>:<n>`), as Redisson tools show it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:guard:owner").try_lock().await?;
    /// // `<client id>:<n>`: a new owner for every acquisition.
    /// assert!(guard.owner().starts_with(client.id()));
    /// println!("held by {}", guard.owner());
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn owner(&self) -> &str {
        self.hold.field()
    }

    /// The fencing token of this acquisition, or `None` when the client was
    /// built with [`fencing(false)`](crate::ClientBuilder::fencing): strictly
    /// greater than every
    /// token issued before it for this lock name, by any redlease client or
    /// Redisson `RFencedLock`.
    ///
    /// A lock alone cannot stop a holder that paused past its lease (a long
    /// GC or swap, a stopped process) from writing after the next holder has
    /// started. Pass the token with every write to the protected resource,
    /// and let the resource reject a token lower than the highest it has
    /// seen, or the same token from another holder ([`owner`](Self::owner)
    /// tells them apart: a failover can issue a token twice), for example
    /// `UPDATE orders SET status = $2, fence = $3, holder = $4 WHERE id = $1
    /// AND (fence < $3 OR (fence = $3 AND holder = $4))`.
    /// A read-modify-write needs two statements, a claim of the row with the
    /// token and a write conditioned on the claim; the crate's `fenced`
    /// example shows that pattern on PostgreSQL, and the README says why.
    ///
    /// Tokens count up by one on the counter key
    /// (`redisson_lock_token:{name}`), which starts from the server's clock
    /// in microseconds, so they keep increasing after the counter expires or
    /// Redis restarts empty, as long as the Redis server's clock does not
    /// step back. See
    /// [`ClientBuilder::fencing_counter_ttl`](crate::ClientBuilder::fencing_counter_ttl).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:guard:fencing-token");
    /// let first = lock.try_lock().await?;
    /// let token = first.fencing_token().expect("fencing is on by default");
    /// // ... write to the database with `token`, which refuses lower ones ...
    /// first.unlock().await?;
    ///
    /// let next = lock.try_lock().await?;
    /// assert!(next.fencing_token() > Some(token));
    /// next.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        self.hold.token()
    }

    /// Releases the lock, checking that it is still ours. Unlocking stops the
    /// watchdog for this lock before the release is sent.
    ///
    /// # Errors
    ///
    /// An error for which [`is_not_owner`](Error::is_not_owner) is true when
    /// the lock had already expired, been deleted or been taken by another
    /// owner, or its key was overwritten with a value that is not a lock
    /// (another owner's hold or value is left untouched); connection and
    /// server errors as they come. After a time-out or a connection error the release may not
    /// have run, so the guard's Drop sends it once more in the background;
    /// failing that, the lock expires at the end of its lease (the watchdog
    /// has stopped renewing it).
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
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:guard:unlock").try_lock().await?;
    /// guard.unlock().await?;
    ///
    /// // A lock whose lease ran out is no longer ours to release.
    /// let short = client.lock("doc:guard:unlock").lease(Duration::from_millis(50));
    /// let guard = short.try_lock().await?;
    /// tokio::time::sleep(Duration::from_millis(100)).await;
    /// assert!(guard.unlock().await.unwrap_err().is_not_owner());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn unlock(mut self) -> Result<(), Error> {
        self.hold.release().await
    }

    /// Releases the lock, but not before it has been held for `min`:
    /// ShedLock's `lockAtLeastFor`, for a job that must run once per tick
    /// on a fleet whose clocks differ. If `min` has passed since the
    /// acquire's reply, this is [`unlock`](LockGuard::unlock). Otherwise the
    /// lock stays in Redis, held by an owner nobody is, until `min` is up by
    /// the server's clock; its renewal stops now, and nothing can take it
    /// back early or renew it (a watchdog renewal in flight, or this
    /// guard's Drop, is owner-checked against the owner just replaced).
    /// Waiters wake when it expires. Guards that re-entered the same hold
    /// in an owner scope: all but the last release as `unlock` does.
    ///
    /// The minimum counts from when the acquire's reply arrived, never
    /// earlier than Redis granted it, so Redis holds the lock at least
    /// `min`. A fixed lease shorter than `min` is outlived: the lease bounds
    /// a holder that dies, `min` one that finishes early.
    ///
    /// # Errors
    ///
    /// [`is_not_owner`](Error::is_not_owner) when the lock was no longer
    /// ours; [`is_invalid_argument`](Error::is_invalid_argument) for a read
    /// hold of a read-write lock (shared with other readers: nothing to
    /// keep), which is then released in the background as by Drop.
    /// Connection and server errors as they come, after retries while
    /// `min` lasts: the lock then keeps the expiry it had (a watchdog lease,
    /// no longer renewed, or the fixed lease), never less.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the guard: if the swap was not sent yet,
    /// the lock is released at once in the background, as for any dropped
    /// guard; once sent, it stands.
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
    /// let lock = client.lock("doc:guard:unlock_at_least");
    /// let guard = lock.try_lock().await?;
    /// // The job took a millisecond; the tick is a second.
    /// guard.unlock_at_least(Duration::from_secs(1)).await?;
    /// // Still taken: a replica whose clock is a little late finds it
    /// // busy, and does not run the job a second time.
    /// assert!(lock.try_lock().await.unwrap_err().is_busy());
    /// tokio::time::sleep(Duration::from_millis(1100)).await;
    /// lock.try_lock().await?.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn unlock_at_least(mut self, min: Duration) -> Result<(), Error> {
        self.hold.release_at_least(min).await
    }

    /// Sets a fixed-lease lock to expire `lease` from now (longer or
    /// shorter than what is left), checking that it is still ours, and
    /// moves the guard's own expiry (which [`lost`](LockGuard::lost) and
    /// [`is_lost`](LockGuard::is_lost) follow) to match: from when the
    /// request was sent, so it never outlasts the key. Guards that
    /// re-entered the same hold in an owner scope share the new expiry.
    ///
    /// A watchdog-mode guard is renewed every third of the watchdog timeout
    /// by itself, so `extend` refuses it; take a fixed lease
    /// ([`Lock::lease`](crate::Lock::lease)) to choose its length by hand.
    ///
    /// # Errors
    ///
    /// [`is_not_owner`](Error::is_not_owner) at once, never retried, when the
    /// lock is gone (expired, released, taken over) or already counts as
    /// lost by this guard's clock: a lock that `lost()` may have reported is
    /// not brought back, even while its key lingers in Redis; `lost()` then
    /// resolves. [`is_invalid_argument`](Error::is_invalid_argument) for a
    /// lease under 1 ms or a watchdog-mode guard. Connection and server
    /// errors as they come (the guard's expiry is then left as it was).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the key extended in Redis while the
    /// guard keeps its earlier expiry: it errs on the side of stopping
    /// early, never late.
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
    /// let lock = client.lock("doc:guard:extend");
    /// let guard = lock.clone().lease(Duration::from_secs(2)).try_lock().await?;
    /// let until = guard.expires_at().expect("a fixed lease");
    /// // The work takes longer than planned: 30 s from now.
    /// guard.extend(Duration::from_secs(30)).await?;
    /// assert!(guard.expires_at().expect("a fixed lease") > until);
    /// guard.unlock().await?;
    ///
    /// // A watchdog-mode guard is renewed by itself.
    /// let watched = lock.try_lock().await?;
    /// let e = watched.extend(Duration::from_secs(30)).await.unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// watched.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn extend(&self, lease: Duration) -> Result<(), Error> {
        let lease_ms =
            crate::name::lease_millis("lease", lease).map_err(|e| e.with_key(self.hold.name()))?;
        self.hold.extend(lease_ms).await
    }

    /// The end of this guard's fixed lease by the local clock (moved by
    /// [`extend`](LockGuard::extend)); `None` in watchdog mode.
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
    /// let lock = client.lock("doc:guard:expires-at");
    /// let fixed = lock.clone().lease(Duration::from_secs(10)).try_lock().await?;
    /// let until = fixed.expires_at().expect("a fixed lease");
    /// assert!(until <= Instant::now() + Duration::from_secs(10));
    /// fixed.unlock().await?;
    ///
    /// // Watchdog mode: no end while the guard lives.
    /// let watched = lock.try_lock().await?;
    /// assert_eq!(watched.expires_at(), None);
    /// watched.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<std::time::Instant> {
        match self.hold.mode() {
            LeaseMode::Watchdog => None,
            LeaseMode::Fixed { expires_at } => Some(expires_at.at().into_std()),
        }
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
    /// let lock = client.lock("doc:guard:is-held").lease(Duration::from_millis(80));
    /// let guard = lock.try_lock().await?;
    /// assert!(guard.is_held().await?);
    /// tokio::time::sleep(Duration::from_millis(100)).await;
    /// // Expired in Redis.
    /// assert!(!guard.is_held().await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn is_held(&self) -> Result<bool, Error> {
        self.hold.is_held().await
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
    /// let lock = client.lock("doc:guard:lost").lease(Duration::from_millis(50));
    /// let guard = lock.try_lock().await?;
    /// let work = tokio::time::sleep(Duration::from_secs(10)); // longer than the lease
    /// tokio::select! {
    ///     () = work => println!("done in time"),
    ///     // Stop before the next holder starts.
    ///     reason = guard.lost() => println!("stopped: {reason}"),
    /// }
    /// assert!(guard.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lost(&self) -> LostReason {
        self.hold.lost().await
    }

    /// Returns true if [`lost`](LockGuard::lost) would resolve now, or is
    /// about to: a watchdog-mode lock whose deadline has passed counts as
    /// lost at once, even if the watchdog task has not yet run to report it
    /// (as after the process was paused past its lease).
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
    /// let lock = client.lock("doc:guard:is-lost").lease(Duration::from_millis(80));
    /// let guard = lock.try_lock().await?;
    /// assert!(!guard.is_lost());
    /// tokio::time::sleep(Duration::from_millis(100)).await;
    /// // Past its lease by our clock: check before every step of a long job.
    /// assert!(guard.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.hold.name())
            .field("owner", &self.hold.field())
            .field("fencing_token", &self.hold.token())
            .field(
                "mode",
                &match self.hold.mode() {
                    LeaseMode::Watchdog => "watchdog",
                    LeaseMode::Fixed { .. } => "fixed lease",
                },
            )
            .finish_non_exhaustive()
    }
}
