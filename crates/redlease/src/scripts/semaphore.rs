//! Redisson's `RSemaphore`: acquire, release, and setting or changing the
//! number of permits.
//!
//! The semaphore `name` is the string key `name` holding the number of
//! **available** permits (a missing key is 0 available), and every change
//! that frees permits publishes the new available count on
//! [`layout::semaphore_channel`]. Nothing records who acquired: any client
//! may release.
//!
//! Each script has the effect of Redisson's on the key and the channel.
//! Where Redisson's would fail with a Lua error (or silently overwrite) on
//! a key that holds a string that is not an integer, these return nil and
//! write nothing, which the decoders report as a typed error; a key of
//! another type raises `WRONGTYPE` from the first `GET`, before anything is
//! written.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::{Lua, ScriptCall};
use crate::connection::Publish;
use crate::layout;

/// Shared by the semaphore and latch scripts: `count(key)` reads the
/// integer in string `key`: 0 when the key is missing, nil when it holds a
/// string that is not a decimal integer (`GET` raises `WRONGTYPE` for other
/// types). Checked with a pattern rather than `tonumber`, which also reads
/// `1.5`, ` 7` or `0x10`, strings that `INCRBY` and `DECRBY` refuse.
pub(super) const COUNT: &str = r"
local function count(key)
    local value = redis.call('get', key)
    if value == false then
        return 0
    end
    if string.match(value, '^%-?%d+$') == nil then
        return nil
    end
    return tonumber(value)
end
";

pub(super) static ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("semaphore_acquire", &[COUNT, ACQUIRE_SRC]));
const ACQUIRE_SRC: &str = r"
local taken = redis.call('get', KEYS[2])
local available = count(KEYS[1])
if available == nil then
    return nil
end
if taken == 'withdrawn' then
    return {0, available}
end
if taken ~= false then
    -- An earlier attempt of this request took them; its answer was lost.
    return {1, available}
end
if available >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], ARGV[1], 'px', ARGV[2])
    return {1, available - tonumber(ARGV[1])}
end
return {0, available}
";

/// Takes `permits` permits of semaphore `name` for acquire request
/// `request` if that many are available, once whatever number of times it
/// is sent (#36).
///
/// * KEYS\[1\]: the semaphore key; KEYS\[2\]: the request's key,
///   [`layout::request_key`].
/// * ARGV\[1\]: the number of permits, at least 1; ARGV\[2\]: how long the
///   request's key lasts, in ms.
/// * Returns `{1, left}` when taken (the count went down by `permits`, the
///   request's key records it for ARGV\[2\] ms, and `left` remain), or when
///   an earlier call of the same request took them (`left` is then the
///   count now); `{0, available}` when fewer are available, or when the
///   request was withdrawn ([`withdraw`]): nothing written, `available` may
///   be zero or negative; nil when the key holds a string that is not an
///   integer.
/// * Raises `WRONGTYPE` when the key is not a string.
///
/// Redisson's `tryAcquire` (`GET`, then `DECRBY` if enough), with the count
/// returned so that a waiter can tell "none free" from "some free, but not
/// enough for me" ([`Taken`]), and with the request's key, which Redisson's
/// lacks: an attempt whose reply was lost may have taken permits, and the
/// next attempt of the same request, or its withdrawal, finds them.
pub(crate) fn acquire(name: &str, permits: u64, request: &str, request_ttl_ms: u64) -> ScriptCall {
    let keys = (name, layout::request_key(name, request));
    ScriptCall::new(&ACQUIRE, keys)
        .arg(permits)
        .arg(request_ttl_ms)
}

pub(super) static WITHDRAW: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("semaphore_withdraw", &[COUNT, WITHDRAW_SRC]));
const WITHDRAW_SRC: &str = r"
local taken = redis.call('get', KEYS[2])
redis.call('set', KEYS[2], 'withdrawn', 'px', ARGV[1])
if taken == false or taken == 'withdrawn' or count(KEYS[1]) == nil then
    return 0
end
local available = redis.call('incrby', KEYS[1], taken)
if available > 0 then
    redis.call(ARGV[2], KEYS[3], available)
end
return 1
";

