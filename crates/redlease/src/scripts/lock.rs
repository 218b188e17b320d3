//! The exclusive lock's scripts: acquire (with its fencing token),
//! re-entry, owner-checked release and the watchdog's batched renewal.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::{Fencing, Latch, Lua, ScriptCall, UNLOCK_MESSAGE};
use crate::connection::Publish;
use crate::layout::Prefixed;

/// Shared by the acquire scripts: `fence(counter, ttl_ms)` issues the next
/// fencing token for a lock and returns it; with `ttl_ms` below zero
/// (fencing off, [`Fencing::Off`](super::Fencing::Off)) it returns `0` and
/// touches no key (#28: a service that never reads a token should not pay
/// an `INCR` and a key per name).
///
/// The common case is one `INCR` of the counter (#17: the clock-based
/// version read `TIME`, `GET` and wrote `SET ... PX` on every acquire, a
/// third of the acquire script's cost in Redis). The counter starts from the
/// server's clock in microseconds: when `INCR` answers a value below
/// 10^15 (the clock passed it in 2001), the counter was missing (expired,
/// or Redis restarted empty) or was restarted from 1 (by Redisson's
/// `RFencedLock`, whose `INCR` on a missing counter starts there), so the
/// token is the clock instead, and the counter is set to it with the given
/// time to live (none when it is `0`). Tokens therefore keep increasing
/// across a lost counter, provided the server's clock did not step back
/// and fewer than one token per microsecond was issued for the name on
/// average while the counter lived (far from reach: one lock hand-off takes
/// several round trips).
///
/// `INCR` keeps the counter's time to live, so a counter lives `ttl_ms`
/// from its start however busy the name, and an idle name leaves no key
/// behind for longer. With `0` (a deployment where Redisson's
/// `RFencedLock` also takes tokens, whose `INCR` never sets a time to live)
/// the counter must never expire under Java's feet, so each token also
/// removes any time to live it had (`PERSIST`). An `INCR` by `RFencedLock`
/// stays in the same sequence.
///
/// Tokens stay below 2^53 (the year 2255 in microseconds), so Lua's double
/// numbers hold them exactly; a counter at 2^53 - 1 or above is an error
/// (after the `INCR`: the counter moved, the lock is untouched). `%.0f`
/// writes them without an exponent. Call it before writing anything: its
/// errors (a counter of the wrong type or not an integer) must leave the
/// lock untouched.
pub(super) const FENCE: &str = r"
local function fence(counter, ttl)
    if tonumber(ttl) < 0 then
        return 0
    end
    local token = redis.pcall('incr', counter)
    if type(token) == 'table' then
        -- Only a value that is no integer is ours to name; WRONGTYPE,
        -- READONLY, NOPERM and the rest go up as Redis raised them.
        if string.find(token.err, 'not an integer', 1, true) == nil then
            error(token)
        end
        error({err = 'ERR fencing token counter ' .. counter .. ' does not hold an integer'})
    end
    if token >= 9007199254740991 then
        error({err = 'ERR fencing token counter ' .. counter .. ' is at 2^53 - 1 or above'})
    end
    if token < 1000000000000000 then
        local clock = redis.call('time')
        token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
        if tonumber(ttl) > 0 then
            redis.call('set', counter, string.format('%.0f', token), 'px', ttl)
        else
            redis.call('set', counter, string.format('%.0f', token))
        end
    elseif tonumber(ttl) == 0 then
        redis.call('persist', counter)
    end
    return token
end
";

pub(super) static ACQUIRE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("acquire", &[FENCE, ACQUIRE_SRC]));
const ACQUIRE_SRC: &str = r"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = fence(KEYS[2], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
";

