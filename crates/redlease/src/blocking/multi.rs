//! [`MultiLock`] with [`MultiGuard`], and [`RedLock`] with
//! [`RedLockGuard`]: the blocking twins of the locks taken on several keys
//! or several masters.

use std::fmt;
use std::time::{Duration, Instant};

use super::{Client, call, release_on_drop, within};
use crate::error::Error;
use crate::lost::LostReason;

/// A handle to several named locks taken together, all or none
/// ([`crate::MultiLock`]); made by
/// [`Client::multi_lock`](super::Client::multi_lock).
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let both = client.multi_lock(["doc:blocking:multi:a", "doc:blocking:multi:b"]);
/// let guard = both.try_lock()?;
/// assert!(client.lock("doc:blocking:multi:b").try_lock().unwrap_err().is_busy());
/// assert!(guard.fencing_token("doc:blocking:multi:a").is_some());
/// guard.unlock()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    inner: crate::MultiLock,
}

impl MultiLock {
    pub(super) fn from(inner: crate::MultiLock) -> MultiLock {
        MultiLock { inner }
    }

    /// Selects a fixed lease for every member ([`crate::MultiLock::lease`]).
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> MultiLock {
        MultiLock {
            inner: self.inner.lease(lease),
        }
    }

    /// The member names, in the order they are taken.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.names()
    }

    /// Makes one attempt to take every member
    /// ([`crate::MultiLock::try_lock`]).
    ///
    /// # Errors
    ///
    /// As its async twin: [`is_busy`](Error::is_busy) when a member is
    /// held by another owner (nothing is left held).
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime (so for
    /// every call here).
    pub fn try_lock(&self) -> Result<MultiGuard, Error> {
        call("MultiLock::try_lock", self.inner.try_lock()).map(MultiGuard::from)
    }

    /// Takes every member, waiting at most `wait`
    /// ([`crate::MultiLock::try_lock_for`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    pub fn try_lock_for(&self, wait: Duration) -> Result<MultiGuard, Error> {
        call("MultiLock::try_lock_for", self.inner.try_lock_for(wait)).map(MultiGuard::from)
    }

    /// Takes every member, waiting for as long as it takes
    /// ([`crate::MultiLock::lock`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    pub fn lock(&self) -> Result<MultiGuard, Error> {
        call("MultiLock::lock", self.inner.lock()).map(MultiGuard::from)
    }
}

/// Every member of a [`MultiLock`], held. Release them with
/// [`unlock`](MultiGuard::unlock); dropped, they are released before Drop
/// returns, waiting at most [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT)
/// (see the [module docs](super#drop)).
#[must_use = "dropping the guard releases the locks at once; hold it for the critical section and call `unlock()`"]
#[clippy::has_significant_drop]
pub struct MultiGuard {
    /// `None` only once `unlock` or Drop took it.
    inner: Option<crate::MultiGuard>,
}

impl MultiGuard {
    fn from(inner: crate::MultiGuard) -> MultiGuard {
        MultiGuard { inner: Some(inner) }
    }

    fn get(&self) -> &crate::MultiGuard {
        self.inner
            .as_ref()
            .expect("a guard is only taken apart by unlock or Drop, which consume it")
    }

    /// The members' names, in the order they were taken.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.get().guards().iter().map(crate::LockGuard::name)
    }

    /// The fencing token of member `name`, if it is one.
    pub fn fencing_token(&self, name: &str) -> Option<u64> {
        self.get().fencing_token(name)
    }

    /// Releases every member, each owner-checked
    /// ([`crate::MultiGuard::unlock`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime, where the guard is then dropped, which releases the
    /// members in the background.
    pub fn unlock(mut self) -> Result<(), Error> {
        let guard = self.inner.take().expect("unlock consumes the guard");
        match super::runtime("MultiGuard::unlock") {
            Ok(rt) => rt.block_on(guard.unlock()),
            Err(e) => {
                release_on_drop("MultiGuard", guard.unlock());
                Err(e)
            }
        }
    }

    /// Waits at most `timeout` for any member to be lost
    /// ([`crate::MultiGuard::lost`]): `Some` with its name and the reason,
    /// `None` if all are still held when the time is up.
    ///
    /// # Errors
    ///
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime.
    pub fn lost(&self, timeout: Duration) -> Result<Option<(String, LostReason)>, Error> {
        within("MultiGuard::lost", timeout, self.get().lost())
    }

    /// Returns true if any member is lost.
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.inner.take() {
            release_on_drop("MultiGuard", guard.unlock());
        }
    }
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(guard) => guard.fmt(f),
            None => f.write_str("MultiGuard(released)"),
        }
    }
}

