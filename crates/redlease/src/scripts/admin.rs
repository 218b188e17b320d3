//! The operators' script: a forced unlock that ignores the owner, or a
//! consistent read of what it would remove.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::{Lua, NOW_MS, ScriptCall, UNLOCK_MESSAGE};
use crate::connection::Publish;
use crate::layout::{self, Holder, LockState, Waiter};

pub(super) static FORCE_UNLOCK: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("force_unlock", &[NOW_MS, FORCE_UNLOCK_SRC]));
const FORCE_UNLOCK_SRC: &str = r"
local kind = redis.call('type', KEYS[1])['ok']
local fields = {}
if kind == 'hash' then fields = redis.call('hgetall', KEYS[1]) end
local permits = 0
if redis.call('type', KEYS[7])['ok'] == 'zset' then permits = redis.call('zcard', KEYS[7]) end
local value, digest, string_lock = '', '', false
if kind == 'string' then
    local whole = redis.call('get', KEYS[1])
    value = string.sub(whole, 1, 129)
    digest = redis.sha1hex(whole)
    local count = #whole <= 20 and string.match(whole, '^[+-]?[0-9]+$') ~= nil
    string_lock = not count and permits == 0
end
local pttl = redis.call('pttl', KEYS[1])
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
if ARGV[4] == 'expect' then
    local expected = {}
    for i = 7, #ARGV do expected[ARGV[i]] = true end
    if kind ~= ARGV[5] or digest ~= ARGV[6] or #fields / 2 ~= #ARGV - 6 then changed = 1 end
    for i = 1, #fields, 2 do
        if not expected[fields[i]] then changed = 1 end
    end
end
local removed = 0
local refused = ARGV[2] ~= 'any' and kind ~= 'hash' and kind ~= 'none' and not string_lock
if ARGV[2] ~= 'peek' and not refused and changed == 0 then
    if kind ~= 'none' then
        redis.call('del', KEYS[1])
        redis.call(ARGV[3], KEYS[2], ARGV[1])
        for i = 1, #fields, 2 do
            if fields[i] == 'mode' then redis.call(ARGV[3], KEYS[5], 1) end
        end
        removed = 1
    end
    for _, owner in ipairs(stale) do
        if fair then redis.call('lrem', KEYS[3], 0, owner) end
        if deadlines then redis.call('zrem', KEYS[4], owner) end
    end
    local head = false
    if fair then head = redis.call('lindex', KEYS[3], 0) end
    if head then redis.call(ARGV[3], KEYS[2] .. ':' .. head, ARGV[1]) end
end
local token = redis.pcall('get', KEYS[6])
if type(token) ~= 'string' then token = '' end
local queued = 0
if fair then queued = redis.call('llen', KEYS[3]) end
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
return {kind, fields, pttl, removed, queue, changed, token, now_us, queued, value, digest, permits}
";

/// What a forced unlock may remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Nothing: only report.
    Peek,
    /// The key only when it is a lock: a hash, or a lock of the string
    /// layout (see [`force_unlock`]).
    Lock,
    /// The key whatever its type.
    Any,
}

