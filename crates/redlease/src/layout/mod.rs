//! Redisson's data layout: the names of a lock's keys and channels, and the
//! one model of what Redis holds for a lock ([`LockState`]), shared by the
//! library, `redlease unlock --force` and `redlease inspect`.
//!
//! [`admin::read`](crate::admin::read) and [`admin::scan`](crate::admin::scan)
//! read lock states with plain commands (no scripts, nothing written), so
//! they work on replicas too; the forced unlock in [`admin`](crate::admin)
//! reports the same [`LockState`] from its script. They read Redisson's
//! semaphores and count-down latch too, whose state is a string integer
//! `name` (see [`StateKind`]), for `inspect`.
//!
//! A lock called `name` is the hash `name`. Every other key and channel of
//! it follows Redisson's `prefixName` rule, so that both libraries compute
//! the same names and, in a cluster, all of them land in the lock key's
//! hash slot: `prefix:{name}`, or `prefix:name` when the name already
//! contains `{` (the user chose the hash tag).

pub(crate) mod state;

use std::{fmt, io};

pub(crate) use state::escape as escape_value;
pub use state::{
    Holder, Listeners, LockState, PERMIT_NO_EXPIRY, Permit, Problem, ProblemKind, StateKind, Waiter,
};

/// How a lock's key holds its owner, chosen per client with
/// [`ClientBuilder::layout`](crate::ClientBuilder::layout). The rest of this
/// module describes the default, Redisson's.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::layout::Layout;
///
/// let client = redlease::Client::builder(&url)
///     .layout(Layout::String) // beside redis-py, rslock or redsync locks
///     .build()
///     .await?;
/// let guard = client.lock("doc:layout:string").try_lock().await?;
/// let names = ["doc:layout:string".to_owned()];
/// let state = &redlease::admin::read(&client, &names).await?[0];
/// assert_eq!(state.key_type, "string"); // `SET key owner NX PX lease`
/// assert_eq!(state.string_owner(), Some(guard.owner()));
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layout {
    /// Redisson's `RLock`: the key is a hash whose one field,
    /// `<client-id>:<n>`, holds the hold count; a release publishes `0` on
    /// [`channel`]. Java services on Redisson share these locks.
    #[default]
    Redisson,
    /// A string holding the owner, `<client-id>:<n>`, set with
    /// `SET key owner NX PX lease`: the layout of the hand-written
    /// `SET NX` lock and of redis-py's `Lock`, rslock, redsync and
    /// node-redlock, whose locks and redlease's then exclude each other on
    /// one key. Releases and renewals are owner-checked (compare-and-delete,
    /// compare-and-extend, with the server's own commands where it has them:
    /// Valkey 9, Redis 8.4); fencing tokens use the same counter as
    /// Redisson's layout; a release also publishes `0` on [`channel`], so
    /// that redlease waiters wake at once, while a lock of a library that
    /// does not publish is looked at again every 100 ms. Re-entry in an
    /// owner scope counts in the client (no round trip), and a re-entry does
    /// not lengthen a fixed lease. Only [`Client::lock`](crate::Client::lock)
    /// and what is built on it (multi-locks, RedLock) use it: fair and
    /// read-write locks, semaphores and latches are Redisson's structures.
    String,
}

