//! Every Lua script the crate runs, with its KEYS/ARGV/return contract.
//!
//! The data layout is Redisson's `RLock`, so that Java services using
//! Redisson and Rust services using redlease exclude each other on one key:
//!
//! * the lock key is a hash with one field, `<client-uuid>:<owner-id>`, whose
//!   value is the hold count;
//! * the lease is the key's expiry, set with `PEXPIRE` in milliseconds;
//! * a full release deletes the key and publishes `0` on
//!   `redisson_lock__channel:{<name>}` (see [`crate::name::channel`]).
//!
//! Scripts are [`redis::Script`]s: each call is an `EVALSHA`, and redis-rs
//! loads the script and retries once when the server answers `NOSCRIPT`
//! (after `SCRIPT FLUSH` or a restart). Scripts are never pipelined, because
//! that fallback does not apply inside pipelines.

use std::sync::LazyLock;

use redis::Script;

/// Acquire or re-enter, and issue a fencing token.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: the fencing counter,
///   `redisson_lock_token:{name}`.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the owner field;
///   ARGV\[3\]: the counter's time to live in milliseconds.
/// * Returns `{1, token}` when acquired (the field's count went up by one,
///   the key's expiry is now the lease, and `token` is the new fencing
///   token, see [`FENCE`]), otherwise `{0, pttl}` with the key's `PTTL` in
///   milliseconds (`-1` if someone removed the expiry).
/// * Raises `WRONGTYPE` when the lock key holds something other than a hash
///   or the counter something other than a string, and an error when the
///   counter is not an integer; nothing is written then.
///
/// Same semantics as Redisson's `RedissonLock.tryLockInnerAsync`, so an owner
/// that re-enters (same field) is counted the same way on both sides; as in
/// Redisson's `RFencedLock`, a re-entry also gets a new token.
pub(crate) static ACQUIRE: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[FENCE, ACQUIRE_SRC]));
const ACQUIRE_SRC: &str = r"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = fence(KEYS[2], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
";

/// Shared by the acquire scripts: `fence(counter, ttl_ms)` issues the next
/// fencing token for a lock and returns it.
///
/// The token is the larger of the server's clock in microseconds (`TIME`)
/// and the counter's last value plus one; the counter is then set to it
/// with the given time to live. So tokens keep increasing when the counter
/// is gone, whether it expired (an idle lock name leaves no key behind for
/// ever) or Redis restarted empty, provided the server's clock did not step
/// back and fewer than one token per microsecond was issued for the name
/// (a lock hand-off takes several round trips, so this holds by far). An
/// `INCR` of the counter by Redisson's `RFencedLock` keeps its TTL and
/// stays in the same sequence.
///
/// Tokens stay below 2^53 (the year 2255 in microseconds), so Lua's double
/// numbers hold them exactly (a counter at 2^53 - 1 or above is an error
/// rather than a token that fails to increase); `%.0f` writes them without
/// an exponent.
/// Call it before writing anything: its errors (a counter of the wrong type
/// or not an integer) must leave the lock untouched.
const FENCE: &str = r"
local function fence(counter, ttl)
    local clock = redis.call('time')
    local token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
    local last = redis.call('get', counter)
    if last ~= false then
        last = tonumber(last)
        if last == nil or last ~= math.floor(last) then
            error({err = 'ERR fencing token counter ' .. counter .. ' does not hold an integer'})
        end
        if last >= 9007199254740991 then
            error({err = 'ERR fencing token counter ' .. counter .. ' is at 2^53 - 1 or above'})
        end
        if last >= token then
            token = last + 1
        end
    end
    redis.call('set', counter, string.format('%.0f', token), 'px', ttl)
    return token
end
";

/// Re-entry of a hold that an owner scope has (see `scope.rs`).
///
/// * KEYS\[1\]: the lock key.
/// * ARGV\[1\]: the hold's lease in milliseconds; ARGV\[2\]: its owner field.
/// * Returns `1` when the field was present: its count went up by one and
///   the key's expiry is the lease again. Returns `0` when it was not (the
///   hold expired or was taken over): nothing is written, so a hold that is
///   gone is never revived under the old guards' shared field.
/// * Raises `WRONGTYPE` when the key holds something other than a hash.
///
/// No new fencing token: the owner is the same, and its guards share the
/// first acquisition's token.
pub(crate) static REENTER: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[REENTER_SRC]));
const REENTER_SRC: &str = r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
";

