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
    fn from(inner: crate::Client) -> Client {
        Client { inner }
    }

    /// Connects as [`crate::Client::connect`] does, with the default
    /// options.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::connect`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// assert!(!client.id().is_empty());
    ///
    /// // Inside a Tokio runtime it refuses, and sends nothing: use redlease::Client there.
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let err = rt.block_on(async { redlease::blocking::Client::connect(&url) }).unwrap_err();
    /// assert!(err.is_runtime());
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// // The same client, for the async API in the async parts of the program.
    /// let async_client: &redlease::Client = client.as_async();
    /// assert_eq!(async_client.id(), client.id());
    /// # Ok(())
    /// # }
    /// ```
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// This client's id, the first part of every owner field it writes.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:client:id").try_lock()?;
    /// // The guard's owner field is `<client id>:<n>`.
    /// assert!(guard.owner().starts_with(&format!("{}:", client.id())));
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// The watchdog timeout: the lease of locks taken in watchdog mode.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// assert_eq!(client.watchdog_timeout(), redlease::DEFAULT_WATCHDOG_TIMEOUT);
    /// # Ok(())
    /// # }
    /// ```
    pub fn watchdog_timeout(&self) -> Duration {
        self.inner.watchdog_timeout()
    }

    /// How many holds the watchdog renews now.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:client:renewing").try_lock()?;
    /// assert_eq!(client.renewing(), 1); // watchdog mode: renewed until released
    /// guard.unlock()?;
    /// assert_eq!(client.renewing(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn renewing(&self) -> usize {
        self.inner.renewing()
    }

    /// A handle to the lock called `name` ([`crate::Client::lock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let guard = client.lock("doc:blocking:client:lock").try_lock()?;
    /// assert_eq!(guard.name(), "doc:blocking:client:lock");
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::from(self.inner.lock(name))
    }

    /// A handle to the fair lock called `name`
    /// ([`crate::Client::fair_lock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let fair = client.fair_lock("doc:blocking:client:fair_lock");
    /// let guard = fair.try_lock()?;
    /// assert!(fair.try_lock().unwrap_err().is_busy());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        Lock::from(self.inner.fair_lock(name))
    }

    /// A handle to the read-write lock called `name`
    /// ([`crate::Client::read_write_lock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let rw = client.read_write_lock("doc:blocking:client:read_write_lock");
    /// let reader = rw.read().try_lock()?;
    /// assert!(rw.write().try_lock().unwrap_err().is_busy());
    /// reader.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        ReadWriteLock::from(self.inner.read_write_lock(name))
    }

    /// A handle to the locks called `names`, taken all or none
    /// ([`crate::Client::multi_lock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let (a, b) = ("doc:blocking:client:multi_lock:a", "doc:blocking:client:multi_lock:b");
    /// let guard = client.multi_lock([a, b]).try_lock()?;
    /// assert!(guard.fencing_token(b).is_some());
    /// guard.unlock()?;
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let pool = client.semaphore("doc:blocking:client:semaphore");
    /// pool.try_set_permits(1)?;
    /// assert!(pool.try_acquire(1)?);
    /// pool.release(1)?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore::from(self.inner.semaphore(name))
    }

    /// A handle to the expirable semaphore called `name`
    /// ([`crate::Client::expirable_semaphore`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:client:expirable_semaphore");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// assert_eq!(slots.acquired_permits()?, 1);
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn expirable_semaphore(&self, name: impl Into<String>) -> ExpirableSemaphore {
        ExpirableSemaphore::from(self.inner.expirable_semaphore(name))
    }

    /// A handle to the count-down latch called `name`
    /// ([`crate::Client::count_down_latch`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let latch = client.count_down_latch("doc:blocking:client:count_down_latch");
    /// latch.try_set_count(1)?;
    /// latch.count_down()?;
    /// assert_eq!(latch.count()?, 0); // open
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a latch handle does nothing until it is used"]
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch::from(self.inner.count_down_latch(name))
    }
}
