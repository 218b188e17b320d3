//! The fair lock's scripts: Redisson's `RFairLock` queue
//! ([`layout::queue_key`], a list of owner fields) and waiter deadlines
//! ([`layout::timeout_key`], a zset), on the same lock hash as the plain
//! lock.
//!
//! A zset score is the time after which its waiter counts as dead. The two
//! sides keep it by different rules, which must cancel whatever mix of
//! waiters is queued (#36; DESIGN.md has the whole account):
//!
//! * Redisson scores a waiter at the previous waiter's score plus its own
//!   wait, and subtracts its own wait from every score when it takes the
//!   lock (from those behind it when it gives up): what it added, it takes
//!   back.
//! * redlease scores a waiter at a liveness lease from now, which it
//!   refreshes while it waits, plus Redisson's wait for each Redisson
//!   waiter ahead of it (each of those subtracts its wait when it leaves).
//!   Its own score holds no wait of its own, so it subtracts nothing when
//!   it leaves: a Java waiter behind it keeps its whole wait.
//!
//! A script tells the two apart by the owner field: redlease's client ids
//! are UUIDs of version 8, Redisson's of version 4 ([`REDLEASE_OWNER`]).

use std::sync::LazyLock;

use super::lock::{FENCE, RELEASE_HOLD};
use super::{Fencing, Latch, Lua, NOW_MS, ScriptCall, UNLOCK_MESSAGE};
use crate::connection::Publish;
use crate::layout::{self, Prefixed};

/// The wait Redisson's `RFairLock` adds to a waiter's deadline and
/// subtracts from every deadline when that waiter takes the lock: its
/// `fairLockWaitTimeout`, 5 minutes by default (what Java's `lock()`
/// uses), and the default of
/// [`ClientBuilder::redisson_fair_wait`](crate::ClientBuilder::redisson_fair_wait).
pub(crate) const REDISSON_FAIR_WAIT_MS: u64 = 300_000;

/// Shared by the fair-lock scripts: the removal of dead waiters from the
/// head of the queue (KEYS\[2\] the queue list, KEYS\[3\] the deadline
/// zset), after [`NOW_MS`]. A waiter whose deadline has passed stopped
/// refreshing it (it died or lost its connection), or, for Redisson's,
/// waited longer than its wait.
pub(super) const PRUNE: &str = r"
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then break end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline ~= false and tonumber(deadline) > now then break end
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], head)
end
";

/// Shared by the fair-lock scripts: whether an owner field is redlease's.
/// Fields are `<client-id>:<n>`, and a redlease client's id is a UUID of
/// version 8 (RFC 9562's vendor-specific version; the 15th character),
/// where Redisson's `UUID.randomUUID()` is of version 4. A field of any
/// other shape counts as Redisson's, whose accounting is the cautious one
/// here: a redlease waiter behind it counts Redisson's wait for it.
const REDLEASE_OWNER: &str = r"
local function redlease_owner(field)
    return string.byte(field, 37) == 58 and string.sub(field, 15, 15) == '8'
end
";