/// Owner-checked release.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: the unlock channel.
/// * ARGV\[1\]: the unlock message (`0`); ARGV\[2\]: the lease in milliseconds
///   to restore when a re-entered hold is released but others remain;
///   ARGV\[3\]: the owner field.
/// * Returns nil when the field is absent (not ours: expired, released or
///   taken over), `0` when the count went down but holds remain, `1` when the
///   key was deleted and the unlock message published.
/// * Raises `WRONGTYPE` when the key holds something other than a hash.
///
/// Redisson's version also keeps an "unlock latch" key so that a retried
/// unlock returns its first answer; redlease never re-sends an unlock (the
/// owner field is unique per acquisition, so a duplicate answers nil and is
/// harmless), so the latch is left out.
pub(crate) static RELEASE: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[RELEASE_HOLD, RELEASE_SRC]));
const RELEASE_SRC: &str = r"
redis.call('publish', KEYS[2], ARGV[1])
return 1
";

/// Shared by [`RELEASE`] and [`FAIR_RELEASE`]: with KEYS\[1\] the lock key,
/// ARGV\[2\] the lease and ARGV\[3\] the owner field, returns nil when the
/// field is absent, decrements it and returns `0` when holds remain, or
/// deletes the key and falls through to the caller's announcement.
const RELEASE_HOLD: &str = r"
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('del', KEYS[1])
";

/// Owner-checked renewal of a batch of locks, for the watchdog.
///
/// * KEYS\[1..n\]: lock keys.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[1 + i\]: the owner field for
///   KEYS\[i\].
/// * Returns an array of n integers: `1` where the field was present and the
///   key's expiry was reset to the lease, `0` where it was not (the lock is
///   no longer ours, or the key holds a non-hash value).
///
/// Check and extend happen in one script, so there is no window in which an
/// expired lock taken by someone else gets extended. `pcall` keeps one key of
/// the wrong type from failing the renewal of every other lock in the batch.
pub(crate) static RENEW: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[RENEW_SRC]));
const RENEW_SRC: &str = r"
local renewed = {}
for i = 1, #KEYS do
    local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
    if held == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
";

/// Shared by the fair-lock scripts: the server's clock in milliseconds, and
/// the removal of dead waiters from the head of the queue (KEYS\[2\] the
/// queue list, KEYS\[3\] the deadline zset). A waiter whose deadline has
/// passed stopped refreshing it: it died or lost its connection.
const FAIR_PRELUDE: &str = r"
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then break end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline ~= false and tonumber(deadline) > now then break end
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], head)
end
";

/// Fair acquire: take the lock in queue order, or join or refresh the queue.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: `redisson_lock_queue:{name}`;
///   KEYS\[3\]: `redisson_lock_timeout:{name}`; KEYS\[4\]: the fencing
///   counter, `redisson_lock_token:{name}`.
/// * ARGV\[1\]: the lease in ms; ARGV\[2\]: the owner field; ARGV\[3\]: the
///   queue lease in ms (a waiter must call again within it to stay queued);
///   ARGV\[4\]: the release channel, to which `:<waiter>` is appended;
///   ARGV\[5\]: `1` to join the queue when not acquired, `0` for a single
///   try that leaves no trace; ARGV\[6\]: the unlock message; ARGV\[7\]:
///   the fencing counter's time to live in milliseconds.
/// * Dead waiters are first dropped from the head of the queue. The lock is
///   taken when it is free and the queue is empty or starts with this owner
///   (which then leaves the queue), or re-entered when this owner holds it:
///   returns `{1, token}` as [`ACQUIRE`]. Otherwise, with ARGV\[5\] = `1`,
///   the owner is appended to the queue (or, if queued, its deadline
///   refreshed) with deadline now + ARGV\[3\] in the zset, and, if the lock
///   is free, the head waiter is woken on its own channel. Returns
///   `{0, pttl}` with the lock's `PTTL` (`-2` when free but it is someone
///   else's turn).
///
/// Same keys, list and zset as Redisson's `RFairLock`; the zset scores here
/// are liveness deadlines refreshed by live waiters, not Redisson's
/// position-based estimates (see DESIGN.md).
pub(crate) static FAIR_ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[FAIR_PRELUDE, FENCE, FAIR_ACQUIRE_SRC]));
const FAIR_ACQUIRE_SRC: &str = r"
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (head == false or head == ARGV[2]) then
    local token = fence(KEYS[4], ARGV[7])
    if head ~= false then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = fence(KEYS[4], ARGV[7])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
