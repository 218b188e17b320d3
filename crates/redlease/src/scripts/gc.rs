//! The operators' garbage collection ([`crate::admin::gc`]): one script
//! per kind of leftover, each of which checks again, in the same step as
//! the removal, that what it removes is dead by the rule the clients
//! themselves follow, so a gc that runs beside live Java and Rust clients
//! removes nothing they still use. What was read before (by
//! [`crate::admin::leftovers`]) only says where to look.
//!
//! Each returns how many entries it removed: `0` when the leftover came
//! back to life or was cleaned by a client in between.
//!
//! Fencing counters, unlock latches and request records have no script
//! here: a counter must outlive its lock (a Redisson `RFencedLock` would
//! start again at 1, below tokens a database already saw), and the other
//! two expire by themselves within seconds.

use std::sync::LazyLock;

use super::expirable::PERMITS;
use super::fair::PRUNE;
use super::lock::HELD;
use super::{Lua, NOW_MS, ScriptCall, UNLOCK_MESSAGE};
use crate::connection::Publish;
use crate::layout::{self, Prefixed};

pub(crate) static FAIR: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("gc_fair", &[NOW_MS, FAIR_BEFORE, PRUNE, FAIR_SRC]));
// The queue's length before [`PRUNE`] runs, so the script can say how many
// it removed.
const FAIR_BEFORE: &str = r"
local before = redis.call('llen', KEYS[2])
";
const FAIR_SRC: &str = r"
local removed = before - redis.call('llen', KEYS[2])
if removed > 0 and redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[3], ARGV[1] .. ':' .. head, ARGV[2])
    end
end
return removed
";

/// A fair lock's dead waiters removed from the head of its queue, by the
/// rule Redisson's and redlease's fair acquire apply on every attempt
/// (deadline passed, or none): entries behind a live waiter stay, since
/// Redisson's deadlines behind the head are estimates.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its queue; KEYS\[3\]: its
///   deadlines (the fair acquire's KEYS).
/// * ARGV\[1\]: the lock's channel; ARGV\[2\]: the unlock message;
///   ARGV\[3\]: `publish` or `spublish`.
/// * Returns the number of entries removed. When some were and the lock is
///   free, the new head is told on its own channel, as a release tells it,
///   so that it does not wait for its next look.
pub(crate) fn fair(name: &str, publish: Publish) -> ScriptCall {
    let keys = (name, layout::queue_key(name), layout::timeout_key(name));
    ScriptCall::new(&FAIR, keys)
        .arg(Prefixed::channel(name))
        .arg(UNLOCK_MESSAGE)
        .arg(publish.command())
}

pub(crate) static PERMITS_RECLAIM: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("gc_permits", &[NOW_MS, PERMITS, PERMITS_SRC]));
const PERMITS_SRC: &str = r"
if permits(KEYS[1]) == false then
    return 0
end
return reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], nil)
";

/// An expirable semaphore's expired permits given back to its pool, as
/// every acquire of Redisson's and redlease's does first.
///
/// * KEYS\[1\]: the semaphore's count; KEYS\[2\]: its permits zset;
///   KEYS\[3\]: its channel.
/// * ARGV\[1\]: `publish` or `spublish` (the new count is announced when
///   positive, as the acquire's reclaim announces it).
/// * Returns the number of permits given back; `0` without touching
///   anything when the semaphore's count is gone (a deleted semaphore's
///   permits are not made into a new one). A count that is no integer is
///   a `WRONGTYPE` error.
pub(crate) fn permits(name: &str, publish: Publish) -> ScriptCall {
    let keys = (
        name,
        layout::permits_key(name),
        layout::semaphore_channel(name),
    );
    ScriptCall::new(&PERMITS_RECLAIM, keys).arg(publish.command())
}

pub(crate) static READ_TIMEOUT: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("gc_read_timeout", &[READ_TIMEOUT_SRC]));
const READ_TIMEOUT_SRC: &str = r"
for i = 2, #KEYS do
    if redis.pcall('hexists', KEYS[i], ARGV[1]) == 1 then
        return 0
    end
end
return redis.call('del', KEYS[1])
";

/// A read-write lock's per-hold timeout key removed when its reader holds
/// nothing any more (its field is gone from the lock: released by a
/// forced unlock, or the lock expired and was taken again).
///
/// * KEYS\[1\]: the timeout key, `{name}:<field>:rwlock_timeout:<n>`;
///   KEYS\[2..\]: the lock names it can belong to.
/// * ARGV\[1\]: the reader's field.
/// * Returns `1` when the key was deleted, `0` when a lock of those names
///   has the field (a live hold: left alone) or the key was gone.
pub(crate) fn read_timeout(key: &str, names: &[String], field: &str) -> ScriptCall {
    ScriptCall::new(&READ_TIMEOUT, (key, names)).arg(field)
}

pub(crate) static LEADER: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("gc_leader", &[HELD, LEADER_SRC]));
const LEADER_SRC: &str = r"
local owner = redis.pcall('hget', KEYS[1], 'owner')
if type(owner) ~= 'string' then
    return 0
end
for i = 2, #KEYS do
    if held(KEYS[i], owner) ~= 0 then
        return 0
    end
end
return redis.call('del', KEYS[1])
";

/// An election's record removed when its leader no longer holds the lock
/// (it died without resigning; the next leader would overwrite it, but an
/// election nobody campaigns in again keeps it for ever).
///
/// * KEYS\[1\]: the record, `redlease_leader:{name}`; KEYS\[2..\]: the
///   election names it can belong to (their lock keys).
/// * Returns `1` when deleted; `0` when its `owner` holds one of those
///   locks (or the answer was an error, which counts as held), or the
///   record is gone or no record of ours.
pub(crate) fn leader(key: &str, names: &[String]) -> ScriptCall {
    ScriptCall::new(&LEADER, (key, names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn fair_gc_packs_the_fair_acquires_keys() {
        let (keys, args) = packed(&fair("jobs", Publish::Plain));
        assert_eq!(
            keys,
            [
                "jobs",
                "redisson_lock_queue:{jobs}",
                "redisson_lock_timeout:{jobs}"
            ]
        );
        assert_eq!(args, ["redisson_lock__channel:{jobs}", "0", "publish"]);
    }

    #[test]
    fn read_timeout_gc_names_every_candidate() {
        let names = ["a".to_owned(), "{a}".to_owned()];
        let (keys, args) = packed(&read_timeout("{a}:u:1:rwlock_timeout:1", &names, "u:1"));
        assert_eq!(keys, ["{a}:u:1:rwlock_timeout:1", "a", "{a}"]);
        assert_eq!(args, ["u:1"]);
    }
}
