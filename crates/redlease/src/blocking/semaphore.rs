//! [`Semaphore`], [`ExpirableSemaphore`] with [`PermitGuard`], and
//! [`CountDownLatch`]: the blocking twins of Redisson's counting
//! structures.

use std::fmt;
use std::time::Duration;

use super::owned::Owned;
use super::{call, within};
use crate::error::Error;
use crate::lost::LostReason;

/// A handle to one named semaphore, Redisson's `RSemaphore`
/// ([`crate::Semaphore`]); made by
/// [`Client::semaphore`](super::Client::semaphore).
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let pool = client.semaphore("doc:blocking:semaphore");
/// pool.try_set_permits(2)?;
/// assert!(pool.try_acquire(2)?);
/// assert!(!pool.try_acquire(1)?);
/// pool.release(2)?;
/// assert_eq!(pool.available_permits()?, 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    inner: crate::Semaphore,
}

impl Semaphore {
    pub(super) fn from(inner: crate::Semaphore) -> Semaphore {
        Semaphore { inner }
    }

    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let pool = client.semaphore("doc:blocking:semaphore:name");
    /// assert_eq!(pool.name(), "doc:blocking:semaphore:name"); // also the Redis key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the number of permits if none is set yet
    /// ([`crate::Semaphore::try_set_permits`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime (so for every method here).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let pool = client.semaphore("doc:blocking:semaphore:try_set_permits");
    /// assert!(pool.try_set_permits(4)?); // set here
    /// assert!(!pool.try_set_permits(10)?); // set already: left as it is
    /// assert_eq!(pool.available_permits()?, 4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_set_permits(&self, permits: u64) -> Result<bool, Error> {
        call(
            "Semaphore::try_set_permits",
            self.inner.try_set_permits(permits),
        )
    }

    /// Sets the number of available permits
    /// ([`crate::Semaphore::set_permits`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:set_permits");
    /// pool.try_set_permits(4)?;
    /// pool.set_permits(2)?; // whatever it was
    /// assert_eq!(pool.available_permits()?, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_permits(&self, permits: u64) -> Result<(), Error> {
        call("Semaphore::set_permits", self.inner.set_permits(permits))
    }

    /// Adds `delta` permits, or takes them away if negative
    /// ([`crate::Semaphore::add_permits`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:add_permits");
    /// pool.add_permits(3)?; // a missing key counts as 0
    /// pool.add_permits(-1)?;
    /// assert_eq!(pool.available_permits()?, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_permits(&self, delta: i64) -> Result<(), Error> {
        call("Semaphore::add_permits", self.inner.add_permits(delta))
    }

    /// The number of permits available now
    /// ([`crate::Semaphore::available_permits`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:available_permits");
    /// assert_eq!(pool.available_permits()?, 0); // never set
    /// pool.try_set_permits(3)?;
    /// assert!(pool.try_acquire(2)?);
    /// assert_eq!(pool.available_permits()?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn available_permits(&self) -> Result<i64, Error> {
        call(
            "Semaphore::available_permits",
            self.inner.available_permits(),
        )
    }

    /// Takes `permits` if they are available now
    /// ([`crate::Semaphore::try_acquire`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:try_acquire");
    /// pool.try_set_permits(1)?;
    /// assert!(pool.try_acquire(1)?);
    /// assert!(!pool.try_acquire(1)?); // none left: nothing is taken
    /// pool.release(1)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_acquire(&self, permits: u64) -> Result<bool, Error> {
        call("Semaphore::try_acquire", self.inner.try_acquire(permits))
    }

    /// Takes `permits`, waiting at most `wait` for them
    /// ([`crate::Semaphore::try_acquire_for`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:try_acquire_for");
    /// pool.try_set_permits(1)?;
    /// assert!(pool.try_acquire(1)?);
    /// assert!(!pool.try_acquire_for(1, Duration::from_millis(50))?); // the wait ran out
    /// pool.release(1)?;
    /// assert!(pool.try_acquire_for(1, Duration::from_secs(1))?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_acquire_for(&self, permits: u64, wait: Duration) -> Result<bool, Error> {
        call(
            "Semaphore::try_acquire_for",
            self.inner.try_acquire_for(permits, wait),
        )
    }

    /// Takes `permits`, waiting for as long as it takes
    /// ([`crate::Semaphore::acquire`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:acquire");
    /// pool.try_set_permits(2)?;
    /// pool.acquire(2)?; // waits for as long as it takes; here not at all
    /// assert_eq!(pool.available_permits()?, 0);
    /// pool.release(2)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquire(&self, permits: u64) -> Result<(), Error> {
        call("Semaphore::acquire", self.inner.acquire(permits))
    }

    /// Gives back `permits` ([`crate::Semaphore::release`]).
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
    /// let pool = client.semaphore("doc:blocking:semaphore:release");
    /// pool.try_set_permits(1)?;
    /// pool.acquire(1)?;
    /// pool.release(1)?;
    /// assert_eq!(pool.available_permits()?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(&self, permits: u64) -> Result<(), Error> {
        call("Semaphore::release", self.inner.release(permits))
    }
}

