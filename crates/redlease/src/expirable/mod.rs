//! [`ExpirableSemaphore`]: Redisson's `RPermitExpirableSemaphore`, permits
//! with ids and leases, as a user sees it, and its single acquire attempt.
//! Waiting is the waiting engine's ([`crate::wait`]); holding a permit is
//! [`PermitGuard`]'s.
//!
//! The layout and the scripts are in [`crate::scripts::expirable`].

mod guard;

use std::fmt::Write as _;
use std::time::Duration;

use tokio::time::Instant;

use crate::count;
use crate::error::{Error, quoted, wrong_type_message};
use crate::front::{self, Begin, Patience};
use crate::layout;
use crate::name;
use crate::pubsub::Wakes;
use crate::scripts::commands;
use crate::scripts::expirable::{self as scripts, Acquire, Added, Counts, Release};
use crate::shared::Handle;
use crate::wait::{Attempt, Contender};

pub use guard::PermitGuard;
use guard::{Lease, Pending};

/// The most permits a semaphore may count, signed for the checks.
const MAX_PERMITS: i64 = count::MAX_PERMITS as i64;

/// A handle to one named expirable semaphore; made by
/// [`Client::expirable_semaphore`](crate::Client::expirable_semaphore).
///
/// Redisson's `RPermitExpirableSemaphore`, on the same keys: the string
/// `name` counts the free permits, and each acquired permit is a member of
/// the zset `{name}:timeout` (its 16-byte id) scored with its expiry. An
/// acquired permit that expires is returned to the pool by the next
/// operation on the semaphore, by any client, Java or Rust. So a holder
/// that crashed gives its permit back within one lease, and Java and Rust
/// services share one limit.
///
/// Cheap to clone; holds nothing in Redis by itself. Each acquire returns a
/// [`PermitGuard`] for one permit.
///
/// # Lease modes
///
/// By default a permit's lease is the client's
/// [watchdog timeout](crate::ClientBuilder::watchdog_timeout), renewed every
/// third of it for as long as the guard lives: a long job keeps its permit,
/// and a crashed one's permit comes back within one timeout.
/// [`lease`](ExpirableSemaphore::lease) selects a fixed lease instead (as
/// Redisson's `leaseTime`): never renewed, the permit expires after it
/// whatever happens.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let exports = client.expirable_semaphore("doc:expirable:exports");
/// exports.try_set_total(3).await?; // at most 3 exports at once, fleet-wide
/// let permit = exports.acquire().await?;
/// // ... the export ...
/// permit.release().await?;
/// assert_eq!(exports.acquired_permits().await?, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ExpirableSemaphore {
    handle: Handle,
    /// `None`: renewed like a watchdog-mode lock.
    lease: Option<Duration>,
}

impl ExpirableSemaphore {
    /// The handle [`Client::expirable_semaphore`](crate::Client::expirable_semaphore) makes.
    pub(crate) fn new(handle: Handle) -> ExpirableSemaphore {
        ExpirableSemaphore {
            handle,
            lease: None,
        }
    }

    /// Selects a fixed lease for the permits this handle acquires: each
    /// expires `lease` after it is acquired and is never renewed (Redisson's
    /// `leaseTime`). A lease under 1 ms is rejected when the handle is used.
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
    /// let exports = client.expirable_semaphore("doc:expirable:lease");
    /// exports.try_set_total(1).await?;
    /// let short = exports.clone().lease(Duration::from_millis(20));
    /// let _permit = short.try_acquire().await?;
    /// assert_eq!(exports.available_permits().await?, 0);
    /// tokio::time::sleep(Duration::from_millis(60)).await; // never renewed
    /// assert_eq!(exports.available_permits().await?, 1); // back in the pool
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(mut self, lease: Duration) -> ExpirableSemaphore {
        self.lease = Some(lease);
        self
    }

