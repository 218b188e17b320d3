//! The multi-lock's script: several plain locks whose keys one script may
//! touch (one hash slot on a cluster, any keys on one node) taken together
//! in one round trip, all or none by Redis's own atomicity.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::lock::FENCE;
use super::{Fencing, Lua, ScriptCall};
use crate::layout::Prefixed;

pub(super) static ACQUIRE_ALL: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("acquire_all", &[FENCE, ACQUIRE_ALL_SRC]));
// Every check comes before any write, and every counter before any lock:
// a refusal or an error (a key of another type, a counter that is not an
// integer) leaves every lock as it was. A lock key of another type is
// answered rather than raised, so the caller can say which one it is. (An error from the second counter
// on leaves the first counters advanced, which only skips tokens.)
const ACQUIRE_ALL_SRC: &str = r"
local n = #KEYS / 2
for i = 1, n do
    local key = KEYS[2 * i - 1]
    if redis.call('exists', key) == 1 then
        local ours = redis.pcall('hexists', key, ARGV[2 + i])
        if type(ours) == 'table' then
            return {2, i}
        end
        if ours == 0 then
            return {0, i, redis.call('pttl', key)}
        end
    end
end
local reply = {1}
for i = 1, n do
    reply[i + 1] = fence(KEYS[2 * i], ARGV[2])
end
for i = 1, n do
    redis.call('hincrby', KEYS[2 * i - 1], ARGV[2 + i], 1)
    redis.call('pexpire', KEYS[2 * i - 1], ARGV[1])
end
return reply
";

/// Acquire every lock of `members` (name, owner field) or none, each as
/// [`acquire`](super::acquire) would, with a fencing token each.
///
/// * KEYS: for each member in order, its lock key then its fencing counter
///   ([`layout::token_key`](crate::layout::token_key)); all in one hash
///   slot on a cluster.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the counters' time to
///   live in milliseconds, `0` for none, `-1` for no tokens (fencing off,
///   each token is then `0`); ARGV\[2 + i\]: member `i`'s owner
///   field.
/// * Returns `{1, token_1, ..., token_n}` when every member was free (or
///   already held by its field): each field's count went up by one and each
///   key's expiry is the lease. Otherwise `{0, i, pttl}`: member `i`
///   (counted from 1) is held by someone else, with that `PTTL` (`-1`: no
///   expiry), and nothing was written. `{2, i}`: member `i`'s key holds something other
///   than a hash; nothing was written.
/// * Raises `WRONGTYPE` when a counter holds something other than a string,
///   and an error when it is not an integer; no lock is written then.
pub(crate) fn acquire_all<'a>(
    members: impl IntoIterator<Item = (&'a str, &'a str)>,
    lease_ms: u64,
    fencing: Fencing,
) -> ScriptCall {
    // `EVALSHA` counts the keys before the first, so they are gathered
    // first.
    let (mut keys, mut fields) = (Vec::new(), Vec::new());
    for (name, field) in members {
        keys.push((name, Prefixed::token_key(name)));
        fields.push(field);
    }
    ScriptCall::new(&ACQUIRE_ALL, keys)
        .arg(lease_ms)
        .arg(fencing.arg())
        .arg(fields)
}

/// What [`acquire_all`] answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AcquiredAll {
    /// Every member acquired, with these fencing tokens, in order (`None`:
    /// fencing is off).
    Granted(Vec<Option<u64>>),
    /// Member `member` (from 0) is held by someone else, with this much time
    /// to live (`None`: the key has no expiry).
    Busy {
        member: usize,
        ttl: Option<Duration>,
    },
    /// Member `member`'s key holds something other than a lock hash.
    NotALock { member: usize },
}

impl FromRedisValue for AcquiredAll {
    fn from_redis_value(v: Value) -> Result<AcquiredAll, ParsingError> {
        let reply: Vec<i64> = FromRedisValue::from_redis_value(v)?;
        match reply.as_slice() {
            [1, tokens @ ..] => Ok(AcquiredAll::Granted(
                tokens.iter().map(|&t| super::token(t)).collect(),
            )),
            &[0, member, pttl] if member >= 1 => Ok(AcquiredAll::Busy {
                member: (member - 1) as usize,
                ttl: u64::try_from(pttl).ok().map(Duration::from_millis),
            }),
            &[2, member] if member >= 1 => Ok(AcquiredAll::NotALock {
                member: (member - 1) as usize,
            }),
            _ => Err(ParsingError::from(format!(
                "unexpected acquire_all reply {reply:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn acquire_all_packs_each_key_with_its_counter_and_fields_after_lease_and_ttl() {
        let (keys, args) = packed(&acquire_all(
            [("{a}1", "u:1"), ("{a}2", "u:2")],
            500,
            Fencing::Counter { ttl_ms: 0 },
        ));
        assert_eq!(
            keys,
            [
                "{a}1",
                "redisson_lock_token:{a}1",
                "{a}2",
                "redisson_lock_token:{a}2"
            ]
        );
        assert_eq!(args, ["500", "0", "u:1", "u:2"]);
    }

    #[test]
    fn acquired_all_reads_tokens_and_the_busy_member() {
        let decode = |v: &[i64]| {
            AcquiredAll::from_redis_value(Value::Array(v.iter().map(|&n| Value::Int(n)).collect()))
        };
        assert_eq!(
            decode(&[1, 7, 9]),
            Ok(AcquiredAll::Granted(vec![Some(7), Some(9)]))
        );
        assert_eq!(
            decode(&[1, 0, 0]),
            Ok(AcquiredAll::Granted(vec![None, None]))
        );
        assert_eq!(
            decode(&[0, 2, 1500]),
            Ok(AcquiredAll::Busy {
                member: 1,
                ttl: Some(Duration::from_millis(1500))
            })
        );
        assert_eq!(
            decode(&[0, 1, -1]),
            Ok(AcquiredAll::Busy {
                member: 0,
                ttl: None
            })
        );
        assert_eq!(decode(&[2, 3]), Ok(AcquiredAll::NotALock { member: 2 }));
        assert!(decode(&[0, 0, 5]).is_err());
        assert!(decode(&[2]).is_err());
    }
}