/// A lock on N independent masters, granted by a majority
/// ([`crate::RedLock`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # fn main() -> Result<(), redlease::Error> {
/// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
/// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
/// let clients = urls
///     .iter()
///     .map(|url| redlease::blocking::Client::connect(url))
///     .collect::<Result<Vec<_>, _>>()?;
/// let lock = redlease::blocking::RedLock::new(clients, "doc:blocking:redlock")?
///     .lease(Duration::from_secs(10));
/// let guard = lock.try_lock()?;
/// assert!(guard.masters() >= lock.quorum());
/// guard.unlock()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RedLock {
    inner: crate::RedLock,
}

impl RedLock {
    /// A lock called `name` on the masters of `clients`, one client per
    /// independent master ([`crate::RedLock::new`]).
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) without clients.
    pub fn new(
        clients: impl IntoIterator<Item = Client>,
        name: impl Into<String>,
    ) -> Result<RedLock, Error> {
        let clients = clients.into_iter().map(|c| c.as_async().clone());
        crate::RedLock::new(clients, name).map(|inner| RedLock { inner })
    }

    /// The lease on each master ([`crate::RedLock::lease`]).
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> RedLock {
        RedLock {
            inner: self.inner.lease(lease),
        }
    }

    /// How long one master may take to answer an acquire
    /// ([`crate::RedLock::master_timeout`]).
    #[must_use = "`master_timeout` returns a new handle; use it to acquire"]
    pub fn master_timeout(self, timeout: Duration) -> RedLock {
        RedLock {
            inner: self.inner.master_timeout(timeout),
        }
    }

    /// The number of masters that must grant the lock: N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.inner.quorum()
    }

    /// Makes one attempt on every master ([`crate::RedLock::try_lock`]).
    ///
    /// # Errors
    ///
    /// As its async twin: [`is_busy`](Error::is_busy) without a quorum.
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime (so for
    /// every call here).
    pub fn try_lock(&self) -> Result<RedLockGuard, Error> {
        call("RedLock::try_lock", self.inner.try_lock()).map(RedLockGuard::from)
    }

    /// Attempts until `wait` has passed ([`crate::RedLock::try_lock_for`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    pub fn try_lock_for(&self, wait: Duration) -> Result<RedLockGuard, Error> {
        call("RedLock::try_lock_for", self.inner.try_lock_for(wait)).map(RedLockGuard::from)
    }
}

/// A [`RedLock`] held by a quorum. Release it with
/// [`unlock`](RedLockGuard::unlock); dropped, it is released before Drop
/// returns, waiting at most [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT)
/// (see the [module docs](super#drop)).
#[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock()`"]
#[clippy::has_significant_drop]
pub struct RedLockGuard {
    /// `None` only once `unlock` or Drop took it.
    inner: Option<crate::RedLockGuard>,
}

impl RedLockGuard {
    fn from(inner: crate::RedLockGuard) -> RedLockGuard {
        RedLockGuard { inner: Some(inner) }
    }

    fn get(&self) -> &crate::RedLockGuard {
        self.inner
            .as_ref()
            .expect("a guard is only taken apart by unlock or Drop, which consume it")
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.get().name()
    }

    /// How many masters hold it now.
    pub fn masters(&self) -> usize {
        self.get().masters()
    }

    /// When the lock stops being valid by this process's clock.
    pub fn valid_until(&self) -> Instant {
        self.get().valid_until()
    }

    /// Whether the validity has ended.
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }

    /// Waits at most `timeout` for the validity to end: `Some` with the
    /// reason if it did, `None` otherwise ([`crate::RedLockGuard::lost`]).
    ///
    /// # Errors
    ///
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime.
    pub fn lost(&self, timeout: Duration) -> Result<Option<LostReason>, Error> {
        within("RedLockGuard::lost", timeout, self.get().lost())
    }

    /// Sets the lease on every master that holds it to `lease` from now
    /// ([`crate::RedLockGuard::extend`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime.
    pub fn extend(&mut self, lease: Duration) -> Result<(), Error> {
        let guard = self
            .inner
            .as_mut()
            .expect("a guard is only taken apart by unlock or Drop, which consume it");
        call("RedLockGuard::extend", guard.extend(lease))
    }

    /// Releases the lock on every master that holds it
    /// ([`crate::RedLockGuard::unlock`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime, where the guard is then dropped, which releases it in the
    /// background.
    pub fn unlock(mut self) -> Result<(), Error> {
        let guard = self.inner.take().expect("unlock consumes the guard");
        match super::runtime("RedLockGuard::unlock") {
            Ok(rt) => rt.block_on(guard.unlock()),
            Err(e) => {
                release_on_drop("RedLockGuard", guard.unlock());
                Err(e)
            }
        }
    }
}

impl Drop for RedLockGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.inner.take() {
            release_on_drop("RedLockGuard", guard.unlock());
        }
    }
}

impl fmt::Debug for RedLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(guard) => guard.fmt(f),
            None => f.write_str("RedLockGuard(released)"),
        }
    }
}
