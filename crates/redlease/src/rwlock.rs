//! [`ReadWriteLock`]: many readers or one writer, on Redisson's
//! `RReadWriteLock` layout. Each side is a [`Lock`] of its own kind, so
//! leases, waiting, guards, loss, fencing and scopes are the lock's.

use crate::kind::Kind;
use crate::lock::Lock;
use crate::shared::Handle;

/// A handle to one named read-write lock; made by
/// [`Client::read_write_lock`](crate::Client::read_write_lock).
///
/// [`read`](ReadWriteLock::read) and [`write`](ReadWriteLock::write) return
/// the two sides as [`Lock`]s with the whole lock API (leases, `try_lock`,
/// `try_lock_for`, `lock`, guards with `unlock`, `lost`, fencing tokens).
/// Any number of read holds share the lock; a write hold excludes every
/// other hold, read or write, of any owner.
///
/// The data is Redisson's `RReadWriteLock` (the hash `name` with a `mode`
/// field, readers `<client-id>:<n>`, writers `<client-id>:<n>:write`, one
/// timeout key per read hold, releases announced on
/// `redisson_rwlock:{name}`), so a Java reader and a Rust writer on one name
/// exclude each other, and each side's release wakes the other's waiters.
///
/// In an owner [`scope`](crate::scope), the owner of the write side may also
/// take the read side (a downgrade: release the write side afterwards and
/// keep reading), as in Redisson; the owner of the read side may not take
/// the write side, which would wait for its own read hold for ever
/// (Redisson's does): that is refused with an error for which
/// [`is_invalid_argument`](crate::Error::is_invalid_argument) is true.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let rw = client.read_write_lock("doc:rwlock:prices");
/// let reading = rw.read().try_lock().await?;
/// // ... read the cache: other readers may read too ...
/// let also_reading = rw.read().try_lock().await?;
/// reading.unlock().await?;
/// also_reading.unlock().await?;
///
/// let writing = rw.write().lock().await?;
/// // ... rebuild the cache alone ...
/// writing.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    handle: Handle,
}

impl ReadWriteLock {
    /// The handle [`Client::read_write_lock`](crate::Client::read_write_lock) makes.
    pub(crate) fn new(handle: Handle) -> ReadWriteLock {
        ReadWriteLock { handle }
    }

    /// The lock's name, which is also its Redis key.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let rw = client.read_write_lock("doc:rwlock:name");
    /// assert_eq!(rw.name(), "doc:rwlock:name");
    /// assert_eq!(rw.read().name(), rw.write().name());
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// The read side: shared with every other read hold, excluded by a
    /// write hold of another owner.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let rw = client.read_write_lock("doc:rwlock:read");
    /// let reading = rw.read().try_lock().await?;
    /// // Readers share the lock; a writer waits for them.
    /// let also_reading = rw.read().try_lock().await?;
    /// assert!(rw.write().try_lock().await.unwrap_err().is_busy());
    /// reading.unlock().await?;
    /// also_reading.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn read(&self) -> Lock {
        Lock::new(self.handle.clone(), Kind::Read)
    }

    /// The write side: excludes every other hold of the lock, read or write.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let rw = client.read_write_lock("doc:rwlock:write");
    /// let writing = rw.write().try_lock().await?;
    /// // A writer excludes readers and other writers.
    /// assert!(rw.read().try_lock().await.unwrap_err().is_busy());
    /// assert!(rw.write().try_lock().await.unwrap_err().is_busy());
    /// writing.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn write(&self) -> Lock {
        Lock::new(self.handle.clone(), Kind::Write)
    }
}
