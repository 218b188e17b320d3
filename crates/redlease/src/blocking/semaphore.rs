//! [`Semaphore`] with [`SemaphorePermit`], [`ExpirableSemaphore`] with
//! [`PermitGuard`], and [`CountDownLatch`]: the blocking twins of
//! Redisson's counting structures.

use std::time::{Duration, Instant};

use crate::lost::LostReason;

twin! {
    /// A handle to one named semaphore, Redisson's `RSemaphore`
    /// ([`crate::Semaphore`]); made by
    /// [`Client::semaphore`](super::Client::semaphore).
    handle Semaphore { "let pool = client.semaphore(name);" } example {
        "pool.try_set_available(2)?;"
        "let permit = pool.try_acquire(2)?;"
        "assert!(pool.try_acquire(1).unwrap_err().is_busy());"
        "permit.release()?;"
    }

    /// the semaphore's name, also its Redis key.
    fn name(&self) -> &str { "assert_eq!(pool.name(), name);" }
    /// sets the number of available permits if none is set yet: true if
    /// set here.
    async fn try_set_available(&self, permits: u64) -> bool {
        "assert!(pool.try_set_available(4)?);"
        "assert!(!pool.try_set_available(10)?); // set already: left as it is"
    }
    /// sets the number of available permits, whatever it was.
    async fn set_available(&self, permits: u64) -> () {
        "pool.set_available(2)?;"
        "assert_eq!(pool.available_permits()?, 2);"
    }
    /// adds `delta` permits, or takes them away if negative (a missing key
    /// counts as 0).
    async fn add_permits(&self, delta: i64) -> () {
        "pool.add_permits(3)?;"
        "pool.add_permits(-1)?;"
        "assert_eq!(pool.available_permits()?, 2);"
    }
    /// the number of permits available now.
    async fn available_permits(&self) -> i64 {
        "assert_eq!(pool.available_permits()?, 0); // never set"
    }
    /// takes `permits` if they are available now;
    /// [`is_busy`](crate::Error::is_busy) if not, and nothing is taken.
    async fn try_acquire(&self, permits: u64) -> SemaphorePermit {
        "pool.try_set_available(1)?;"
        "let permit = pool.try_acquire(1)?;"
        "assert!(pool.try_acquire(1).unwrap_err().is_busy());"
    }
    /// takes `permits`, waiting at most `wait` for them;
    /// [`is_busy`](crate::Error::is_busy) when the wait ran out.
    async fn try_acquire_for(&self, permits: u64, wait: Duration) -> SemaphorePermit {
        "pool.try_set_available(1)?;"
        "let permit = pool.try_acquire_for(1, Duration::from_secs(1))?;"
        "assert!(pool.try_acquire_for(1, Duration::from_millis(50)).unwrap_err().is_busy());"
    }
    /// takes `permits`, waiting for as long as it takes.
    async fn acquire(&self, permits: u64) -> SemaphorePermit {
        "pool.try_set_available(2)?;"
        "let permit = pool.acquire(2)?; // here at once"
        "assert_eq!(pool.available_permits()?, 0);"
    }
    /// gives back `permits` that no guard holds (taken by another process,
    /// or [`forget`](SemaphorePermit::forget)-ten).
    async fn release(&self, permits: u64) -> () {
        "pool.release(1)?;"
        "assert_eq!(pool.available_permits()?, 1);"
    }
}

twin! {
    /// Permits taken from a [`Semaphore`] ([`crate::SemaphorePermit`]).
    /// Give them back with [`release`](SemaphorePermit::release); dropped,
    /// they are given back before Drop returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
    /// [module docs](super#drop)).
    #[must_use = "dropping the permit gives its permits back at once; hold it for the work and call `release()`"]
    guard SemaphorePermit {
        "let pool = client.semaphore(name);"
        "pool.try_set_available(3)?;"
        "let permit = pool.try_acquire(2)?;"
    } example {
        "// ... at most 3 permits' worth of work at once ..."
        "drop(permit);"
        "assert_eq!(pool.available_permits()?, 3);"
    }

    /// the semaphore's name.
    fn name(&self) -> &str { "assert_eq!(permit.name(), name);" }
    /// how many permits this guard holds.
    fn permits(&self) -> u64 { "assert_eq!(permit.permits(), 2);" }
    /// `None`: a semaphore's permits have no fencing token.
    fn fencing_token(&self) -> Option<u64> { "assert_eq!(permit.fencing_token(), None);" }
    /// `None`: the permits have no lease; they stay taken until given back.
    fn expires_at(&self) -> Option<Instant> { "assert_eq!(permit.expires_at(), None);" }
    /// `None` when the time is up: nothing takes a semaphore's permits
    /// away.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(permit.lost(Duration::from_millis(20))?, None); // never lost"
    }
    /// always false: the permits are never lost.
    fn is_lost(&self) -> bool { "assert!(!permit.is_lost());" }
    /// gives the permits back, waking waiters of every client.
    release fn release(self) {
        "permit.release()?;"
        "assert_eq!(pool.available_permits()?, 3);"
    }
    /// leaves the permits taken and returns how many, for a
    /// [`Semaphore::release`] later (by this process or another).
    take fn forget(self) -> u64 {
        "let taken = permit.forget();"
        "assert_eq!(pool.available_permits()?, 1);"
        "pool.release(taken)?;"
    }
}

