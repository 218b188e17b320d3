//! The expirable semaphore's scripts: Redisson's `RPermitExpirableSemaphore`
//! layout, with the server's clock.
//!
//! Layout (see [`layout::permits_key`] and
//! [`layout::semaphore_channel`]): the string key `name` holds the number of
//! free permits; the zset `{name}:timeout` holds one member per acquired
//! permit, its raw 16-byte id, scored with its expiry in epoch
//! milliseconds (a permit Java acquired without a lease scores
//! `922337203685477`, Redisson's `nonExpirableTimeout`: never reclaimed,
//! and no time to wait for); each
//! change that frees permits publishes an integer on `redisson_sc:{name}`.
//! Expired permits are returned to the pool by whichever script runs next
//! (the "reclaim"), exactly as Redisson's scripts do, so both libraries
//! can work on one semaphore.
//!
//! # The clock
//!
//! Redisson's client passes `System.currentTimeMillis()` as "now" and
//! computes each expiry from it. These scripts read the server's `TIME`
//! instead ([`NOW_MS`](super::NOW_MS)) and take a lease in milliseconds, so
//! every redlease client (whatever its own clock says) scores, renews and
//! reclaims on the one clock all of them share: a client whose clock runs
//! ahead cannot reclaim another's live permit, and one that lags cannot
//! keep an expired one. A Java client beside them still uses its own
//! clock; scores are epoch milliseconds on both sides, so a skew between
//! that client and the server shifts only its own permits' leases and
//! reclaims by the skew (NTP keeps that to milliseconds). The KEYS are in
//! Redisson's order for each script (it differs between scripts); ARGV
//! carry a lease instead of an expiry and no "now", which no other client
//! reads.
//!
//! Every script first checks that `name` holds an integer (or nothing) and
//! raises `WRONGTYPE` otherwise, before it writes anything, so a foreign
//! value is never half-changed.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::{Latch, Lua, NOW_MS, ScriptCall};
use crate::connection::Publish;
use crate::layout;

/// Shared by every script (after [`NOW_MS`]): `permits(key)` returns the
/// free-permit count at `key` as a string, or false when the key is absent,
/// and raises `WRONGTYPE` when it holds something that is not an integer
/// (`GET` itself raises it for a non-string); `reclaim(name, timeout,
/// channel, publish, limit)` returns expired permits (score at or before
/// `now`; at most `limit` of them, or all when `limit` is nil) to the pool,
/// and announces the new count when it is positive, as Redisson's scripts do;
/// it returns how many it gave back.
///
/// All of them are removed with one `ZREMRANGEBYSCORE` rather than
/// Redisson's `ZREM` of an unpacked list, which overflows Lua's stack
/// beyond some thousands of ids; the effect is the same.
pub(super) const PERMITS: &str = r"
local function permits(key)
    local value = redis.call('get', key)
    if value ~= false and not string.match(value, '^%-?%d+$') then
        error({err = 'WRONGTYPE semaphore key does not hold an integer'})
    end
    return value
end
local function reclaim(name, timeout, channel, publish, limit)
    local count
    if limit then
        local expired = redis.call('zrangebyscore', timeout, 0, now, 'limit', 0, limit)
        count = #expired
        if count > 0 then
            redis.call('zrem', timeout, unpack(expired))
        end
    else
        count = redis.call('zremrangebyscore', timeout, 0, now)
    end
    if count > 0 then
        local value = redis.call('incrby', name, count)
        if value > 0 then
            redis.call(publish, channel, value)
        end
    end
    return count
end
";