pub(super) static ACQUIRE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        "fair_acquire",
        &[NOW_MS, PRUNE, REDLEASE_OWNER, FENCE, ACQUIRE_SRC],
    )
});
const ACQUIRE_SRC: &str = r"
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (head == false or head == ARGV[2]) then
    local token = fence(KEYS[4], ARGV[7])
    if head ~= false then
        -- Our deadline held no wait of ours, so no deadline behind us holds
        -- one to take back (Redisson's acquire takes back its own here).
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
    -- Alive for a queue lease, plus Redisson's wait for each Redisson
    -- waiter ahead: each of them subtracts its wait from our deadline when
    -- it takes the lock. redlease waiters ahead subtract nothing.
    local redisson_ahead = 0
    for _, waiter in ipairs(redis.call('lrange', KEYS[2], 0, -1)) do
        if waiter == ARGV[2] then break end
        if not redlease_owner(waiter) then
            redisson_ahead = redisson_ahead + 1
        end
    end
    local deadline = now + tonumber(ARGV[3]) + redisson_ahead * tonumber(ARGV[9])
    if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
        redis.call('rpush', KEYS[2], ARGV[2])
    end
    head = redis.call('lindex', KEYS[2], 0)
    if redis.call('exists', KEYS[1]) == 0 and head ~= false and head ~= ARGV[2] then
        redis.call(ARGV[8], ARGV[4] .. ':' .. head, ARGV[6])
    end
end
return {0, redis.call('pttl', KEYS[1])}
";

/// A call of `script` with the four keys every fair script takes, in
/// order: the lock, its queue, its waiter deadlines and (used by acquire
/// only) its fencing counter.
fn call(script: &'static LazyLock<Lua>, name: &str) -> ScriptCall {
    let keys = (
        name,
        layout::queue_key(name),
        layout::timeout_key(name),
        Prefixed::token_key(name),
    );
    ScriptCall::new(script, keys)
}

/// Fair acquire: take the lock in queue order, or (with `enqueue`) join or
/// refresh the queue.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its queue; KEYS\[3\]: its waiter
///   deadlines; KEYS\[4\]: its fencing counter.
/// * ARGV\[1\]: the lease in ms; ARGV\[2\]: the owner field; ARGV\[3\]: the
///   queue lease in ms (a waiter must call again within it to stay queued);
///   ARGV\[4\]: the release channel, to which `:<waiter>` is appended;
///   ARGV\[5\]: `1` to join the queue when not acquired, `0` for a single
///   try that leaves no trace; ARGV\[6\]: the unlock message; ARGV\[7\]:
///   the fencing counter's time to live in milliseconds (`0`: none, `-1`:
///   no token, as for [`acquire`](super::lock::acquire)); ARGV\[8\]: the
///   publish command (`publish` or `spublish`); ARGV\[9\]: Redisson's wait
///   per place in the queue (its `fairLockWaitTimeout`,
///   [`REDISSON_FAIR_WAIT_MS`] by default).
/// * Dead waiters are first dropped from the head of the queue. The lock is
///   taken when it is free and the queue is empty or starts with this owner
///   (which then leaves the queue), or re-entered when this owner holds it:
///   returns `{1, token}` as the plain acquire. Otherwise, with ARGV\[5\] =
///   `1`, the owner is appended to the queue (or, if queued, its deadline
///   refreshed) with deadline now + ARGV\[3\] + ARGV\[9\] per Redisson
///   waiter ahead of it, and, if the lock is free, the head waiter is woken
///   on its own channel. Taking the lock from the head changes no other
///   waiter's deadline (see the module's documentation). Returns
///   `{0, pttl}` with the lock's `PTTL` (`-2` when free but it is someone
///   else's turn). Read by [`Acquired`](super::lock::Acquired).
// One parameter per ARGV the caller chooses, in the contract's order: a
// struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn acquire(
    name: &str,
    lease_ms: u64,
    field: &str,
    queue_lease_ms: u64,
    enqueue: bool,
    fencing: Fencing,
    publish: Publish,
    redisson_wait_ms: u64,
) -> ScriptCall {
    call(&ACQUIRE, name)
        .arg(lease_ms)
        .arg(field)
        .arg(queue_lease_ms)
        .arg(Prefixed::channel(name))
        .arg(u8::from(enqueue))
        .arg(UNLOCK_MESSAGE)
        .arg(fencing.arg())
        .arg(publish.command())
        .arg(redisson_wait_ms)
}

pub(super) static RELEASE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::latched(
        "fair_release",
        4,
        &[NOW_MS, PRUNE, RELEASE_HOLD, RELEASE_SRC],
    )
});
const RELEASE_SRC: &str = r"
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call(ARGV[5], ARGV[4] .. ':' .. head, ARGV[1])
end
return 1
";