twin! {
    /// A handle to one named semaphore of permits with ids and leases,
    /// Redisson's `RPermitExpirableSemaphore`
    /// ([`crate::ExpirableSemaphore`]); made by
    /// [`Client::expirable_semaphore`](super::Client::expirable_semaphore).
    handle ExpirableSemaphore { "let slots = client.expirable_semaphore(name);" } example {
        "let slots = slots.lease(Duration::from_secs(30));"
        "slots.try_set_total(1)?;"
        "let permit = slots.try_acquire()?;"
        "assert!(slots.try_acquire().unwrap_err().is_busy());"
    }

    /// a fixed lease for the permits this handle acquires, never renewed.
    build fn lease(self, lease: Duration) {
        "slots.try_set_total(1)?;"
        "let _permit = slots.clone().lease(Duration::from_millis(20)).try_acquire()?;"
        "std::thread::sleep(Duration::from_millis(60));"
        "assert_eq!(slots.available_permits()?, 1); // back in the pool"
    }
    /// the semaphore's name, the free permits' key.
    fn name(&self) -> &str { "assert_eq!(slots.name(), name);" }
    /// sets the total number of permits if none is set yet: true if set
    /// here.
    async fn try_set_total(&self, permits: u64) -> bool {
        "assert!(slots.try_set_total(3)?);"
        "assert!(!slots.try_set_total(10)?); // set already: left as it is"
    }
    /// sets the total number of permits, acquired ones included.
    async fn set_total(&self, permits: u64) -> () {
        "let permit = slots.try_set_total(3).and_then(|_| slots.try_acquire())?;"
        "slots.set_total(5)?; // 1 acquired, 4 free"
        "assert_eq!(slots.available_permits()?, 4);"
    }
    /// adds `permits`, or takes them away if negative (below zero too).
    async fn add_permits(&self, permits: i64) -> () {
        "slots.add_permits(2)?;"
        "slots.add_permits(-3)?;"
        "assert_eq!(slots.available_permits()?, -1);"
    }
    /// the number of permits available now.
    async fn available_permits(&self) -> i64 {
        "assert_eq!(slots.available_permits()?, 0); // never set"
    }
    /// the number of permits held now, by any client.
    async fn acquired_permits(&self) -> u64 {
        "let permit = slots.try_set_total(2).and_then(|_| slots.try_acquire())?;"
        "assert_eq!(slots.acquired_permits()?, 1);"
    }
    /// releases the permit with id `permit_id`, whoever holds it.
    async fn release_by_id(&self, permit_id: &str) -> () {
        "let permit = slots.try_set_total(1).and_then(|_| slots.try_acquire())?;"
        "slots.release_by_id(permit.id())?; // handed over, to a Java service say"
        "assert!(permit.release().unwrap_err().is_not_owner()); // released already"
    }
    /// takes a permit if one is available now;
    /// [`is_busy`](crate::Error::is_busy) when none is.
    async fn try_acquire(&self) -> PermitGuard {
        "slots.try_set_total(1)?;"
        "let permit = slots.try_acquire()?;"
        "assert!(slots.try_acquire().unwrap_err().is_busy());"
    }
    /// takes a permit, waiting at most `wait` for one;
    /// [`is_busy`](crate::Error::is_busy) when the wait ran out.
    async fn try_acquire_for(&self, wait: Duration) -> PermitGuard {
        "slots.try_set_total(1)?;"
        "let permit = slots.try_acquire_for(Duration::from_secs(1))?;"
        "assert!(slots.try_acquire_for(Duration::from_millis(50)).unwrap_err().is_busy());"
    }
    /// takes a permit, waiting for as long as it takes.
    async fn acquire(&self) -> PermitGuard {
        "slots.try_set_total(1)?;"
        "let permit = slots.acquire()?; // here at once"
        "assert_eq!(slots.available_permits()?, 0);"
    }
}

