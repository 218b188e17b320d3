//! The read-write lock's scripts, on Redisson's `RReadWriteLock` layout:
//! one hash per name with a `mode` field (`read` or `write`), readers as
//! `<client-id>:<n>` and writers as `<client-id>:<n>:write` holding their
//! hold counts, and for each read hold a timeout key
//! `{name}:<reader>:rwlock_timeout:<i>` (i = 1..count) with the hold's own
//! expiry. The hash lives as long as its longest read hold; a release
//! announces `0` (read side) or `1` (write side) on
//! `redisson_rwlock:{name}`.
//!
//! Where they differ from Redisson's, on purpose:
//!
//! * an acquire on a key that is a hash without `mode` (a plain lock of the
//!   same name) is busy, where Redisson's would write `mode` into the other
//!   lock's hash;
//! * every acquire issues a fencing token, as [`super::lock::acquire`];
//! * a write release that leaves the owner's read holds (a downgrade)
//!   announces `1`, so that readers waiting behind the writer join at once
//!   (Redisson announces nothing there: its readers wait out their sleep);
//! * no unlock latch, as in [`super::lock::release`].

use std::sync::LazyLock;

use super::lock::FENCE;
use super::{Fencing, Latch, Lua, ScriptCall};
use crate::connection::Publish;
use crate::layout::{self, Prefixed};

/// The message of a read release (`LockPubSub.UNLOCK_MESSAGE`): one waiter
/// may go.
pub(crate) const READ_UNLOCK_MESSAGE: i64 = 0;
/// The message of a write release (`LockPubSub.READ_UNLOCK_MESSAGE`): every
/// waiting reader may go.
pub(crate) const WRITE_UNLOCK_MESSAGE: i64 = 1;

pub(super) static READ_ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("read_acquire", &[FENCE, READ_ACQUIRE_SRC]));
const READ_ACQUIRE_SRC: &str = r"
local mode = false
if redis.call('exists', KEYS[1]) == 1 then
    mode = redis.call('hget', KEYS[1], 'mode')
    if mode ~= 'read' and not (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
        return {0, redis.call('pttl', KEYS[1])}
    end
end
local token = fence(KEYS[3], ARGV[4])
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
return {1, token}
";

/// Acquire a read hold of read-write lock `name` for reader `field`, and
/// issue a fencing token.
///
/// * KEYS\[1\]: the lock hash; KEYS\[2\]: the reader's timeout key prefix,
///   [`layout::read_timeout_prefix`]; KEYS\[3\]: the fencing counter,
///   [`layout::token_key`].
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the reader field;
///   ARGV\[3\]: the same owner's writer field (`<field>:write`), whose write
///   hold lets it read (a downgrade); ARGV\[4\]: the fencing counter's time
///   to live in milliseconds, `0` for none, `-1` for no token (fencing off).
/// * Returns `{1, token}` when acquired: no lock (the hash is created with
///   `mode = read`), readers only, or this owner's write hold; the reader's
///   count went up to `i`, timeout key `<prefix>:<i>` lives for the lease,
///   and the hash for the longest of its time to live and the lease.
///   Otherwise `{0, pttl}`: a writer, or a plain lock of the same name.
/// * Raises `WRONGTYPE` when the key holds no hash; nothing is written.
pub(crate) fn read_acquire(name: &str, lease_ms: u64, field: &str, fencing: Fencing) -> ScriptCall {
    ScriptCall::new(
        &READ_ACQUIRE,
        (
            name,
            layout::read_timeout_prefix(name, field),
            Prefixed::token_key(name),
        ),
    )
    .arg(lease_ms)
    .arg(field)
    .arg(writer_of(field))
    .arg(fencing.arg())
}

/// The writer field of the owner whose reader field is `field`.
fn writer_of(field: &str) -> String {
    let mut writer = String::with_capacity(field.len() + 6);
    writer.push_str(field);
    writer.push_str(":write");
    writer
}

pub(super) static WRITE_ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("write_acquire", &[FENCE, WRITE_ACQUIRE_SRC]));
const WRITE_ACQUIRE_SRC: &str = r"
if redis.call('exists', KEYS[1]) == 0 then
    local token = fence(KEYS[2], ARGV[3])
    redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
if redis.call('hget', KEYS[1], 'mode') == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = fence(KEYS[2], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
";

/// Acquire (or re-enter) the write hold of read-write lock `name` for
/// writer `field` (`<client-id>:<n>:write`), and issue a fencing token.
///
/// * KEYS\[1\]: the lock hash; KEYS\[2\]: the fencing counter.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the writer field;
///   ARGV\[3\]: the fencing counter's time to live, `0` for none, `-1`
///   for no token (fencing off).
/// * Returns `{1, token}` when the key was free (the hash is created with
///   `mode = write` and the writer at 1, expiring after the lease) or this
///   writer holds it (count up by one, the lease added to the time to live,
///   as Redisson does), otherwise `{0, pttl}`: readers, another writer, or
///   a plain lock of the same name. A reader cannot take the write side:
///   upgrading is refused, as in Redisson.
/// * Raises `WRONGTYPE` when the key holds no hash; nothing is written.
pub(crate) fn write_acquire(
    name: &str,
    lease_ms: u64,
    field: &str,
    fencing: Fencing,
) -> ScriptCall {
    ScriptCall::new(&WRITE_ACQUIRE, (name, Prefixed::token_key(name)))
        .arg(lease_ms)
        .arg(field)
        .arg(fencing.arg())
}

pub(super) static READ_REENTER: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("read_reenter", &[READ_REENTER_SRC]));
const READ_REENTER_SRC: &str = r"
if redis.pcall('hexists', KEYS[1], ARGV[2]) ~= 1 then
    return 0
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
return 1
";