/// The prefix of a lock's release channel ([`channel`]).
pub const CHANNEL_PREFIX: &str = "redisson_lock__channel";
/// The prefix of a lock's fencing counter ([`token_key`]).
pub const TOKEN_PREFIX: &str = "redisson_lock_token";
/// The prefix of a fair lock's queue ([`queue_key`]).
pub const QUEUE_PREFIX: &str = "redisson_lock_queue";
/// The prefix of a fair lock's waiter deadlines ([`timeout_key`]).
pub const TIMEOUT_PREFIX: &str = "redisson_lock_timeout";
/// The prefix of a Redisson read-write lock's channel ([`rwlock_channel`]).
pub const RWLOCK_CHANNEL_PREFIX: &str = "redisson_rwlock";
/// The prefix of a Redisson semaphore's channel ([`semaphore_channel`]).
pub const SEMAPHORE_CHANNEL_PREFIX: &str = "redisson_sc";
/// The prefix of a Redisson count-down latch's channel ([`latch_channel`]):
/// followed by the name in braces, with no `:` in between.
pub const LATCH_CHANNEL_PREFIX: &str = "redisson_countdownlatch__channel__";
/// The prefix of the keys that record, for a while, what a request that
/// changes a count did (`request_key`): a semaphore acquire (#36), a
/// semaphore release or change, a latch's count-down (#37), so that a
/// request sent again after a lost reply is neither applied twice nor
/// lost. redlease's own: Redisson's `RSemaphore` and `RCountDownLatch`
/// keep nothing of the kind.
pub const REQUEST_PREFIX: &str = "redlease_request";
/// The prefix of an election's leader record ([`leader_key`]): redlease's
/// own, beside the lock of the election's name.
pub const LEADER_PREFIX: &str = "redlease_leader";
/// The prefix of an election's channel ([`leader_channel`]), on which a new
/// leader announces itself.
pub const LEADER_CHANNEL_PREFIX: &str = "redlease_leader__channel";
/// The prefix of Redisson's unlock latches, short-lived keys its release
/// writes so that a retried unlock returns its first answer.
pub const UNLOCK_LATCH_PREFIX: &str = "redisson_unlock_latch";

/// The channel on which a release of lock `name` is announced,
/// `redisson_lock__channel:{name}`. A fair lock's waiter `owner` listens on
/// [`waiter_channel`].
///
/// # Examples
///
/// ```
/// use redlease::layout::channel;
///
/// assert_eq!(channel("orders:1"), "redisson_lock__channel:{orders:1}");
/// assert_eq!(channel("lock:{sku}:7"), "redisson_lock__channel:lock:{sku}:7"); // its own tag
/// ```
pub fn channel(name: &str) -> String {
    prefixed(CHANNEL_PREFIX, name)
}

/// The channel on which a fair lock wakes one waiter, `owner`:
/// `<channel>:<owner>`.
///
/// # Examples
///
/// ```
/// use redlease::layout::waiter_channel;
///
/// assert_eq!(
///     waiter_channel("orders:1", "2b1c7f9e-0000-4000-8000-000000000000:3"),
///     "redisson_lock__channel:{orders:1}:2b1c7f9e-0000-4000-8000-000000000000:3"
/// );
/// ```
pub fn waiter_channel(name: &str, owner: &str) -> String {
    let mut channel = channel(name);
    channel.push(':');
    channel.push_str(owner);
    channel
}

/// The fencing counter of lock `name`, `redisson_lock_token:{name}`: a
/// string integer holding the last fencing token issued, in microseconds of
/// the server's clock when redlease issued it, under the name Redisson's
/// `RFencedLock` uses, so that both issue tokens from one sequence.
///
/// # Examples
///
/// ```
/// use redlease::layout::token_key;
///
/// assert_eq!(token_key("orders:1"), "redisson_lock_token:{orders:1}");
/// assert_eq!(token_key("lock:{sku}:7"), "redisson_lock_token:lock:{sku}:7");
/// ```
pub fn token_key(name: &str) -> String {
    prefixed(TOKEN_PREFIX, name)
}

/// The leader record of election `name` ([`crate::Election`]),
/// `redlease_leader:{name}`: a hash of `owner` (the leader's owner field in
/// the lock `name`), `value` (what it campaigned with) and `epoch` (its
/// fencing token), believed only while `owner` holds the lock.
///
/// # Examples
///
/// ```
/// use redlease::layout::leader_key;
///
/// assert_eq!(leader_key("svc:scheduler"), "redlease_leader:{svc:scheduler}");
/// ```
pub fn leader_key(name: &str) -> String {
    prefixed(LEADER_PREFIX, name)
}

/// The channel of election `name`, `redlease_leader__channel:{name}`: a new
/// leader publishes its owner field there, a resigning one an empty
/// message. Releases are announced on the lock's own [`channel`].
///
/// # Examples
///
/// ```
/// use redlease::layout::leader_channel;
///
/// assert_eq!(
///     leader_channel("svc:scheduler"),
///     "redlease_leader__channel:{svc:scheduler}"
/// );
/// ```
pub fn leader_channel(name: &str) -> String {
    prefixed(LEADER_CHANNEL_PREFIX, name)
}

