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
    pub fn name(&self) -> &str {
        self.hold.name()
    }

    /// The owner field this guard holds in the lock hash
    /// (`<client-id>:<n>`), as Redisson tools show it.
    pub fn owner(&self) -> &str {
        self.hold.field()
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
    /// Tokens count up by one on the counter key
    /// (`redisson_lock_token:{name}`), which starts from the server's clock
    /// in microseconds, so they keep increasing after the counter expires or
    /// Redis restarts empty, as long as the Redis server's clock does not
    /// step back. See
    /// [`ClientBuilder::fencing_counter_ttl`](crate::ClientBuilder::fencing_counter_ttl).
    pub fn fencing_token(&self) -> u64 {
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
    pub async fn unlock(mut self) -> Result<(), Error> {
        self.hold.release().await
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
    pub async fn extend(&self, lease: Duration) -> Result<(), Error> {
        let lease_ms =
            crate::name::lease_millis("lease", lease).map_err(|e| e.with_key(self.hold.name()))?;
        self.hold.extend(lease_ms).await
    }

    /// The end of this guard's fixed lease by the local clock (moved by
    /// [`extend`](LockGuard::extend)); `None` in watchdog mode.
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
    pub async fn lost(&self) -> LostReason {
        self.hold.lost().await
    }

    /// Returns true if [`lost`](LockGuard::lost) would resolve now, or is
    /// about to: a watchdog-mode lock whose deadline has passed counts as
    /// lost at once, even if the watchdog task has not yet run to report it
    /// (as after the process was paused past its lease).
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
