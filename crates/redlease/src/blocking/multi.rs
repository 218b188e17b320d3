//! [`MultiLock`] with [`MultiGuard`], and [`RedLock`] with
//! [`RedLockGuard`]: the blocking twins of the locks taken on several keys
//! or several masters.

use std::time::{Duration, Instant};

use super::Client;
use crate::error::Error;
use crate::lost::LostReason;

twin! {
    /// A handle to several named locks taken together, all or none
    /// ([`crate::MultiLock`]); made by
    /// [`Client::multi_lock`](super::Client::multi_lock).
    handle MultiLock {
        "let (a, b) = (format!(\"{name}:a\"), format!(\"{name}:b\"));"
        "let both = client.multi_lock([&a, &b]);"
    } example {
        "let guard = both.try_lock()?;"
        "assert!(client.lock(&b).try_lock().unwrap_err().is_busy());"
    }

    /// The blocking twin of [`crate::MultiLock::names`]: the member names,
    /// sorted, without duplicates: the order every caller takes them in.
    own fn names(&self) -> impl Iterator<Item = &str> { self.inner.names() } {
        "assert!(client.multi_lock([&b, &a, &b]).names().eq([&a, &b]));"
    }
    /// a fixed lease for every member, never renewed.
    build fn lease(self, lease: Duration) {
        "let _guard = both.lease(Duration::from_millis(50)).try_lock()?;"
        "std::thread::sleep(Duration::from_millis(80));"
        "client.lock(&a).try_lock()?; // expired: free again"
    }
    /// one attempt on every member; [`is_busy`](crate::Error::is_busy)
    /// when one is held by another owner, and then nothing is left held.
    async fn try_lock(&self) -> MultiGuard {
        "let held = client.lock(&b).try_lock()?;"
        "assert_eq!(both.try_lock().unwrap_err().key(), Some(b.as_str()));"
    }
    /// takes every member, waiting at most `wait`.
    async fn try_lock_for(&self, wait: Duration) -> MultiGuard {
        "let held = client.lock(&b).try_lock()?;"
        "assert!(both.try_lock_for(Duration::from_millis(50)).unwrap_err().is_busy());"
    }
    /// takes every member, waiting for as long as it takes.
    async fn lock(&self) -> MultiGuard {
        "let guard = both.lock()?; // here at once"
        "assert!(client.lock(&a).try_lock().unwrap_err().is_busy());"
    }
}

twin! {
    /// Every member of a [`MultiLock`], held ([`crate::MultiGuard`]).
    /// Release them with [`unlock`](MultiGuard::unlock); dropped, they are
    /// released before Drop returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
    /// [module docs](super#drop)).
    #[must_use = "dropping the guard releases the locks at once; hold it for the critical section and call `unlock()`"]
    guard MultiGuard {
        "let (a, b) = (format!(\"{name}:a\"), format!(\"{name}:b\"));"
        "let guard = client.multi_lock([&b, &a]).lease(Duration::from_secs(10)).try_lock()?;"
    } example {
        "let token = guard.fencing_token_of(&a); // for a's resource"
        "guard.unlock()?;"
    }

    /// The members' names, in the order they were taken.
    own fn names(&self) -> impl Iterator<Item = &str> {
        self.get().guards().iter().map(crate::LockGuard::name)
    } {
        "assert!(guard.names().eq([&a, &b]));"
    }
    /// the members' names, sorted, joined with `,`.
    fn name(&self) -> &str { "assert_eq!(guard.name(), format!(\"{a},{b}\"));" }
    /// `None`: each member has a token of its own.
    fn fencing_token(&self) -> Option<u64> { "assert_eq!(guard.fencing_token(), None);" }
    /// the fencing token of member `name`, if it is one.
    fn fencing_token_of(&self, name: &str) -> Option<u64> {
        "assert!(guard.fencing_token_of(&a).is_some()); // pass it with every write to a's resource"
        "assert_eq!(guard.fencing_token_of(\"not a member\"), None);"
    }
    /// when the first member's fixed lease ends; `None` in watchdog mode.
    fn expires_at(&self) -> Option<Instant> {
        "assert!(guard.expires_at().unwrap() <= Instant::now() + Duration::from_secs(10));"
    }
    /// sets every member's fixed lease to `lease` from now.
    async fn extend(&self, lease: Duration) -> () {
        "guard.extend(Duration::from_secs(30))?;"
        "assert!(guard.expires_at().unwrap() > Instant::now() + Duration::from_secs(20));"
    }
    /// releases every member, each owner-checked.
    release fn unlock(self) {
        "guard.unlock()?;"
        "client.lock(&b).try_lock()?; // every member is free again"
    }
    /// `Some` with the reason once any member is lost, `None` if all are
    /// still held when the time is up.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(guard.lost(Duration::from_millis(20))?, None);"
    }
    /// true if any member is lost.
    fn is_lost(&self) -> bool { "assert!(!guard.is_lost());" }
}

