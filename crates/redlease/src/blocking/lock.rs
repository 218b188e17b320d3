//! [`Lock`], [`LockGuard`] and [`ReadWriteLock`]: the blocking twins of the
//! exclusive lock (plain or fair), its guard, and the read-write lock.

use std::fmt;
use std::time::{Duration, Instant};

use super::owned::Owned;
use super::{call, within};
use crate::error::Error;
use crate::lost::LostReason;

/// A handle to one named lock, plain or fair, or one side of a
/// [`ReadWriteLock`]; made by [`Client::lock`](super::Client::lock),
/// [`Client::fair_lock`](super::Client::fair_lock),
/// [`ReadWriteLock::read`] and [`ReadWriteLock::write`].
///
/// Watchdog mode by default, a fixed lease with [`lease`](Lock::lease), as
/// [`crate::Lock`].
#[derive(Clone, Debug)]
pub struct Lock {
    inner: crate::Lock,
}

impl Lock {
    pub(super) fn from(inner: crate::Lock) -> Lock {
        Lock { inner }
    }

    /// Selects a fixed lease: the lock expires `lease` after it was taken,
    /// never renewed ([`crate::Lock::lease`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:lease").lease(Duration::from_secs(10)).try_lock()?;
    /// assert!(guard.expires_at().is_some());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> Lock {
        Lock {
            inner: self.inner.lease(lease),
        }
    }

    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock:name");
    /// assert_eq!(lock.name(), "doc:blocking:lock:name");
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Makes one attempt to take the lock ([`crate::Lock::try_lock`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Lock::try_lock`]: [`is_busy`](Error::is_busy) when
    /// another owner holds it. [`is_runtime`](Error::is_runtime) inside a
    /// Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock:try_lock");
    /// let guard = lock.try_lock()?;
    /// // Held: a second attempt fails at once.
    /// assert!(lock.try_lock().unwrap_err().is_busy());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock(&self) -> Result<LockGuard, Error> {
        call("Lock::try_lock", self.inner.try_lock()).map(LockGuard::from)
    }

    /// Takes the lock, waiting at most `wait` for its holder to release it
    /// ([`crate::Lock::try_lock_for`]): woken by the release message, not
    /// by polling.
    ///
    /// # Errors
    ///
    /// As [`crate::Lock::try_lock_for`]: [`is_busy`](Error::is_busy) when
    /// the wait ran out. [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:try_lock_for");
    /// let held = lock.try_lock()?;
    /// let err = lock.try_lock_for(Duration::from_millis(50)).unwrap_err();
    /// assert!(err.is_busy());
    /// held.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock_for(&self, wait: Duration) -> Result<LockGuard, Error> {
        call("Lock::try_lock_for", self.inner.try_lock_for(wait)).map(LockGuard::from)
    }

    /// Takes the lock, waiting for as long as it takes
    /// ([`crate::Lock::lock`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Lock::lock`]; [`is_runtime`](Error::is_runtime) inside a
    /// Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock:lock");
    /// let guard = lock.lock()?; // waits for as long as it takes; here not at all
    /// assert!(guard.is_held()?);
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock(&self) -> Result<LockGuard, Error> {
        call("Lock::lock", self.inner.lock()).map(LockGuard::from)
    }
}

/// A held lock. Release it with [`unlock`](LockGuard::unlock).
///
/// Dropped without `unlock`, it releases the lock before Drop returns,
/// waiting at most [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
/// [module docs](super#drop)).
#[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock()`"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    inner: Owned<crate::LockGuard>,
}

impl LockGuard {
    fn from(inner: crate::LockGuard) -> LockGuard {
        LockGuard {
            inner: Owned::new(inner),
        }
    }

