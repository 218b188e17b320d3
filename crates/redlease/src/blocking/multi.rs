//! [`MultiLock`] with [`MultiGuard`], and [`RedLock`] with
//! [`RedLockGuard`]: the blocking twins of the locks taken on several keys
//! or several masters.

use std::fmt;
use std::time::{Duration, Instant};

use super::owned::Owned;
use super::{Client, call, within};
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_lock:lease:a", "doc:blocking:multi_lock:lease:b");
    /// let _guard = client.multi_lock([a, b]).lease(Duration::from_millis(50)).try_lock()?;
    /// std::thread::sleep(Duration::from_millis(80)); // never renewed
    /// client.lock(a).try_lock()?.unlock()?; // expired: free again
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> MultiLock {
        MultiLock {
            inner: self.inner.lease(lease),
        }
    }

    /// The member names, in the order they are taken.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_lock:names:a", "doc:blocking:multi_lock:names:b");
    /// let multi = client.multi_lock([b, a, b]);
    /// // Sorted, without duplicates: every caller takes them in this order.
    /// assert!(multi.names().eq([a, b]));
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let a = "doc:blocking:multi_lock:try_lock:a";
    /// let b = "doc:blocking:multi_lock:try_lock:b";
    /// let held = client.lock(b).try_lock()?;
    /// let e = client.multi_lock([a, b]).try_lock().unwrap_err(); // nothing is left held
    /// assert_eq!(e.key(), Some(b));
    /// held.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock(&self) -> Result<MultiGuard, Error> {
        call("MultiLock::try_lock", self.inner.try_lock()).map(MultiGuard::from)
    }

    /// Takes every member, waiting at most `wait`
    /// ([`crate::MultiLock::try_lock_for`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let a = "doc:blocking:multi_lock:try_lock_for:a";
    /// let b = "doc:blocking:multi_lock:try_lock_for:b";
    /// let held = client.lock(b).try_lock()?;
    /// let multi = client.multi_lock([a, b]);
    /// assert!(multi.try_lock_for(Duration::from_millis(50)).unwrap_err().is_busy());
    /// held.unlock()?;
    /// multi.try_lock_for(Duration::from_secs(1))?.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock_for(&self, wait: Duration) -> Result<MultiGuard, Error> {
        call("MultiLock::try_lock_for", self.inner.try_lock_for(wait)).map(MultiGuard::from)
    }

    /// Takes every member, waiting for as long as it takes
    /// ([`crate::MultiLock::lock`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_lock:lock:a", "doc:blocking:multi_lock:lock:b");
    /// let guard = client.multi_lock([a, b]).lock()?; // waits for as long as it takes
    /// assert!(client.lock(a).try_lock().unwrap_err().is_busy());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
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
    inner: Owned<crate::MultiGuard>,
}

impl MultiGuard {
    fn from(inner: crate::MultiGuard) -> MultiGuard {
        MultiGuard {
            inner: Owned::new(inner),
        }
    }

    fn get(&self) -> &crate::MultiGuard {
        self.inner.get()
    }

    /// The members' names, in the order they were taken.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_guard:names:a", "doc:blocking:multi_guard:names:b");
    /// let guard = client.multi_lock([b, a]).try_lock()?;
    /// assert!(guard.names().eq([a, b])); // in the order they were taken
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.get().guards().iter().map(crate::LockGuard::name)
    }

    /// The fencing token of member `name`, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let a = "doc:blocking:multi_guard:fencing_token:a";
    /// let b = "doc:blocking:multi_guard:fencing_token:b";
    /// let guard = client.multi_lock([a, b]).try_lock()?;
    /// assert!(guard.fencing_token(a).is_some()); // pass it with every write to `a`'s resource
    /// assert_eq!(guard.fencing_token("not a member"), None);
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_guard:unlock:a", "doc:blocking:multi_guard:unlock:b");
    /// let guard = client.multi_lock([a, b]).try_lock()?;
    /// guard.unlock()?;
    /// // Every member is free again.
    /// client.lock(b).try_lock()?.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn unlock(self) -> Result<(), Error> {
        self.inner.release("MultiGuard::unlock")
    }

    /// Waits at most `timeout` for any member to be lost
    /// ([`crate::MultiGuard::lost`]): `Some` with its name and the reason,
    /// `None` if all are still held when the time is up.
    ///
    /// # Errors
    ///
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_guard:lost:a", "doc:blocking:multi_guard:lost:b");
    /// let guard = client.multi_lock([a, b]).lease(Duration::from_millis(50)).try_lock()?;
    /// let (name, reason) = guard.lost(Duration::from_secs(1))?.expect("lost within the second");
    /// assert!(name == a || name == b);
    /// assert_eq!(reason, redlease::LostReason::Expired);
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self, timeout: Duration) -> Result<Option<(String, LostReason)>, Error> {
        within("MultiGuard::lost", timeout, self.get().lost())
    }

    /// Returns true if any member is lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:multi_guard:is_lost:a", "doc:blocking:multi_guard:is_lost:b");
    /// let guard = client.multi_lock([a, b]).lease(Duration::from_millis(50)).try_lock()?;
    /// std::thread::sleep(Duration::from_millis(80));
    /// assert!(guard.is_lost()); // past the members' lease by our clock
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
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
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// // clients: one blocking client per independent master.
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:new")?;
    /// assert_eq!(redlock.quorum(), 2);
    ///
    /// let none: Vec<redlease::blocking::Client> = Vec::new();
    /// assert!(RedLock::new(none, "doc:blocking:redlock:new").unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(
        clients: impl IntoIterator<Item = Client>,
        name: impl Into<String>,
    ) -> Result<RedLock, Error> {
        let clients = clients.into_iter().map(|c| c.as_async().clone());
        crate::RedLock::new(clients, name).map(|inner| RedLock { inner })
    }

    /// The lease on each master ([`crate::RedLock::lease`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:lease")?
    ///     .lease(Duration::from_secs(20));
    /// let guard = redlock.try_lock()?;
    /// // Valid for less than the lease: the acquire and the drift take their share.
    /// assert!(guard.valid_until() < Instant::now() + Duration::from_secs(20));
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> RedLock {
        RedLock {
            inner: self.inner.lease(lease),
        }
    }

    /// How long one master may take to answer an acquire
    /// ([`crate::RedLock::master_timeout`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// // Masters across a WAN: give each 200 ms to answer.
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:master_timeout")?
    ///     .master_timeout(Duration::from_millis(200));
    /// let guard = redlock.try_lock()?;
    /// assert!(guard.masters() >= redlock.quorum());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`master_timeout` returns a new handle; use it to acquire"]
    pub fn master_timeout(self, timeout: Duration) -> RedLock {
        RedLock {
            inner: self.inner.master_timeout(timeout),
        }
    }

    /// The number of masters that must grant the lock: N/2 + 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:quorum")?;
    /// // 3 masters: 2 must grant it; one may be down.
    /// assert_eq!(redlock.quorum(), 2);
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:try_lock")?;
    /// let guard = redlock.try_lock()?;
    /// // Held: a second attempt finds no master to grant it.
    /// assert!(redlock.try_lock().unwrap_err().is_busy());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_lock(&self) -> Result<RedLockGuard, Error> {
        call("RedLock::try_lock", self.inner.try_lock()).map(RedLockGuard::from)
    }

    /// Attempts until `wait` has passed ([`crate::RedLock::try_lock_for`]).
    ///
    /// # Errors
    ///
    /// As its async twin.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock:try_lock_for")?
    ///     .lease(Duration::from_millis(100));
    /// let first = redlock.try_lock()?;
    /// // Retries until the first holder's 100 ms lease is over.
    /// let second = redlock.try_lock_for(Duration::from_secs(2))?;
    /// assert!(first.is_lost());
    /// second.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
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
    inner: Owned<crate::RedLockGuard>,
}