/// The fair lock's waiting queue of lock `name`, `redisson_lock_queue:{name}`:
/// a list of owner fields in arrival order, as Redisson's `RFairLock`.
///
/// # Examples
///
/// ```
/// use redlease::layout::queue_key;
///
/// assert_eq!(queue_key("orders:1"), "redisson_lock_queue:{orders:1}");
/// ```
pub fn queue_key(name: &str) -> String {
    prefixed(QUEUE_PREFIX, name)
}

/// The fair lock's waiter deadlines of lock `name`,
/// `redisson_lock_timeout:{name}`: a zset of owner fields scored with the
/// time in milliseconds (server clock) after which the waiter counts as gone.
///
/// # Examples
///
/// ```
/// use redlease::layout::timeout_key;
///
/// assert_eq!(timeout_key("orders:1"), "redisson_lock_timeout:{orders:1}");
/// ```
pub fn timeout_key(name: &str) -> String {
    prefixed(TIMEOUT_PREFIX, name)
}

/// The channel of Redisson's read-write lock `name`,
/// `redisson_rwlock:{name}`.
///
/// # Examples
///
/// ```
/// use redlease::layout::rwlock_channel;
///
/// assert_eq!(rwlock_channel("catalog:prices"), "redisson_rwlock:{catalog:prices}");
/// ```
pub fn rwlock_channel(name: &str) -> String {
    prefixed(RWLOCK_CHANNEL_PREFIX, name)
}

/// The acquired permits of Redisson's `RPermitExpirableSemaphore` `name`:
/// the zset `{name}:timeout` (`name:timeout` when the name has a `{`) of
/// permit ids scored by their expiry in milliseconds.
///
/// # Examples
///
/// ```
/// use redlease::layout::permits_key;
///
/// assert_eq!(permits_key("reports:exports"), "{reports:exports}:timeout");
/// assert_eq!(permits_key("{tenant-7}:exports"), "{tenant-7}:exports:timeout");
/// ```
pub fn permits_key(name: &str) -> String {
    let mut key = read_timeout_base(name);
    key.push_str(":timeout");
    key
}

/// Reads a key name as an expirable semaphore's [`permits_key`]: the
/// semaphore names it can belong to (first the likelier), or `None`. As
/// with [`derived_from`], `{a}:timeout` belongs to `a` or to `{a}`; a key
/// without a `{` is never one.
///
/// # Examples
///
/// ```
/// use redlease::layout::{permits_key, permits_key_owner};
///
/// let key = permits_key("reports:exports");
/// assert_eq!(permits_key_owner(&key).unwrap(), ["reports:exports", "{reports:exports}"]);
/// assert_eq!(permits_key_owner("session:timeout"), None); // no `{`: no semaphore's
/// ```
pub fn permits_key_owner(key: &str) -> Option<Vec<String>> {
    names_behind(key.strip_suffix(":timeout")?)
}

/// The base of read-write lock `name`'s per-hold timeout keys, Redisson's
/// `suffixName` rule without a suffix: `{name}`, or `name` when it already
/// contains `{`.
///
/// # Examples
///
/// ```
/// use redlease::layout::read_timeout_base;
///
/// assert_eq!(read_timeout_base("catalog:prices"), "{catalog:prices}");
/// assert_eq!(read_timeout_base("{tenant-7}:prices"), "{tenant-7}:prices");
/// ```
pub fn read_timeout_base(name: &str) -> String {
    if name.contains('{') {
        name.to_owned()
    } else {
        let mut base = String::with_capacity(name.len() + 2);
        base.push('{');
        base.push_str(name);
        base.push('}');
        base
    }
}

/// The prefix of reader `field`'s timeout keys in read-write lock `name`,
/// `{name}:<field>:rwlock_timeout`: its i-th read hold has the key
/// `<prefix>:<i>`, a string `1` that expires with that hold.
///
/// # Examples
///
/// ```
/// use redlease::layout::read_timeout_prefix;
///
/// let prefix = read_timeout_prefix("catalog:prices", "2b1c7f9e:3");
/// assert_eq!(prefix, "{catalog:prices}:2b1c7f9e:3:rwlock_timeout");
/// let second_hold = format!("{prefix}:2");
/// assert!(redlease::layout::is_redisson_aux(&second_hold));
/// ```
pub fn read_timeout_prefix(name: &str, field: &str) -> String {
    let mut prefix = read_timeout_base(name);
    prefix.reserve(field.len() + 16);
    prefix.push(':');
    prefix.push_str(field);
    prefix.push_str(":rwlock_timeout");
    prefix
}