/// Forced unlock for operators (`redlease unlock --force`), or a report of
/// what it would remove: no owner check.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its channel; KEYS\[3\]: its fair
///   queue; KEYS\[4\]: its waiter deadlines; KEYS\[5\]: Redisson's
///   read-write lock channel, [`layout::rwlock_channel`]; KEYS\[6\]: its
///   fencing counter (only read); KEYS\[7\]: an expirable semaphore's
///   permits under the same name, [`layout::permits_key`] (only read).
/// * ARGV\[1\]: the unlock message (`0`); ARGV\[2\]: `peek`, `lock` or
///   `any` as [`Removal`]; ARGV\[3\]: the publish command (`publish` or
///   `spublish`); ARGV\[4\]: `expect` (only when `expect` is given) to
///   change nothing unless the key still has the type ARGV\[5\], a string
///   value whose SHA-1 is ARGV\[6\] (`''` for other types: a string seen
///   without its digest never matches), and exactly the hash fields
///   ARGV\[7..\] (the owners an operator was shown: a lock taken over since
///   must not be removed), or absent.
/// * A key is a lock, which `lock` removes, when it is a hash, or a lock of
///   the string layout: a string whose value is not a count (an optional
///   `+` or `-` and decimal digits, 20 bytes at most) and beside which no
///   expirable semaphore's permits zset (KEYS\[7\]) exists; the rule of
///   [`LockState::kind`]'s [`StringLock`](layout::StateKind::StringLock).
/// * Returns `{type, fields, pttl, removed, queue, changed, token, now,
///   queued, value, digest, permits}` describing the
///   key before the call: `type` is the key's `TYPE` (`none` when absent);
///   `fields` is the hash as `{field, value, ...}` (empty unless a hash);
///   `pttl` its `PTTL`; `removed` is `1` when the key was deleted;
///   `queue` lists the fair-lock waiters as `{owner, deadline, stale, ...}`
///   (list entries first, in order, then deadline-only members; `deadline`
///   is the zset score in ms, or `''` when missing; `stale` is `1` when the
///   waiter is gone by the fair lock's rule: no deadline, or one not after
///   the server's clock, else `0`); `changed` is `1` when ARGV\[4\] was
///   `expect` and the key no longer matched (nothing was changed); `token`
///   is the fencing counter's value (`''` when it holds none); `now` the
///   server's clock in microseconds; `queued` the length of the queue list;
///   `value` a string's first 129 bytes and `digest` the SHA-1 (lowercase
///   hex) of its whole value (both `''` unless a string); `permits` how
///   many members KEYS\[7\] has (`0` unless a zset).
///   Read by [`ForceUnlocked`].
/// * Unless peeking or refused (a key that is no lock with `lock`): a
///   deleted key is announced with the unlock message on KEYS\[2\] (plain
///   and string-layout waiters), and with `1` (Redisson's "wake every
///   waiter") on KEYS\[5\] when the hash has a `mode` field (a read-write
///   lock); stale queue entries are removed (live waiters keep their
///   place), and if the lock is then free the head waiter is woken on its
///   own channel, as a fair release does. The fencing counter is left
///   alone, so tokens keep increasing.
pub(crate) fn force_unlock(
    name: &str,
    removal: Removal,
    publish: Publish,
    expect: Option<&LockState>,
) -> ScriptCall {
    let mut call = ScriptCall::new(
        &FORCE_UNLOCK,
        (
            name,
            layout::channel(name),
            layout::queue_key(name),
            layout::timeout_key(name),
            layout::rwlock_channel(name),
            layout::token_key(name),
            layout::permits_key(name),
        ),
    )
    .arg(UNLOCK_MESSAGE)
    .arg(match removal {
        Removal::Peek => "peek",
        Removal::Lock => "lock",
        Removal::Any => "any",
    })
    .arg(publish.command());
    if let Some(seen) = expect {
        call = call
            .arg("expect")
            .arg(&seen.key_type)
            .arg(seen.value_sha1.as_deref().unwrap_or_default());
        for holder in &seen.holders {
            call = call.arg(&holder.field);
        }
        if seen.mode.is_some() {
            call = call.arg("mode");
        }
    }
    call
}

/// A forced unlock's reply, as the lock state it describes (named by the
/// caller, who knows the name).
pub(crate) struct ForceUnlocked(pub(crate) LockState);

