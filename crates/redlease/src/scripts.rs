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

/// Acquire or re-enter.
///
/// * KEYS\[1\]: the lock key.
/// * ARGV\[1\]: the lease in milliseconds; ARGV\[2\]: the owner field.
/// * Returns nil when acquired (the field's count went up by one and the key's
///   expiry is now the lease), otherwise the key's `PTTL` in milliseconds
///   (`-1` if someone removed the expiry).
/// * Raises `WRONGTYPE` when the key holds something other than a hash.
///
/// Same semantics as Redisson's `RedissonLock.tryLockInnerAsync`, so an owner
/// that re-enters (same field) is counted the same way on both sides.
pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_SRC));
const ACQUIRE_SRC: &str = r"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
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
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_SRC));
const RELEASE_SRC: &str = r"
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
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
pub(crate) static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(RENEW_SRC));
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

/// Every script the crate runs, as `(name, sha1, source)`, for operators who
/// pre-load or allow-list scripts and for benchmarks that replay them.
pub fn lua_scripts() -> [(&'static str, &'static str, &'static str); 3] {
    fn describe(
        name: &'static str,
        script: &'static LazyLock<Script>,
        source: &'static str,
    ) -> (&'static str, &'static str, &'static str) {
        (name, LazyLock::force(script).get_hash(), source)
    }
    [
        describe("acquire", &ACQUIRE, ACQUIRE_SRC),
        describe("release", &RELEASE, RELEASE_SRC),
        describe("renew", &RENEW, RENEW_SRC),
    ]
}

/// The message Redisson publishes on a lock's channel when it is released
/// (`LockPubSub.UNLOCK_MESSAGE`).
pub(crate) const UNLOCK_MESSAGE: i64 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_have_distinct_hashes() {
        let hashes = [ACQUIRE.get_hash(), RELEASE.get_hash(), RENEW.get_hash()];
        assert_ne!(hashes[0], hashes[1]);
        assert_ne!(hashes[1], hashes[2]);
        assert_eq!(hashes[0].len(), 40);
    }
}