/// A handle to one named semaphore of permits with ids and leases,
/// Redisson's `RPermitExpirableSemaphore` ([`crate::ExpirableSemaphore`]);
/// made by
/// [`Client::expirable_semaphore`](super::Client::expirable_semaphore).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let slots = client.expirable_semaphore("doc:blocking:expirable").lease(Duration::from_secs(30));
/// slots.try_set_permits(1)?;
/// let permit = slots.try_acquire()?;
/// assert!(slots.try_acquire().unwrap_err().is_busy());
/// permit.release()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ExpirableSemaphore {
    inner: crate::ExpirableSemaphore,
}

impl ExpirableSemaphore {
    pub(super) fn from(inner: crate::ExpirableSemaphore) -> ExpirableSemaphore {
        ExpirableSemaphore { inner }
    }

    /// Selects a fixed lease for the permits this handle acquires
    /// ([`crate::ExpirableSemaphore::lease`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:lease");
    /// slots.try_set_permits(1)?;
    /// let _permit = slots.clone().lease(Duration::from_millis(20)).try_acquire()?;
    /// std::thread::sleep(Duration::from_millis(60)); // never renewed
    /// assert_eq!(slots.available_permits()?, 1); // back in the pool
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(self, lease: Duration) -> ExpirableSemaphore {
        ExpirableSemaphore {
            inner: self.inner.lease(lease),
        }
    }

    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:name");
    /// assert_eq!(slots.name(), "doc:blocking:expirable_semaphore:name"); // the free permits' key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the number of permits if none is set yet
    /// ([`crate::ExpirableSemaphore::try_set_permits`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime (so for every method here).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:try_set_permits");
    /// assert!(slots.try_set_permits(3)?); // set here
    /// assert!(!slots.try_set_permits(10)?); // set already: left as it is
    /// assert_eq!(slots.available_permits()?, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_set_permits(&self, permits: u64) -> Result<bool, Error> {
        call(
            "ExpirableSemaphore::try_set_permits",
            self.inner.try_set_permits(permits),
        )
    }

    /// Sets the number of permits
    /// ([`crate::ExpirableSemaphore::set_permits`]).
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
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:set_permits");
    /// slots.try_set_permits(3)?;
    /// let permit = slots.try_acquire()?;
    /// slots.set_permits(5)?; // 5 in all: 1 acquired, 4 free
    /// assert_eq!(slots.available_permits()?, 4);
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_permits(&self, permits: u64) -> Result<(), Error> {
        call(
            "ExpirableSemaphore::set_permits",
            self.inner.set_permits(permits),
        )
    }

    /// Adds `permits`, or takes them away if negative
    /// ([`crate::ExpirableSemaphore::add_permits`]).
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
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:add_permits");
    /// slots.add_permits(2)?; // a missing key counts as 0
    /// slots.add_permits(-3)?; // may go below zero
    /// assert_eq!(slots.available_permits()?, -1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_permits(&self, permits: i64) -> Result<(), Error> {
        call(
            "ExpirableSemaphore::add_permits",
            self.inner.add_permits(permits),
        )
    }

    /// The number of permits available now
    /// ([`crate::ExpirableSemaphore::available_permits`]).
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
    /// let name = "doc:blocking:expirable_semaphore:available_permits";
    /// let slots = client.expirable_semaphore(name);
    /// assert_eq!(slots.available_permits()?, 0); // never set
    /// slots.try_set_permits(2)?;
    /// let permit = slots.try_acquire()?;
    /// assert_eq!(slots.available_permits()?, 1);
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn available_permits(&self) -> Result<i64, Error> {
        call(
            "ExpirableSemaphore::available_permits",
            self.inner.available_permits(),
        )
    }

    /// The number of permits held now
    /// ([`crate::ExpirableSemaphore::acquired_permits`]).
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
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:acquired_permits");
    /// slots.try_set_permits(2)?;
    /// let permit = slots.try_acquire()?;
    /// assert_eq!(slots.acquired_permits()?, 1); // by any client
    /// permit.release()?;
    /// assert_eq!(slots.acquired_permits()?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquired_permits(&self) -> Result<u64, Error> {
        call(
            "ExpirableSemaphore::acquired_permits",
            self.inner.acquired_permits(),
        )
    }

    /// Releases the permit with id `permit_id`, whoever holds it
    /// ([`crate::ExpirableSemaphore::release_by_id`]).
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
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:release_by_id");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// let id = permit.id().to_owned(); // handed over, to a Java service say
    /// slots.release_by_id(&id)?;
    /// assert_eq!(slots.available_permits()?, 1);
    /// assert!(permit.release().unwrap_err().is_not_owner()); // released already
    /// # Ok(())
    /// # }
    /// ```
    pub fn release_by_id(&self, permit_id: &str) -> Result<(), Error> {
        call(
            "ExpirableSemaphore::release_by_id",
            self.inner.release_by_id(permit_id),
        )
    }

    /// Takes a permit if one is available now
    /// ([`crate::ExpirableSemaphore::try_acquire`]).
    ///
    /// # Errors
    ///
    /// As its async twin: [`is_busy`](Error::is_busy) when none is.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:try_acquire");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// assert!(slots.try_acquire().unwrap_err().is_busy()); // none left
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_acquire(&self) -> Result<PermitGuard, Error> {
        call("ExpirableSemaphore::try_acquire", self.inner.try_acquire()).map(PermitGuard::from)
    }

    /// Takes a permit, waiting at most `wait` for one
    /// ([`crate::ExpirableSemaphore::try_acquire_for`]).
    ///
    /// # Errors
    ///
    /// As its async twin: [`is_busy`](Error::is_busy) when the wait ran
    /// out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:try_acquire_for");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// assert!(slots.try_acquire_for(Duration::from_millis(50)).unwrap_err().is_busy());
    /// permit.release()?;
    /// slots.try_acquire_for(Duration::from_secs(1))?.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_acquire_for(&self, wait: Duration) -> Result<PermitGuard, Error> {
        call(
            "ExpirableSemaphore::try_acquire_for",
            self.inner.try_acquire_for(wait),
        )
        .map(PermitGuard::from)
    }

    /// Takes a permit, waiting for as long as it takes
    /// ([`crate::ExpirableSemaphore::acquire`]).
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
    /// let slots = client.expirable_semaphore("doc:blocking:expirable_semaphore:acquire");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.acquire()?; // waits for as long as it takes; here not at all
    /// assert_eq!(slots.available_permits()?, 0);
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquire(&self) -> Result<PermitGuard, Error> {
        call("ExpirableSemaphore::acquire", self.inner.acquire()).map(PermitGuard::from)
    }
}