if ARGV[5] == '1' then
    if redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[2]) == 1 then
        redis.call('rpush', KEYS[2], ARGV[2])
    end
    head = redis.call('lindex', KEYS[2], 0)
    if redis.call('exists', KEYS[1]) == 0 and head ~= false and head ~= ARGV[2] then
        redis.call('publish', ARGV[4] .. ':' .. head, ARGV[6])
    end
end
return {0, redis.call('pttl', KEYS[1])}
";

/// Fair release: owner-checked, and the next waiter is woken directly.
///
/// * KEYS and ARGV\[4\] as [`FAIR_ACQUIRE`]; ARGV\[1\]: the unlock message;
///   ARGV\[2\]: the lease in ms to restore when holds remain; ARGV\[3\]: the
///   owner field.
/// * Returns as [`RELEASE`]: nil when not ours, `0` when holds remain, `1`
///   when the key was deleted; then the unlock message goes to the channel
///   of the queue's head (after dropping dead waiters), as in Redisson.
pub(crate) static FAIR_RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[FAIR_PRELUDE, RELEASE_HOLD, FAIR_RELEASE_SRC]));
const FAIR_RELEASE_SRC: &str = r"
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call('publish', ARGV[4] .. ':' .. head, ARGV[1])
end
return 1
";

/// Fair abandon: a waiter that gives up, or an acquire whose outcome is
/// unknown, leaves no trace.
///
/// * KEYS as [`FAIR_ACQUIRE`]; ARGV\[1\]: the owner field; ARGV\[2\]: the
///   release channel prefix; ARGV\[3\]: the unlock message.
/// * Removes the owner from the queue and the zset, releases one hold of the
///   lock if the owner has it, and if the lock is then free wakes the head
///   waiter. Returns `1`.
pub(crate) static FAIR_ABANDON: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&[FAIR_PRELUDE, FAIR_ABANDON_SRC]));
const FAIR_ABANDON_SRC: &str = r"
redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    if redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then
        redis.call('del', KEYS[1])
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call('publish', ARGV[2] .. ':' .. head, ARGV[3])
    end
end
return 1
";