/// Withdraws acquire request `request` of semaphore `name`: gives back the
/// permits it took, if it took any, and marks it withdrawn so that no
/// attempt of it arriving later takes any. Safe to send again until
/// answered.
///
/// * KEYS\[1\]: the semaphore key; KEYS\[2\]: the request's key; KEYS\[3\]:
///   the semaphore's channel.
/// * ARGV\[1\]: how long the withdrawn mark lasts, in ms; ARGV\[2\]:
///   `publish` or `spublish`.
/// * Returns `1` when permits were given back (and the new count, if above
///   zero, published as a release publishes it), `0` when the request had
///   taken none, or had been withdrawn, or the key holds no count.
/// * Raises `WRONGTYPE` when the key is not a string.
pub(crate) fn withdraw(
    name: &str,
    request: &str,
    request_ttl_ms: u64,
    publish: Publish,
) -> ScriptCall {
    let keys = (
        name,
        layout::request_key(name, request),
        layout::semaphore_channel(name),
    );
    ScriptCall::new(&WITHDRAW, keys)
        .arg(request_ttl_ms)
        .arg(publish.command())
}

/// What [`acquire`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Taken; this many remain available.
    Acquired(i64),
    /// Not taken: this many are available (possibly zero or negative).
    Available(i64),
    /// The key holds a string that is not an integer.
    NotACount,
}

impl FromRedisValue for Taken {
    fn from_redis_value(v: Value) -> Result<Taken, ParsingError> {
        let reply: Option<(i64, i64)> = FromRedisValue::from_redis_value(v)?;
        Ok(match reply {
            None => Taken::NotACount,
            Some((1, left)) => Taken::Acquired(left),
            Some((_, available)) => Taken::Available(available),
        })
    }
}

/// Shared by the scripts of requests that may be sent again after a lost
/// reply (#37): `answered(key)` is the answer an earlier attempt of the
/// request recorded under its key, [`layout::request_key`], or nil when no
/// attempt ran (or its record has expired).
pub(super) const ANSWERED: &str = r"
local function answered(key)
    local before = redis.call('get', key)
    if before == false then
        return nil
    end
    return tonumber(before)
end
";

pub(super) static RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("semaphore_release", &[COUNT, ANSWERED, RELEASE_SRC]));
const RELEASE_SRC: &str = r"
local before = answered(KEYS[3])
if before ~= nil then
    return before
end
if count(KEYS[1]) == nil then
    return nil
end
local available = redis.call('incrby', KEYS[1], ARGV[1])
if available > 0 then
    redis.call(ARGV[2], KEYS[2], available)
end
redis.call('set', KEYS[3], available, 'px', ARGV[3])
return available
";

/// Gives `permits` permits back to semaphore `name` (any number of them:
/// nothing records who took what), or takes them away when `permits` is
/// negative ([`add_permits`]), once for request `request` whatever number
/// of times it is sent (#37).
///
/// * KEYS\[1\]: the semaphore key; KEYS\[2\]: its channel,
///   [`layout::semaphore_channel`]; KEYS\[3\]: the request's key,
///   [`layout::request_key`].
/// * ARGV\[1\]: the number of permits to add (negative to remove);
///   ARGV\[2\]: `publish` or `spublish`; ARGV\[3\]: how long the
///   request's key lasts, in ms.
/// * Returns the new available count, which it also publishes on the
///   channel when it is above zero (a missing key counts as 0, so the key
///   is then created with `permits`), and records under the request's key;
///   when the request's key holds an earlier attempt's answer, that answer,
///   with nothing written; nil, with nothing written, when the key holds a
///   string that is not an integer ([`Counted`]). A count at or below zero
///   frees no waiter, and Redisson's handler throws on a negative one
///   (`Semaphore.release(-n)`, uncaught on its executor), so it is never
///   announced, where Redisson's `addPermits` announces it.
/// * Raises `WRONGTYPE` when the key is not a string.
///
/// Redisson's `release` (`INCRBY`, then publish the result), with the
/// request's record, which Redisson's lacks: a release whose reply was
/// lost is sent again, and must not give back twice.
pub(crate) fn release(
    name: &str,
    permits: u64,
    request: &str,
    request_ttl_ms: u64,
    publish: Publish,
) -> ScriptCall {
    change(name, permits, request, request_ttl_ms, publish)
}