/// The channel of Redisson's semaphore `name`, `redisson_sc:{name}` (the
/// brace rule of [`channel`]); each message is the number of permits
/// available after a release or a change of the count.
///
/// # Examples
///
/// ```
/// use redlease::layout::semaphore_channel;
///
/// assert_eq!(semaphore_channel("jobs:export"), "redisson_sc:{jobs:export}");
/// assert_eq!(semaphore_channel("{tenant-7}:jobs"), "redisson_sc:{tenant-7}:jobs");
/// ```
pub fn semaphore_channel(name: &str) -> String {
    prefixed(SEMAPHORE_CHANNEL_PREFIX, name)
}

/// The key that records, for a while, what request `request` did to the
/// count in key `name` (a semaphore's or a latch's): the permits an
/// acquire took (or that it was withdrawn), the answer of a release or a
/// count-down, so that an attempt whose reply was lost is neither applied
/// twice nor lost: `redlease_request:{name}:<request>`, in `name`'s slot.
pub(crate) fn request_key(name: &str, request: &str) -> String {
    per_request(REQUEST_PREFIX, name, request)
}

/// The unlock latch of release request `request` of lock `name`,
/// `redisson_unlock_latch:{name}:<request>`, as Redisson 4's
/// `getUnlockLatchName(requestId)` names it: it holds a release's answer
/// for a while, so that the release sent again answers the same (#37).
pub(crate) fn unlock_latch(name: &str, request: &str) -> String {
    per_request(UNLOCK_LATCH_PREFIX, name, request)
}

/// `prefix:{name}:<request>`: a key of one request about `name`.
fn per_request(prefix: &'static str, name: &str, request: &str) -> String {
    let mut key = prefixed(prefix, name);
    key.push(':');
    key.push_str(request);
    key
}

/// The channel of Redisson's count-down latch `name`,
/// `redisson_countdownlatch__channel__{name}`: `0` when the latch opens,
/// `1` when it is armed again or deleted.
///
/// Unlike every other name here, the braces are **always** added, even
/// when the name has some (`RedissonCountDownLatch.getChannelName`), so the
/// channel of a name with its own hash tag (`a{b}c`) lies in another
/// cluster slot than the latch's key; the latch refuses such names on a
/// cluster (see [`CountDownLatch`](crate::CountDownLatch)).
///
/// # Examples
///
/// ```
/// use redlease::layout::latch_channel;
///
/// assert_eq!(latch_channel("shards"), "redisson_countdownlatch__channel__{shards}");
/// // Braces even around a name with its own tag, unlike every other name.
/// assert_eq!(latch_channel("a{b}c"), "redisson_countdownlatch__channel__{a{b}c}");
/// ```
pub fn latch_channel(name: &str) -> String {
    let mut channel = String::with_capacity(LATCH_CHANNEL_PREFIX.len() + name.len() + 2);
    channel.push_str(LATCH_CHANNEL_PREFIX);
    channel.push('{');
    channel.push_str(name);
    channel.push('}');
    channel
}

/// `prefix:{name}` as [`prefixed`] spells it, written straight into a
/// command's buffer when packed, with no `String` of its own: the hot
/// path's channel and fencing counter (#28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefixed<'a> {
    prefix: &'static str,
    name: &'a str,
}

impl<'a> Prefixed<'a> {
    /// [`channel`] of `name`.
    pub(crate) fn channel(name: &'a str) -> Prefixed<'a> {
        Prefixed {
            prefix: CHANNEL_PREFIX,
            name,
        }
    }

    /// [`token_key`] of `name`.
    pub(crate) fn token_key(name: &'a str) -> Prefixed<'a> {
        Prefixed {
            prefix: TOKEN_PREFIX,
            name,
        }
    }

    /// The parts, in order, that make the name.
    fn parts(self) -> [&'a str; 5] {
        let braced = !self.name.contains('{');
        let (open, close) = if braced { ("{", "}") } else { ("", "") };
        [self.prefix, ":", open, self.name, close]
    }
}

impl fmt::Display for Prefixed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.parts().iter().try_for_each(|part| f.write_str(part))
    }
}

