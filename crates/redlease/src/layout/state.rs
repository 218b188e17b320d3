//! [`LockState`]: what Redis holds for one lock name (a Redisson hash or a
//! string-layout string, or a semaphore, or a count-down latch), and what
//! an operator should look at in it.

use std::fmt::Write;
use std::time::Duration;

/// Fencing tokens below this (September 2001 in microseconds) were not
/// issued from the clock (Redisson's `RFencedLock` counts from 1), so they
/// say nothing about when the lock was taken.
const CLOCK_TOKEN_FLOOR: u64 = 1_000_000_000_000_000;

/// One field of a lock hash: an owner `<client-id>:<owner>` and its hold
/// count, as written by redlease or Redisson (a read-write lock's writer is
/// `<client-id>:<owner>:write`).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:holder").try_lock().await?;
/// let state = redlease::admin::lock_state(&client, "doc:holder").await?;
/// let holder = &state.owners()[0];
/// assert_eq!(holder.field, guard.owner());
/// assert_eq!(holder.count(), Some(1)); // held once
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The hash field.
    pub field: String,
    /// The field's value as stored; a lock's is the hold count.
    pub value: String,
    /// For a reader of a read-write lock, as [`read`](crate::admin::read) reads
    /// it: the `PTTL` of its newest hold's timeout key
    /// (`<prefix>:<count>`, [`read_timeout_prefix`](super::read_timeout_prefix)),
    /// which is when that hold ends unless renewed; `-2` when the key is
    /// gone. `None` for writers, plain locks, and when not read.
    pub hold_ttl_ms: Option<i64>,
}

impl Holder {
    /// A field and its value.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::Holder;
    ///
    /// let holder = Holder::new("2b1c7f9e-0000-4000-8000-000000000000:3", "2");
    /// assert_eq!(holder.count(), Some(2));
    /// assert_eq!(holder.hold_ttl_ms, None);
    /// ```
    pub fn new(field: impl Into<String>, value: impl Into<String>) -> Holder {
        Holder {
            field: field.into(),
            value: value.into(),
            hold_ttl_ms: None,
        }
    }

    /// Whether the field is a read-write lock's writer
    /// (`<client-id>:<owner>:write`); its other owners are readers.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::Holder;
    ///
    /// assert!(Holder::new("2b1c7f9e:3:write", "1").is_writer());
    /// assert!(!Holder::new("2b1c7f9e:4", "1").is_writer()); // a reader
    /// ```
    pub fn is_writer(&self) -> bool {
        self.field.ends_with(":write")
    }

    /// The hold count, when the value is an integer.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::Holder;
    ///
    /// assert_eq!(Holder::new("2b1c7f9e:3", "2").count(), Some(2)); // re-entered once
    /// assert_eq!(Holder::new("2b1c7f9e:3", "yes").count(), None);
    /// ```
    pub fn count(&self) -> Option<i64> {
        self.value.parse().ok()
    }

    /// Whether the field has the shape of an owner (`<client-id>:<n>`); a
    /// hash with other fields is some other data, not a lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::Holder;
    ///
    /// assert!(Holder::new("2b1c7f9e:3", "1").is_owner());
    /// assert!(!Holder::new("email", "a@example.com").is_owner()); // some other hash
    /// ```
    pub fn is_owner(&self) -> bool {
        self.field.contains(':')
    }
}

/// One entry of a fair lock's queue.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
/// use redlease::admin;
///
/// let client = redlease::Client::connect(&url).await?;
/// let fair = client.fair_lock("doc:waiter");
/// let guard = fair.try_lock().await?;
/// let next = fair.clone();
/// let waiting = tokio::spawn(async move { next.try_lock_for(Duration::from_secs(10)).await });
/// let mut state = admin::lock_state(&client, fair.name()).await?;
/// while state.waiters.is_empty() {
///     tokio::task::yield_now().await; // until the waiter has queued
///     state = admin::lock_state(&client, fair.name()).await?;
/// }
/// assert!(!state.waiters[0].stale); // alive, with a deadline
/// # guard.unlock().await?;
/// # waiting.await.expect("the waiter's task")?.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Waiter {
    /// The waiter's owner field.
    pub owner: String,
    /// Its deadline in milliseconds of the server's clock, if it has one.
    pub deadline_ms: Option<f64>,
    /// Returns true if and only if the waiter is gone by the fair lock's
    /// rule: no deadline, or a deadline that has passed.
    pub stale: bool,
}

