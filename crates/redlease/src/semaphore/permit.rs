//! [`SemaphorePermit`]: permits taken from a [`Semaphore`], given back by
//! [`release`](SemaphorePermit::release) or, dropped, in the background.

use std::fmt;

use super::{GiveBack, Semaphore};
use crate::error::Error;
use crate::lost::LostReason;

/// Permits taken from a [`Semaphore`]; made by its `try_acquire`,
/// `try_acquire_for` and `acquire`, as tokio's `Semaphore` hands out a
/// `SemaphorePermit`.
///
/// Give the permits back with [`release`](SemaphorePermit::release).
/// Dropped without it, the guard gives them back in the background on the
/// current Tokio runtime: it never blocks and never panics, but nobody
/// learns whether that worked (with no runtime, they stay taken, as
/// Redisson's would after a crash). To leave them taken on purpose (another
/// process gives them back with [`Semaphore::release`], as Redisson's
/// permits may be released by anyone), [`forget`](SemaphorePermit::forget)
/// the guard.
///
/// Permits have no owner and no lease in Redisson's `RSemaphore`: nothing
/// can take them away, so the guard is never lost and cannot be extended.
/// For permits that expire, use an
/// [`ExpirableSemaphore`](crate::ExpirableSemaphore).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let exports = client.semaphore("doc:semaphore-permit:type");
/// exports.try_set_available(2).await?;
/// let permit = exports.try_acquire(2).await?;
/// assert_eq!(permit.permits(), 2);
/// assert_eq!(exports.available_permits().await?, 0);
/// // ... the exports ...
/// permit.release().await?;
/// assert_eq!(exports.available_permits().await?, 2);
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the permit gives its permits back at once; hold it for the work and call `release().await`"]
#[clippy::has_significant_drop]
pub struct SemaphorePermit {
    semaphore: Semaphore,
    permits: u64,
    /// Whether Drop still has permits to give back: false once released
    /// or forgotten.
    held: bool,
}

impl SemaphorePermit {
    pub(super) fn new(semaphore: Semaphore, permits: u64) -> SemaphorePermit {
        SemaphorePermit {
            semaphore,
            permits,
            held: true,
        }
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
    /// let exports = client.semaphore("doc:semaphore-permit:name");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// assert_eq!(permit.name(), "doc:semaphore-permit:name");
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.semaphore.name()
    }

    /// How many permits this guard holds.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:permits");
    /// exports.try_set_available(5).await?;
    /// let permit = exports.try_acquire(3).await?;
    /// assert_eq!(permit.permits(), 3);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// `None`: a semaphore's permits have no fencing token. Redisson's
    /// `RSemaphore` counts permits and records no holder, so there is
    /// nothing a token could order; a lock's guard has one.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:fencing-token");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// assert_eq!(permit.fencing_token(), None);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        None
    }

    /// `None`: the permits have no lease, and stay taken until they are
    /// given back.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:expires-at");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// assert_eq!(permit.expires_at(), None); // held until released
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<std::time::Instant> {
        None
    }

    /// Always false: nothing takes a semaphore's permits away (they have
    /// no owner and no lease), so this guard is never lost.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:is-lost");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// assert!(!permit.is_lost());
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        false
    }

    /// Never resolves: nothing takes a semaphore's permits away. It is
    /// here so that code written for any guard (a `select!` on `lost()`
    /// beside the work, say) runs unchanged with a permit.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it waits on nothing.
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
    /// let exports = client.semaphore("doc:semaphore-permit:lost");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// tokio::select! {
    ///     _ = permit.lost() => unreachable!("permits are never lost"),
    ///     () = tokio::time::sleep(Duration::from_millis(20)) => {} // the export
    /// }
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lost(&self) -> LostReason {
        std::future::pending().await
    }

    /// Gives the permits back and publishes the new available count, which
    /// wakes waiters of every client, Redisson's included.
    ///
    /// # Errors
    ///
    /// As [`Semaphore::release`]; the permits may then still be taken.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the release runs to completion even if the future is
    /// dropped. Dropped before its first poll, the future drops the guard,
    /// which gives the permits back in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:release");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// permit.release().await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        self.held = false;
        self.semaphore.release(self.permits).await
    }

    /// Leaves the permits taken and returns how many: nothing gives them
    /// back unless some client calls [`Semaphore::release`] (from this
    /// process or another, as Redisson allows).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore-permit:forget");
    /// exports.try_set_available(1).await?;
    /// let taken = exports.try_acquire(1).await?.forget();
    /// assert_eq!(exports.available_permits().await?, 0);
    /// // Later, perhaps in another process:
    /// exports.release(taken).await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn forget(mut self) -> u64 {
        self.held = false;
        self.permits
    }
}

impl Drop for SemaphorePermit {
    fn drop(&mut self) {
        if self.held {
            GiveBack::of(&self.semaphore, self.permits).run();
        }
    }
}

impl fmt::Debug for SemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("name", &self.name())
            .field("permits", &self.permits)
            .field("held", &self.held)
            .finish()
    }
}