pub(super) static ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_acquire", &[NOW_MS, PERMITS, ACQUIRE_SRC]));
const ACQUIRE_SRC: &str = r"
permits(KEYS[1])
local wanted = tonumber(ARGV[1])
reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], wanted)
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= wanted then
    redis.call('decrby', KEYS[1], wanted)
    local expiry = string.format('%.0f', now + tonumber(ARGV[2]))
    for i = 4, #ARGV do
        redis.call('zadd', KEYS[2], expiry, ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return {1, 0}
end
local flag = 0
if free > 0 then
    flag = 2
end
local nearest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if nearest[1] ~= nil and tonumber(nearest[2]) < 922337203685477 then
    return {flag, math.max(tonumber(nearest[2]) - now, 0)}
end
return {flag, -1}
";

/// Acquires `ids.len()` permits of semaphore `name` under the given raw
/// permit ids, each expiring `lease_ms` after the server's now
/// (Redisson's `tryAcquireAsync(ids, timeoutDate)`).
///
/// * KEYS\[1\]: `name`, the free permits; KEYS\[2\]: `{name}:timeout`,
///   [`layout::permits_key`]; KEYS\[3\]: `redisson_sc:{name}`,
///   [`layout::semaphore_channel`].
/// * ARGV\[1\]: the number of permits; ARGV\[2\]: the lease in
///   milliseconds; ARGV\[3\]: `publish` or `spublish`, for the reclaim's
///   announcement; ARGV\[4..\]: the permit ids, raw bytes (16 each).
/// * First reclaims at most as many expired permits as asked for. Returns
///   `{1, 0}` when acquired (the count went down, each id is in the zset
///   scored with now + lease, and the zset took `name`'s time to live if
///   it has one); otherwise `{0, ms}` when nothing is free, `{2, ms}` when
///   some permits are free but fewer than asked, where `ms` is the time
///   until the nearest permit expires (`-1` when no permit out can expire);
///   read by [`Acquire`].
/// * Raises `WRONGTYPE` when `name` holds something other than an integer,
///   or the zset key another type; nothing is written then.
pub(crate) fn acquire(name: &str, lease_ms: u64, ids: &[&[u8]], publish: Publish) -> ScriptCall {
    let mut call = ScriptCall::new(
        &ACQUIRE,
        (
            name,
            layout::permits_key(name),
            layout::semaphore_channel(name),
        ),
    )
    .arg(ids.len())
    .arg(lease_ms)
    .arg(publish.command());
    for id in ids {
        call = call.arg(*id);
    }
    call
}

/// What an acquire answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Acquire {
    Acquired,
    /// Nothing free; the nearest expiry, if a permit out can expire.
    Busy(Option<Duration>),
    /// Some permits free, fewer than asked; the nearest expiry as for busy.
    Short(Option<Duration>),
}

impl FromRedisValue for Acquire {
    fn from_redis_value(v: Value) -> Result<Acquire, ParsingError> {
        let (flag, ms): (i64, i64) = FromRedisValue::from_redis_value(v)?;
        let nearest = u64::try_from(ms).ok().map(Duration::from_millis);
        match flag {
            1 => Ok(Acquire::Acquired),
            0 => Ok(Acquire::Busy(nearest)),
            2 => Ok(Acquire::Short(nearest)),
            other => Err(format!("unexpected acquire result {other}").into()),
        }
    }
}

pub(super) static RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::latched("expirable_release", 3, &[NOW_MS, PERMITS, RELEASE_SRC]));
const RELEASE_SRC: &str = r"
permits(KEYS[1])
local expiry = redis.call('zscore', KEYS[3], ARGV[1])
if expiry == false then
    return 0
end
redis.call('zrem', KEYS[3], ARGV[1])
local value = redis.call('incrby', KEYS[1], 1)
if value > 0 then
    redis.call(ARGV[2], KEYS[2], value)
end
if tonumber(expiry) <= now then
    return -1
end
return 1
";

/// Releases the permit `id` of semaphore `name` (Redisson's
/// `tryReleaseAsync(permitId)`).
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `redisson_sc:{name}`; KEYS\[3\]:
///   `{name}:timeout` (Redisson's order for this script).
/// * ARGV\[1\]: the permit id, raw bytes; ARGV\[2\]: `publish` or
///   `spublish`.
/// * Returns `0` when the id is not in the zset (released, reclaimed, or
///   never acquired: nothing is written, which is what makes a release of
///   a cancelled acquire safe whether or not the acquire ran); otherwise
///   removes it, adds one free permit, publishes the new count when it
///   is above zero (Redisson's handler throws on a negative one), and
///   returns `1`, or `-1` when the permit had expired by now (it is
///   returned to the pool all the same, as Redisson does); read by
///   [`Release`].
/// * With a [`Latch`] (#37): KEYS\[4\], the release's record,
///   [`layout::request_key`], and a last ARGV, its time to live in ms; the
///   answer the record holds, when it holds one, with nothing written, so
///   that a release sent again after a lost reply answers as the first did.
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn release(
    name: &str,
    id: &[u8],
    publish: Publish,
    latch: Option<Latch<'_>>,
) -> ScriptCall {
    ScriptCall::new(
        &RELEASE,
        (
            name,
            layout::semaphore_channel(name),
            layout::permits_key(name),
            Latch::request_key(latch, name),
        ),
    )
    .arg(id)
    .arg(publish.command())
    .arg(Latch::ttl(latch))
}

