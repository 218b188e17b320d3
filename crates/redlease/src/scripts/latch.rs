//! Redisson's `RCountDownLatch`: arm, count down, delete.
//!
//! The latch `name` is the string key `name` holding the count still to go
//! (a missing key is 0: open). Its channel, [`layout::latch_channel`],
//! carries `0` when the latch opens and `1` when it is armed or deleted.
//!
//! Each script has the effect of Redisson's on the key and the channel;
//! where Redisson's would fail with a Lua error on a key that holds a
//! string that is not an integer, these return nil and write nothing, and
//! a key of another type raises `WRONGTYPE` from a first `GET` (Redisson's
//! `trySetCount` and `delete` would answer "not set" or delete it).

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::semaphore::{ANSWERED, COUNT};
use super::{Lua, ScriptCall};
use crate::connection::Publish;
use crate::layout;

/// Published when the latch reaches zero (`CountDownLatchPubSub.ZERO_COUNT_MESSAGE`).
pub(crate) const ZERO_COUNT_MESSAGE: i64 = 0;
/// Published when the latch is armed (`CountDownLatchPubSub.NEW_COUNT_MESSAGE`).
pub(crate) const NEW_COUNT_MESSAGE: i64 = 1;

pub(super) static COUNT_DOWN: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("latch_count_down", &[COUNT, ANSWERED, COUNT_DOWN_SRC]));
const COUNT_DOWN_SRC: &str = r"
local before = answered(KEYS[3])
if before ~= nil then
    return before
end
if count(KEYS[1]) == nil then
    return nil
end
local left = redis.call('decr', KEYS[1])
if left <= 0 then
    redis.call('del', KEYS[1])
end
if left == 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
redis.call('set', KEYS[3], left, 'px', ARGV[3])
return left
";

/// Counts latch `name` down by one, once for request `request` whatever
/// number of times it is sent (#37).
///
/// * KEYS\[1\]: the latch key; KEYS\[2\]: its channel,
///   [`layout::latch_channel`]; KEYS\[3\]: the request's key,
///   [`layout::request_key`].
/// * ARGV\[1\]: the opening message (`0`); ARGV\[2\]: `publish` or
///   `spublish`; ARGV\[3\]: how long the request's key lasts, in ms.
/// * Returns the count left after `DECR`, which it records under the
///   request's key: at 0 the key is deleted and the opening message
///   published; below 0 (the key was missing or at 0 already) the key is
///   deleted and nothing is published. When the request's key holds an
///   earlier attempt's answer, that answer, with nothing written. Nil, with
///   nothing written, when the key holds a string that is not an integer.
/// * Raises `WRONGTYPE` when the key is not a string.
///
/// Redisson's `countDown`, with the request's record, which Redisson's
/// lacks: a count-down whose reply was lost is sent again, and must not
/// count twice.
pub(crate) fn count_down(
    name: &str,
    request: &str,
    request_ttl_ms: u64,
    publish: Publish,
) -> ScriptCall {
    let keys = (
        name,
        layout::latch_channel(name),
        layout::request_key(name, request),
    );
    ScriptCall::new(&COUNT_DOWN, keys)
        .arg(ZERO_COUNT_MESSAGE)
        .arg(publish.command())
        .arg(request_ttl_ms)
}

/// Arms latch `name` with `count`, only if it is open (the key is
/// missing), publishing the re-arming message (`1`); the semaphore's
/// [`set_if_missing`](super::semaphore::set_if_missing), whose contract
/// this is.
///
/// Redisson's `trySetCount`.
pub(crate) fn try_set_count(name: &str, count: u64, publish: Publish) -> ScriptCall {
    super::semaphore::set_if_missing(
        name,
        layout::latch_channel(name),
        NEW_COUNT_MESSAGE,
        count,
        publish,
    )
}

pub(super) static DELETE: LazyLock<Lua> = LazyLock::new(|| Lua::new("latch_delete", &[DELETE_SRC]));
const DELETE_SRC: &str = r"
redis.call('get', KEYS[1])
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
";

/// Deletes latch `name`. A missing key reads as 0, so this opens the latch,
/// and it publishes the opening message. Redisson's `delete` publishes the
/// re-arming message (`1`) instead, which leaves Redisson's waiters asleep
/// until their wait runs out (observed with Redisson 4.7.0, #26); `0`
/// frees them, and redlease's, at once.
///
/// * KEYS\[1\]: the latch key; KEYS\[2\]: its channel.
/// * ARGV\[1\]: the opening message (`0`); ARGV\[2\]: `publish` or
///   `spublish`.
/// * Returns `1` when the key existed (deleted, message published), `0`
///   when it did not.
/// * Raises `WRONGTYPE` (from a first `GET`) when the key is not a string,
///   rather than deleting someone else's value.
pub(crate) fn delete(name: &str, publish: Publish) -> ScriptCall {
    ScriptCall::new(&DELETE, (name, layout::latch_channel(name)))
        .arg(ZERO_COUNT_MESSAGE)
        .arg(publish.command())
}

/// The count left after a count-down, or `None` when the key held a string
/// that is not an integer; the reply of [`count_down`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Left(pub(crate) Option<i64>);

impl FromRedisValue for Left {
    fn from_redis_value(v: Value) -> Result<Left, ParsingError> {
        Ok(Left(FromRedisValue::from_redis_value(v)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn count_down_packs_key_channel_request_zero_publish_and_ttl() {
        let (keys, args) = packed(&count_down("shards", "u:7", 9, Publish::Plain));
        assert_eq!(
            keys,
            [
                "shards",
                "redisson_countdownlatch__channel__{shards}",
                "redlease_request:{shards}:u:7"
            ]
        );
        assert_eq!(args, ["0", "publish", "9"]);
        assert_eq!(Left::from_redis_value(Value::Int(-1)), Ok(Left(Some(-1))));
        assert_eq!(Left::from_redis_value(Value::Nil), Ok(Left(None)));
    }

    #[test]
    fn try_set_count_packs_one_count_and_publish() {
        let (keys, args) = packed(&try_set_count("{t}:shards", 3, Publish::Sharded));
        assert_eq!(
            keys,
            [
                "{t}:shards",
                "redisson_countdownlatch__channel__{{t}:shards}"
            ]
        );
        assert_eq!(args, ["1", "3", "spublish"]);
    }

    #[test]
    fn delete_packs_key_channel_zero_and_publish() {
        let (keys, args) = packed(&delete("shards", Publish::Plain));
        assert_eq!(
            keys,
            ["shards", "redisson_countdownlatch__channel__{shards}"]
        );
        assert_eq!(args, ["0", "publish"]);
    }
}