/// Re-entry of a read hold that an owner scope has (see `scope.rs`).
///
/// * KEYS\[1\]: the lock hash; KEYS\[2\]: the reader's timeout key prefix.
/// * ARGV\[1\]: the hold's lease in milliseconds; ARGV\[2\]: the reader
///   field.
/// * Returns `1` when the reader was present: its count went up to `i`,
///   with timeout key `<prefix>:<i>` for the lease; `0` when it was not
///   (nothing written: a hold that is gone is never revived).
pub(crate) fn read_reenter(name: &str, lease_ms: u64, field: &str) -> ScriptCall {
    ScriptCall::new(
        &READ_REENTER,
        (name, layout::read_timeout_prefix(name, field)),
    )
    .arg(lease_ms)
    .arg(field)
}

pub(super) static READ_RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::latched("read_release", 4, &[READ_RELEASE_SRC]));
const READ_RELEASE_SRC: &str = r"
local mode = redis.pcall('hget', KEYS[1], 'mode')
if type(mode) ~= 'string' or redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    local fields = redis.call('hgetall', KEYS[1])
    for i = 1, #fields, 2 do
        local count = tonumber(fields[i + 1])
        if count ~= nil then
            for c = count, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. fields[i] .. ':rwlock_timeout:' .. c)
                longest = math.max(longest, ttl)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        return 0
    end
    if mode == 'write' then
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return 1
";

/// Owner-checked release of one read hold of read-write lock `name` by
/// reader `field`.
///
/// * KEYS\[1\]: the lock hash; KEYS\[2\]: the channel,
///   [`layout::rwlock_channel`]; KEYS\[3\]: the reader's timeout key prefix;
///   KEYS\[4\]: the lock's timeout key base, [`layout::read_timeout_base`].
/// * ARGV\[1\]: the read unlock message (`0`); ARGV\[2\]: the reader field;
///   ARGV\[3\]: `publish` or `spublish`.
/// * Returns nil when the reader is absent or the key is no read-write lock
///   (not ours), `0` when the count went down and other holds remain (the
///   hash then lives as long as the longest remaining read hold, or stays as
///   it is under a write hold), `1` when the hash was deleted and `0`
///   published.
/// * With a [`Latch`]: KEYS\[5\] and a last ARGV, as the plain release's
///   ([`release`](super::lock::release)).
///
/// Redisson's read unlock, step by step, with its unlock latch.
pub(crate) fn read_release(
    name: &str,
    field: &str,
    publish: Publish,
    latch: Option<Latch<'_>>,
) -> ScriptCall {
    ScriptCall::new(
        &READ_RELEASE,
        (
            name,
            layout::rwlock_channel(name),
            layout::read_timeout_prefix(name, field),
            layout::read_timeout_base(name),
            Latch::key(latch, name),
        ),
    )
    .arg(READ_UNLOCK_MESSAGE)
    .arg(field)
    .arg(publish.command())
    .arg(Latch::ttl(latch))
}

pub(super) static WRITE_RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::latched("write_release", 2, &[WRITE_RELEASE_SRC]));
const WRITE_RELEASE_SRC: &str = r"
if redis.pcall('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[4], KEYS[2], ARGV[1])
-- Redisson's waiters take `1` for the waiters already asleep only (a
-- semaphore released by its queue's length): one between its retry and
-- its sleep would sleep on to its timeout. `0` leaves it a permit.
redis.call(ARGV[4], KEYS[2], '0')
return 1
";

/// Owner-checked release of the write hold of read-write lock `name` by
/// writer `field`.
///
/// * KEYS\[1\]: the lock hash; KEYS\[2\]: the channel.
/// * ARGV\[1\]: the write unlock message (`1`); ARGV\[2\]: the lease in
///   milliseconds to restore when re-entered holds remain; ARGV\[3\]: the
///   writer field; ARGV\[4\]: `publish` or `spublish`.
/// * Returns nil when the writer is absent or the key is no write-locked
///   hash (not ours), `0` when holds of the writer remain, `1` when the
///   write hold is gone: the hash deleted, or, if the same owner still holds
///   reads (a downgrade), `mode` set to `read`; `1` is published either
///   way, then `0`: Redisson's waiters release on `1` only those already
///   asleep (`release(getQueueLength())`), while `0` leaves a permit for
///   one about to sleep (#29: a Java reader slept through a downgrade to its
///   15 s timeout).
/// * With a [`Latch`]: KEYS\[3\] and a last ARGV, as the plain release's
///   ([`release`](super::lock::release)).
pub(crate) fn write_release(
    name: &str,
    lease_ms: u64,
    field: &str,
    publish: Publish,
    latch: Option<Latch<'_>>,
) -> ScriptCall {
    let keys = (name, layout::rwlock_channel(name), Latch::key(latch, name));
    ScriptCall::new(&WRITE_RELEASE, keys)
        .arg(WRITE_UNLOCK_MESSAGE)
        .arg(lease_ms)
        .arg(field)
        .arg(publish.command())
        .arg(Latch::ttl(latch))
}

pub(super) static RENEW_READS: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("renew_reads", &[RENEW_READS_SRC]));
const RENEW_READS_SRC: &str = r"
local renewed = {}
for i = 1, #KEYS / 2 do
    local hash = KEYS[2 * i - 1]
    local count = tonumber(redis.pcall('hget', hash, ARGV[i + 1]))
    if count ~= nil and count > 0 then
        for c = count, 1, -1 do
            redis.call('pexpire', KEYS[2 * i] .. ':' .. c, ARGV[1])
        end
        local ttl = redis.call('pttl', hash)
        redis.call('pexpire', hash, math.max(ttl, tonumber(ARGV[1])))
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
";