/// Fair release: owner-checked, and the next waiter is woken directly.
///
/// * KEYS as [`acquire`]; ARGV\[1\]: the unlock message; ARGV\[2\]: the
///   lease in ms to restore when holds remain; ARGV\[3\]: the owner field;
///   ARGV\[4\]: the release channel; ARGV\[5\]: the publish command.
/// * Returns as the plain release: nil when not ours, `0` when holds remain,
///   `1` when the key was deleted; then the unlock message goes to the
///   channel of the queue's head (after dropping dead waiters), as in
///   Redisson. Read by [`Released`](super::lock::Released).
/// * With a [`Latch`]: KEYS\[5\] and a last ARGV, as the plain release's.
pub(crate) fn release(
    name: &str,
    lease_ms: u64,
    field: &str,
    publish: Publish,
    latch: Option<Latch<'_>>,
) -> ScriptCall {
    let keys = (
        name,
        layout::queue_key(name),
        layout::timeout_key(name),
        Prefixed::token_key(name),
        Latch::key(latch, name),
    );
    ScriptCall::new(&RELEASE, keys)
        .arg(UNLOCK_MESSAGE)
        .arg(lease_ms)
        .arg(field)
        .arg(Prefixed::channel(name))
        .arg(publish.command())
        .arg(Latch::ttl(latch))
}

pub(super) static ABANDON: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("fair_abandon", &[NOW_MS, PRUNE, ABANDON_SRC]));
const ABANDON_SRC: &str = r"
redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
if redis.pcall('hexists', KEYS[1], ARGV[1]) == 1 then
    if redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then
        redis.call('del', KEYS[1])
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[4], ARGV[2] .. ':' .. head, ARGV[3])
    end
end
return 1
";

/// Fair abandon: a waiter that gives up, or an acquire whose outcome is
/// unknown, leaves no trace.
///
/// * KEYS as [`acquire`]; ARGV\[1\]: the owner field; ARGV\[2\]: the
///   release channel prefix; ARGV\[3\]: the unlock message; ARGV\[4\]: the
///   publish command.
/// * Removes the owner from the queue and the zset, releases one hold of the
///   lock if the owner has it (a key of another type is left alone), and if
///   the lock is then free wakes the head waiter. Returns `1`. No other
///   deadline changes: ours held no wait to take back from those behind
///   (Redisson's `acquireFailed` takes back its own).
pub(crate) fn abandon(name: &str, field: &str, publish: Publish) -> ScriptCall {
    call(&ABANDON, name)
        .arg(field)
        .arg(Prefixed::channel(name))
        .arg(UNLOCK_MESSAGE)
        .arg(publish.command())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    const KEYS: [&str; 4] = [
        "a",
        "redisson_lock_queue:{a}",
        "redisson_lock_timeout:{a}",
        "redisson_lock_token:{a}",
    ];

    #[test]
    fn acquire_packs_lease_owner_queue_lease_channel_enqueue_message_ttl_wait() {
        let (keys, args) = packed(&acquire(
            "a",
            30_000,
            "u:1",
            9_000,
            true,
            Fencing::Counter { ttl_ms: 5 },
            Publish::Sharded,
            REDISSON_FAIR_WAIT_MS,
        ));
        assert_eq!(keys, KEYS);
        assert_eq!(
            args,
            [
                "30000",
                "u:1",
                "9000",
                "redisson_lock__channel:{a}",
                "1",
                "0",
                "5",
                "spublish",
                "300000"
            ]
        );
        let (_, args) = packed(&acquire(
            "a",
            30_000,
            "u:1",
            9_000,
            false,
            Fencing::Off,
            Publish::Plain,
            60_000,
        ));
        assert_eq!(args[4], "0");
        assert_eq!(args[6], "-1");
        assert_eq!(args[8], "60000");
    }

    #[test]
    fn release_packs_message_lease_owner_channel() {
        let (keys, args) = packed(&release("a", 30_000, "u:1", Publish::Plain, None));
        assert_eq!(keys, KEYS);
        assert_eq!(
            args,
            ["0", "30000", "u:1", "redisson_lock__channel:{a}", "publish"]
        );
    }

    #[test]
    fn abandon_packs_owner_channel_message() {
        let (keys, args) = packed(&abandon("a", "u:1", Publish::Sharded));
        assert_eq!(keys, KEYS);
        assert_eq!(args, ["u:1", "redisson_lock__channel:{a}", "0", "spublish"]);
    }
}
