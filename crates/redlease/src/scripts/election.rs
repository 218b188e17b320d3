//! The leader election's scripts ([`crate::Election`]): who leads is who
//! holds the lock of the election's name, in either layout; what a
//! redlease leader adds is a record beside it, `redlease_leader:{name}`, a
//! hash of `owner` (its lock's owner field), `value` (what it campaigned
//! with) and `epoch` (its fencing token), and a message on
//! `redlease_leader__channel:{name}` when it starts to lead, for observers
//! (a release already announces itself on the lock's channel).
//!
//! The record is believed only while its `owner` is the lock's owner, so a
//! record left by a leader that died is never shown for the next one, and
//! a Java service holding the lock with Redisson's `RLock` leads with no
//! value. It has no expiry (a lease would have to be renewed beside the
//! lock's): a resignation deletes it, the next leader overwrites it.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::lock::HELD;
use super::{Lua, ScriptCall};
use crate::layout;

pub(crate) static ANNOUNCE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("election_announce", &[HELD, ANNOUNCE_SRC]));
const ANNOUNCE_SRC: &str = r"
if held(KEYS[1], ARGV[1]) ~= 1 then
    return 0
end
redis.call('hset', KEYS[2], 'owner', ARGV[1], 'value', ARGV[2], 'epoch', ARGV[3])
redis.call(ARGV[4], KEYS[3], ARGV[1])
return 1
";

/// A new leader's record, written only while it still holds the lock.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: the record,
///   `redlease_leader:{name}`; KEYS\[3\]: the election's channel,
///   `redlease_leader__channel:{name}`.
/// * ARGV\[1\]: the leader's owner field; ARGV\[2\]: its value; ARGV\[3\]:
///   its epoch (the fencing token, empty when fencing is off); ARGV\[4\]:
///   `publish` or `spublish`.
/// * Returns `1` when the lock was the leader's: the record is written and
///   the owner field published on the channel. `0` when it was not (lost
///   already): nothing is written.
pub(crate) fn announce(
    name: &str,
    owner: &str,
    value: &str,
    epoch: Option<u64>,
    publish: &str,
) -> ScriptCall {
    let keys = (name, layout::leader_key(name), layout::leader_channel(name));
    ScriptCall::new(&ANNOUNCE, keys)
        .arg(owner)
        .arg(value)
        .arg(epoch.map(|e| e.to_string()).unwrap_or_default())
        .arg(publish)
}

pub(crate) static RETIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("election_retire", &[RETIRE_SRC]));
const RETIRE_SRC: &str = r"
if redis.call('hget', KEYS[1], 'owner') == ARGV[1] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], '')
    return 1
end
return 0
";

/// A resigned leader's record removed, after its lock was released.
///
/// * KEYS\[1\]: the record; KEYS\[2\]: the election's channel.
/// * ARGV\[1\]: the leader's owner field; ARGV\[2\]: `publish` or
///   `spublish`.
/// * Returns `1` when the record was this leader's: deleted, and an empty
///   message published (observers look again); `0` when it was not (a new
///   leader wrote its own already): nothing changes.
pub(crate) fn retire(name: &str, owner: &str, publish: &str) -> ScriptCall {
    let keys = (layout::leader_key(name), layout::leader_channel(name));
    ScriptCall::new(&RETIRE, keys).arg(owner).arg(publish)
}

pub(crate) static LEADER: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("election_leader", &[LEADER_SRC]));
const LEADER_SRC: &str = r"
local owner
local fields = redis.pcall('hkeys', KEYS[1])
if fields.err == nil then
    for _, field in ipairs(fields) do
        if field ~= 'mode' then
            owner = field
            break
        end
    end
elseif string.find(fields.err, 'WRONGTYPE', 1, true) == nil then
    return fields
else
    owner = redis.pcall('get', KEYS[1])
    if type(owner) ~= 'string' then
        return redis.error_reply('WRONGTYPE the election key holds no lock')
    end
end
if owner == nil then
    return {}
end
local ttl = redis.call('pttl', KEYS[1])
local record = redis.call('hmget', KEYS[2], 'owner', 'value', 'epoch')
if record[1] == owner then
    return {owner, ttl, record[2], record[3]}
end
return {owner, ttl}
";

/// Who leads now, read in one step.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: the record.
/// * No `TYPE`: a service's ACL user has none (it is the operators').
/// * Returns `{}` when nobody holds the lock; `{owner, pttl}` for a holder
///   with no record of its own (a Redisson `RLock`, a redlease leader
///   between its acquire and its announcement); `{owner, pttl, value,
///   epoch}` for a redlease leader (`epoch` empty when fencing is off).
///   The owner is a hash's first field (Redisson's layout; a read-write
///   lock's `mode` skipped) or a string's value (the string layout); a key
///   of another type is a `WRONGTYPE` error. Read by [`Seen`].
pub(crate) fn leader(name: &str) -> ScriptCall {
    ScriptCall::new(&LEADER, (name, layout::leader_key(name)))
}

/// What [`leader`] answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) owner: String,
    pub(crate) ttl_ms: i64,
    pub(crate) value: Option<String>,
    pub(crate) epoch: Option<u64>,
}

impl FromRedisValue for Seen {
    fn from_redis_value(v: Value) -> Result<Seen, ParsingError> {
        let parts: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let mut parts = parts.into_iter();
        let (Some(owner), Some(ttl)) = (parts.next(), parts.next()) else {
            return Err(ParsingError::from("the election's answer has no owner"));
        };
        let value: Option<String> = match parts.next() {
            Some(v) => FromRedisValue::from_redis_value(v)?,
            None => None,
        };
        let epoch: Option<String> = match parts.next() {
            Some(v) => FromRedisValue::from_redis_value(v)?,
            None => None,
        };
        Ok(Seen {
            owner: FromRedisValue::from_redis_value(owner)?,
            ttl_ms: FromRedisValue::from_redis_value(ttl)?,
            value,
            epoch: epoch.and_then(|e| e.parse().ok()),
        })
    }
}

/// [`leader`]'s answer: nobody, or [`Seen`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Leads(pub(crate) Option<Seen>);

impl FromRedisValue for Leads {
    fn from_redis_value(v: Value) -> Result<Leads, ParsingError> {
        let empty = matches!(&v, Value::Array(a) if a.is_empty()) || matches!(v, Value::Nil);
        if empty {
            return Ok(Leads(None));
        }
        Seen::from_redis_value(v).map(|s| Leads(Some(s)))
    }
}