    /// The semaphore's name, which is also the key of its free permits.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:name");
    /// assert_eq!(exports.name(), "doc:expirable:name"); // the free permits' key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// Sets the number of permits if none is set yet (the key is absent),
    /// and announces them to waiters. Returns true if and only if it set
    /// them.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a bad name,
    /// or `permits` above [`MAX_PERMITS`](crate::MAX_PERMITS); [`is_wrong_type`](Error::is_wrong_type) when the
    /// key holds something other than an integer; connection and server
    /// errors as they come.
    ///
    /// # Cancel safety
    ///
    /// One script, which runs whole or not at all: dropping the future
    /// leaves the permits set or not, and nothing else.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:try-set");
    /// assert!(exports.try_set_total(3).await?); // set here
    /// assert!(!exports.try_set_total(10).await?); // set already: left as it is
    /// assert_eq!(exports.available_permits().await?, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_set_total(&self, permits: u64) -> Result<bool, Error> {
        self.check_name()?;
        let permits = self.check_count("permits", permits.try_into().unwrap_or(i64::MAX), 0)?;
        let conn = self.handle.client.conn();
        let set: i64 = self
            .run(&scripts::try_set(
                &self.handle.name,
                permits,
                conn.publish(),
            ))
            .await?;
        Ok(set == 1)
    }

    /// Makes the semaphore count `permits` in all, free and acquired, as
    /// Redisson's `setPermits`: acquired permits stay acquired, and the free
    /// count moves by the difference (below zero if more are acquired than
    /// `permits`, until enough are released). The new total is announced.
    ///
    /// # Errors
    ///
    /// As [`try_set_total`](ExpirableSemaphore::try_set_total).
    ///
    /// # Cancel safety
    ///
    /// As [`try_set_total`](ExpirableSemaphore::try_set_total).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:set");
    /// exports.try_set_total(3).await?;
    /// let permit = exports.try_acquire().await?;
    /// exports.set_total(5).await?; // 5 in all: 1 acquired, 4 free
    /// assert_eq!(exports.available_permits().await?, 4);
    /// assert_eq!(exports.acquired_permits().await?, 1);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_total(&self, permits: u64) -> Result<(), Error> {
        self.check_name()?;
        let permits = self.check_count("permits", permits.try_into().unwrap_or(i64::MAX), 0)?;
        let conn = self.handle.client.conn();
        let _: i64 = self
            .run(&scripts::set(&self.handle.name, permits, conn.publish()))
            .await?;
        Ok(())
    }

    /// Adds `permits` free permits, or removes them when negative (the free
    /// count may go below zero), as Redisson's `addPermits`; added permits
    /// are announced to waiters. A missing key counts as zero.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a bad name,
    /// or when the free count would leave the range of a Java `int` (nothing
    /// is changed then); [`is_wrong_type`](Error::is_wrong_type) as
    /// [`try_set_total`](ExpirableSemaphore::try_set_total).
    ///
    /// # Cancel safety
    ///
    /// As [`try_set_total`](ExpirableSemaphore::try_set_total).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:add");
    /// exports.add_permits(2).await?; // a missing key counts as 0
    /// let too_many = exports.add_permits(i64::from(i32::MAX)).await;
    /// assert!(too_many.unwrap_err().is_invalid_argument()); // beyond a Java int
    /// exports.add_permits(-3).await?; // may go below zero
    /// assert_eq!(exports.available_permits().await?, -1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn add_permits(&self, permits: i64) -> Result<(), Error> {
        self.check_name()?;
        let permits = self.check_count("added permits", permits, -MAX_PERMITS)?;
        let conn = self.handle.client.conn();
        match self
            .run(&scripts::add(&self.handle.name, permits, conn.publish()))
            .await?
        {
            Added::Done(_) => Ok(()),
            Added::OutOfRange(free) => Err(Error::invalid(format!(
                "adding {permits} permits to {free} free ones would leave the range of a java int"
            ))
            .with_key(&self.handle.name)),
        }
    }

    /// The number of free permits, after expired permits were returned to
    /// the pool (as Redisson's `availablePermits`, this writes when some
    /// had expired, and wakes waiters then). Zero when never set; negative
    /// when permits were removed while acquired.
    ///
    /// # Errors
    ///
    /// As [`try_set_total`](ExpirableSemaphore::try_set_total), for the
    /// name and the key's type.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the reclaim it may run is what any later operation
    /// would do.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:available");
    /// assert_eq!(exports.available_permits().await?, 0); // never set
    /// exports.try_set_total(2).await?;
    /// let permit = exports.try_acquire().await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn available_permits(&self) -> Result<i64, Error> {
        Ok(self.counts().await?.available)
    }

    /// The number of acquired permits, by any client, after expired permits
    /// were returned to the pool (as Redisson's `acquiredPermits`).
    ///
    /// # Errors
    ///
    /// As [`available_permits`](ExpirableSemaphore::available_permits).
    ///
    /// # Cancel safety
    ///
    /// As [`available_permits`](ExpirableSemaphore::available_permits).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:acquired");
    /// exports.try_set_total(2).await?;
    /// let permit = exports.try_acquire().await?;
    /// assert_eq!(exports.acquired_permits().await?, 1); // by any client
    /// permit.release().await?;
    /// assert_eq!(exports.acquired_permits().await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquired_permits(&self) -> Result<u64, Error> {
        Ok(self.counts().await?.acquired)
    }

    /// Releases the permit with id `permit_id` (32 hex digits, as
    /// [`PermitGuard::id`] and Redisson's `acquire` return it), whoever
    /// acquired it: Redisson's `release(permitId)`, for a permit a Java
    /// service or another process handed over by id.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) when `permit_id`
    /// is not an even, non-zero number of hex digits;
    /// [`is_not_owner`](Error::is_not_owner) when no such permit is
    /// acquired (released, or reclaimed after it expired) or it had expired
    /// (it is returned to the pool all the same);
    /// [`is_wrong_type`](Error::is_wrong_type) as
    /// [`try_set_total`](ExpirableSemaphore::try_set_total).
    ///
    /// # Cancel safety
    ///
    /// As [`try_set_total`](ExpirableSemaphore::try_set_total): the
    /// permit is released or not.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:release-by-id");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// let id = permit.id().to_owned(); // handed over, to a Java service say
    /// exports.release_by_id(&id).await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// assert!(permit.release().await.unwrap_err().is_not_owner()); // released already
    /// # Ok(())
    /// # }
    /// ```
    pub async fn release_by_id(&self, permit_id: &str) -> Result<(), Error> {
        self.check_name()?;
        let raw = from_hex(permit_id).ok_or_else(|| {
            Error::invalid(format!(
                "permit id must be an even, non-zero number of hex digits, but found {permit_id:?}"
            ))
        })?;
        let conn = self.handle.client.conn();
        let released = self
            .run(&scripts::release(
                &self.handle.name,
                &raw,
                conn.publish(),
                None,
            ))
            .await?;
        expect_released(&self.handle.name, permit_id, released)
    }

    /// Makes one attempt to acquire a permit.
    ///
    /// # Errors
    ///
    /// An error for which [`is_busy`](Error::is_busy) is true when no permit
    /// is free; [`is_invalid_argument`](Error::is_invalid_argument) for a
    /// bad name or lease; [`is_wrong_type`](Error::is_wrong_type) when the
    /// key holds something other than an integer or its `{name}:timeout`
    /// key something other than a zset; connection and server errors as
    /// they come.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future never leaves a permit held by nobody: the
    /// attempt's permit id is chosen before the request is sent, and if the
    /// request may be in Redis, a release of that id follows it in the
    /// background on the same connection (so it runs after the acquire). The
    /// release changes nothing when the id is not there, so this is safe
    /// whether or not the acquire ran.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:try-acquire");
    /// exports.try_set_total(1).await?;
    /// let permit = exports.try_acquire().await?;
    /// let busy = exports.try_acquire().await.unwrap_err(); // none left
    /// assert!(busy.is_busy());
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_acquire(&self) -> Result<PermitGuard, Error> {
        front::acquire(self, Patience::Once).await
    }

    /// Tries to acquire a permit until `wait` has passed.
    ///
    /// After a first failed attempt the waiter subscribes to the
    /// semaphore's channel `redisson_sc:{name}` (shared with every waiter on
    /// it in the client), retries once, then sleeps until a message
    /// announces free permits (a message `n` wakes up to `n` waiters of
    /// this client), never longer than until the nearest acquired permit
    /// expires nor past the end of `wait`. A release by any client,
    /// Redisson included, wakes it. A `wait` of zero is
    /// [`try_acquire`](ExpirableSemaphore::try_acquire).
    ///
    /// # Errors
    ///
    /// An error for which [`is_busy`](Error::is_busy) is true when no permit
    /// became free during the wait ([`Error::waited`] says how long it
    /// waited). Lost connections and time-outs are retried until the wait
    /// ends; any other error ends the wait at once.
    ///
    /// # Cancel safety
    ///
    /// As [`try_acquire`](ExpirableSemaphore::try_acquire): no permit is left
    /// behind. It also leaves the channel (unsubscribing if it was the
    /// client's last waiter on it), and hands a wake-up it had received but
    /// not used to the next local waiter.
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
    /// let exports = client.expirable_semaphore("doc:expirable:try-acquire-for");
    /// exports.try_set_total(1).await?;
    /// let first = exports.try_acquire_for(Duration::from_secs(5)).await?;
    ///
    /// // The holder releases in another task; the waiter wakes at its message.
    /// tokio::spawn(first.release());
    /// let second = exports.try_acquire_for(Duration::from_secs(5)).await?;
    /// second.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<PermitGuard, Error> {
        front::acquire(self, Patience::within(wait)).await
    }

    /// Waits until a permit is acquired, as
    /// [`try_acquire_for`](ExpirableSemaphore::try_acquire_for) with no time
    /// limit.
    ///
    /// # Errors
    ///
    /// Never busy. Invalid input and server errors end the wait; lost
    /// connections and time-outs are retried for as long as it waits, so
    /// bound it with `tokio::time::timeout` if Redis may stay down.
    ///
    /// # Cancel safety
    ///
    /// As [`try_acquire_for`](ExpirableSemaphore::try_acquire_for).
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
    /// let exports = client.expirable_semaphore("doc:expirable:acquire");
    /// exports.try_set_total(1).await?;
    /// // Bounded, in case Redis stays down.
    /// let permit = tokio::time::timeout(Duration::from_secs(10), exports.acquire())
    ///     .await
    ///     .expect("a permit within 10 s")?;
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire(&self) -> Result<PermitGuard, Error> {
        front::acquire(self, Patience::Forever).await
    }

    /// Runs one acquire script call: a new permit id, armed for release
    /// until the reply says what happened.
    async fn attempt(&self, lease_ms: u64) -> Result<Attempt<PermitGuard>, Error> {
        let id = uuid::Uuid::new_v4().into_bytes();
        let conn = self.handle.client.conn();
        let mut pending =
            Pending::armed(conn, &self.handle.name, id, Duration::from_millis(lease_ms));
        let call = scripts::acquire(&self.handle.name, lease_ms, &[&id], conn.publish());
        let sent_at = Instant::now();
        let reply = call.run::<Acquire>(conn).await;
        match reply {
            Ok(Acquire::Acquired) => {}
            Ok(Acquire::Busy(nearest)) => {
                pending.disarm();
                return Ok(Attempt::Busy(nearest));
            }
            Ok(Acquire::Short(nearest)) => {
                pending.disarm();
                return Ok(Attempt::Short(nearest));
            }
            Err(err) => {
                // An error reply proves the script wrote nothing; anything
                // else (no reply, a late one, one we could not read) leaves
                // the outcome unknown, and the release stays armed.
                if err.code().is_some() {
                    pending.disarm();
                }
                return Err(self.error(err).await);
            }
        }
        pending.disarm();
        let lease = match self.lease {
            Some(lease) => Lease::Fixed {
                expires_at: sent_at + lease,
            },
            None => Lease::Renewed { sent_at },
        };
        tracing::debug!(key = %self.handle.name, "permit acquired");
        Ok(Attempt::Acquired(PermitGuard::new(&self.handle, id, lease)))
    }

    async fn counts(&self) -> Result<Counts, Error> {
        self.check_name()?;
        let conn = self.handle.client.conn();
        self.run(&scripts::counts(&self.handle.name, conn.publish()))
            .await
    }

    /// Runs one script call of this semaphore.
    async fn run<T: redis::FromRedisValue>(
        &self,
        call: &crate::scripts::ScriptCall,
    ) -> Result<T, Error> {
        match call.run::<T>(self.handle.client.conn()).await {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.error(e).await),
        }
    }

    /// A redis-rs error about this semaphore, in its words: a `WRONGTYPE`
    /// says what the key holds (one `TYPE`, on this error path only), or
    /// else that its permits key is the wrong type.
    async fn error(&self, err: redis::RedisError) -> Error {
        let name = &self.handle.name;
        let err = Error::from(err).with_key(name);
        if !err.is_wrong_type() {
            return err;
        }
        let conn = self.handle.client.conn();
        let message = match commands::what_key_holds(conn, name, "string").await {
            Some(holds) => wrong_type_message(
                "expirable semaphore",
                name,
                Some(&holds),
                "a string holding the number of available permits",
            ),
            None => format!(
                "expirable semaphore {} holds a value that is not a permit count, or its {} key is not a zset",
                quoted(name),
                quoted(&layout::permits_key(name))
            ),
        };
        err.reworded(message)
    }

    fn check_name(&self) -> Result<(), Error> {
        name::validate(&self.handle.name).map_err(|e| e.with_key(&self.handle.name))
    }

    /// Checks a permit count against `min..=`[`MAX_PERMITS`](crate::MAX_PERMITS).
    fn check_count(&self, what: &str, permits: i64, min: i64) -> Result<i64, Error> {
        count::check_permits(what, permits, min).map_err(|e| e.with_key(&self.handle.name))
    }

    /// Validates the name and lease; returns the lease to request, in ms.
    fn prepare(&self) -> Result<u64, Error> {
        self.check_name()?;
        match self.lease {
            Some(lease) => name::lease_millis("lease", lease),
            None => name::lease_millis("watchdog timeout", self.handle.client.watchdog_timeout()),
        }
        .map_err(|e| e.with_key(&self.handle.name))
    }
}