/// Acquire or re-enter lock `name` for owner `field`, and issue a fencing
/// token.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: the fencing counter,
///   [`layout::token_key`](crate::layout::token_key).
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the owner field;
///   ARGV\[3\]: the counter's time to live in milliseconds, `0` for none
///   (the counter is then kept for ever, and a time to live it had is
///   removed), `-1` for no token at all (fencing off: the counter is not
///   touched).
/// * Returns `{1, token}` when acquired (the field's count went up by one,
///   the key's expiry is now the lease, and `token` is the new fencing
///   token, or `0` with fencing off), otherwise `{0, pttl}` with the key's
///   `PTTL` in milliseconds (`-1` if someone removed the expiry).
/// * Raises `WRONGTYPE` when the lock key holds something other than a hash
///   or the counter something other than a string, and an error when the
///   counter is not an integer; nothing is written then.
///
/// Same semantics as Redisson's `RedissonLock.tryLockInnerAsync`, so an owner
/// that re-enters (same field) is counted the same way on both sides; as in
/// Redisson's `RFencedLock`, a re-entry also gets a new token.
///
/// # Examples
///
/// ```
/// let call = redlease::scripts::acquire("orders:1", 30_000, "2b1c7f9e:1", 0);
/// assert_eq!(call.keys()[..], [b"orders:1".to_vec(), b"redisson_lock_token:{orders:1}".to_vec()]);
/// assert_eq!(call.args()[..], [b"30000".to_vec(), b"2b1c7f9e:1".to_vec(), b"0".to_vec()]);
/// ```
pub fn acquire(name: &str, lease_ms: u64, field: &str, fencing_ttl_ms: u64) -> ScriptCall {
    let fencing = Fencing::Counter {
        ttl_ms: fencing_ttl_ms,
    };
    acquire_with(name, lease_ms, field, fencing)
}

/// [`acquire`], with fencing on or off.
pub(crate) fn acquire_with(name: &str, lease_ms: u64, field: &str, fencing: Fencing) -> ScriptCall {
    ScriptCall::new(&ACQUIRE, (name, Prefixed::token_key(name)))
        .arg(lease_ms)
        .arg(field)
        .arg(fencing.arg())
}

pub(super) static SEED: LazyLock<Lua> = LazyLock::new(|| Lua::new("seed", &[SEED_SRC]));
const SEED_SRC: &str = r"
local current = redis.pcall('get', KEYS[1])
if type(current) == 'table' then
    return 0
end
local value = tonumber(current or '0')
if value == nil or value >= 1000000000000000 then
    return 0
end
local clock = redis.call('time')
local token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
if tonumber(ARGV[1]) > 0 then
    redis.call('set', KEYS[1], string.format('%.0f', token), 'px', ARGV[1])
else
    redis.call('set', KEYS[1], string.format('%.0f', token))
end
return 1
";

/// Seed lock `name`'s fencing counter from the server's clock, as
/// [`FENCE`] does when it finds the counter lost, without issuing a token:
/// after Redis restarted empty, so that the next token anyone issues
/// (Redisson's `RFencedLock` counts by `INCR` alone) is above every token
/// issued before the restart (#37).
///
/// * KEYS\[1\]: the fencing counter, [`layout::token_key`](crate::layout::token_key).
/// * ARGV\[1\]: the counter's time to live in milliseconds, `0` for none.
/// * Returns `1` when it seeded the counter (missing, or an integer below
///   10^15), `0` when it left it (seeded already, or not an integer, or a
///   key of another type: an acquire names those).
pub(crate) fn seed(name: &str, fencing_ttl_ms: u64) -> ScriptCall {
    ScriptCall::new(&SEED, Prefixed::token_key(name)).arg(fencing_ttl_ms)
}

/// What an acquire script answered; the reply of [`acquire`] and of the
/// fair lock's acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Acquired {
    /// Acquired, with this fencing token (`None`: fencing is off).
    Granted(Option<u64>),
    /// Held by someone else, with this much time to live (`None`: the key
    /// has no expiry, or is free but it is another fair waiter's turn).
    Busy(Option<Duration>),
}

impl FromRedisValue for Acquired {
    fn from_redis_value(v: Value) -> Result<Acquired, ParsingError> {
        let (flag, n): (i64, i64) = FromRedisValue::from_redis_value(v)?;
        Ok(match flag {
            1 => Acquired::Granted(super::token(n)),
            _ => Acquired::Busy(u64::try_from(n).ok().map(Duration::from_millis)),
        })
    }
}