/// Adds `delta` permits to semaphore `name` (negative: removes them, and
/// the count may go below zero), once for request `request`: the script
/// and reply of [`release`].
///
/// Redisson's `addPermits` reads the count, sets it to count + delta and
/// publishes the result; `INCRBY` has the same effect in one command, and
/// is exact where Lua's numbers are not (above 2^53).
pub(crate) fn add_permits(
    name: &str,
    delta: i64,
    request: &str,
    request_ttl_ms: u64,
    publish: Publish,
) -> ScriptCall {
    change(name, delta, request, request_ttl_ms, publish)
}

fn change(
    name: &str,
    delta: impl redis::ToRedisArgs,
    request: &str,
    request_ttl_ms: u64,
    publish: Publish,
) -> ScriptCall {
    let keys = (
        name,
        layout::semaphore_channel(name),
        layout::request_key(name, request),
    );
    ScriptCall::new(&RELEASE, keys)
        .arg(delta)
        .arg(publish.command())
        .arg(request_ttl_ms)
}

/// The new count after a change, or `None` when the key held a string that
/// is not an integer; the reply of [`release`] and [`set_permits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counted(pub(crate) Option<i64>);

impl FromRedisValue for Counted {
    fn from_redis_value(v: Value) -> Result<Counted, ParsingError> {
        Ok(Counted(FromRedisValue::from_redis_value(v)?))
    }
}

pub(super) static SET_PERMITS: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("semaphore_set_permits", &[COUNT, SET_PERMITS_SRC]));
const SET_PERMITS_SRC: &str = r"
if count(KEYS[1]) == nil then
    return nil
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return tonumber(ARGV[1])
";

/// Sets semaphore `name` to `permits` available, whatever it had.
///
/// * KEYS\[1\]: the semaphore key; KEYS\[2\]: its channel.
/// * ARGV\[1\]: the number of permits; ARGV\[2\]: `publish` or `spublish`.
/// * Returns `permits`, which it also publishes, after `SET`; nil, with
///   nothing written, when the key holds a string that is not an integer
///   ([`Counted`]).
/// * Raises `WRONGTYPE` when the key is not a string (`SET` alone would
///   overwrite a key of any type).
///
/// Redisson's plain `RSemaphore` has no such script; this is
/// [`try_set_permits`] without its "only if missing" condition, announced
/// the same way, so that waiters wake for the permits it makes available.
pub(crate) fn set_permits(name: &str, permits: u64, publish: Publish) -> ScriptCall {
    ScriptCall::new(&SET_PERMITS, (name, layout::semaphore_channel(name)))
        .arg(permits)
        .arg(publish.command())
}

pub(super) static SET_IF_MISSING: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("set_if_missing", &[COUNT, SET_IF_MISSING_SRC]));
const SET_IF_MISSING_SRC: &str = r"
if redis.call('get', KEYS[1]) == false then
    redis.call('set', KEYS[1], ARGV[2])
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    return 1
end
if count(KEYS[1]) == nil then
    return nil
end
return 0
";

/// Sets a count key only if it is missing, and announces it: the one script
/// behind Redisson's `trySetPermits` ([`try_set_permits`]) and
/// `trySetCount` (the latch's `try_set_count`), which differ only in what
/// they publish.
///
/// * KEYS\[1\]: the key; KEYS\[2\]: its channel.
/// * ARGV\[1\]: the message to publish; ARGV\[2\]: the count to set;
///   ARGV\[3\]: `publish` or `spublish`.
/// * Returns `1` when the key was missing: it now holds the count, and the
///   message was published; `0` when it already held a count (nothing
///   written); nil when it holds a string that is not an integer
///   ([`SetIfMissing`]).
/// * Raises `WRONGTYPE` when the key is not a string.
pub(super) fn set_if_missing(
    name: &str,
    channel: String,
    message: impl redis::ToRedisArgs,
    count: u64,
    publish: Publish,
) -> ScriptCall {
    ScriptCall::new(&SET_IF_MISSING, (name, channel))
        .arg(message)
        .arg(count)
        .arg(publish.command())
}

