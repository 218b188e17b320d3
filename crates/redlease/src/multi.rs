//! [`MultiLock`]: several locks taken all or none, in a fixed order, and
//! [`MultiGuard`], what holds them.
//!
//! Each member is an ordinary lock on Redisson's layout (so a Java `RLock`
//! on any member name is excluded) with its own guard, renewal and fencing
//! token; the multi-lock decides which members go in one script call
//! (`lock/together.rs`), the order, and what happens when a member is busy.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::select_all;

use crate::connection::SlotId;
use crate::error::Error;
use crate::front::{self, Begin, Patience};
use crate::guard::LockGuard;
use crate::kind::Kind;
use crate::layout::{self, Layout};
use crate::lock::Lock;
use crate::lost::LostReason;
use crate::shared::{Handle, Shared};
use crate::wait::{Attempt, Contender};

/// A handle to several named locks taken together; made by
/// [`Client::multi_lock`](crate::Client::multi_lock).
///
/// An acquire takes every member or none. Members that one script may touch
/// together (all of them on one node; those of one hash slot on a cluster)
/// are taken in one script call, one round trip, all or none by Redis's own
/// atomicity; such groups are taken in one fixed order (the names sorted,
/// duplicates removed), and when a member is busy, those taken so far are
/// released before the call waits or returns. Two multi-locks over
/// overlapping names, given in any order, therefore never wait for each
/// other while holding part of what the other needs, so they cannot
/// deadlock. Waiting sleeps until the member that refused it
/// last is released (its channel, or its remaining lease), then starts
/// again from the first member.
///
/// Each member is a plain lock with Redisson's layout: a Java `RLock` (or
/// another redlease lock) on any member name is excluded. The members may
/// lie in different hash slots of a cluster.
///
/// Where Redisson's `RedissonMultiLock` differs: it also takes members in
/// the order given (two callers that list them differently can wait on each
/// other), and on a failure it unlocks only the members it took, stopping at
/// the first unlock that fails, and it sends one request per member; here
/// a failed or cancelled acquire releases every member it took, each
/// owner-checked (Drop sends what a cancelled call could not), and members
/// that share a node or slot cost one request together.
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
/// let transfer = client.multi_lock(["doc:multi:account:17", "doc:multi:account:4"]);
/// let both = transfer.try_lock_for(Duration::from_secs(2)).await?;
/// // ... move money between the two accounts ...
/// both.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    /// The client, and the first name (the span's `key` and the metrics
    /// label).
    handle: Handle,
    /// Sorted, without duplicates: the one order every caller takes them in.
    names: Arc<[Arc<str>]>,
    /// `None`: watchdog mode, for every member.
    lease: Option<Duration>,
}

impl MultiLock {
    /// The handle [`Client::multi_lock`](crate::Client::multi_lock) makes.
    pub(crate) fn new(client: Shared, mut names: Vec<String>) -> MultiLock {
        names.sort();
        names.dedup();
        let names: Arc<[Arc<str>]> = names.into_iter().map(Arc::from).collect();
        let first = names.first().cloned().unwrap_or_else(|| Arc::from(""));
        MultiLock {
            handle: Handle::new(client, first),
            names,
            lease: None,
        }
    }

    /// Selects a fixed lease for every member: each expires `lease` after
    /// it was taken, never renewed.
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
    /// let multi = client
    ///     .multi_lock(["doc:multi:lease:a", "doc:multi:lease:b"])
    ///     .lease(Duration::from_secs(10));
    /// let both = multi.try_lock().await?;
    /// assert!(both.guards().iter().all(|g| g.expires_at().is_some()));
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(mut self, lease: Duration) -> MultiLock {
        self.lease = Some(lease);
        self
    }