/// A held permit of an [`ExpirableSemaphore`]. Release it with
/// [`release`](PermitGuard::release); dropped, it is released before Drop
/// returns, waiting at most
/// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
/// [module docs](super#drop)).
#[must_use = "dropping the guard releases the permit at once; hold it for the critical section and call `release()`"]
#[clippy::has_significant_drop]
pub struct PermitGuard {
    inner: Owned<crate::PermitGuard>,
}

impl PermitGuard {
    fn from(inner: crate::PermitGuard) -> PermitGuard {
        PermitGuard {
            inner: Owned::new(inner),
        }
    }

    fn get(&self) -> &crate::PermitGuard {
        self.inner.get()
    }

    /// The permit's id.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:permit_guard:id");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// assert_eq!(permit.id().len(), 32); // hex digits, as Redisson's permit ids
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        self.get().id()
    }

    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:permit_guard:name");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// assert_eq!(permit.name(), "doc:blocking:permit_guard:name");
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.get().name()
    }

    /// Releases the permit ([`crate::PermitGuard::release`]).
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
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:permit_guard:release");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// permit.release()?;
    /// assert_eq!(slots.available_permits()?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(self) -> Result<(), Error> {
        self.inner.release("PermitGuard::release")
    }

    /// Waits at most `timeout` for the permit to be lost
    /// ([`crate::PermitGuard::lost`]): `Some` with the reason if it was,
    /// `None` if it is still held when the time is up.
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
    /// let slots = client.expirable_semaphore("doc:blocking:permit_guard:lost");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.try_acquire()?;
    /// // Renewed while it is held: not lost within 50 ms.
    /// assert_eq!(permit.lost(Duration::from_millis(50))?, None);
    /// permit.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self, timeout: Duration) -> Result<Option<LostReason>, Error> {
        within("PermitGuard::lost", timeout, self.get().lost())
    }

    /// Returns true if the permit is known or must be assumed lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let slots = client.expirable_semaphore("doc:blocking:permit_guard:is_lost");
    /// slots.try_set_permits(1)?;
    /// let permit = slots.lease(Duration::from_millis(30)).try_acquire()?;
    /// std::thread::sleep(Duration::from_millis(60));
    /// assert!(permit.is_lost()); // the fixed lease ran out
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.get().is_lost()
    }
}