impl redis::ToRedisArgs for Prefixed<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        let mut arg = out.writer_for_next_arg();
        for part in self.parts() {
            // Writing to a command's buffer cannot fail.
            let _ = io::Write::write_all(&mut arg, part.as_bytes());
        }
    }
}

fn prefixed(prefix: &'static str, name: &str) -> String {
    // Pushed rather than `format!`ted: this runs on every acquire and
    // release, and the formatting machinery costs several times the copy
    // (callgrind, docs/BENCHMARKS.md). The braces follow `Prefixed`'s rule.
    let parts = Prefixed { prefix, name }.parts();
    let mut key = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|part| key.push_str(part));
    key
}

/// Which auxiliary key of a lock a key is; see [`derived_from`].
///
/// # Examples
///
/// ```
/// use redlease::layout::{Derived, derived_from, timeout_key};
///
/// let (derived, _) = derived_from(&timeout_key("orders:1")).unwrap();
/// assert_eq!(derived, Derived::Timeout);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Derived {
    /// The fencing counter, [`token_key`].
    Token,
    /// The fair lock's queue, [`queue_key`].
    Queue,
    /// The fair lock's waiter deadlines, [`timeout_key`].
    Timeout,
}

/// Reads a key name as one of a lock's auxiliary keys: which one, and the
/// lock names it can belong to (first the likelier one).
///
/// Two names can derive the same key, since braces are added only when the
/// name has none: `redisson_lock_queue:{a}` belongs to lock `a` or to lock
/// `{a}`, so both are returned and the caller checks which exists.
///
/// # Examples
///
/// ```
/// use redlease::layout::{Derived, derived_from, queue_key};
///
/// let (derived, names) = derived_from(&queue_key("orders:1")).unwrap();
/// assert_eq!(derived, Derived::Queue);
/// // Braces are added only to a name without: `orders:1` or `{orders:1}`.
/// assert_eq!(names, ["orders:1", "{orders:1}"]);
/// assert_eq!(derived_from("orders:1"), None); // a lock itself
/// ```
pub fn derived_from(key: &str) -> Option<(Derived, Vec<String>)> {
    let table = [
        (TOKEN_PREFIX, Derived::Token),
        (QUEUE_PREFIX, Derived::Queue),
        (TIMEOUT_PREFIX, Derived::Timeout),
    ];
    let (rest, derived) = table.iter().find_map(|(prefix, d)| {
        let rest = key.strip_prefix(prefix)?.strip_prefix(':')?;
        Some((rest, *d))
    })?;
    Some((derived, names_behind(rest)?))
}

/// The lock names a braced part of a derived key can stand for, the
/// likelier first: `{a}` belongs to `a` or to `{a}` (braces are added only
/// to a name without), a part with braces of its own only to itself;
/// `None` without braces (no name of ours derives it).
pub(crate) fn names_behind(braced: &str) -> Option<Vec<String>> {
    if !braced.contains('{') {
        return None;
    }
    let mut names = Vec::new();
    let inner = braced.strip_prefix('{').and_then(|r| r.strip_suffix('}'));
    if let Some(inner) = inner.filter(|i| !i.is_empty() && !i.contains('{')) {
        names.push(inner.to_owned());
    }
    names.push(braced.to_owned());
    Some(names)
}