    /// The member names, in the order they are taken (sorted, without
    /// duplicates).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:names:b", "doc:multi:names:a", "doc:multi:names:b"]);
    /// // Sorted, without duplicates: every caller takes them in this order.
    /// assert!(multi.names().eq(["doc:multi:names:a", "doc:multi:names:b"]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// Makes one attempt to take every member.
    ///
    /// # Errors
    ///
    /// An error for which [`is_busy`](Error::is_busy) is true when a member
    /// is held by another owner (none is held by this call then);
    /// [`is_invalid_argument`](Error::is_invalid_argument) for no names, a
    /// bad name or a bad lease; otherwise as
    /// [`Lock::try_lock`](Lock::try_lock), after releasing the members
    /// taken.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves no member held: the member being taken
    /// is withdrawn in the background as a cancelled
    /// [`Lock::try_lock`](Lock::try_lock) is, and the members already taken
    /// are released in the background as dropped guards are.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:try-lock:a", "doc:multi:try-lock:b"]);
    /// let b = client.lock("doc:multi:try-lock:b").try_lock().await?;
    /// let e = multi.try_lock().await.unwrap_err();
    /// assert!(e.is_busy());
    /// assert_eq!(e.key(), Some("doc:multi:try-lock:b"));
    /// // All or none: `a` was not left held.
    /// client.lock("doc:multi:try-lock:a").try_lock().await?.unlock().await?;
    ///
    /// b.unlock().await?;
    /// let both = multi.try_lock().await?;
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock(&self) -> Result<MultiGuard, Error> {
        front::acquire(self, Patience::Once).await
    }

    /// Tries to take every member until `wait` has passed, sleeping between
    /// attempts until the member that refused the last one is released (by
    /// any client, Redisson included) or its lease ends.
    ///
    /// # Errors
    ///
    /// As [`try_lock`](MultiLock::try_lock); busy when some member stayed
    /// held for the whole wait. Lost connections and time-outs are retried
    /// until the wait ends.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](MultiLock::try_lock); a waiter also leaves the
    /// member's release channel.
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
    /// let multi = client.multi_lock(["doc:multi:try-lock-for:a", "doc:multi:try-lock-for:b"]);
    /// let a = client.lock("doc:multi:try-lock-for:a").try_lock().await?;
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_millis(50)).await;
    ///     a.unlock().await
    /// });
    /// // Woken by the release of `a`.
    /// let both = multi.try_lock_for(Duration::from_secs(5)).await?;
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock_for(&self, wait: Duration) -> Result<MultiGuard, Error> {
        front::acquire(self, Patience::within(wait)).await
    }

    /// Waits until every member is taken, as
    /// [`try_lock_for`](MultiLock::try_lock_for) with no time limit.
    ///
    /// # Errors
    ///
    /// Never busy; invalid input and server errors end the wait.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock_for`](MultiLock::try_lock_for).
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
    /// let multi = client.multi_lock(["doc:multi:lock:a", "doc:multi:lock:b"]);
    /// let both = tokio::time::timeout(Duration::from_secs(30), multi.lock())
    ///     .await
    ///     .expect("acquired within 30 s")?;
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lock(&self) -> Result<MultiGuard, Error> {
        front::acquire(self, Patience::Forever).await
    }

    /// The members, by index, in groups that one acquire script takes
    /// together: those of one hash slot on a cluster, all of them on one
    /// node; groups in the order of their first member. When acquires must
    /// wait for replicas (the replicas' wait belongs to a single acquire),
    /// or in the string layout, one member per group.
    fn groups(&self) -> Vec<Vec<usize>> {
        let client = &self.handle.client;
        // The string layout's acquire is a transaction of one key, not a
        // script that could take several.
        if client.replicas().is_some() || client.layout() == Layout::String {
            return (0..self.names.len()).map(|i| vec![i]).collect();
        }
        let conn = client.acquire_conn();
        let mut groups: Vec<(Option<SlotId>, Vec<usize>)> = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            let slot = conn.slot(name);
            match groups.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, members)) => members.push(i),
                None => groups.push((slot, vec![i])),
            }
        }
        groups.into_iter().map(|(_, members)| members).collect()
    }

    /// Member `i`'s lock handle.
    fn member(&self, i: usize) -> Lock {
        let client = &self.handle.client;
        let handle = Handle::new(client.clone(), self.names[i].clone());
        let lock = Lock::new(handle, Kind::plain(client.layout()));
        match self.lease {
            Some(lease) => lock.lease(lease),
            None => lock,
        }
    }
}

/// A multi-lock's acquire, as the waiting engine drives it.
pub(crate) struct Waiter<'a> {
    multi: &'a MultiLock,
    /// The member that refused the last attempt.
    blocker: usize,
}

/// The acquires, as the front drives them.
impl front::Primitive for MultiLock {
    type Guard = MultiGuard;
    type Contender<'a> = Waiter<'a>;