impl fmt::Debug for PermitGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

/// A handle to one named count-down latch, Redisson's `RCountDownLatch`
/// ([`crate::CountDownLatch`]); made by
/// [`Client::count_down_latch`](super::Client::count_down_latch).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let latch = client.count_down_latch("doc:blocking:latch");
/// latch.try_set_count(1)?;
/// let worker = std::thread::spawn({
///     let latch = latch.clone();
///     move || latch.count_down()
/// });
/// assert!(latch.wait_for(Duration::from_secs(5))?);
/// worker.join().unwrap()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct CountDownLatch {
    inner: crate::CountDownLatch,
}

impl CountDownLatch {
    pub(super) fn from(inner: crate::CountDownLatch) -> CountDownLatch {
        CountDownLatch { inner }
    }

    /// The latch's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:name");
    /// assert_eq!(latch.name(), "doc:blocking:count_down_latch:name"); // also the Redis key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the count if the latch is not counting already
    /// ([`crate::CountDownLatch::try_set_count`]).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](Error::is_runtime) inside a Tokio
    /// runtime (so for every method here).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::blocking::Client::connect(&url)?;
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:try_set_count");
    /// assert!(latch.try_set_count(3)?); // armed here
    /// assert!(!latch.try_set_count(5)?); // armed already: left as it is
    /// assert_eq!(latch.count()?, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_set_count(&self, count: u64) -> Result<bool, Error> {
        call(
            "CountDownLatch::try_set_count",
            self.inner.try_set_count(count),
        )
    }

    /// Counts down by one ([`crate::CountDownLatch::count_down`]).
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
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:count_down");
    /// latch.try_set_count(2)?;
    /// latch.count_down()?;
    /// assert_eq!(latch.count()?, 1);
    /// latch.count_down()?; // zero: open, and every waiter wakes
    /// assert_eq!(latch.count()?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn count_down(&self) -> Result<(), Error> {
        call("CountDownLatch::count_down", self.inner.count_down())
    }

    /// The count now ([`crate::CountDownLatch::count`]).
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
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:count");
    /// assert_eq!(latch.count()?, 0); // never armed: open
    /// latch.try_set_count(4)?;
    /// assert_eq!(latch.count()?, 4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn count(&self) -> Result<u64, Error> {
        call("CountDownLatch::count", self.inner.count())
    }

    /// Waits at most `timeout` for the count to reach zero: true if it did
    /// ([`crate::CountDownLatch::wait_for`]).
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
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:wait_for");
    /// latch.try_set_count(1)?;
    /// assert!(!latch.wait_for(Duration::from_millis(50))?); // still armed
    /// latch.count_down()?;
    /// assert!(latch.wait_for(Duration::from_secs(1))?); // open
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait_for(&self, timeout: Duration) -> Result<bool, Error> {
        call("CountDownLatch::wait_for", self.inner.wait_for(timeout))
    }

    /// Waits for the count to reach zero ([`crate::CountDownLatch::wait`]).
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
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:wait");
    /// latch.try_set_count(1)?;
    /// let last = latch.clone();
    /// let worker = std::thread::spawn(move || last.count_down());
    /// latch.wait()?; // until the worker has counted down
    /// worker.join().unwrap()?;
    /// assert_eq!(latch.count()?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait(&self) -> Result<(), Error> {
        call("CountDownLatch::wait", self.inner.wait())
    }

    /// Deletes the latch, waking its waiters
    /// ([`crate::CountDownLatch::delete`]): true if it existed.
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
    /// let latch = client.count_down_latch("doc:blocking:count_down_latch:delete");
    /// latch.try_set_count(3)?;
    /// assert!(latch.delete()?); // it was armed: its waiters wake
    /// assert!(!latch.delete()?);
    /// assert_eq!(latch.count()?, 0); // deleted reads as open
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(&self) -> Result<bool, Error> {
        call("CountDownLatch::delete", self.inner.delete())
    }
}