/// Sets semaphore `name` to `permits` available, only if it has no count
/// yet (the key is missing), and publishes `permits` ([`set_if_missing`]).
///
/// Redisson's `trySetPermits`.
pub(crate) fn try_set_permits(name: &str, permits: u64, publish: Publish) -> ScriptCall {
    set_if_missing(
        name,
        layout::semaphore_channel(name),
        permits,
        permits,
        publish,
    )
}

/// What [`try_set_permits`] (or the latch's `try_set_count`) answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetIfMissing {
    /// The key was missing and is now set.
    Set,
    /// The key already held a count; nothing was written.
    Present,
    /// The key holds a string that is not an integer.
    NotACount,
}

impl FromRedisValue for SetIfMissing {
    fn from_redis_value(v: Value) -> Result<SetIfMissing, ParsingError> {
        let reply: Option<i64> = FromRedisValue::from_redis_value(v)?;
        Ok(match reply {
            None => SetIfMissing::NotACount,
            Some(1) => SetIfMissing::Set,
            Some(_) => SetIfMissing::Present,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn acquire_packs_key_request_permits_and_ttl() {
        let (keys, args) = packed(&acquire("jobs", 2, "u:7", 120_000));
        assert_eq!(keys, ["jobs", "redlease_request:{jobs}:u:7"]);
        assert_eq!(args, ["2", "120000"]);
        let (keys, args) = packed(&withdraw("{t}:jobs", "u:7", 120_000, Publish::Sharded));
        assert_eq!(
            keys,
            [
                "{t}:jobs",
                "redlease_request:{t}:jobs:u:7",
                "redisson_sc:{t}:jobs"
            ]
        );
        assert_eq!(args, ["120000", "spublish"]);
    }

    #[test]
    fn taken_reads_acquired_available_and_not_a_count() {
        let pair = |a, b| Value::Array(vec![Value::Int(a), Value::Int(b)]);
        assert_eq!(Taken::from_redis_value(pair(1, 3)), Ok(Taken::Acquired(3)));
        assert_eq!(Taken::from_redis_value(pair(0, 1)), Ok(Taken::Available(1)));
        assert_eq!(
            Taken::from_redis_value(pair(0, -2)),
            Ok(Taken::Available(-2))
        );
        assert_eq!(Taken::from_redis_value(Value::Nil), Ok(Taken::NotACount));
        assert!(Taken::from_redis_value(Value::Int(1)).is_err());
    }

    #[test]
    fn release_and_add_pack_key_channel_request_delta_publish_and_ttl() {
        let (keys, args) = packed(&release("jobs", 3, "u:7", 9, Publish::Plain));
        assert_eq!(
            keys,
            ["jobs", "redisson_sc:{jobs}", "redlease_request:{jobs}:u:7"]
        );
        assert_eq!(args, ["3", "publish", "9"]);
        let (keys, args) = packed(&add_permits("{t}:jobs", -4, "u:8", 9, Publish::Sharded));
        assert_eq!(
            keys,
            [
                "{t}:jobs",
                "redisson_sc:{t}:jobs",
                "redlease_request:{t}:jobs:u:8"
            ]
        );
        assert_eq!(args, ["-4", "spublish", "9"]);
        assert_eq!(
            Counted::from_redis_value(Value::Int(-1)),
            Ok(Counted(Some(-1)))
        );
        assert_eq!(Counted::from_redis_value(Value::Nil), Ok(Counted(None)));
    }

    #[test]
    fn set_and_try_set_pack_key_channel_permits_and_publish() {
        let (keys, args) = packed(&set_permits("jobs", 5, Publish::Plain));
        assert_eq!(keys, ["jobs", "redisson_sc:{jobs}"]);
        assert_eq!(args, ["5", "publish"]);
        // The message, then the count: both the permits.
        let (keys, args) = packed(&try_set_permits("jobs", 5, Publish::Plain));
        assert_eq!(keys, ["jobs", "redisson_sc:{jobs}"]);
        assert_eq!(args, ["5", "5", "publish"]);
        let read = |v| SetIfMissing::from_redis_value(v);
        assert_eq!(read(Value::Int(1)), Ok(SetIfMissing::Set));
        assert_eq!(read(Value::Int(0)), Ok(SetIfMissing::Present));
        assert_eq!(read(Value::Nil), Ok(SetIfMissing::NotACount));
    }
}