impl RedLockGuard {
    fn from(inner: crate::RedLockGuard) -> RedLockGuard {
        RedLockGuard {
            inner: Owned::new(inner),
        }
    }

    fn get(&self) -> &crate::RedLockGuard {
        self.inner.get()
    }

    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let guard = RedLock::new(clients, "doc:blocking:redlock_guard:name")?.try_lock()?;
    /// assert_eq!(guard.name(), "doc:blocking:redlock_guard:name");
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.get().name()
    }

    /// How many masters hold it now.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let guard = RedLock::new(clients, "doc:blocking:redlock_guard:masters")?.try_lock()?;
    /// // At least a quorum; more as late grants come in.
    /// assert!((2..=3).contains(&guard.masters()));
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn masters(&self) -> usize {
        self.get().masters()
    }

    /// When the lock stops being valid by this process's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock_guard:valid_until")?
    ///     .lease(Duration::from_secs(10));
    /// let guard = redlock.try_lock()?;
    /// let left = guard.valid_until().saturating_duration_since(Instant::now());
    /// assert!(left > Duration::from_secs(9) && left < Duration::from_secs(10));
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn valid_until(&self) -> Instant {
        self.get().valid_until()
    }

    /// Whether the validity has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock_guard:is_lost")?
    ///     .lease(Duration::from_millis(100));
    /// let guard = redlock.try_lock()?;
    /// std::thread::sleep(Duration::from_millis(100));
    /// assert!(guard.is_lost()); // the validity, shorter than the lease, has ended
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }

    /// Waits at most `timeout` for the validity to end: `Some` with the
    /// reason if it did, `None` otherwise ([`crate::RedLockGuard::lost`]).
    ///
    /// # Errors
    ///
    /// [`is_runtime`](Error::is_runtime) inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock_guard:lost")?
    ///     .lease(Duration::from_millis(100));
    /// let guard = redlock.try_lock()?;
    /// // Work that would take a second outlives the lock.
    /// assert_eq!(guard.lost(Duration::from_secs(1))?, Some(redlease::LostReason::Expired));
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock_guard:extend")?
    ///     .lease(Duration::from_secs(5));
    /// let mut guard = redlock.try_lock()?;
    /// let before = guard.valid_until();
    /// guard.extend(Duration::from_secs(30))?;
    /// assert!(guard.valid_until() > before);
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn extend(&mut self, lease: Duration) -> Result<(), Error> {
        let guard = self.inner.get_mut();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::blocking::RedLock;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    /// # let clients = urls.iter().map(|url| redlease::blocking::Client::connect(url));
    /// # let clients = clients.collect::<Result<Vec<_>, _>>()?;
    /// let redlock = RedLock::new(clients, "doc:blocking:redlock_guard:unlock")?;
    /// let guard = redlock.try_lock()?;
    /// guard.unlock()?;
    /// // Free on every master again.
    /// redlock.try_lock()?.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn unlock(self) -> Result<(), Error> {
        self.inner.release("RedLockGuard::unlock")
    }
}

impl fmt::Debug for RedLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