/// Forced unlock for operators (`redlease unlock --force`), or a report of
/// what it would remove: no owner check.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its unlock channel; KEYS\[3\]:
///   `redisson_lock_queue:{name}`; KEYS\[4\]: `redisson_lock_timeout:{name}`;
///   KEYS\[5\]: Redisson's read-write lock channel, `redisson_rwlock:{name}`.
/// * ARGV\[1\]: the unlock message (`0`); ARGV\[2\]: `peek` to only report,
///   `hash` to remove the key only when it is a hash (a lock), `any` to
///   remove it whatever its type; ARGV\[3\]: `expect` to change nothing
///   unless the key still has the type ARGV\[4\] and exactly the hash
///   fields ARGV\[5..\] (the owners an operator was shown: a lock taken
///   over since must not be removed), or absent.
/// * Returns `{type, fields, pttl, removed, queue, changed}` describing the
///   key before the call: `type` is the key's `TYPE` (`none` when absent);
///   `fields` is the hash as `{field, value, ...}` (empty unless a hash);
///   `pttl` its `PTTL`; `removed` is `1` when the key was deleted;
///   `queue` lists the fair-lock waiters as `{owner, deadline, stale, ...}`
///   (list entries first, in order, then deadline-only members; `deadline`
///   is the zset score in ms, or `''` when missing; `stale` is `1` when the
///   waiter is gone by the fair prelude's rule: no deadline, or one not
///   after the server's clock, else `0`); `changed` is `1` when ARGV\[3\]
///   was `expect` and the key no longer matched (nothing was changed).
/// * Unless peeking or refused (a non-hash key with `hash`): a deleted key
///   is announced with the unlock message on KEYS\[2\] (plain waiters), and
///   with `1` (Redisson's "wake every waiter") on KEYS\[5\] when the hash has
///   a `mode` field (a read-write lock); stale queue entries are removed
///   (live waiters keep their place), and if the lock is then free the head
///   waiter is woken on its own channel, as a fair release does. The
///   fencing counter is left alone, so tokens keep increasing.
pub(crate) static FORCE_UNLOCK: LazyLock<Lua> = LazyLock::new(|| Lua::new(&[FORCE_UNLOCK_SRC]));
const FORCE_UNLOCK_SRC: &str = r"
local kind = redis.call('type', KEYS[1])['ok']
local fields = {}
if kind == 'hash' then fields = redis.call('hgetall', KEYS[1]) end
local pttl = redis.call('pttl', KEYS[1])
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local queue, stale, seen = {}, {}, {}
local function note(owner, deadline)
    seen[owner] = true
    queue[#queue + 1] = owner
    queue[#queue + 1] = deadline or ''
    if deadline == false or deadline == nil or tonumber(deadline) <= now then
        stale[#stale + 1] = owner
        queue[#queue + 1] = 1
    else
        queue[#queue + 1] = 0
    end
end
local fair = redis.call('type', KEYS[3])['ok'] == 'list'
local deadlines = redis.call('type', KEYS[4])['ok'] == 'zset'
if fair then
    for _, owner in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
        local deadline = false
        if deadlines then deadline = redis.call('zscore', KEYS[4], owner) end
        note(owner, deadline)
    end
end
if deadlines then
    local members = redis.call('zrange', KEYS[4], 0, -1, 'withscores')
    for i = 1, #members, 2 do
        if not seen[members[i]] then note(members[i], members[i + 1]) end
    end
end
local changed = 0
if ARGV[3] == 'expect' then
    local expected = {}
    for i = 5, #ARGV do expected[ARGV[i]] = true end
    if kind ~= ARGV[4] or #fields / 2 ~= #ARGV - 4 then changed = 1 end
    for i = 1, #fields, 2 do
        if not expected[fields[i]] then changed = 1 end
    end
end
local removed = 0
local refused = kind ~= 'hash' and kind ~= 'none' and ARGV[2] ~= 'any'
if ARGV[2] ~= 'peek' and not refused and changed == 0 then
    if kind ~= 'none' then
        redis.call('del', KEYS[1])
        redis.call('publish', KEYS[2], ARGV[1])
        for i = 1, #fields, 2 do
            if fields[i] == 'mode' then redis.call('publish', KEYS[5], 1) end
        end
        removed = 1
    end
    for _, owner in ipairs(stale) do
        if fair then redis.call('lrem', KEYS[3], 0, owner) end
        if deadlines then redis.call('zrem', KEYS[4], owner) end
    end
    local head = false
    if fair then head = redis.call('lindex', KEYS[3], 0) end
    if head then redis.call('publish', KEYS[2] .. ':' .. head, ARGV[1]) end
end
return {kind, fields, pttl, removed, queue, changed}
";

/// A script and the source it was built from.
pub(crate) struct Lua {
    source: String,
    script: Script,
}

impl Lua {
    /// Joins `parts` into one script.
    fn new(parts: &[&str]) -> Lua {
        let source = parts.concat();
        let script = Script::new(&source);
        Lua { source, script }
    }
}

impl std::ops::Deref for Lua {
    type Target = Script;

    fn deref(&self) -> &Script {
        &self.script
    }
}

/// Every script the crate runs, as `(name, sha1, source)`, for operators who
/// pre-load or allow-list scripts and for benchmarks that replay them.
pub fn lua_scripts() -> Vec<(&'static str, &'static str, &'static str)> {
    let scripts: [(&'static str, &'static LazyLock<Lua>); 8] = [
        ("acquire", &ACQUIRE),
        ("reenter", &REENTER),
        ("release", &RELEASE),
        ("renew", &RENEW),
        ("fair_acquire", &FAIR_ACQUIRE),
        ("fair_release", &FAIR_RELEASE),
        ("fair_abandon", &FAIR_ABANDON),
        ("force_unlock", &FORCE_UNLOCK),
    ];
    scripts
        .into_iter()
        .map(|(name, lua)| {
            let lua = LazyLock::force(lua);
            (name, lua.script.get_hash(), lua.source.as_str())
        })
        .collect()
}

/// The message Redisson publishes on a lock's channel when it is released
/// (`LockPubSub.UNLOCK_MESSAGE`).
pub(crate) const UNLOCK_MESSAGE: i64 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_scripts_match_what_runs() {
        let listed = lua_scripts();
        assert_eq!(listed.len(), 8);
        for (name, sha, source) in &listed {
            assert_eq!(*sha, Script::new(source).get_hash(), "{name}");
        }
        let mut hashes: Vec<_> = listed.iter().map(|s| s.1).collect();
        hashes.sort();
        hashes.dedup();
        assert_eq!(hashes.len(), 8);
    }
}