/// One acquired permit of a Redisson `RPermitExpirableSemaphore`: a member
/// of its [`permits_key`](super::permits_key) zset.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::layout;
///
/// let client = redlease::Client::connect(&url).await?;
/// let exports = client.expirable_semaphore("doc:permit");
/// exports.try_set_total(2).await?;
/// let permit = exports.try_acquire().await?;
/// let state = &redlease::admin::read(&client, &["doc:permit".to_owned()]).await?[0];
/// assert_eq!(state.permits[0].id, permit.id());
/// assert!(state.permits[0].expires_ms.is_some()); // leased
/// permit.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Permit {
    /// The permit id as Redisson's API hands it out: the stored 16 raw
    /// bytes in lowercase hex (other members: their bytes in hex too).
    pub id: String,
    /// The permit's expiry in milliseconds of the server's clock; `None`
    /// for a permit without lease (Redisson's `922337203685477`).
    pub expires_ms: Option<f64>,
}

/// Redisson's score for a permit without lease (`nonExpirableTimeout`).
pub const PERMIT_NO_EXPIRY: f64 = 922_337_203_685_477.0;

/// The listeners on a string key's two possible channels (`PUBSUB
/// NUMSUB`): connections subscribed while waiting, which tell a semaphore
/// from a count-down latch when someone waits on it.
///
/// # Examples
///
/// ```
/// use redlease::layout::{Listeners, LockState, StateKind};
///
/// let mut state = LockState::absent("import:shards");
/// state.key_type = "string".to_owned();
/// state.value = Some("2".to_owned());
/// let mut listeners = Listeners::default();
/// listeners.latch = 1; // someone waits on the latch's channel
/// state.listeners = Some(listeners);
/// assert_eq!(state.kind(), StateKind::CountDownLatch);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listeners {
    /// On the semaphores' channel, [`semaphore_channel`](super::semaphore_channel).
    pub semaphore: u64,
    /// On the latch's channel, [`latch_channel`](super::latch_channel).
    pub latch: u64,
}

/// A lock key and its fair queue, as [`read`](crate::admin::read) reads them,
/// [`admin::lock_state`](crate::admin::lock_state) sees them, or
/// [`admin::force_unlock`](crate::admin::force_unlock) found them (before it
/// removed anything).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::layout::StateKind;
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:lock-state").try_lock().await?;
/// let state = redlease::admin::lock_state(&client, "doc:lock-state").await?;
/// assert_eq!(state.kind(), StateKind::Lock);
/// assert!(state.pttl_ms > 0); // the watchdog's lease
/// assert!(state.problems().is_empty());
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LockState {
    /// The lock name.
    pub name: String,
    /// The key's Redis type: `hash` for a lock, `string` for one of the
    /// string layout, `none` when absent.
    pub key_type: String,
    /// The fields of a lock hash (not the `mode` field of a read-write lock);
    /// empty for other types, and for a hash too big to be a lock (see
    /// [`field_count`](LockState::field_count)).
    pub holders: Vec<Holder>,
    /// How many fields the hash has (`mode` included); 0 for other types.
    pub field_count: u64,
    /// The `mode` field of a Redisson read-write lock (`read` or `write`).
    pub mode: Option<String>,
    /// The key's `PTTL`: milliseconds to live, `-1` for no expiry, `-2` for
    /// no key.
    pub pttl_ms: i64,
    /// The lock's fencing counter ([`token_key`](super::token_key)): the
    /// last fencing token issued for the name, when it holds an integer.
    pub fencing_token: Option<u64>,
    /// The server's clock when this was read, in microseconds.
    pub server_time_us: u64,
    /// Returns true if and only if the key was deleted.
    pub removed: bool,
    /// Returns true if and only if
    /// [`admin::force_unlock_if_unchanged`](crate::admin::force_unlock_if_unchanged)
    /// found the key different from what it was given (another type,
    /// other owner fields, or another string value), and so changed
    /// nothing.
    pub changed: bool,
    /// The fair queue: list entries in order, then deadline-only entries
    /// (by [`read`](crate::admin::read), at most the first 100 of each, and only
    /// stale deadline-only entries).
    pub waiters: Vec<Waiter>,
    /// How many entries the fair queue's list has.
    pub queue_len: u64,
    /// The cluster node (`host:port`) the lock was found on by
    /// [`scan`](crate::admin::scan); `None` on a single node, or when not known.
    pub node: Option<String>,
    /// A string key's value, as [`read`](crate::admin::read) reads it: a
    /// semaphore's available permits or a latch's count, or the owner of a
    /// lock of the string layout ([`string_owner`](LockState::string_owner)),
    /// with bytes that are not UTF-8, control characters and backslashes
    /// escaped (`\xNN`, `\n`, `\\`), and cut after 128 bytes (then ending
    /// in `...`).
    pub value: Option<String>,
    /// The SHA-1 (lowercase hex) of a string key's whole value, as
    /// [`admin::lock_state`](crate::admin::lock_state) and the forced
    /// unlocks read it (not [`read`](crate::admin::read), which sends no script):
    /// what
    /// [`admin::force_unlock_if_unchanged`](crate::admin::force_unlock_if_unchanged)
    /// compares, so that a string lock taken by another owner since is
    /// never removed. `None` for other types, and when not read.
    pub value_sha1: Option<String>,
    /// The acquired permits of an expirable semaphore (its
    /// [`permits_key`](super::permits_key) zset), by expiry, at most the
    /// first 100.
    pub permits: Vec<Permit>,
    /// How many members that zset has.
    pub permits_len: u64,
    /// Who listens on the channels of a string key; `None` when not read
    /// (on a cluster, where a subscription is one node's, or by ACL).
    pub listeners: Option<Listeners>,
}