twin! {
    /// A lock on N independent masters, granted by a majority
    /// ([`crate::RedLock`]).
    handle RedLock {
        "# let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();"
        "# let clients = servers.iter().map(|s| redlease::blocking::Client::connect(&s.url()));"
        "// clients: one blocking client per independent master."
        "let redlock = redlease::blocking::RedLock::new(clients.collect::<Result<Vec<_>, _>>()?, name)?;"
    } example {
        "let guard = redlock.lease(Duration::from_secs(10)).try_lock()?;"
        "assert!(guard.masters() >= 2);"
    }

    /// A lock called `name` on the masters of `clients`, one client per
    /// independent master ([`crate::RedLock::new`]).
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) without clients.
    own fn new(clients: impl IntoIterator<Item = Client>, name: impl Into<String>) -> Result<RedLock, Error> {
        let clients = clients.into_iter().map(|c| c.as_async().clone());
        crate::RedLock::new(clients, name).map(|inner| RedLock { inner })
    } {
        "assert!(redlease::blocking::RedLock::new(Vec::new(), name).unwrap_err().is_invalid_argument());"
    }
    /// the lease on each master.
    build fn lease(self, lease: Duration) {
        "let guard = redlock.lease(Duration::from_secs(20)).try_lock()?;"
        "assert!(guard.expires_at().unwrap() < Instant::now() + Duration::from_secs(20));"
    }
    /// how long one master may take to answer an acquire.
    build fn master_timeout(self, timeout: Duration) {
        "let guard = redlock.master_timeout(Duration::from_millis(200)).try_lock()?; // over a WAN"
    }
    /// the number of masters that must grant the lock: N/2 + 1.
    fn quorum(&self) -> usize { "assert_eq!(redlock.quorum(), 2); // one of 3 may be down" }
    /// one attempt on every master; [`is_busy`](crate::Error::is_busy)
    /// without a quorum.
    async fn try_lock(&self) -> RedLockGuard {
        "let guard = redlock.try_lock()?;"
        "assert!(redlock.try_lock().unwrap_err().is_busy());"
    }
    /// attempts until `wait` has passed.
    async fn try_lock_for(&self, wait: Duration) -> RedLockGuard {
        "let first = redlock.clone().lease(Duration::from_millis(100)).try_lock()?;"
        "let second = redlock.try_lock_for(Duration::from_secs(2))?; // after first's lease"
    }
    /// attempts for as long as it takes.
    async fn lock(&self) -> RedLockGuard {
        "let guard = redlock.lock()?; // here at once"
        "assert!(guard.masters() >= redlock.quorum());"
    }
}

twin! {
    /// A [`RedLock`] held by a quorum ([`crate::RedLockGuard`]). Release it
    /// with [`unlock`](RedLockGuard::unlock); dropped, it is released
    /// before Drop returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT) (see the
    /// [module docs](super#drop)).
    #[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock()`"]
    guard RedLockGuard {
        "# let servers: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();"
        "# let clients = servers.iter().map(|s| redlease::blocking::Client::connect(&s.url()));"
        "# let clients = clients.collect::<Result<Vec<_>, _>>()?;"
        "let redlock = redlease::blocking::RedLock::new(clients, name)?;"
        "let guard = redlock.clone().lease(Duration::from_secs(10)).try_lock()?;"
    } example {
        "// ... work until guard.expires_at() at the latest ..."
        "guard.unlock()?;"
    }

    /// the lock's name.
    fn name(&self) -> &str { "assert_eq!(guard.name(), name);" }
    /// how many masters hold it now: at least a quorum.
    fn masters(&self) -> usize { "assert!((2..=3).contains(&guard.masters()));" }
    /// `None`: the masters' tokens mean nothing together.
    fn fencing_token(&self) -> Option<u64> { "assert_eq!(guard.fencing_token(), None);" }
    /// when the lock stops being valid by this process's clock: never past
    /// the lease.
    fn expires_at(&self) -> Option<Instant> {
        "let left = guard.expires_at().unwrap().saturating_duration_since(Instant::now());"
        "assert!(left > Duration::from_secs(9) && left < Duration::from_secs(10));"
    }
    /// whether the validity has ended.
    fn is_lost(&self) -> bool {
        "assert!(!guard.is_lost()); // check before each step of a long job"
    }
    /// `Some` with the reason once the validity has ended, `None` if it
    /// has not when the time is up.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(guard.lost(Duration::from_millis(20))?, None);"
    }
    /// sets the lease on every master that holds it to `lease` from now.
    async fn extend(&self, lease: Duration) -> () {
        "guard.extend(Duration::from_secs(30))?;"
        "assert!(guard.expires_at().unwrap() > Instant::now() + Duration::from_secs(20));"
    }
    /// releases the lock on every master that holds it.
    release fn unlock(self) {
        "guard.unlock()?;"
        "redlock.try_lock()?; // free on every master again"
    }
}
