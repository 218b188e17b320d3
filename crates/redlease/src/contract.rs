//! [`Guard`] and [`Extend`]: what every guard answers, the same way,
//! whatever it holds.
//!
//! Each guard type also has these as inherent methods (callable without
//! importing the traits); the traits are for code that works over any guard
//! (a helper that runs work until `lost()`, a pool of held things). The
//! impls here only forward to the inherent methods, so a guard cannot have
//! a trait method without its own, and `tests/it/api_table.rs` calls every
//! one of them with neither trait in scope.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::lost::LostReason;

/// A held lock or permit: [`LockGuard`](crate::LockGuard),
/// [`MultiGuard`](crate::MultiGuard), [`RedLockGuard`](crate::RedLockGuard),
/// [`SemaphorePermit`](crate::SemaphorePermit) and
/// [`PermitGuard`](crate::PermitGuard).
///
/// Every guard is `#[must_use]`, releases in the background when dropped
/// (never blocking, never panicking), and is released in the foreground by
/// [`release`](Guard::release) (a lock guard's `unlock`).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::future::Future;
/// use redlease::Guard;
///
/// /// Runs `work` while `guard` holds; false if the hold was lost first.
/// async fn under<G: Guard>(guard: G, work: impl Future<Output = ()>) -> Result<bool, redlease::Error> {
///     let done = tokio::select! {
///         () = work => true,
///         _ = guard.lost() => false,
///     };
///     guard.release().await?;
///     Ok(done)
/// }
///
/// let client = redlease::Client::connect(&url).await?;
/// assert!(under(client.lock("doc:guard-trait:lock").try_lock().await?, async {}).await?);
/// let exports = client.semaphore("doc:guard-trait:semaphore");
/// exports.try_set_available(1).await?;
/// let permit = exports.try_acquire(1).await?;
/// assert_eq!(permit.fencing_token(), None); // permits have no token
/// assert!(under(permit, async {}).await?);
/// # Ok(())
/// # }
/// ```
pub trait Guard: Send + Sync + std::fmt::Debug {
    /// The name of what is held (its Redis key); a multi-lock's names
    /// joined with `,`.
    fn name(&self) -> &str;

    /// The fencing token of this hold, for the resource to reject stale
    /// holders; `None` where the kind has none (a semaphore's permits, a
    /// RedLock, whose masters' tokens mean nothing together, a multi-lock,
    /// whose members each have their own).
    fn fencing_token(&self) -> Option<u64>;

    /// When the hold ends by this process's clock unless extended; `None`
    /// when it is renewed for as long as the guard lives, or never ends.
    fn expires_at(&self) -> Option<Instant>;

    /// Whether the hold is known or must be assumed gone now.
    fn is_lost(&self) -> bool;

    /// Resolves when the hold is known or must be assumed gone, with the
    /// reason; pending for as long as it holds.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a loss is recorded in the guard, so a later call (or
    /// [`is_lost`](Guard::is_lost)) still sees it.
    fn lost(&self) -> impl Future<Output = LostReason> + Send;

    /// Releases what is held, owner-checked where the kind has owners.
    ///
    /// # Errors
    ///
    /// The kind's own release errors: [`is_not_owner`](Error::is_not_owner)
    /// when a lock or a leased permit was no longer ours, connection and
    /// server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// As each guard's own release: dropping the future drops what was not
    /// yet released, which releases in the background.
    fn release(self) -> impl Future<Output = Result<(), Error>> + Send
    where
        Self: Sized;
}