impl FromRedisValue for ForceUnlocked {
    fn from_redis_value(v: Value) -> Result<ForceUnlocked, ParsingError> {
        let values: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let [
            kind,
            fields,
            pttl,
            removed,
            queue,
            changed,
            token,
            now,
            queued,
            value,
            digest,
            permits,
        ] = <[Value; 12]>::try_from(values)
            .map_err(|_| ParsingError::from("force_unlock answered the wrong number of values"))?;
        let key_type: String = FromRedisValue::from_redis_value(kind)?;
        let fields: Vec<String> = FromRedisValue::from_redis_value(fields)?;
        let queue: Vec<String> = FromRedisValue::from_redis_value(queue)?;
        let token: String = FromRedisValue::from_redis_value(token)?;
        let value: Vec<u8> = FromRedisValue::from_redis_value(value)?;
        let digest: String = FromRedisValue::from_redis_value(digest)?;
        let int = |v: Value| i64::from_redis_value(v);
        let (pttl_ms, removed, changed) = (int(pttl)?, int(removed)?, int(changed)?);
        let mut holders = Vec::new();
        let mut mode = None;
        for pair in fields.chunks_exact(2) {
            if pair[0] == "mode" {
                mode = Some(pair[1].clone());
            } else {
                holders.push(Holder::new(&pair[0], &pair[1]));
            }
        }
        let waiters = queue.chunks_exact(3).map(|entry| Waiter {
            owner: entry[0].clone(),
            deadline_ms: entry[1].parse().ok(),
            stale: entry[2] == "1",
        });
        let string = key_type == "string";
        Ok(ForceUnlocked(LockState {
            name: String::new(),
            field_count: (fields.len() / 2) as u64,
            key_type,
            holders,
            mode,
            pttl_ms,
            fencing_token: token.parse().ok(),
            server_time_us: int(now)?.max(0) as u64,
            removed: removed == 1,
            changed: changed == 1,
            waiters: waiters.collect(),
            queue_len: int(queued)?.max(0) as u64,
            value: string.then(|| layout::escape_value(&value)),
            value_sha1: string.then_some(digest),
            permits_len: int(permits)?.max(0) as u64,
            ..LockState::absent(String::new())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn force_unlock_packs_keys_message_and_removal() {
        let (keys, args) = packed(&force_unlock("a", Removal::Lock, Publish::Plain, None));
        assert_eq!(
            keys,
            [
                "a",
                "redisson_lock__channel:{a}",
                "redisson_lock_queue:{a}",
                "redisson_lock_timeout:{a}",
                "redisson_rwlock:{a}",
                "redisson_lock_token:{a}",
                "{a}:timeout"
            ]
        );
        assert_eq!(args, ["0", "lock", "publish"]);
        let (_, args) = packed(&force_unlock("a", Removal::Peek, Publish::Sharded, None));
        assert_eq!(args, ["0", "peek", "spublish"]);
    }

    #[test]
    fn force_unlock_expects_the_fields_it_was_shown() {
        let seen = LockState {
            key_type: "hash".into(),
            holders: vec![Holder::new("u:1", "1")],
            field_count: 2,
            mode: Some("read".into()),
            pttl_ms: 5,
            ..LockState::absent("a")
        };
        let (_, args) = packed(&force_unlock(
            "a",
            Removal::Any,
            Publish::Plain,
            Some(&seen),
        ));
        assert_eq!(
            args,
            ["0", "any", "publish", "expect", "hash", "", "u:1", "mode"]
        );
    }

    #[test]
    fn force_unlock_expects_the_string_it_was_shown() {
        let mut seen = LockState {
            key_type: "string".into(),
            value: Some("u:1".into()),
            value_sha1: Some("ab12".into()),
            ..LockState::absent("a")
        };
        let (_, args) = packed(&force_unlock(
            "a",
            Removal::Lock,
            Publish::Plain,
            Some(&seen),
        ));
        assert_eq!(args, ["0", "lock", "publish", "expect", "string", "ab12"]);
        // Read without its digest: an empty one, which no string matches.
        seen.value_sha1 = None;
        let (_, args) = packed(&force_unlock(
            "a",
            Removal::Lock,
            Publish::Plain,
            Some(&seen),
        ));
        assert_eq!(args, ["0", "lock", "publish", "expect", "string", ""]);
    }

    #[test]
    fn reply_reads_a_string_locks_owner_and_digest() {
        let s = |t: &[u8]| Value::BulkString(t.to_vec());
        let reply = Value::Array(vec![
            s(b"string"),
            Value::Array(vec![]),
            Value::Int(20_000),
            Value::Int(0),
            Value::Array(vec![]),
            Value::Int(0),
            s(b""),
            Value::Int(1_800_000_000_000_000),
            Value::Int(0),
            s(b"\xffu:1"),
            s(b"9a0f"),
            Value::Int(0),
        ]);
        let ForceUnlocked(state) = ForceUnlocked::from_redis_value(reply).unwrap();
        assert_eq!(state.kind(), layout::StateKind::StringLock);
        assert!(state.is_lock());
        assert_eq!(state.string_owner(), Some("\\xffu:1"));
        assert_eq!(state.value_sha1.as_deref(), Some("9a0f"));
    }

    #[test]
    fn reply_reads_holders_mode_and_waiters() {
        let s = |t: &str| Value::BulkString(t.as_bytes().to_vec());
        let reply = Value::Array(vec![
            s("hash"),
            Value::Array(vec![s("mode"), s("read"), s("u:1"), s("2")]),
            Value::Int(900),
            Value::Int(1),
            Value::Array(vec![s("w:1"), s("12.5"), s("0"), s("w:2"), s(""), s("1")]),
            Value::Int(0),
            s("1700000000000000"),
            Value::Int(1_800_000_000_000_000),
            Value::Int(1),
            s(""),
            s(""),
            Value::Int(0),
        ]);
        let ForceUnlocked(state) = ForceUnlocked::from_redis_value(reply).unwrap();
        assert_eq!(state.mode.as_deref(), Some("read"));
        assert_eq!(state.holders.len(), 1);
        assert_eq!(state.holders[0].count(), Some(2));
        assert_eq!(state.pttl_ms, 900);
        assert!(state.removed && !state.changed);
        assert_eq!(state.waiters[0].deadline_ms, Some(12.5));
        assert!(!state.waiters[0].stale);
        assert_eq!(state.waiters[1].deadline_ms, None);
        assert!(state.waiters[1].stale);
        assert_eq!(state.fencing_token, Some(1_700_000_000_000_000));
        assert_eq!(state.server_time_us, 1_800_000_000_000_000);
        assert_eq!((state.field_count, state.queue_len), (2, 1));
    }
}