/// A release reply as the API reports it.
fn expect_released(name: &str, id: &str, released: Release) -> Result<(), Error> {
    let why = match released {
        Release::Released => return Ok(()),
        Release::Absent => "it was released, or reclaimed after it expired",
        Release::Expired => "it had expired; it is back in the pool now",
    };
    Err(Error::not_owner(name).reworded(format!(
        "permit {id} of semaphore {name:?} is not held ({why})"
    )))
}

/// A permit id as Redisson shows it: lowercase hex.
fn to_hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The raw bytes of a permit id given in hex (either case), as Redisson's
/// `ByteBufUtil.decodeHexDump` reads it; `None` when it is not hex or has
/// an odd or zero length.
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

/// The acquires, as the front drives them.
impl front::Primitive for ExpirableSemaphore {
    type Guard = PermitGuard;
    type Contender<'a> = Waiter<'a>;

    const KIND: &'static str = "expirable semaphore";

    fn handle(&self) -> &Handle {
        &self.handle
    }

    async fn begin(&self, _: Patience) -> Result<Begin<PermitGuard, Waiter<'_>>, Error> {
        Ok(Begin::Contend(Waiter {
            semaphore: self,
            lease_ms: self.prepare()?,
        }))
    }
}

/// A waiting acquire, as the waiting engine drives it.
pub(crate) struct Waiter<'a> {
    semaphore: &'a ExpirableSemaphore,
    lease_ms: u64,
}