/// A guard whose lease can be moved: a fixed-lease lock, multi-lock,
/// RedLock or leased permit. Watchdog-mode locks and renewed permits are
/// renewed by themselves, and a semaphore's permits have no lease.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
/// use redlease::{Extend, Guard};
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:extend-trait").lease(Duration::from_secs(2)).try_lock().await?;
/// Extend::extend(&guard, Duration::from_secs(30)).await?;
/// assert!(guard.expires_at().unwrap() > std::time::Instant::now() + Duration::from_secs(20));
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
pub trait Extend: Guard {
    /// Sets the lease to `lease` from now.
    ///
    /// # Errors
    ///
    /// [`is_not_owner`](Error::is_not_owner) when the hold is gone;
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a lease
    /// under 1 ms or a watchdog-mode lock; connection and server errors as
    /// they come.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave Redis extended while the guard keeps
    /// its earlier expiry: it errs on the side of stopping early.
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<(), Error>> + Send;
}

/// Implements [`Guard`] for a guard type by forwarding each method to the
/// type's inherent method of the same name (`release` to the one named).
///
/// The inherent methods are called from functions beside the impl, not in
/// it: inside `impl Guard for T`, `Guard` itself is in scope, so a call to
/// a method that `T` lacks would resolve to the trait's method, which would
/// call itself forever (a warning, not an error). Beside it, in `impls`,
/// which imports neither trait, such a guard fails to compile.
macro_rules! forward_guard {
    ($ty:ty, release = $release:ident) => {
        const _: () = {
            fn name(g: &$ty) -> &str {
                g.name()
            }
            fn fencing_token(g: &$ty) -> Option<u64> {
                g.fencing_token()
            }
            fn expires_at(g: &$ty) -> Option<std::time::Instant> {
                g.expires_at()
            }
            fn is_lost(g: &$ty) -> bool {
                g.is_lost()
            }
            fn lost(g: &$ty) -> impl std::future::Future<Output = $crate::lost::LostReason> + Send {
                g.lost()
            }
            fn release(
                g: $ty,
            ) -> impl std::future::Future<Output = Result<(), $crate::error::Error>> + Send {
                g.$release()
            }

            impl $crate::contract::Guard for $ty {
                fn name(&self) -> &str {
                    name(self)
                }
                fn fencing_token(&self) -> Option<u64> {
                    fencing_token(self)
                }
                fn expires_at(&self) -> Option<std::time::Instant> {
                    expires_at(self)
                }
                fn is_lost(&self) -> bool {
                    is_lost(self)
                }
                fn lost(
                    &self,
                ) -> impl std::future::Future<Output = $crate::lost::LostReason> + Send {
                    lost(self)
                }
                fn release(
                    self,
                ) -> impl std::future::Future<Output = Result<(), $crate::error::Error>> + Send
                {
                    release(self)
                }
            }
        };
    };
}

/// [`forward_guard`] for [`Extend`].
macro_rules! forward_extend {
    ($ty:ty) => {
        const _: () = {
            fn extend(
                g: &$ty,
                lease: std::time::Duration,
            ) -> impl std::future::Future<Output = Result<(), $crate::error::Error>> + Send {
                g.extend(lease)
            }

            impl $crate::contract::Extend for $ty {
                fn extend(
                    &self,
                    lease: std::time::Duration,
                ) -> impl std::future::Future<Output = Result<(), $crate::error::Error>> + Send
                {
                    extend(self, lease)
                }
            }
        };
    };
}

/// The traits' impls, one per guard, each type named by the module that
/// defines it (not the crate root's re-export, which would make this module
/// import the root). Deliberately without `use super::{Extend, Guard}`:
/// see [`forward_guard`].
mod impls {
    forward_guard!(crate::guard::LockGuard, release = unlock);
    forward_guard!(crate::election::Leadership, release = resign);
    forward_extend!(crate::guard::LockGuard);
    forward_guard!(crate::multi::MultiGuard, release = unlock);
    forward_extend!(crate::multi::MultiGuard);
    forward_guard!(crate::redlock::RedLockGuard, release = unlock);
    forward_extend!(crate::redlock::RedLockGuard);
    // No `Extend`: a semaphore's permits have no lease to move.
    forward_guard!(crate::semaphore::SemaphorePermit, release = release);
    forward_guard!(crate::expirable::PermitGuard, release = release);
    forward_extend!(crate::expirable::PermitGuard);
}