    const KIND: &'static str = "multi-lock";

    fn handle(&self) -> &Handle {
        &self.handle
    }

    async fn begin(&self, _: Patience) -> Result<Begin<MultiGuard, Waiter<'_>>, Error> {
        Ok(Begin::Contend(Waiter {
            multi: self,
            blocker: 0,
        }))
    }
}

impl Contender for Waiter<'_> {
    type Acquired = MultiGuard;

    fn name(&self) -> &str {
        &self.multi.names[self.blocker]
    }

    async fn attempt(&mut self) -> Result<Attempt<MultiGuard>, Error> {
        if self.multi.names.is_empty() {
            return Err(Error::invalid("a multi-lock needs at least one lock name"));
        }
        let mut taken = Vec::with_capacity(self.multi.names.len());
        for group in self.multi.groups() {
            let locks: Vec<Lock> = group.iter().map(|&i| self.multi.member(i)).collect();
            let outcome = Lock::attempt_together(&locks, &mut taken).await;
            let (blocker, result) = match outcome {
                Ok(None) => continue,
                Ok(Some(refusal)) => (group[refusal.member], Ok(Attempt::Busy(refusal.ttl))),
                Err(e) => (group[0], Err(e)),
            };
            self.blocker = blocker;
            release_all(taken).await;
            return result;
        }
        taken.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(Attempt::Acquired(MultiGuard::new(taken)))
    }

    fn channel(&self) -> String {
        layout::channel(&self.multi.names[self.blocker])
    }

    fn channel_moves(&self) -> bool {
        true
    }

    fn refresh(&self) -> Option<Duration> {
        None
    }

    fn restart(&mut self) {
        // Every attempt takes each member under a new owner already.
    }

    async fn give_up(&mut self) {}
}

/// Releases what a refused attempt took, last first; a failed release is
/// left to the guard's Drop (in the background) and to the lease.
async fn release_all(mut taken: Vec<LockGuard>) {
    while let Some(guard) = taken.pop() {
        let name = guard.name().to_owned();
        if let Err(e) = guard.unlock().await {
            tracing::debug!(key = %name, error = %e, "multi-lock member release failed");
        }
    }
}

/// Every member of a [`MultiLock`], held. Release them with
/// [`unlock`](MultiGuard::unlock); dropped, each member is released in the
/// background as a dropped [`LockGuard`] is.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let multi = client.multi_lock(["doc:multi:guard:a", "doc:multi:guard:b"]);
/// let both = multi.try_lock().await?;
/// assert_eq!(both.guards().len(), 2);
/// // ... work on both ...
/// both.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the guard releases the locks at once; hold it for the critical section and call `unlock().await`"]
#[clippy::has_significant_drop]
pub struct MultiGuard {
    /// The members' names joined with `,`, in the order taken.
    name: String,
    /// In the order taken (sorted by name).
    guards: Vec<LockGuard>,
}

impl MultiGuard {
    fn new(guards: Vec<LockGuard>) -> MultiGuard {
        let names: Vec<&str> = guards.iter().map(LockGuard::name).collect();
        MultiGuard {
            name: names.join(","),
            guards,
        }
    }