/// What a release answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    Released,
    /// Not in the zset: released, reclaimed, or never acquired.
    Absent,
    /// It had expired; it went back to the pool now.
    Expired,
}

impl FromRedisValue for Release {
    fn from_redis_value(v: Value) -> Result<Release, ParsingError> {
        match i64::from_redis_value(v)? {
            1 => Ok(Release::Released),
            0 => Ok(Release::Absent),
            -1 => Ok(Release::Expired),
            other => Err(format!("unexpected release result {other}").into()),
        }
    }
}

pub(super) static RENEW: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_renew", &[NOW_MS, PERMITS, RENEW_SRC]));
const RENEW_SRC: &str = r"
permits(KEYS[1])
reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], nil)
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
    redis.call('zadd', KEYS[2], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
    return 1
end
return 0
";

/// Extends the permit `id` of semaphore `name` to expire `lease_ms` after
/// the server's now (Redisson's `updateLeaseTimeAsync`).
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `{name}:timeout`; KEYS\[3\]:
///   `redisson_sc:{name}`.
/// * ARGV\[1\]: the permit id, raw bytes; ARGV\[2\]: the lease in
///   milliseconds; ARGV\[3\]: `publish` or `spublish`.
/// * First reclaims every expired permit (this one too, if it expired).
///   Returns `1` when the id was still in the zset and its score is now +
///   lease, `0` when it was not (nothing renewed: an expired permit is
///   never revived).
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn renew(name: &str, id: &[u8], lease_ms: u64, publish: Publish) -> ScriptCall {
    ScriptCall::new(
        &RENEW,
        (
            name,
            layout::permits_key(name),
            layout::semaphore_channel(name),
        ),
    )
    .arg(id)
    .arg(lease_ms)
    .arg(publish.command())
}

pub(super) static RENEW_ALL: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_renew_all", &[NOW_MS, PERMITS, RENEW_ALL_SRC]));
// `pcall` per semaphore: one key of the wrong type must not fail the
// renewal of every other permit of the batch. The checks that raise
// (`permits`, the reclaim's zset commands) come before any write.
const RENEW_ALL_SRC: &str = r"
local live = {}
for s = 1, #KEYS, 3 do
    live[s] = pcall(function()
        permits(KEYS[s])
        reclaim(KEYS[s], KEYS[s + 1], KEYS[s + 2], ARGV[2], nil)
    end)
end
local expiry = string.format('%.0f', now + tonumber(ARGV[1]))
local renewed = {}
for i = 3, #ARGV, 2 do
    local s = tonumber(ARGV[i])
    if live[s] and redis.call('zscore', KEYS[s + 1], ARGV[i + 1]) ~= false then
        redis.call('zadd', KEYS[s + 1], expiry, ARGV[i + 1])
        renewed[#renewed + 1] = 1
    else
        renewed[#renewed + 1] = 0
    end
end
return renewed
";

/// Renews a batch of permits, of one or more semaphores of one hash slot,
/// for the watchdog: each to expire `lease_ms` after the server's now, as
/// [`renew`] does one (Redisson batches nothing here: each Java permit is
/// renewed by its caller's `updateLeaseTime`).
///
/// * KEYS: for each semaphore of the batch, in order of first appearance,
///   `name`, `{name}:timeout` and `redisson_sc:{name}`.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: `publish` or
///   `spublish`; then for each permit two values: the index in KEYS of its
///   semaphore's `name` (1, 4, 7, ...) and its raw id.
/// * First reclaims every expired permit of each semaphore. Returns an
///   array with one integer per permit, read by
///   [`Renewed`](super::lock::Renewed): `1` when the id was still in the
///   zset and its score is now now + lease, `0` when it was not, or when
///   its semaphore's keys hold another type (nothing of that semaphore is
///   written then).
pub(crate) fn renew_all<'a>(
    lease_ms: u64,
    publish: Publish,
    permits: impl IntoIterator<Item = (&'a str, &'a [u8; 16])>,
) -> ScriptCall {
    let mut keys: Vec<String> = Vec::new();
    let mut first_key: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut args: Vec<(usize, &[u8; 16])> = Vec::new();
    for (name, id) in permits {
        let at = *first_key.entry(name).or_insert_with(|| {
            keys.push(name.to_owned());
            keys.push(layout::permits_key(name));
            keys.push(layout::semaphore_channel(name));
            keys.len() - 2
        });
        args.push((at, id));
    }
    let mut call = ScriptCall::new(&RENEW_ALL, keys)
        .arg(lease_ms)
        .arg(publish.command());
    for (at, id) in args {
        call = call.arg(at).arg(&id[..]);
    }
    call
}

pub(super) static COUNTS: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_counts", &[NOW_MS, PERMITS, COUNTS_SRC]));
const COUNTS_SRC: &str = r"
permits(KEYS[1])
reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], nil)
local free = tonumber(redis.call('get', KEYS[1]) or '0')
return {free, redis.call('zcount', KEYS[2], 0, '+inf')}
";