/// What a key is, judged by [`LockState::kind`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::layout::{self, StateKind};
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.read_write_lock("doc:state-kind:rw").read().try_lock().await?;
/// client.count_down_latch("doc:state-kind:latch").try_set_count(2).await?;
/// let names = ["doc:state-kind:rw", "doc:state-kind:latch"].map(String::from);
/// let states = redlease::admin::read(&client, &names).await?;
/// assert_eq!(states[0].kind(), StateKind::ReadWriteLock);
/// assert_eq!(states[1].kind(), StateKind::Counter); // nobody waits on it yet
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateKind {
    /// A lock hash (`RLock`, `RFairLock`, redlease).
    Lock,
    /// A Redisson `RReadWriteLock` hash (with a `mode` field).
    ReadWriteLock,
    /// A string integer that someone waits on through `redisson_sc:{name}`:
    /// an `RSemaphore`, its value the available permits.
    Semaphore,
    /// A string integer (or no key) beside a zset of acquired permits
    /// ([`permits_key`](super::permits_key)): an
    /// `RPermitExpirableSemaphore`, its value the available permits.
    ExpirableSemaphore,
    /// A string integer that someone waits on through
    /// `redisson_countdownlatch__channel__{name}`: an `RCountDownLatch`, its
    /// value the count.
    CountDownLatch,
    /// A string integer nobody waits on: a semaphore's permits or a latch's
    /// count (the key alone cannot tell which), or any other counter.
    Counter,
    /// A string that is no integer: a lock of the string layout
    /// ([`Layout::String`](super::Layout::String)), the value its owner
    /// ([`LockState::string_owner`]) and the key's ttl its lease, taken by
    /// redlease (`<client-id>:<n>`, with a fencing counter) or by another
    /// `SET key value NX PX` lock (redis-py, rslock, redsync, a hand-written
    /// one). Any other string that is no count matches too (see
    /// [`LockState::kind`]): the key alone cannot tell a lock from a cached
    /// value. [`LockState::is_lock`] is true for it, and
    /// [`admin::force_unlock`](crate::admin::force_unlock) removes it as a
    /// lock.
    StringLock,
    /// No lock key, but a fair queue under its name.
    QueueOnly,
    /// Nothing under the name: no key, no fair queue, no permits (a lock
    /// that is free, or a name never used).
    Free,
    /// A key that is no lock hash.
    NotALock,
}