    fn get(&self) -> &crate::LockGuard {
        self.inner.get()
    }

    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:lock_guard:name").try_lock()?;
    /// assert_eq!(guard.name(), "doc:blocking:lock_guard:name");
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.get().name()
    }

    /// The owner field this guard holds (`<client-id>:<n>`).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:lock_guard:owner").try_lock()?;
    /// assert!(guard.owner().starts_with(&format!("{}:", client.id())));
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn owner(&self) -> &str {
        self.get().owner()
    }

    /// The fencing token of this acquisition
    /// ([`crate::LockGuard::fencing_token`]): greater than every token
    /// issued before it for this name. Pass it with every write to the
    /// protected resource, which rejects a lower one.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:fencing");
    /// let first = lock.try_lock()?;
    /// let token = first.fencing_token();
    /// first.unlock()?;
    /// let second = lock.try_lock()?;
    /// assert!(second.fencing_token() > token);
    /// second.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> u64 {
        self.get().fencing_token()
    }

    /// Releases the lock, checking that it is still ours
    /// ([`crate::LockGuard::unlock`]).
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::unlock`]: [`is_not_owner`](Error::is_not_owner)
    /// when it was no longer ours. [`is_runtime`](Error::is_runtime) inside
    /// a Tokio runtime, where the guard is then dropped, which releases it
    /// in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock_guard:unlock");
    /// let guard = lock.try_lock()?;
    /// guard.unlock()?;
    /// // Free again at once.
    /// lock.try_lock()?.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn unlock(self) -> Result<(), Error> {
        self.inner.release("LockGuard::unlock")
    }

    /// Sets a fixed-lease lock to expire `lease` from now
    /// ([`crate::LockGuard::extend`]).
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::extend`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock_guard:extend").lease(Duration::from_secs(2));
    /// let guard = lock.try_lock()?;
    /// let until = guard.expires_at().expect("a fixed lease");
    /// guard.extend(Duration::from_secs(30))?; // the work takes longer than planned
    /// assert!(guard.expires_at().expect("a fixed lease") > until);
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn extend(&self, lease: Duration) -> Result<(), Error> {
        call("LockGuard::extend", self.get().extend(lease))
    }

    /// The end of a fixed lease by the local clock; `None` in watchdog
    /// mode.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:lock_guard:expires_at").try_lock()?;
    /// assert_eq!(guard.expires_at(), None); // watchdog mode: no end while it is held
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<Instant> {
        self.get().expires_at()
    }

    /// Asks Redis whether this guard still holds the lock.
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::is_held`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock_guard:is_held");
    /// let short = lock.clone().lease(Duration::from_millis(50)).try_lock()?;
    /// std::thread::sleep(Duration::from_millis(80));
    /// assert!(!short.is_held()?); // expired in Redis
    /// let guard = lock.try_lock()?;
    /// assert!(guard.is_held()?);
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> Result<bool, Error> {
        call("LockGuard::is_held", self.get().is_held())
    }

    /// Waits at most `timeout` for the lock to be lost
    /// ([`crate::LockGuard::lost`]): `Some` with the reason if it was (or
    /// is), `None` if it is still held when the time is up.
    ///
    /// # Errors
    ///
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::LostReason;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:lost").lease(Duration::from_millis(50)).try_lock()?;
    /// assert_eq!(guard.lost(Duration::from_secs(1))?, Some(LostReason::Expired));
    /// assert!(guard.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self, timeout: Duration) -> Result<Option<LostReason>, Error> {
        within("LockGuard::lost", timeout, self.get().lost())
    }

    /// Returns true if the lock is known or must be assumed lost
    /// ([`crate::LockGuard::is_lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let lock = client.lock("doc:blocking:lock_guard:is_lost").lease(Duration::from_millis(50));
    /// let guard = lock.try_lock()?;
    /// std::thread::sleep(Duration::from_millis(80));
    /// // Past its lease by our clock: check before every step of a long job.
    /// assert!(guard.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

/// A handle to one named read-write lock; made by
/// [`Client::read_write_lock`](super::Client::read_write_lock). Many
/// readers or one writer, on Redisson's `RReadWriteLock` layout
/// ([`crate::ReadWriteLock`]).
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let rw = client.read_write_lock("doc:blocking:rw");
/// let (a, b) = (rw.read().try_lock()?, rw.read().try_lock()?);
/// assert!(rw.write().try_lock().unwrap_err().is_busy());
/// a.unlock()?;
/// b.unlock()?;
/// rw.write().try_lock()?.unlock()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    inner: crate::ReadWriteLock,
}

impl ReadWriteLock {
    pub(super) fn from(inner: crate::ReadWriteLock) -> ReadWriteLock {
        ReadWriteLock { inner }
    }

    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let rw = client.read_write_lock("doc:blocking:read_write_lock:name");
    /// assert_eq!(rw.name(), "doc:blocking:read_write_lock:name");
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The read side: shared with other readers, excluded by a writer.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let rw = client.read_write_lock("doc:blocking:read_write_lock:read");
    /// let first = rw.read().try_lock()?;
    /// let second = rw.read().try_lock()?; // readers share it
    /// assert!(first.is_held()? && second.is_held()?);
    /// first.unlock()?;
    /// second.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn read(&self) -> Lock {
        Lock::from(self.inner.read())
    }

    /// The write side: excludes every other hold, read or write.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let rw = client.read_write_lock("doc:blocking:read_write_lock:write");
    /// let writer = rw.write().try_lock()?;
    /// // The writer excludes readers and other writers.
    /// assert!(rw.read().try_lock().unwrap_err().is_busy());
    /// assert!(rw.write().try_lock().unwrap_err().is_busy());
    /// writer.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn write(&self) -> Lock {
        Lock::from(self.inner.write())
    }
}