/// The free and the acquired permits of semaphore `name`, after a reclaim
/// (Redisson's `availablePermitsAsync` and `acquiredPermitsAsync` in one).
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `{name}:timeout`; KEYS\[3\]:
///   `redisson_sc:{name}`.
/// * ARGV\[1\]: `publish` or `spublish`.
/// * First reclaims every expired permit. Returns `{free, acquired}`: the
///   count in `name` (`0` when absent; negative after permits were
///   removed while acquired) and the number of ids in the zset; read by
///   [`Counts`].
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn counts(name: &str, publish: Publish) -> ScriptCall {
    ScriptCall::new(
        &COUNTS,
        (
            name,
            layout::permits_key(name),
            layout::semaphore_channel(name),
        ),
    )
    .arg(publish.command())
}

/// What [`counts`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) available: i64,
    pub(crate) acquired: u64,
}

impl FromRedisValue for Counts {
    fn from_redis_value(v: Value) -> Result<Counts, ParsingError> {
        let (available, acquired): (i64, u64) = FromRedisValue::from_redis_value(v)?;
        Ok(Counts {
            available,
            acquired,
        })
    }
}

pub(super) static TRY_SET: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_try_set", &[NOW_MS, PERMITS, TRY_SET_SRC]));
const TRY_SET_SRC: &str = r"
if permits(KEYS[1]) == false then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
";

/// Sets the permits of semaphore `name` if it has none set (Redisson's
/// `trySetPermitsAsync`).
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `redisson_sc:{name}`.
/// * ARGV\[1\]: the permits; ARGV\[2\]: `publish` or `spublish`.
/// * Returns `1` when `name` was absent: it now holds the permits, which
///   are announced; `0` when it existed (nothing written).
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn try_set(name: &str, permits: i64, publish: Publish) -> ScriptCall {
    ScriptCall::new(&TRY_SET, (name, layout::semaphore_channel(name)))
        .arg(permits)
        .arg(publish.command())
}

pub(super) static SET: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_set", &[NOW_MS, PERMITS, SET_SRC]));
const SET_SRC: &str = r"
local free = permits(KEYS[1])
local wanted = tonumber(ARGV[1])
if free == false then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
local total = redis.call('zcount', KEYS[3], 0, '+inf') + tonumber(free)
if total == wanted then
    return 0
end
redis.call('incrby', KEYS[1], string.format('%.0f', wanted - total))
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
";