    /// The members' names joined with `,`, in the order they were taken
    /// (sorted).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let both = client.multi_lock(["doc:multi:name:b", "doc:multi:name:a"]).try_lock().await?;
    /// assert_eq!(both.name(), "doc:multi:name:a,doc:multi:name:b");
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `None`: each member has a token of its own, for the resource it
    /// protects ([`fencing_token_of`](MultiGuard::fencing_token_of)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let both = client.multi_lock(["doc:multi:no-token:a", "doc:multi:no-token:b"]).try_lock().await?;
    /// assert_eq!(both.fencing_token(), None);
    /// assert!(both.fencing_token_of("doc:multi:no-token:a").is_some());
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        None
    }

    /// When the first member's fixed lease ends; `None` in watchdog mode.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::{Duration, Instant};
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:expires:a", "doc:multi:expires:b"]);
    /// let both = multi.lease(Duration::from_secs(10)).try_lock().await?;
    /// assert!(both.expires_at().unwrap() <= Instant::now() + Duration::from_secs(10));
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<std::time::Instant> {
        self.guards.iter().filter_map(LockGuard::expires_at).min()
    }

    /// Sets every member's fixed lease to `lease` from now.
    ///
    /// # Errors
    ///
    /// The first member's error, after every member was tried, as
    /// [`LockGuard::extend`]: a member that could not be extended keeps
    /// its earlier expiry, which [`expires_at`](MultiGuard::expires_at)
    /// then reports.
    ///
    /// # Cancel safety
    ///
    /// As [`LockGuard::extend`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::{Duration, Instant};
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:extend:a", "doc:multi:extend:b"]);
    /// let both = multi.lease(Duration::from_secs(2)).try_lock().await?;
    /// both.extend(Duration::from_secs(30)).await?;
    /// assert!(both.expires_at().unwrap() > Instant::now() + Duration::from_secs(20));
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn extend(&self, lease: Duration) -> Result<(), Error> {
        let results =
            futures_util::future::join_all(self.guards.iter().map(|g| g.extend(lease))).await;
        results.into_iter().collect()
    }
    /// The members' guards, in the order they were taken (sorted by name):
    /// each with its own [fencing token](LockGuard::fencing_token), for
    /// the resource that member protects.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:guards:b", "doc:multi:guards:a"]);
    /// let both = multi.try_lock().await?;
    /// for guard in both.guards() {
    ///     println!("{}: token {:?}", guard.name(), guard.fencing_token());
    /// }
    /// assert_eq!(both.guards()[0].name(), "doc:multi:guards:a");
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// The fencing token of member `name`, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:token:a", "doc:multi:token:b"]);
    /// let both = multi.try_lock().await?;
    /// let token = both.fencing_token_of("doc:multi:token:a").expect("a member");
    /// // ... write account `a` with `token` ...
    /// assert_eq!(both.fencing_token_of("doc:multi:token:c"), None);
    /// both.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token_of(&self, name: &str) -> Option<u64> {
        self.guards
            .iter()
            .find(|g| g.name() == name)
            .and_then(LockGuard::fencing_token)
    }

    /// Releases every member, last taken first, each owner-checked.
    ///
    /// # Errors
    ///
    /// The first error of the members' releases (every member's release is
    /// tried): [`is_not_owner`](Error::is_not_owner) when a member was no
    /// longer ours, connection and server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the guards not yet released, which release
    /// in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let multi = client.multi_lock(["doc:multi:unlock:a", "doc:multi:unlock:b"]);
    /// let both = multi.try_lock().await?;
    /// both.unlock().await?;
    /// // Every member is free again.
    /// client.lock("doc:multi:unlock:b").try_lock().await?.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn unlock(mut self) -> Result<(), Error> {
        let mut first = None;
        while let Some(guard) = self.guards.pop() {
            if let Err(e) = guard.unlock().await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Resolves when any member is known or must be assumed lost, with its
    /// reason (the member is the one whose [`is_lost`](LockGuard::is_lost)
    /// is true): from then on the multi-lock no longer protects everything
    /// it did.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockGuard::lost`].
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
    /// let multi = client
    ///     .multi_lock(["doc:multi:lost:a", "doc:multi:lost:b"])
    ///     .lease(Duration::from_millis(50));
    /// let both = multi.try_lock().await?;
    /// let reason = both.lost().await;
    /// assert_eq!(reason, redlease::LostReason::Expired);
    /// // Which member it was:
    /// let lost = both.guards().iter().find(|g| g.is_lost()).expect("a lost member");
    /// assert!(lost.name().starts_with("doc:multi:lost:"));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lost(&self) -> LostReason {
        if self.guards.is_empty() {
            // Only after `unlock` began: nothing left to lose.
            return std::future::pending().await;
        }
        let losses = self.guards.iter().map(|g| Box::pin(g.lost()));
        select_all(losses).await.0
    }

    /// Returns true if any member is lost, as [`LockGuard::is_lost`] says.
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
    /// let multi = client
    ///     .multi_lock(["doc:multi:is-lost:a", "doc:multi:is-lost:b"])
    ///     .lease(Duration::from_millis(80));
    /// let both = multi.try_lock().await?;
    /// assert!(!both.is_lost());
    /// tokio::time::sleep(Duration::from_millis(100)).await;
    /// assert!(both.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(LockGuard::is_lost)
    }
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiGuard")
            .field("name", &self.name)
            .field("guards", &self.guards)
            .finish()
    }
}