/// Something an operator should look at, found by [`LockState::problems`].
///
/// # Examples
///
/// ```
/// use redlease::layout::{Holder, LockState, ProblemKind};
///
/// let mut state = LockState::absent("orders:1");
/// state.key_type = "hash".to_owned();
/// state.holders.push(Holder::new("2b1c7f9e:3", "0"));
/// state.field_count = 1;
/// state.pttl_ms = 12_000;
/// let problems = state.problems();
/// assert_eq!(problems[0].kind, ProblemKind::BadCount);
/// println!("{}: {}", state.name, problems[0].message);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What was found, for people.
    pub message: String,
}

/// The kinds of [`Problem`].
///
/// # Examples
///
/// ```
/// use redlease::layout::{Holder, LockState, ProblemKind};
///
/// let mut state = LockState::absent("orders:1");
/// state.key_type = "hash".to_owned();
/// state.holders.push(Holder::new("2b1c7f9e:3", "1"));
/// state.field_count = 1;
/// state.pttl_ms = -1; // no expiry
/// assert_eq!(state.problems()[0].kind, ProblemKind::NoTtl);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A lock without expiry: a holder that dies keeps it for ever.
    NoTtl,
    /// A key that is not a lock hash.
    WrongType,
    /// A lock field whose value is not a positive hold count.
    BadCount,
    /// Fair-queue entries whose waiters are gone.
    StaleWaiters,
}

impl ProblemKind {
    /// The kind's name in reports: `no_ttl`, `wrong_type`, `bad_count`,
    /// `stale_waiters`.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::ProblemKind;
    ///
    /// assert_eq!(ProblemKind::NoTtl.name(), "no_ttl");
    /// assert_eq!(ProblemKind::StaleWaiters.name(), "stale_waiters");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::NoTtl => "no_ttl",
            ProblemKind::WrongType => "wrong_type",
            ProblemKind::BadCount => "bad_count",
            ProblemKind::StaleWaiters => "stale_waiters",
        }
    }
}

impl LockState {
    /// The state of lock `name` when nothing of it is in Redis (read at
    /// server time 0): the start from which readers and tests fill it in.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::{LockState, StateKind};
    ///
    /// let state = LockState::absent("orders:1");
    /// assert_eq!((state.key_type.as_str(), state.pttl_ms), ("none", -2));
    /// assert!(state.is_empty());
    /// assert_eq!(state.kind(), StateKind::Free);
    /// ```
    pub fn absent(name: impl Into<String>) -> LockState {
        LockState {
            name: name.into(),
            key_type: "none".to_owned(),
            holders: Vec::new(),
            field_count: 0,
            mode: None,
            pttl_ms: -2,
            fencing_token: None,
            server_time_us: 0,
            removed: false,
            changed: false,
            waiters: Vec::new(),
            queue_len: 0,
            node: None,
            value: None,
            value_sha1: None,
            permits: Vec::new(),
            permits_len: 0,
            listeners: None,
        }
    }

