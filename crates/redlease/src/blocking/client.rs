//! [`Client`]: the blocking twin of [`crate::Client`], and the handles it
//! makes.

use std::time::Duration;

use super::{CountDownLatch, ExpirableSemaphore, Lock, MultiLock, ReadWriteLock, Semaphore, call};
use crate::error::Error;

/// A connection to Redis for the blocking API: [`crate::Client`] behind
/// calls that block.
///
/// Cheap to clone; clones share the connection, the watchdog and the
/// release subscriptions, as async clients do.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let guard = client.lock("doc:blocking:client").try_lock()?;
/// assert!(client.lock("doc:blocking:client").try_lock().unwrap_err().is_busy());
/// guard.unlock()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
}

impl Client {
    /// Connects as [`crate::Client::connect`] does, with the default
    /// options.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::connect`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Client, Error> {
        call("Client::connect", crate::Client::connect(url)).map(Client::from)
    }

    /// Connects with the options of `builder` (made by
    /// [`crate::Client::builder`]).
    ///
    /// # Errors
    ///
    /// As [`crate::ClientBuilder::build`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let builder = redlease::Client::builder(&url).watchdog_timeout(Duration::from_secs(5));
    /// let client = redlease::blocking::Client::from_builder(builder)?;
    /// assert_eq!(client.watchdog_timeout(), Duration::from_secs(5));
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_builder(builder: crate::ClientBuilder) -> Result<Client, Error> {
        call("Client::from_builder", builder.build()).map(Client::from)
    }

    /// The async client behind this one, for what has no blocking twin
    /// (the [`admin`](crate::admin) functions, an owner
    /// [`scope`](crate::scope)) in async code of the same program.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// This client's id, the first part of every owner field it writes.
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// The watchdog timeout: the lease of locks taken in watchdog mode.
    pub fn watchdog_timeout(&self) -> Duration {
        self.inner.watchdog_timeout()
    }

    /// How many holds the watchdog renews now.
    pub fn renewing(&self) -> usize {
        self.inner.renewing()
    }

    /// A handle to the lock called `name` ([`crate::Client::lock`]).
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::from(self.inner.lock(name))
    }

    /// A handle to the fair lock called `name`
    /// ([`crate::Client::fair_lock`]).
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        Lock::from(self.inner.fair_lock(name))
    }

    /// A handle to the read-write lock called `name`
    /// ([`crate::Client::read_write_lock`]).
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        ReadWriteLock::from(self.inner.read_write_lock(name))
    }

    /// A handle to the locks called `names`, taken all or none
    /// ([`crate::Client::multi_lock`]).
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn multi_lock<I, S>(&self, names: I) -> MultiLock
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        MultiLock::from(self.inner.multi_lock(names))
    }

    /// A handle to the semaphore called `name`
    /// ([`crate::Client::semaphore`]).
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore::from(self.inner.semaphore(name))
    }

    /// A handle to the expirable semaphore called `name`
    /// ([`crate::Client::expirable_semaphore`]).
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn expirable_semaphore(&self, name: impl Into<String>) -> ExpirableSemaphore {
        ExpirableSemaphore::from(self.inner.expirable_semaphore(name))
    }

    /// A handle to the count-down latch called `name`
    /// ([`crate::Client::count_down_latch`]).
    #[must_use = "a latch handle does nothing until it is used"]
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch::from(self.inner.count_down_latch(name))
    }
}

impl Client {
    fn from(inner: crate::Client) -> Client {
        Client { inner }
    }
}
