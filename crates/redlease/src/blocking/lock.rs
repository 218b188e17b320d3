//! [`Lock`], [`LockGuard`] and [`ReadWriteLock`]: the blocking twins of the
//! exclusive lock (plain or fair), its guard, and the read-write lock.

use std::time::{Duration, Instant};

use crate::lost::LostReason;

twin! {
    /// A handle to one named lock, plain or fair, or one side of a
    /// [`ReadWriteLock`] ([`crate::Lock`]); made by
    /// [`Client::lock`](super::Client::lock),
    /// [`Client::fair_lock`](super::Client::fair_lock),
    /// [`ReadWriteLock::read`] and [`ReadWriteLock::write`]. Watchdog mode
    /// by default, a fixed lease with [`lease`](Lock::lease).
    handle Lock { "let lock = client.lock(name);" } example {
        "let guard = lock.try_lock_for(Duration::from_secs(3))?;"
        "assert!(lock.try_lock().unwrap_err().is_busy());"
        "guard.unlock()?;"
    }

    /// a fixed lease, never renewed: the lock expires `lease` after it was
    /// taken.
    build fn lease(self, lease: Duration) {
        "let guard = lock.lease(Duration::from_secs(10)).try_lock()?;"
        "assert!(guard.expires_at().is_some());"
    }
    /// the lock's name.
    fn name(&self) -> &str { "assert_eq!(lock.name(), name);" }
    /// one attempt; [`is_busy`](crate::Error::is_busy) when another owner
    /// holds it.
    async fn try_lock(&self) -> LockGuard {
        "let guard = lock.try_lock()?;"
        "assert!(lock.try_lock().unwrap_err().is_busy()); // held: fails at once"
    }
    /// takes the lock, waiting at most `wait` for its holder to release it
    /// (woken by the release message, not by polling);
    /// [`is_busy`](crate::Error::is_busy) when the wait ran out.
    async fn try_lock_for(&self, wait: Duration) -> LockGuard {
        "let held = lock.try_lock()?;"
        "assert!(lock.try_lock_for(Duration::from_millis(50)).unwrap_err().is_busy());"
    }
    /// takes the lock, waiting for as long as it takes.
    async fn lock(&self) -> LockGuard {
        "let guard = lock.lock()?; // here at once"
        "assert!(guard.is_held()?);"
    }
}

twin! {
    /// A held lock ([`crate::LockGuard`]). Release it with
    /// [`unlock`](LockGuard::unlock); dropped, it releases the lock before
    /// Drop returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
    /// [module docs](super#drop)).
    #[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock()`"]
    guard LockGuard {
        "let guard = client.lock(name).lease(Duration::from_secs(10)).try_lock()?;"
    } example {
        "// ... the critical section ..."
        "guard.unlock()?;"
    }

    /// the lock's name.
    fn name(&self) -> &str { "assert_eq!(guard.name(), name);" }
    /// the owner field this guard holds (`<client id>:<n>`).
    fn owner(&self) -> &str { "assert!(guard.owner().starts_with(&format!(\"{}:\", client.id())));" }
    /// greater than every token issued before for this name; pass it with
    /// every write to the protected resource, which rejects a lower one.
    fn fencing_token(&self) -> Option<u64> {
        "let token = guard.fencing_token();"
        "guard.unlock()?;"
        "assert!(client.lock(name).try_lock()?.fencing_token() > token);"
    }
    /// releases the lock, checking that it is still ours
    /// ([`is_not_owner`](crate::Error::is_not_owner) if not).
    release fn unlock(self) {
        "guard.unlock()?;"
        "client.lock(name).try_lock()?.unlock()?; // free again at once"
    }
    /// The blocking twin of [`crate::LockGuard::unlock_at_least`]: releases
    /// the lock, but not before it has been held for `min` (until then it
    /// stays in Redis, held by nobody).
    ///
    /// # Errors
    ///
    /// As its async twin; [`is_runtime`](crate::Error::is_runtime) inside a
    /// Tokio runtime, where the guard is then dropped, which releases in the
    /// background.
    own fn unlock_at_least(self, min: Duration) -> Result<(), crate::Error> {
        self.inner
            .release_by("LockGuard::unlock_at_least", move |g| g.unlock_at_least(min))
    } {
        "guard.unlock_at_least(Duration::from_secs(1))?;"
        "assert!(client.lock(name).try_lock().unwrap_err().is_busy()); // kept for the second"
    }
    /// sets a fixed-lease lock to expire `lease` from now.
    async fn extend(&self, lease: Duration) -> () {
        "let until = guard.expires_at().unwrap();"
        "guard.extend(Duration::from_secs(30))?; // the work takes longer than planned"
        "assert!(guard.expires_at().unwrap() > until);"
    }
    /// the end of a fixed lease by the local clock; `None` in watchdog
    /// mode.
    fn expires_at(&self) -> Option<Instant> {
        "assert!(guard.expires_at().unwrap() > Instant::now());"
        "assert_eq!(client.lock(format!(\"{name}:watchdog\")).try_lock()?.expires_at(), None);"
    }
    /// asks Redis whether this guard still holds the lock.
    async fn is_held(&self) -> bool { "assert!(guard.is_held()?);" }
    /// `Some` with the reason once the lock is lost, `None` if it is still
    /// held when the time is up.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(guard.lost(Duration::from_millis(20))?, None);"
        "let short = client.lock(format!(\"{name}:short\")).lease(Duration::from_millis(50)).try_lock()?;"
        "assert_eq!(short.lost(Duration::from_secs(1))?, Some(redlease::LostReason::Expired));"
    }
    /// true if the lock is known or must be assumed lost: check it before
    /// every step of a long job.
    fn is_lost(&self) -> bool {
        "assert!(!guard.is_lost());"
    }
}

twin! {
    /// A handle to one named read-write lock, many readers or one writer
    /// on Redisson's `RReadWriteLock` layout ([`crate::ReadWriteLock`]);
    /// made by [`Client::read_write_lock`](super::Client::read_write_lock).
    handle ReadWriteLock { "let rw = client.read_write_lock(name);" } example {
        "let (a, b) = (rw.read().try_lock()?, rw.read().try_lock()?); // readers share it"
        "assert!(rw.write().try_lock().unwrap_err().is_busy());"
    }

    /// the lock's name.
    fn name(&self) -> &str { "assert_eq!(rw.name(), name);" }
    /// the read side: shared with other readers, excluded by a writer.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn read(&self) -> Lock {
        "let (first, second) = (rw.read().try_lock()?, rw.read().try_lock()?); // readers share it"
        "assert!(rw.write().try_lock().unwrap_err().is_busy());"
    }
    /// the write side: excludes every other hold, read or write.
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    fn write(&self) -> Lock {
        "let writer = rw.write().try_lock()?;"
        "assert!(rw.read().try_lock().unwrap_err().is_busy());"
    }
}