impl Contender for Waiter<'_> {
    type Acquired = PermitGuard;

    fn name(&self) -> &str {
        &self.semaphore.handle.name
    }

    fn busy(&self, waited: Duration) -> Error {
        count::too_few_permits(&self.semaphore.handle.name, waited)
    }

    async fn attempt(&mut self) -> Result<Attempt<PermitGuard>, Error> {
        self.semaphore.attempt(self.lease_ms).await
    }

    fn channel(&self) -> String {
        layout::semaphore_channel(&self.semaphore.handle.name)
    }

    fn wakes(&self) -> Wakes {
        Wakes::Count
    }

    fn refresh(&self) -> Option<Duration> {
        None
    }

    fn restart(&mut self) {
        // Every attempt draws a new permit id, so a retry can never be
        // mistaken for the lost attempt, whose release is on its way.
    }

    async fn give_up(&mut self) {
        // Nothing is queued: a failed attempt leaves no trace.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_go_to_hex_and_back() {
        let raw = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&raw), "0001abff");
        assert_eq!(from_hex("0001abff").unwrap(), raw);
        assert_eq!(from_hex("0001ABFF").unwrap(), raw);
        for bad in ["", "abc", "zz", "0g", "éé"] {
            assert_eq!(from_hex(bad), None, "{bad}");
        }
        let id = uuid::Uuid::new_v4().into_bytes();
        assert_eq!(to_hex(&id).len(), 32);
        assert_eq!(from_hex(&to_hex(&id)).unwrap(), id);
    }

    #[test]
    fn release_replies_map_to_not_owner() {
        assert!(expect_released("s", "00", Release::Released).is_ok());
        for r in [Release::Absent, Release::Expired] {
            let e = expect_released("s", "00", r).unwrap_err();
            assert!(e.is_not_owner());
            assert_eq!(e.key(), Some("s"));
        }
    }

    #[test]
    fn busy_is_busy_in_a_semaphores_words() {
        let e = count::too_few_permits("jobs", Duration::from_millis(5));
        assert!(e.is_busy());
        assert_eq!(e.waited(), Some(Duration::from_millis(5)));
        assert_eq!(
            e.to_string(),
            "semaphore \"jobs\" has too few permits available (waited 5ms)"
        );
    }

    #[allow(
        dead_code,
        unreachable_code,
        unused_variables,
        clippy::diverging_sub_expression
    )]
    fn bounds(semaphore: ExpirableSemaphore, guard: PermitGuard) {
        fn is_send_sync_static<T: Send + Sync + 'static>(_: &T) {}
        fn is_send<T: Send>(_: &T) {}
        is_send_sync_static(&semaphore);
        is_send_sync_static(&guard);
        is_send(&semaphore.try_acquire());
        is_send(&semaphore.try_acquire_for(Duration::ZERO));
        is_send(&semaphore.acquire());
        is_send(&semaphore.available_permits());
        is_send(&semaphore.release_by_id(""));
        is_send(&guard.lost());
        is_send(&guard.release());
    }
}