/// Owner-checked renewal of a batch of read holds (all of one hash slot),
/// for the watchdog: `holds` are `(lock name, reader field)`.
///
/// * KEYS\[2i - 1\]: the lock hash of hold i; KEYS\[2i\]: its reader's
///   timeout key prefix.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[1 + i\]: the reader field
///   of hold i.
/// * Returns an array with one integer per hold, read as
///   [`Renewed`](super::lock::Renewed): `1` where the reader was present
///   (each of its timeout keys lives for the lease again, and the hash for
///   the longest of its time to live and the lease), `0` where it was not.
///
/// As Redisson's `ReadLockTask`: a read hold must keep its timeout keys,
/// because another reader's release reads them to decide how long the hash
/// lives, and deletes the hash when none is left.
pub(crate) fn renew_reads<'a>(
    lease_ms: u64,
    holds: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ScriptCall {
    // `EVALSHA` counts the keys before the first, so they are gathered
    // first; a watchdog batch, not the acquire's path.
    let (mut keys, mut fields) = (Vec::new(), Vec::new());
    for (name, field) in holds {
        keys.push((name, layout::read_timeout_prefix(name, field)));
        fields.push(field);
    }
    ScriptCall::new(&RENEW_READS, keys)
        .arg(lease_ms)
        .arg(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn read_acquire_packs_hash_timeouts_counter_and_both_fields() {
        let (keys, args) = packed(&read_acquire(
            "doc",
            30_000,
            "u:1",
            Fencing::Counter { ttl_ms: 0 },
        ));
        assert_eq!(
            keys,
            [
                "doc",
                "{doc}:u:1:rwlock_timeout",
                "redisson_lock_token:{doc}"
            ]
        );
        assert_eq!(args, ["30000", "u:1", "u:1:write", "0"]);
        let (keys, _) = packed(&read_acquire("{doc}:7", 30_000, "u:1", Fencing::Off));
        assert_eq!(keys[1], "{doc}:7:u:1:rwlock_timeout");
    }

    #[test]
    fn write_acquire_packs_hash_counter_lease_writer() {
        let (keys, args) = packed(&write_acquire(
            "doc",
            500,
            "u:1:write",
            Fencing::Counter { ttl_ms: 7 },
        ));
        assert_eq!(keys, ["doc", "redisson_lock_token:{doc}"]);
        assert_eq!(args, ["500", "u:1:write", "7"]);
    }

    #[test]
    fn releases_pack_redisson_channel_and_messages() {
        let (keys, args) = packed(&read_release("doc", "u:1", Publish::Plain, None));
        assert_eq!(
            keys,
            [
                "doc",
                "redisson_rwlock:{doc}",
                "{doc}:u:1:rwlock_timeout",
                "{doc}"
            ]
        );
        assert_eq!(args, ["0", "u:1", "publish"]);
        let (keys, args) = packed(&write_release(
            "doc",
            500,
            "u:1:write",
            Publish::Sharded,
            None,
        ));
        assert_eq!(keys, ["doc", "redisson_rwlock:{doc}"]);
        assert_eq!(args, ["1", "500", "u:1:write", "spublish"]);
    }

    #[test]
    fn renew_reads_packs_hash_and_prefix_per_hold() {
        let (keys, args) = packed(&renew_reads(10, [("a", "u:1"), ("b", "u:2")]));
        assert_eq!(
            keys,
            ["a", "{a}:u:1:rwlock_timeout", "b", "{b}:u:2:rwlock_timeout"]
        );
        assert_eq!(args, ["10", "u:1", "u:2"]);
        let (keys, args) = packed(&read_reenter("a", 10, "u:1"));
        assert_eq!(keys, ["a", "{a}:u:1:rwlock_timeout"]);
        assert_eq!(args, ["10", "u:1"]);
    }
}