/// Makes semaphore `name` have `permits` in all, free and acquired
/// (Redisson's `setPermitsAsync`): acquired permits stay acquired, and the
/// free count moves by the difference (it may go negative, until enough
/// are released).
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `redisson_sc:{name}`; KEYS\[3\]:
///   `{name}:timeout` (Redisson's order for this script).
/// * ARGV\[1\]: the permits; ARGV\[2\]: `publish` or `spublish`.
/// * Returns `1` when something changed (the new total is announced), `0`
///   when the total was already `permits`. Expired permits still count
///   as acquired here, as in Redisson (the next reclaim returns them).
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn set(name: &str, permits: i64, publish: Publish) -> ScriptCall {
    ScriptCall::new(
        &SET,
        (
            name,
            layout::semaphore_channel(name),
            layout::permits_key(name),
        ),
    )
    .arg(permits)
    .arg(publish.command())
}

pub(super) static ADD: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("expirable_add", &[NOW_MS, PERMITS, ADD_SRC]));
const ADD_SRC: &str = r"
local free = tonumber(permits(KEYS[1]) or '0')
local added = tonumber(ARGV[1])
local sum = free + added
if sum > 2147483647 or sum < -2147483648 then
    return {0, free}
end
redis.call('set', KEYS[1], string.format('%.0f', sum))
if added > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return {1, sum}
";

/// Adds `permits` (negative: removes) to the free permits of semaphore
/// `name` (Redisson's `addPermitsAsync`), keeping the count in Java's
/// `int` range, which Redisson reads it as.
///
/// * KEYS\[1\]: `name`; KEYS\[2\]: `redisson_sc:{name}`.
/// * ARGV\[1\]: the permits to add; ARGV\[2\]: `publish` or `spublish`.
/// * Returns `{1, count}` with the new free count (the key is set to it,
///   losing any time to live, as Redisson's `SET` does; a positive
///   `permits` is announced, as the delta); `{0, count}` with the current
///   count when the sum would leave the range of a Java `int` (nothing
///   written); read by [`Added`].
/// * Raises `WRONGTYPE` as [`acquire`] does.
pub(crate) fn add(name: &str, permits: i64, publish: Publish) -> ScriptCall {
    ScriptCall::new(&ADD, (name, layout::semaphore_channel(name)))
        .arg(permits)
        .arg(publish.command())
}

/// What [`add`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// Done; the new free count.
    Done(i64),
    /// Refused: out of range; the current free count.
    OutOfRange(i64),
}