    /// Returns true if and only if the key is absent and no waiter is
    /// queued: there is nothing to unlock.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:is-empty").try_lock().await?;
    /// let state = redlease::admin::lock_state(&client, "doc:is-empty").await?;
    /// assert!(!state.is_empty());
    /// guard.unlock().await?;
    /// let state = redlease::admin::lock_state(&client, "doc:is-empty").await?;
    /// assert!(state.is_empty()); // nothing to unlock
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.key_type == "none"
            && self.waiters.is_empty()
            && self.queue_len == 0
            && self.permits_len == 0
    }

    /// Returns true if and only if the key is what
    /// [`admin::force_unlock`](crate::admin::force_unlock) removes as a
    /// lock: a hash (the type of Redisson's locks; [`kind`](LockState::kind)
    /// says more), or a lock of the string layout
    /// ([`StringLock`](StateKind::StringLock)).
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::LockState;
    ///
    /// let mut state = LockState::absent("orders:1");
    /// assert!(!state.is_lock());
    /// state.key_type = "hash".to_owned();
    /// assert!(state.is_lock()); // of a lock's type; `kind` says more
    /// state.key_type = "string".to_owned();
    /// state.value = Some("2b1c7f9e:3".to_owned());
    /// assert!(state.is_lock()); // a lock of the string layout
    /// state.value = Some("4".to_owned());
    /// assert!(!state.is_lock()); // a count: a semaphore's, a latch's
    /// ```
    pub fn is_lock(&self) -> bool {
        self.key_type == "hash" || self.kind() == StateKind::StringLock
    }

    /// What the key is: a lock only when it is a hash whose fields are all
    /// owners (and `mode`), and small enough to have been read. A string
    /// integer is an expirable semaphore when it has acquired permits, a
    /// semaphore or a latch when someone listens on that one's channel, and
    /// otherwise a [`Counter`](StateKind::Counter): Redisson keeps no other
    /// mark of which it is. A string integer (a count) is a value of at
    /// most 20 bytes: an optional `+` or `-`, then ASCII digits. Any other
    /// string whose value was read is a
    /// [`StringLock`](StateKind::StringLock), unless it has an expirable
    /// semaphore's permits (then it is a semaphore's broken count): the
    /// same rule by which the forced unlocks of [`admin`](crate::admin)
    /// remove it as a lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::{Holder, LockState, StateKind};
    ///
    /// let mut state = LockState::absent("orders:1");
    /// state.key_type = "hash".to_owned();
    /// state.holders.push(Holder::new("2b1c7f9e:3", "1"));
    /// state.field_count = 1;
    /// assert_eq!(state.kind(), StateKind::Lock);
    /// state.holders[0] = Holder::new("email", "a@example.com");
    /// assert_eq!(state.kind(), StateKind::NotALock);
    /// ```
    pub fn kind(&self) -> StateKind {
        match self.key_type.as_str() {
            "none" if self.permits_len > 0 => StateKind::ExpirableSemaphore,
            "none" if self.queue_len == 0 && self.waiters.is_empty() => StateKind::Free,
            "none" => StateKind::QueueOnly,
            "string" if self.value.as_deref().is_some_and(is_count) => {
                let listeners = self.listeners.unwrap_or_default();
                if self.permits_len > 0 {
                    StateKind::ExpirableSemaphore
                } else if listeners.semaphore > 0 && listeners.latch == 0 {
                    StateKind::Semaphore
                } else if listeners.latch > 0 && listeners.semaphore == 0 {
                    StateKind::CountDownLatch
                } else {
                    StateKind::Counter
                }
            }
            "string" if self.value.is_some() && self.permits_len == 0 => StateKind::StringLock,
            "hash" if self.holders_were_read() && self.holders.iter().all(Holder::is_owner) => {
                if self.mode.is_some() {
                    StateKind::ReadWriteLock
                } else {
                    StateKind::Lock
                }
            }
            _ => StateKind::NotALock,
        }
    }

    /// A string key's value as an integer: the available permits of a
    /// semaphore, the count of a latch.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// client.semaphore("doc:counter").try_set_available(5).await?;
    /// let state = &redlease::admin::read(&client, &["doc:counter".to_owned()]).await?[0];
    /// assert_eq!(state.counter(), Some(5));
    /// # Ok(())
    /// # }
    /// ```
    pub fn counter(&self) -> Option<i64> {
        self.value.as_deref()?.parse().ok()
    }

    /// Whether the state is one of the string-keyed structures: a
    /// semaphore, an expirable semaphore, a latch, or a counter that may be
    /// either.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::LockState;
    ///
    /// let mut state = LockState::absent("jobs:export");
    /// state.key_type = "string".to_owned();
    /// state.value = Some("4".to_owned());
    /// assert!(state.is_counter()); // a semaphore's or a latch's, or another counter
    /// state.value = Some("2b1c7f9e:3".to_owned());
    /// assert!(!state.is_counter()); // a lock of the string layout
    /// ```
    pub fn is_counter(&self) -> bool {
        matches!(
            self.kind(),
            StateKind::Semaphore
                | StateKind::ExpirableSemaphore
                | StateKind::CountDownLatch
                | StateKind::Counter
        )
    }

    /// The owner of a lock of the string layout: the key's value, escaped
    /// and cut as in [`value`](LockState::value); `None` for other keys.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::layout::LockState;
    ///
    /// let mut state = LockState::absent("orders:1");
    /// state.key_type = "string".to_owned();
    /// state.value = Some("rslock-5f1e".to_owned());
    /// assert_eq!(state.string_owner(), Some("rslock-5f1e"));
    /// state.value = Some("7".to_owned());
    /// assert_eq!(state.string_owner(), None); // an integer: a counter
    /// ```
    pub fn string_owner(&self) -> Option<&str> {
        self.value
            .as_deref()
            .filter(|_| self.kind() == StateKind::StringLock)
    }

    /// The holders of a lock hash; none for a key that is not one (a
    /// string lock's owner is [`string_owner`](LockState::string_owner)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:owners").try_lock().await?;
    /// let state = redlease::admin::lock_state(&client, "doc:owners").await?;
    /// let owners: Vec<&str> = state.owners().iter().map(|h| h.field.as_str()).collect();
    /// assert_eq!(owners, [guard.owner()]);
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn owners(&self) -> &[Holder] {
        match self.kind() {
            StateKind::Lock | StateKind::ReadWriteLock => &self.holders,
            _ => &[],
        }
    }

    /// The fencing token of a lock key, if its counter holds one.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:lock-token").try_lock().await?;
    /// let state = redlease::admin::lock_state(&client, "doc:lock-token").await?;
    /// assert_eq!(state.lock_token(), guard.fencing_token());
    /// guard.unlock().await?;
    /// let state = redlease::admin::lock_state(&client, "doc:lock-token").await?;
    /// assert_eq!(state.lock_token(), None); // no lock: its counter says nothing
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock_token(&self) -> Option<u64> {
        self.fencing_token.filter(|_| self.owns_a_lock())
    }

    /// About how long ago the newest fencing token of the name was issued,
    /// which is when the current hold was taken if a redlease client took
    /// it; `None` when unknown (no token, or one not from the clock).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlease::layout::{Holder, LockState};
    ///
    /// let mut state = LockState::absent("orders:1");
    /// state.key_type = "hash".to_owned();
    /// state.holders.push(Holder::new("2b1c7f9e:3", "1"));
    /// state.field_count = 1;
    /// state.server_time_us = 1_790_000_000_000_000; // in 2026
    /// state.fencing_token = Some(state.server_time_us - 1_500_000); // from the clock
    /// assert_eq!(state.age(), Some(Duration::from_millis(1_500)));
    /// ```
    pub fn age(&self) -> Option<Duration> {
        self.lock_token()
            .filter(|&t| t >= CLOCK_TOKEN_FLOOR && t <= self.server_time_us)
            .map(|t| Duration::from_millis((self.server_time_us - t) / 1_000))
    }

    /// What an operator should look at: a lock without expiry, a key that
    /// is no lock, a bad hold count, fair-queue entries of gone waiters.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let mut redis = redlease_testkit::RedisServer::shared().connection();
    /// // A lock someone wrote without expiry:
    /// redis::cmd("HSET").arg(&["doc:problems", "2b1c7f9e:3", "1"]).query::<()>(&mut redis)?;
    /// let state = redlease::admin::lock_state(&client, "doc:problems").await?;
    /// for problem in state.problems() {
    ///     println!("{}: {} ({})", state.name, problem.message, problem.kind.name());
    /// }
    /// assert_eq!(state.problems()[0].kind, redlease::layout::ProblemKind::NoTtl);
    /// # Ok(())
    /// # }
    /// ```
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut problem = |kind, message: String| problems.push(Problem { kind, message });
        match self.kind() {
            StateKind::NotALock => problem(ProblemKind::WrongType, self.not_a_lock()),
            StateKind::Lock | StateKind::ReadWriteLock | StateKind::StringLock => {
                for holder in &self.holders {
                    if holder.count().is_none_or(|c| c < 1) {
                        problem(
                            ProblemKind::BadCount,
                            format!(
                                "owner {} has hold count {:?}, expected a positive integer",
                                holder.field, holder.value
                            ),
                        );
                    }
                }
                if self.pttl_ms == -1 {
                    problem(
                        ProblemKind::NoTtl,
                        "never expires (no ttl): if its holder is gone it stays locked for ever"
                            .to_owned(),
                    );
                }
            }
            // A semaphore or latch has no owner and, by design, no ttl.
            StateKind::QueueOnly
            | StateKind::Free
            | StateKind::Semaphore
            | StateKind::ExpirableSemaphore
            | StateKind::CountDownLatch
            | StateKind::Counter => {}
        }
        let stale = self.waiters.iter().filter(|w| w.stale).count();
        if stale > 0 {
            problem(
                ProblemKind::StaleWaiters,
                format!(
                    "{stale} fair-queue entr{} of gone waiters (deadline passed); the queue's next acquire or `redlease unlock --force` drops them",
                    if stale == 1 { "y" } else { "ies" }
                ),
            );
        }
        problems
    }

    fn owns_a_lock(&self) -> bool {
        matches!(
            self.kind(),
            StateKind::Lock | StateKind::ReadWriteLock | StateKind::StringLock
        )
    }

    /// Whether every field of a hash is in `holders` (and `mode`).
    fn holders_were_read(&self) -> bool {
        let read = self.holders.len() as u64 + u64::from(self.mode.is_some());
        read == self.field_count
    }

    fn not_a_lock(&self) -> String {
        if self.key_type == "string" && self.value.is_some() {
            return "holds a string that is no integer beside an expirable semaphore's permits, \
                    not a semaphore's count"
                .to_owned();
        }
        if self.key_type == "string" {
            return "holds a string whose value could not be read, not a lock".to_owned();
        }
        if self.key_type != "hash" {
            return format!("holds a {}, not a lock hash or string", self.key_type);
        }
        if !self.holders_were_read() {
            return format!("hash with {} fields, not a lock", self.field_count);
        }
        let strangers: Vec<&str> = self
            .holders
            .iter()
            .filter(|h| !h.is_owner())
            .map(|h| h.field.as_str())
            .collect();
        format!(
            "hash with fields that are not lock owners ({}), not a lock",
            strangers.join(", ")
        )
    }
}