/// Whether `key` is one of Redisson's short-lived keys beside a lock, which
/// are no lock of their own: an unlock latch, or a read-write lock's
/// per-hold timeout (`{name}:<owner>:rwlock_timeout:<n>`); or redlease's
/// own record of a request that changed a count (#36, #37).
///
/// # Examples
///
/// ```
/// use redlease::layout::is_redisson_aux;
///
/// assert!(is_redisson_aux("redisson_unlock_latch:{orders:1}:5f1e"));
/// assert!(is_redisson_aux("{catalog:prices}:2b1c7f9e:3:rwlock_timeout:1"));
/// assert!(is_redisson_aux("redlease_request:{jobs}:2b1c7f9e:4"));
/// assert!(!is_redisson_aux("orders:1"));
/// ```
pub fn is_redisson_aux(key: &str) -> bool {
    [UNLOCK_LATCH_PREFIX, REQUEST_PREFIX].iter().any(|prefix| {
        key.strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(':'))
    }) || key
        .rsplit_once(":rwlock_timeout:")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_adds_braces_unless_present() {
        assert_eq!(channel("orders:1"), "redisson_lock__channel:{orders:1}");
        assert_eq!(
            channel("lock:{sku}:7"),
            "redisson_lock__channel:lock:{sku}:7"
        );
    }

    #[test]
    fn fair_keys_follow_redisson() {
        assert_eq!(queue_key("a"), "redisson_lock_queue:{a}");
        assert_eq!(timeout_key("{a}:b"), "redisson_lock_timeout:{a}:b");
        assert_eq!(waiter_channel("a", "u:1"), "redisson_lock__channel:{a}:u:1");
    }

    #[test]
    fn rwlock_channel_follows_the_brace_rule() {
        assert_eq!(rwlock_channel("a"), "redisson_rwlock:{a}");
        assert_eq!(rwlock_channel("{a}:b"), "redisson_rwlock:{a}:b");
    }

    #[test]
    fn read_timeout_keys_follow_redissons_suffix_rule() {
        assert_eq!(read_timeout_base("a"), "{a}");
        assert_eq!(read_timeout_base("x{a}"), "x{a}");
        assert_eq!(read_timeout_prefix("a", "u:1"), "{a}:u:1:rwlock_timeout");
        assert_eq!(
            read_timeout_prefix("{a}:b", "u:1"),
            "{a}:b:u:1:rwlock_timeout"
        );
        assert!(is_redisson_aux(&(read_timeout_prefix("a", "u:1") + ":1")));
    }

    #[test]
    fn semaphore_channel_follows_the_brace_rule() {
        assert_eq!(semaphore_channel("jobs"), "redisson_sc:{jobs}");
        assert_eq!(semaphore_channel("{a}:jobs"), "redisson_sc:{a}:jobs");
    }

    #[test]
    fn latch_channel_always_adds_braces() {
        assert_eq!(
            latch_channel("shards"),
            "redisson_countdownlatch__channel__{shards}"
        );
        assert_eq!(
            latch_channel("a{b}c"),
            "redisson_countdownlatch__channel__{a{b}c}"
        );
    }

    #[test]
    fn expirable_semaphore_permits_follow_redissons_suffix_rule() {
        assert_eq!(permits_key("jobs"), "{jobs}:timeout");
        assert_eq!(permits_key("{t}:jobs"), "{t}:jobs:timeout");
        for name in ["jobs", "{t}:jobs"] {
            assert_eq!(permits_key_owner(&permits_key(name)).unwrap()[0], name);
        }
        assert_eq!(
            permits_key_owner("{jobs}:timeout").unwrap(),
            ["jobs", "{jobs}"]
        );
        assert_eq!(permits_key_owner("session:timeout"), None);
        assert_eq!(permits_key_owner("{jobs}"), None);
    }

    #[test]
    fn derived_names_round_trip() {
        for lock in ["orders:1", "lock:{sku}:7", "a"] {
            for (key, kind) in [
                (token_key(lock), Derived::Token),
                (queue_key(lock), Derived::Queue),
                (timeout_key(lock), Derived::Timeout),
            ] {
                let (found, names) = derived_from(&key).expect(&key);
                assert_eq!(found, kind);
                assert_eq!(names[0], lock, "{key}");
            }
        }
        // `{a}` derives the same names as `a`; both are offered.
        assert_eq!(
            derived_from(&queue_key("{a}")).unwrap().1,
            vec!["a".to_owned(), "{a}".to_owned()]
        );
        assert_eq!(derived_from("orders:1"), None);
        assert_eq!(derived_from("redisson_lock_token:x"), None);
        assert_eq!(derived_from("redisson_lock_tokenx:{a}"), None);
    }

    #[test]
    fn redisson_aux_keys_are_recognised() {
        assert!(is_redisson_aux("{lock:d}:u:1:rwlock_timeout:2"));
        assert!(is_redisson_aux("redisson_unlock_latch:{lock:d}:ab12"));
        assert!(!is_redisson_aux("{lock:d}:u:1:rwlock_timeout:"));
        assert!(!is_redisson_aux("lock:d"));
    }
}