pub(super) static REENTER: LazyLock<Lua> = LazyLock::new(|| Lua::new("reenter", &[REENTER_SRC]));
const REENTER_SRC: &str = r"
if redis.pcall('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
";

/// Re-entry of a hold that an owner scope has (see `scope.rs`).
///
/// * KEYS\[1\]: the lock key.
/// * ARGV\[1\]: the hold's lease in milliseconds; ARGV\[2\]: its owner field.
/// * Returns `1` when the field was present: its count went up by one and
///   the key's expiry is the lease again. Returns `0` when it was not (the
///   hold expired or was taken over, or the key now holds a non-hash
///   value): nothing is written, so a hold that is gone is never revived
///   under the old guards' shared field.
///
/// No new fencing token: the owner is the same, and its guards share the
/// first acquisition's token.
pub(crate) fn reenter(name: &str, lease_ms: u64, field: &str) -> ScriptCall {
    ScriptCall::new(&REENTER, name).arg(lease_ms).arg(field)
}

pub(super) static KEEP: LazyLock<Lua> = LazyLock::new(|| Lua::new("keep", &[HELD, KEEP_SRC]));
const KEEP_SRC: &str = r"
if held(KEYS[1], ARGV[3]) == 1 then
    return 1
end
local found = held(KEYS[1], ARGV[2])
if found ~= 1 then
    return found
end
if redis.pcall('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hdel', KEYS[1], ARGV[2])
    redis.call('hset', KEYS[1], ARGV[3], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
else
    redis.call('set', KEYS[1], ARGV[3], 'PX', ARGV[1])
end
return 1
";

/// A release that keeps the lock until a minimum hold has passed
/// ([`LockGuard::unlock_at_least`](crate::LockGuard::unlock_at_least)): the
/// owner field is swapped for one nobody holds, which lives `ms` more.
///
/// * KEYS\[1\]: the lock key (a hash of Redisson's layout, read-write
///   lock's write side included, or a string of the string layout).
/// * ARGV\[1\]: the time left in milliseconds; ARGV\[2\]: the owner field;
///   ARGV\[3\]: the new owner, an acquisition id never handed out.
/// * Returns `1` when the field was ours (or is ARGV\[3\] already: a repeat
///   after a lost reply answers as the first call did, and changes
///   nothing): it is replaced by ARGV\[3\] (with
///   a hold count of 1 in a hash, other fields such as a write lock's
///   `mode` untouched; as the value of a string) and the key expires in
///   ARGV\[1\] ms. `0` when it was not ours (nothing is written), or
///   `HEXISTS`'s error other than `WRONGTYPE`.
///
/// Why a new owner, not a `PEXPIRE` alone: a watchdog renewal already on
/// its way, or a background release the guard's Drop sent after a lost
/// reply, is owner-checked against the old field; with the field gone, it
/// finds nothing, so the lock stays exactly the time left, neither renewed
/// to a full lease nor deleted early. Nothing is published: the lock is
/// not free yet, and waiters wake at its expiry.
pub(crate) fn keep(name: &str, ms: u64, field: &str, nobody: &str) -> ScriptCall {
    ScriptCall::new(&KEEP, name).arg(ms).arg(field).arg(nobody)
}

/// Shared by the plain and the fair release: with KEYS\[1\] the lock key,
/// ARGV\[2\] the lease and ARGV\[3\] the owner field, returns nil when the
/// field is absent or the key is no hash (the lock is not ours; a foreign
/// value is left untouched), decrements it and returns `0` when holds
/// remain, or deletes the key and falls through to the caller's
/// announcement.
///
/// One `HGET` answers both whether the field is ours and whether this is
/// the last hold, so the common release (one hold) is `HGET`, `DEL` and
/// the announcement (#17: `HEXISTS` then `HINCRBY` cost a call more).
pub(super) const RELEASE_HOLD: &str = r"
local count = redis.pcall('hget', KEYS[1], ARGV[3])
if type(count) ~= 'string' then
    return nil
end
if (tonumber(count) or 0) > 1 then
    redis.call('hincrby', KEYS[1], ARGV[3], -1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('del', KEYS[1])
";

pub(super) static RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::latched("release", 2, &[RELEASE_HOLD, RELEASE_SRC]));
const RELEASE_SRC: &str = r"
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
";

/// Owner-checked release of lock `name` by owner `field`.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its channel,
///   [`layout::channel`](crate::layout::channel).
/// * ARGV\[1\]: the unlock message (`0`); ARGV\[2\]: the lease in
///   milliseconds to restore when a re-entered hold is released but others
///   remain; ARGV\[3\]: the owner field; ARGV\[4\]: the command that
///   announces the release, `publish` (as here) or, on a cluster with
///   sharded pub/sub, `spublish` (as Redisson passes it).
/// * Returns nil when the field is absent or the key holds another type
///   (not ours: expired, released or taken over), `0` when the count went
///   down but holds remain, `1` when the key was deleted and the unlock
///   message published.
/// * With a latch (redlease's own releases, #37): KEYS\[3\],
///   the unlock latch, and a last ARGV, its time to live in ms; the answer
///   the latch holds, when it holds one. As Redisson 4's
///   `unlockInnerAsync`, so that a release sent again after a lost reply
///   takes back no other re-entered hold (#37).
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redlease::scripts::{ScriptCall, acquire, lua_scripts, release};
/// use redis::Value;
///
/// let mut redis = redlease_testkit::RedisServer::shared().connection();
/// # for (_, _, source) in lua_scripts() {
/// #     redis::cmd("SCRIPT").arg("LOAD").arg(source).query::<String>(&mut redis)?;
/// # }
/// let mut send = |call: ScriptCall| {
///     redis::cmd("EVALSHA").arg(&call.evalsha_args()[1..]).query::<Value>(&mut redis)
/// };
/// send(acquire("doc:scripts:release", 30_000, "2b1c7f9e:1", 0))?;
/// let stranger = send(release("doc:scripts:release", 30_000, "5d0a4c11:1"))?;
/// assert_eq!(stranger, Value::Nil); // not its owner: nothing changed
/// let owner = send(release("doc:scripts:release", 30_000, "2b1c7f9e:1"))?;
/// assert_eq!(owner, Value::Int(1)); // deleted, and announced
/// # Ok(())
/// # }
/// ```
pub fn release(name: &str, lease_ms: u64, field: &str) -> ScriptCall {
    release_with(name, lease_ms, field, Publish::Plain, None)
}

/// [`release`], announced with `publish`'s command, under `latch`.
pub(crate) fn release_with(
    name: &str,
    lease_ms: u64,
    field: &str,
    publish: Publish,
    latch: Option<Latch<'_>>,
) -> ScriptCall {
    let keys = (name, Prefixed::channel(name), Latch::key(latch, name));
    ScriptCall::new(&RELEASE, keys)
        .arg(UNLOCK_MESSAGE)
        .arg(lease_ms)
        .arg(field)
        .arg(publish.command())
        .arg(Latch::ttl(latch))
}

/// What a release script answered; the reply of [`release`] and of the fair
/// lock's release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Released {
    /// The hold is gone from the hash: the key was deleted, or other holds
    /// of a re-entered owner remain.
    Released,
    /// The owner field was not there: the lock is not ours.
    NotOwner,
}

impl FromRedisValue for Released {
    fn from_redis_value(v: Value) -> Result<Released, ParsingError> {
        let reply: Option<i64> = FromRedisValue::from_redis_value(v)?;
        Ok(match reply {
            Some(_) => Released::Released,
            None => Released::NotOwner,
        })
    }
}

pub(super) static RENEW: LazyLock<Lua> = LazyLock::new(|| Lua::new("renew", &[HELD, RENEW_SRC]));
const RENEW_SRC: &str = r"
local renewed = {}
for i = 1, #KEYS do
    if held(KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
";

/// Shared by the renewal scripts: `held(key, owner)` is `1` when `key` is a
/// lock hash with field `owner` (Redisson's layout) or a string holding
/// `owner` (the string layout, #17), `0` when it is neither, and the error
/// `HEXISTS` raised when that was not `WRONGTYPE` (a key the node does not
/// serve, for example). Owner fields are unique per acquisition, so a
/// string holding one is that acquisition's lock.
pub(super) const HELD: &str = r"
local function held(key, owner)
    local found = redis.pcall('hexists', key, owner)
    if type(found) == 'table' then
        if string.find(found.err, 'WRONGTYPE', 1, true) == nil then
            return found
        end
        if redis.pcall('get', key) == owner then
            return 1
        end
        return 0
    end
    return found
end
";

/// Owner-checked renewal of a batch of locks, for the watchdog:
/// `locks` are `(lock name, owner field)`.
///
/// * KEYS\[1..n\]: lock keys.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[1 + i\]: the owner field for
///   KEYS\[i\].
/// * Returns an array of n integers: `1` where the field was present (or
///   the key a string holding the owner, in the string layout) and the
///   key's expiry was reset to the lease, `0` where it was not (the lock is
///   no longer ours, or the key holds another type); read by [`Renewed`].
///
/// Check and extend happen in one script, so there is no window in which an
/// expired lock taken by someone else gets extended. `pcall` keeps one key of
/// the wrong type from failing the renewal of every other lock in the batch.
pub(crate) fn renew<'a>(
    lease_ms: u64,
    locks: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ScriptCall {
    // `EVALSHA` counts the keys before the first, so they are gathered
    // first; a watchdog batch, not the acquire's path.
    let (names, fields): (Vec<&str>, Vec<&str>) = locks.into_iter().unzip();
    ScriptCall::new(&RENEW, names).arg(lease_ms).arg(fields)
}

pub(super) static RENEW_ON_NODE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        "renew_on_node",
        &[RENEW_ON_NODE_FLAGS, HELD, RENEW_ON_NODE_SRC],
    )
});
// The flag lets one call touch keys of every slot its node serves; a key
// the node does not serve (its slot moved, or is moving) fails its `pcall`
// instead of the whole call. The flags line must open the script.
const RENEW_ON_NODE_FLAGS: &str = "#!lua flags=allow-cross-slot-keys\n";
const RENEW_ON_NODE_SRC: &str = r"
local renewed = {}
for i = 2, #ARGV, 2 do
    local found = held(ARGV[i], ARGV[i + 1])
    if type(found) == 'table' then
        renewed[#renewed + 1] = -1
    elseif found == 1 then
        redis.call('pexpire', ARGV[i], ARGV[1])
        renewed[#renewed + 1] = 1
    else
        renewed[#renewed + 1] = 0
    end
end
return renewed
";

/// Owner-checked renewal of a batch of locks of any slots served by one
/// cluster node, for the watchdog on a cluster: `locks` are `(lock name,
/// owner field)`, at least one.
///
/// * KEYS\[1\]: the first lock's key, which routes the call to its node
///   (the only key declared: declared keys must share a slot).
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2i\] and ARGV\[2i + 1\]: the
///   key and owner field of lock i (the first lock included).
/// * Returns an array of n integers, read by [`Renewed`]: `1` renewed, `0`
///   no longer ours (as [`renew`]), `-1` not renewed here: the node does
///   not serve the key's slot (it moved, or is moving), or the server
///   refused the access; the caller renews
///   those with [`renew`], which follows the slot.
///
/// Needs Redis 7 (script flags). The slot map the caller groups by may be
/// stale: that costs a second call for the keys concerned, never a wrong
/// answer, because each key is checked where the call runs.
pub(crate) fn renew_on_node<'a>(
    lease_ms: u64,
    locks: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ScriptCall {
    let pairs: Vec<(&str, &str)> = locks.into_iter().collect();
    let first = pairs.first().map(|(name, _)| *name);
    // The first name is the one key, which routes the call to its node.
    ScriptCall::new(&RENEW_ON_NODE, first.as_slice())
        .arg(lease_ms)
        .arg(pairs)
}

/// What one lock's renewal answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Still ours; its expiry was reset to the lease.
    Renewed,
    /// No longer ours: the key is gone or has another owner.
    NotOurs,
    /// Not renewed by this call ([`renew_on_node`] only): renew it again
    /// where its slot is served.
    Elsewhere,
}

/// What a renewal answered for each lock of the batch, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Renewed(pub(crate) Vec<Renewal>);

impl FromRedisValue for Renewed {
    fn from_redis_value(v: Value) -> Result<Renewed, ParsingError> {
        let flags: Vec<i64> = FromRedisValue::from_redis_value(v)?;
        flags
            .into_iter()
            .map(|f| match f {
                1 => Ok(Renewal::Renewed),
                0 => Ok(Renewal::NotOurs),
                -1 => Ok(Renewal::Elsewhere),
                other => Err(format!("unexpected renewal result {other}").into()),
            })
            .collect::<Result<_, _>>()
            .map(Renewed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    fn int(n: i64) -> Value {
        Value::Int(n)
    }

    #[test]
    fn acquire_packs_key_counter_lease_owner_ttl() {
        let (keys, args) = packed(&acquire("orders:1", 30_000, "u:7", 86_400_000));
        assert_eq!(keys, ["orders:1", "redisson_lock_token:{orders:1}"]);
        assert_eq!(args, ["30000", "u:7", "86400000"]);
    }

    #[test]
    fn acquired_reads_grant_and_busy() {
        let decode = |a, b| Acquired::from_redis_value(Value::Array(vec![int(a), int(b)]));
        assert_eq!(decode(1, 42), Ok(Acquired::Granted(Some(42))));
        // Fencing off: the script answers the token 0.
        assert_eq!(decode(1, 0), Ok(Acquired::Granted(None)));
        assert_eq!(
            decode(0, 1500),
            Ok(Acquired::Busy(Some(Duration::from_millis(1500))))
        );
        assert_eq!(decode(0, -1), Ok(Acquired::Busy(None)));
        assert!(Acquired::from_redis_value(Value::Nil).is_err());
    }

    #[test]
    fn reenter_packs_key_lease_owner() {
        let (keys, args) = packed(&reenter("{a}:b", 500, "u:1"));
        assert_eq!(keys, ["{a}:b"]);
        assert_eq!(args, ["500", "u:1"]);
    }

    #[test]
    fn release_packs_key_channel_message_lease_owner() {
        let (keys, args) = packed(&release("orders:1", 30_000, "u:7"));
        assert_eq!(keys, ["orders:1", "redisson_lock__channel:{orders:1}"]);
        assert_eq!(args, ["0", "30000", "u:7", "publish"]);
        let (_, args) = packed(&release_with(
            "orders:1",
            30_000,
            "u:7",
            Publish::Sharded,
            None,
        ));
        assert_eq!(args[3], "spublish");
    }

    #[test]
    fn released_reads_nil_as_not_owner() {
        assert_eq!(
            Released::from_redis_value(Value::Nil),
            Ok(Released::NotOwner)
        );
        assert_eq!(Released::from_redis_value(int(0)), Ok(Released::Released));
        assert_eq!(Released::from_redis_value(int(1)), Ok(Released::Released));
    }

    #[test]
    fn renew_packs_one_key_and_owner_per_lock() {
        let (keys, args) = packed(&renew(10, [("a", "u:1"), ("b", "u:2")]));
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(args, ["10", "u:1", "u:2"]);
        let renewed = Renewed::from_redis_value(Value::Array(vec![int(1), int(0)]));
        assert_eq!(
            renewed,
            Ok(Renewed(vec![Renewal::Renewed, Renewal::NotOurs]))
        );
    }

    #[test]
    fn renew_on_node_routes_by_the_first_key_and_packs_every_lock_in_argv() {
        let (keys, args) = packed(&renew_on_node(10, [("a", "u:1"), ("b", "u:2")]));
        assert_eq!(keys, ["a"]);
        assert_eq!(args, ["10", "a", "u:1", "b", "u:2"]);
        let renewed = Renewed::from_redis_value(Value::Array(vec![int(-1), int(1)]));
        assert_eq!(
            renewed,
            Ok(Renewed(vec![Renewal::Elsewhere, Renewal::Renewed]))
        );
        assert!(Renewed::from_redis_value(Value::Array(vec![int(2)])).is_err());
    }
}