/// Whether a string value is a count (a semaphore's permits, a latch's
/// count, another counter) rather than a lock's owner: at most 20 bytes, an
/// optional `+` or `-`, then one or more ASCII digits. The admin script
/// (`scripts/admin.rs`) applies the same rule on the server.
fn is_count(value: &str) -> bool {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    value.len() <= 20 && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Longest string value kept: a semaphore's or latch's integer is at most
/// 20 bytes (`i64::MIN`), a string lock's owner some 40 (a UUID and a
/// counter; rslock's 20 random bytes, escaped, 80); one byte more is read
/// to tell a longer string, so a big string that matched a pattern costs
/// little.
pub(crate) const MAX_VALUE: usize = 128;

/// A string's value, as read, for people and JSON: bytes that are not
/// UTF-8 (rslock's owners are 20 random bytes) as `\xNN`, control
/// characters as Rust escapes them and `\` as `\\`, so that one value is
/// one line and tells its bytes apart; past [`MAX_VALUE`] bytes cut, with
/// `...`.
pub(crate) fn escape(value: &[u8]) -> String {
    let mut end = value.len().min(MAX_VALUE);
    // Not in the middle of a character, where the value is UTF-8.
    while end < value.len() && end > MAX_VALUE - 3 && value[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    let (kept, cut) = (&value[..end], end < value.len());
    let mut out = String::with_capacity(kept.len());
    for chunk in kept.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    if cut {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_US: u64 = 1_800_000_000_000_000;

    fn state(key_type: &str, fields: &[(&str, &str)], pttl_ms: i64) -> LockState {
        let mut mode = None;
        let mut holders = Vec::new();
        for (field, value) in fields {
            if *field == "mode" {
                mode = Some(value.to_string());
            } else {
                holders.push(Holder::new(*field, *value));
            }
        }
        LockState {
            key_type: key_type.to_owned(),
            holders,
            field_count: fields.len() as u64,
            mode,
            pttl_ms,
            server_time_us: NOW_US,
            ..LockState::absent("k")
        }
    }

    fn kinds(s: &LockState) -> Vec<ProblemKind> {
        s.problems().iter().map(|p| p.kind).collect()
    }

    #[test]
    fn a_held_lock_has_no_problem_and_an_age() {
        let mut s = state("hash", &[("u:1", "1")], 20_000);
        s.fencing_token = Some(NOW_US - 3_000_000);
        assert_eq!(s.kind(), StateKind::Lock);
        assert!(s.problems().is_empty());
        assert_eq!(s.age(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn redisson_tokens_give_no_age() {
        let mut s = state("hash", &[("u:1", "1")], 20_000);
        s.fencing_token = Some(7);
        assert_eq!(s.age(), None);
        assert_eq!(s.lock_token(), Some(7));
    }

    #[test]
    fn problems_are_found() {
        assert_eq!(
            kinds(&state("hash", &[("u:1", "1")], -1)),
            [ProblemKind::NoTtl]
        );
        assert_eq!(kinds(&state("string", &[], -1)), [ProblemKind::WrongType]);
        let s = state("hash", &[("name", "bob")], -1);
        assert_eq!(
            (s.kind(), kinds(&s)),
            (StateKind::NotALock, vec![ProblemKind::WrongType])
        );
        assert!(s.owners().is_empty());
        assert_eq!(
            kinds(&state("hash", &[("u:1", "x")], 5)),
            [ProblemKind::BadCount]
        );
        let mut big = state("hash", &[], 5);
        big.field_count = 65;
        assert_eq!(big.problems()[0].message, "hash with 65 fields, not a lock");
    }

    #[test]
    fn read_write_locks_are_locks() {
        let s = state("hash", &[("mode", "read"), ("u:1", "2"), ("v:3", "1")], 9);
        assert_eq!(
            (s.kind(), s.mode.as_deref(), s.owners().len()),
            (StateKind::ReadWriteLock, Some("read"), 2)
        );
        assert!(s.problems().is_empty());
    }

    #[test]
    fn string_integers_are_told_apart_by_permits_then_listeners() {
        let mut s = state("string", &[], -1);
        s.value = Some("-2".to_owned());
        assert_eq!((s.kind(), s.counter()), (StateKind::Counter, Some(-2)));
        let listening = |semaphore, latch| Some(Listeners { semaphore, latch });
        s.listeners = listening(1, 0);
        assert_eq!(s.kind(), StateKind::Semaphore);
        s.listeners = listening(0, 3);
        assert_eq!(s.kind(), StateKind::CountDownLatch);
        // Both: the key alone cannot say which, so neither is claimed.
        s.listeners = listening(1, 1);
        assert_eq!(s.kind(), StateKind::Counter);
        s.permits_len = 1;
        assert_eq!(s.kind(), StateKind::ExpirableSemaphore);
        assert!(s.problems().is_empty() && s.is_counter() && s.owners().is_empty());
        s.value = Some("x".to_owned());
        assert_eq!(kinds(&s), [ProblemKind::WrongType]);
    }

    #[test]
    fn counts_are_short_signed_digits() {
        for count in ["0", "7", "-3", "+5", "00012", "-9223372036854775808"] {
            assert!(is_count(count), "{count}");
        }
        let long = "1".repeat(21);
        for other in [
            "",
            "-",
            "+",
            "1.5",
            " 7",
            "7 ",
            "1e3",
            "0x10",
            "u:1",
            long.as_str(),
        ] {
            assert!(!is_count(other), "{other}");
        }
    }

    #[test]
    fn strings_that_are_no_integer_are_string_locks() {
        let mut s = state("string", &[], 20_000);
        s.value = Some("7f9c-uuid:1".to_owned());
        s.fencing_token = Some(NOW_US - 2_000_000);
        assert_eq!(
            (s.kind(), s.string_owner()),
            (StateKind::StringLock, Some("7f9c-uuid:1"))
        );
        assert!(s.problems().is_empty() && s.owners().is_empty() && !s.is_counter());
        // redlease takes a string lock with a clock token, as a hash.
        assert_eq!(s.age(), Some(Duration::from_secs(2)));
        s.pttl_ms = -1;
        assert_eq!(kinds(&s), [ProblemKind::NoTtl]);
        assert!(s.problems()[0].message.starts_with("never expires"));
        // An integer is a counter, even with a fencing counter beside it.
        s.value = Some("3".to_owned());
        assert_eq!((s.kind(), s.string_owner()), (StateKind::Counter, None));
        assert_eq!(s.lock_token(), None);
    }

    #[test]
    fn stale_waiters_are_a_problem_even_without_a_lock() {
        let mut s = state("none", &[], -2);
        let waiter = |stale| Waiter {
            owner: "a:1".to_owned(),
            deadline_ms: None,
            stale,
        };
        s.waiters = vec![waiter(true), waiter(false), waiter(true)];
        assert_eq!(
            (s.kind(), kinds(&s)),
            (StateKind::QueueOnly, vec![ProblemKind::StaleWaiters])
        );
        assert!(s.problems()[0].message.starts_with("2 fair-queue entries"));
    }
}
