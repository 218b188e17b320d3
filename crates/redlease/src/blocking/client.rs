//! [`Client`]: the blocking twin of [`crate::Client`], and the handles it
//! makes.

use std::time::Duration;

use super::{
    CountDownLatch, Election, ExpirableSemaphore, Lock, MultiLock, ReadWriteLock, Semaphore, call,
};
use crate::error::Error;

twin! {
    /// A connection to Redis for the blocking API: [`crate::Client`] behind
    /// calls that block.
    ///
    /// Cheap to clone; clones share the connection, the watchdog and the
    /// release subscriptions, as async clients do.
    handle Client {} example {
        "let guard = client.lock(name).try_lock()?;"
        "assert!(client.lock(name).try_lock().unwrap_err().is_busy());"
    }

    /// this client's id, the first part of every owner field it writes.
    fn id(&self) -> &str {
        "let guard = client.lock(name).try_lock()?;"
        "assert!(guard.owner().starts_with(&format!(\"{}:\", client.id())));"
    }
    /// the lease of locks taken in watchdog mode.
    fn watchdog_timeout(&self) -> Duration {
        "assert_eq!(client.watchdog_timeout(), redlease::DEFAULT_WATCHDOG_TIMEOUT);"
    }
    /// how many holds the watchdog renews now.
    fn renewing(&self) -> usize {
        "let guard = client.lock(name).try_lock()?;"
        "assert_eq!(client.renewing(), 1); // watchdog mode: renewed until released"
    }
    /// a handle to the lock called `name`.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn lock(&self, name: impl Into<String>) -> Lock {
        "let guard = client.lock(name).try_lock()?;"
        "assert!(client.lock(name).try_lock().unwrap_err().is_busy());"
    }
    /// a handle to the fair lock called `name`: waiters get it in turn.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn fair_lock(&self, name: impl Into<String>) -> Lock {
        "let fair = client.fair_lock(name);"
        "let guard = fair.try_lock()?;"
        "assert!(fair.try_lock().unwrap_err().is_busy());"
    }
    /// a handle to the read-write lock called `name`.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        "let rw = client.read_write_lock(name);"
        "let reader = rw.read().try_lock()?;"
        "assert!(rw.write().try_lock().unwrap_err().is_busy());"
    }
    /// a handle to the leader election called `name`.
    #[must_use = "an election handle does nothing until it is used"]
    fn election(&self, name: impl Into<String>) -> Election {
        "let election = client.election(name);"
        "let leadership = election.try_campaign(\"me\")?;"
        "assert!(election.try_campaign(\"another\").unwrap_err().is_busy());"
    }
    /// a handle to the locks called `names`, taken all or none.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn multi_lock(&self, names: impl IntoIterator<Item = impl Into<String>>) -> MultiLock {
        "let guard = client.multi_lock([format!(\"{name}:a\"), format!(\"{name}:b\")]).try_lock()?;"
        "assert!(guard.fencing_token_of(&format!(\"{name}:b\")).is_some());"
    }
    /// a handle to the semaphore called `name`.
    #[must_use = "a semaphore handle does nothing until it is used"]
    fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        "let pool = client.semaphore(name);"
        "pool.try_set_available(1)?;"
        "let permit = pool.try_acquire(1)?;"
    }
    /// a handle to the expirable semaphore called `name`.
    #[must_use = "a semaphore handle does nothing until it is used"]
    fn expirable_semaphore(&self, name: impl Into<String>) -> ExpirableSemaphore {
        "let slots = client.expirable_semaphore(name);"
        "slots.try_set_total(1)?;"
        "let permit = slots.try_acquire()?;"
    }
    /// a handle to the count-down latch called `name`.
    #[must_use = "a latch handle does nothing until it is used"]
    fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        "let latch = client.count_down_latch(name);"
        "latch.try_set_count(1)?;"
        "latch.count_down()?;"
        "assert_eq!(latch.count()?, 0); // open"
    }

    /// Connects as [`crate::Client::connect`] does, with the default
    /// options.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::connect`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime, where nothing is sent: use the async API
    /// there.
    own fn connect(url: &str) -> Result<Client, Error> {
        call("Client::connect", crate::Client::connect(url)).map(|inner| Client { inner })
    } {
        "let client = redlease::blocking::Client::connect(&url)?;"
        "let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();"
        "let err = rt.block_on(async { redlease::blocking::Client::connect(&url) }).unwrap_err();"
        "assert!(err.is_runtime());"
    }
    /// Connects with the options of `builder` (made by
    /// [`crate::Client::builder`]).
    ///
    /// # Errors
    ///
    /// As [`crate::ClientBuilder::build`]; [`is_runtime`](Error::is_runtime)
    /// inside a Tokio runtime.
    own fn from_builder(builder: crate::ClientBuilder) -> Result<Client, Error> {
        call("Client::from_builder", builder.build()).map(|inner| Client { inner })
    } {
        "let builder = redlease::Client::builder(&url).watchdog_timeout(Duration::from_secs(5));"
        "let client = redlease::blocking::Client::from_builder(builder)?;"
        "assert_eq!(client.watchdog_timeout(), Duration::from_secs(5));"
    }
    /// The async client behind this one, for what has no blocking twin
    /// (the [`admin`](crate::admin) functions, an owner
    /// [`scope`](crate::scope)) in async code of the same program.
    own fn as_async(&self) -> &crate::Client { &self.inner } {
        "assert_eq!(client.as_async().id(), client.id()); // the same client"
    }
}