twin! {
    /// A held permit of an [`ExpirableSemaphore`] ([`crate::PermitGuard`]).
    /// Release it with [`release`](PermitGuard::release); dropped, it is
    /// released before Drop returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
    /// [module docs](super#drop)).
    #[must_use = "dropping the guard releases the permit at once; hold it for the critical section and call `release()`"]
    guard PermitGuard {
        "let slots = client.expirable_semaphore(name);"
        "slots.try_set_total(1)?;"
        "let permit = slots.try_acquire()?;"
    } example {
        "// ... the work, while the permit is renewed ..."
        "permit.release()?;"
    }

    /// the permit's id: 32 hex digits, as Redisson's; it says whose permit
    /// it is, as a lock guard's `owner()` says whose lock.
    fn id(&self) -> &str { "assert_eq!(permit.id().len(), 32);" }
    /// the semaphore's name.
    fn name(&self) -> &str { "assert_eq!(permit.name(), name);" }
    /// `None`: an expirable semaphore's permits have no fencing token; the
    /// [`id`](PermitGuard::id) tells them apart.
    fn fencing_token(&self) -> Option<u64> { "assert_eq!(permit.fencing_token(), None);" }
    /// the end of a fixed lease by the local clock; `None` while it is
    /// renewed.
    fn expires_at(&self) -> Option<Instant> {
        "assert_eq!(permit.expires_at(), None);"
    }
    /// releases the permit.
    release fn release(self) {
        "permit.release()?;"
        "assert_eq!(slots.available_permits()?, 1);"
    }
    /// sets a fixed-lease permit to expire `lease` from now (Redisson's
    /// `updateLeaseTime`).
    async fn extend(&self, lease: Duration) -> () {
        "drop(permit);"
        "let fixed = slots.lease(Duration::from_secs(2)).try_acquire()?;"
        "fixed.extend(Duration::from_secs(30))?; // the work takes longer than planned"
        "assert!(fixed.expires_at().unwrap() > std::time::Instant::now() + Duration::from_secs(20));"
    }
    /// `Some` with the reason once the permit is lost, `None` if it is
    /// still held when the time is up.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(permit.lost(Duration::from_millis(50))?, None); // renewed"
    }
    /// true if the permit is known or must be assumed lost.
    fn is_lost(&self) -> bool {
        "drop(permit);"
        "let short = slots.lease(Duration::from_millis(30)).try_acquire()?;"
        "std::thread::sleep(Duration::from_millis(60));"
        "assert!(short.is_lost()); // the fixed lease ran out"
    }
}

twin! {
    /// A handle to one named count-down latch, Redisson's `RCountDownLatch`
    /// ([`crate::CountDownLatch`]); made by
    /// [`Client::count_down_latch`](super::Client::count_down_latch).
    handle CountDownLatch { "let latch = client.count_down_latch(name);" } example {
        "latch.try_set_count(1)?;"
        "let worker = std::thread::spawn({ let l = latch.clone(); move || l.count_down() });"
        "latch.wait_for(Duration::from_secs(5))?;"
    }

    /// the latch's name, also its Redis key.
    fn name(&self) -> &str { "assert_eq!(latch.name(), name);" }
    /// sets the count if the latch is not counting already: true if armed
    /// here.
    async fn try_set_count(&self, count: u64) -> bool {
        "assert!(latch.try_set_count(3)?);"
        "assert!(!latch.try_set_count(5)?); // armed already: left as it is"
    }
    /// counts down by one; at zero the latch opens and every waiter wakes.
    async fn count_down(&self) -> () {
        "latch.try_set_count(2)?;"
        "latch.count_down()?;"
        "assert_eq!(latch.count()?, 1);"
    }
    /// the count now; 0 when open (or never armed).
    async fn count(&self) -> u64 { "assert_eq!(latch.count()?, 0);" }
    /// waits at most `wait` for the count to reach zero;
    /// [`is_busy`](crate::Error::is_busy) if it is still armed then.
    async fn wait_for(&self, wait: Duration) -> () {
        "latch.try_set_count(1)?;"
        "assert!(latch.wait_for(Duration::from_millis(50)).unwrap_err().is_busy());"
        "latch.count_down()?;"
        "latch.wait_for(Duration::from_secs(1))?; // open"
    }
    /// waits for the count to reach zero, for as long as it takes.
    async fn wait(&self) -> () {
        "latch.try_set_count(1)?;"
        "let worker = std::thread::spawn({ let l = latch.clone(); move || l.count_down() });"
        "latch.wait()?; // until the worker has counted down"
    }
    /// deletes the latch, waking its waiters: true if it existed.
    async fn delete(&self) -> bool {
        "latch.try_set_count(3)?;"
        "assert!(latch.delete()?);"
        "assert_eq!(latch.count()?, 0); // deleted reads as open"
    }
}