impl FromRedisValue for Added {
    fn from_redis_value(v: Value) -> Result<Added, ParsingError> {
        let (flag, count): (i64, i64) = FromRedisValue::from_redis_value(v)?;
        Ok(match flag {
            1 => Added::Done(count),
            _ => Added::OutOfRange(count),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: [u8; 16] = [
        0, 1, 2, 0xff, 0x80, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0xfe,
    ];

    fn text(parts: &[Vec<u8>]) -> Vec<String> {
        parts
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    fn int(n: i64) -> Value {
        Value::Int(n)
    }

    fn pair(a: i64, b: i64) -> Value {
        Value::Array(vec![int(a), int(b)])
    }

    #[test]
    fn acquire_packs_redisson_keys_and_raw_ids() {
        let call = acquire("jobs", 30_000, &[&ID], Publish::Plain);
        assert_eq!(
            text(&call.keys()),
            ["jobs", "{jobs}:timeout", "redisson_sc:{jobs}"]
        );
        assert_eq!(text(&call.args()[..3]), ["1", "30000", "publish"]);
        // The id goes as its 16 raw bytes, not as hex.
        assert_eq!(call.args()[3], ID);
        assert_eq!(call.args().len(), 4);
        let call = acquire("{t}:jobs", 5, &[&ID, &ID], Publish::Sharded);
        assert_eq!(
            text(&call.keys()),
            ["{t}:jobs", "{t}:jobs:timeout", "redisson_sc:{t}:jobs"]
        );
        assert_eq!(text(&call.args()[..3]), ["2", "5", "spublish"]);
    }

    #[test]
    fn acquire_reads_grant_busy_and_short() {
        let ms = Duration::from_millis;
        assert_eq!(Acquire::from_redis_value(pair(1, 0)), Ok(Acquire::Acquired));
        assert_eq!(
            Acquire::from_redis_value(pair(0, 1500)),
            Ok(Acquire::Busy(Some(ms(1500))))
        );
        assert_eq!(
            Acquire::from_redis_value(pair(0, -1)),
            Ok(Acquire::Busy(None))
        );
        assert_eq!(
            Acquire::from_redis_value(pair(2, 7)),
            Ok(Acquire::Short(Some(ms(7))))
        );
        assert!(Acquire::from_redis_value(pair(3, 0)).is_err());
        assert!(Acquire::from_redis_value(Value::Nil).is_err());
    }

    #[test]
    fn release_packs_redisson_key_order_and_reads_three_outcomes() {
        let call = release("jobs", &ID, Publish::Plain, None);
        assert_eq!(
            text(&call.keys()),
            ["jobs", "redisson_sc:{jobs}", "{jobs}:timeout"]
        );
        assert_eq!(call.args()[0], ID);
        assert_eq!(text(&call.args()[1..]), ["publish"]);
        assert_eq!(Release::from_redis_value(int(1)), Ok(Release::Released));
        assert_eq!(Release::from_redis_value(int(0)), Ok(Release::Absent));
        assert_eq!(Release::from_redis_value(int(-1)), Ok(Release::Expired));
        assert!(Release::from_redis_value(int(2)).is_err());
    }

    #[test]
    fn renew_all_packs_each_semaphore_once_and_each_id_with_its_index() {
        let other = [7u8; 16];
        let call = renew_all(
            9_000,
            Publish::Sharded,
            [("jobs", &ID), ("exports", &other), ("jobs", &other)],
        );
        assert_eq!(
            text(&call.keys()),
            [
                "jobs",
                "{jobs}:timeout",
                "redisson_sc:{jobs}",
                "exports",
                "{exports}:timeout",
                "redisson_sc:{exports}"
            ]
        );
        let args = call.args();
        assert_eq!(text(&args[..3]), ["9000", "spublish", "1"]);
        assert_eq!(args[3], ID.to_vec());
        assert_eq!(text(&[args[4].clone()]), ["4"]);
        assert_eq!(args[5], other.to_vec());
        assert_eq!(text(&[args[6].clone()]), ["1"]);
        assert_eq!(args[7], other.to_vec());
        assert_eq!(args.len(), 8);
    }

    #[test]
    fn renew_packs_id_lease_and_publish() {
        let call = renew("jobs", &ID, 9_000, Publish::Plain);
        assert_eq!(
            text(&call.keys()),
            ["jobs", "{jobs}:timeout", "redisson_sc:{jobs}"]
        );
        assert_eq!(call.args()[0], ID);
        assert_eq!(text(&call.args()[1..]), ["9000", "publish"]);
    }

    #[test]
    fn counts_pack_and_read() {
        let call = counts("jobs", Publish::Sharded);
        assert_eq!(
            text(&call.keys()),
            ["jobs", "{jobs}:timeout", "redisson_sc:{jobs}"]
        );
        assert_eq!(text(&call.args()), ["spublish"]);
        assert_eq!(
            Counts::from_redis_value(pair(-2, 3)),
            Ok(Counts {
                available: -2,
                acquired: 3
            })
        );
    }

    #[test]
    fn admin_calls_pack_redisson_keys() {
        let call = try_set("jobs", 4, Publish::Plain);
        assert_eq!(text(&call.keys()), ["jobs", "redisson_sc:{jobs}"]);
        assert_eq!(text(&call.args()), ["4", "publish"]);
        let call = set("jobs", 4, Publish::Plain);
        assert_eq!(
            text(&call.keys()),
            ["jobs", "redisson_sc:{jobs}", "{jobs}:timeout"]
        );
        assert_eq!(text(&call.args()), ["4", "publish"]);
        let call = add("jobs", -3, Publish::Plain);
        assert_eq!(text(&call.keys()), ["jobs", "redisson_sc:{jobs}"]);
        assert_eq!(text(&call.args()), ["-3", "publish"]);
        assert_eq!(Added::from_redis_value(pair(1, 5)), Ok(Added::Done(5)));
        assert_eq!(
            Added::from_redis_value(pair(0, 5)),
            Ok(Added::OutOfRange(5))
        );
    }

    #[test]
    fn the_nearest_expiry_ignores_redissons_non_expiring_score() {
        // Redisson's `nonExpirableTimeout`.
        assert!(ACQUIRE_SRC.contains("< 922337203685477"));
    }
}
