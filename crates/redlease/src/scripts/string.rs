//! The string layout's calls (#17): a lock is a string key holding its
//! owner's value, as the first design note's own lock, redis-py's `Lock`,
//! rslock, redsync and node-redlock keep it, so that a lock taken by any of
//! them and one taken by redlease exclude each other.
//!
//! * Acquire: `SET key owner NX PX lease` with the fencing counter's `INCR`
//!   in one `MULTI`/`EXEC` transaction: atomic like a script, at about two
//!   thirds of a script's cost in Redis (#17's profile); a refusal then asks
//!   the key's `PTTL`, for waiters.
//!   A counter that `INCR` finds missing is started from the clock by
//!   [`FENCE`](super::lock::FENCE) in a script of its own, once per
//!   counter's life, while the lock is held.
//! * Release and extension are owner-checked: with the server's own
//!   commands where it has them (Valkey 9: `DELIFEQ`; Redis 8.4:
//!   `DELEX ... IFEQ`; both: `SET ... IFEQ ... PX`), found once per
//!   connection with `COMMAND INFO` (not by version: Valkey 9 reports
//!   7.2.4), and the scripts below elsewhere. A release also announces
//!   itself on [`layout::channel`], so that our waiters wake at once;
//!   waiters of peers that do not announce are bounded by the key's `PTTL`.
//! * The watchdog renews string holds with the lock's renewal scripts
//!   ([`super::lock::renew`]), which take a string key holding the owner as
//!   held.
//!
//! Each call is described by a [`StringCall`]; [`run`] picks its form on
//! the connection it goes out on and answers in the shape the Redisson
//! layout's script of the same role answers, so the lock's decoders
//! ([`Acquired`](super::lock::Acquired), [`Released`](super::lock::Released),
//! [`Renewed`](super::lock::Renewed)) read both.

use std::sync::LazyLock;

use redis::{ErrorKind, RedisError, Value};

use super::lock::FENCE;
use super::{Lua, ScriptCall, UNLOCK_MESSAGE};
use crate::connection::{Connection, Natives, Publish};
use crate::layout;

/// A token `INCR` answers below this came from a counter that was missing
/// (or restarted by Redisson): see [`FENCE`](super::lock::FENCE).
const CLOCK_FLOOR: i64 = 1_000_000_000_000_000;
/// Tokens stay below 2^53 - 1, as [`FENCE`](super::lock::FENCE) keeps them.
const TOKEN_CEILING: i64 = 9_007_199_254_740_991;

/// One call of the string layout, before the connection picks its form.
#[derive(Debug)]
pub(crate) enum StringCall {
    /// Take `key` for `owner` for `lease_ms`, with a fencing token from
    /// `counter` (time to live `fencing_ttl_ms`, `0` for none). Answers as
    /// the lock's acquire script: `{1, token}` or `{0, pttl}`.
    Acquire {
        key: String,
        counter: String,
        owner: String,
        lease_ms: u64,
        fencing_ttl_ms: u64,
    },
    /// Delete `key` if it holds `owner`, and announce the release on
    /// `channel`. Answers as the lock's release script: `1`, or nil when
    /// the key did not hold `owner`.
    Release {
        key: String,
        channel: String,
        owner: String,
        publish: Publish,
    },
    /// Set `key`'s expiry to `lease_ms` from now if it holds `owner`.
    /// Answers as the lock's renewal script for one lock: `{1}` or `{0}`.
    Extend {
        key: String,
        owner: String,
        lease_ms: u64,
    },
}

/// Take lock `name` for `owner`; see [`StringCall::Acquire`].
pub(crate) fn acquire(name: &str, lease_ms: u64, owner: &str, fencing_ttl_ms: u64) -> StringCall {
    StringCall::Acquire {
        key: name.to_owned(),
        counter: layout::token_key(name),
        owner: owner.to_owned(),
        lease_ms,
        fencing_ttl_ms,
    }
}

/// Release lock `name` held by `owner`; see [`StringCall::Release`].
pub(crate) fn release(name: &str, owner: &str, publish: Publish) -> StringCall {
    StringCall::Release {
        key: name.to_owned(),
        channel: layout::channel(name),
        owner: owner.to_owned(),
        publish,
    }
}

/// Extend lock `name` held by `owner`; see [`StringCall::Extend`].
pub(crate) fn extend(name: &str, lease_ms: u64, owner: &str) -> StringCall {
    StringCall::Extend {
        key: name.to_owned(),
        owner: owner.to_owned(),
        lease_ms,
    }
}

pub(super) static RELEASE: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("string_release", &[RELEASE_SRC]));
const RELEASE_SRC: &str = r"
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then
    return nil
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[2])
return 1
";

/// Owner-checked release of a string-layout lock, where the server has no
/// compare-and-delete of its own.
///
/// * KEYS\[1\]: the lock key; KEYS\[2\]: its channel, [`layout::channel`].
/// * ARGV\[1\]: the owner's value; ARGV\[2\]: the unlock message (`0`);
///   ARGV\[3\]: `publish` or `spublish`.
/// * Returns `1` when the key held the owner's value: it was deleted and the
///   release announced. Returns nil otherwise (expired, taken over, or the
///   key holds another type, which is left untouched).
fn release_script(key: &str, channel: &str, owner: &str, publish: Publish) -> ScriptCall {
    ScriptCall::new(&RELEASE)
        .key(key)
        .key(channel)
        .arg(owner)
        .arg(UNLOCK_MESSAGE)
        .arg(publish.command())
}

pub(super) static FENCE_ONLY: LazyLock<Lua> =
    LazyLock::new(|| Lua::new("string_fence", &[FENCE, FENCE_ONLY_SRC]));
const FENCE_ONLY_SRC: &str = r"
return fence(KEYS[1], ARGV[1])
";

/// A fencing token from a counter `INCR` found missing (or restarted),
/// issued by [`FENCE`](super::lock::FENCE) while the string lock is held.
///
/// * KEYS\[1\]: the fencing counter, [`layout::token_key`].
/// * ARGV\[1\]: the counter's time to live in milliseconds, `0` for none.
/// * Returns the token; raises as `FENCE` does.
fn fence_script(counter: &str, fencing_ttl_ms: u64) -> ScriptCall {
    ScriptCall::new(&FENCE_ONLY)
        .key(counter)
        .arg(fencing_ttl_ms)
}

/// Sends `call` on `conn` in the form the server takes best, and answers
/// in the shape of the Redisson layout's script of the same role.
pub(crate) async fn run(conn: &Connection, call: &StringCall) -> Result<Value, RedisError> {
    match call {
        StringCall::Acquire {
            key,
            counter,
            owner,
            lease_ms,
            fencing_ttl_ms,
        } => acquire_now(conn, key, counter, owner, *lease_ms, *fencing_ttl_ms).await,
        StringCall::Release {
            key,
            channel,
            owner,
            publish,
        } => release_now(conn, key, channel, owner, *publish).await,
        StringCall::Extend {
            key,
            owner,
            lease_ms,
        } => extend_now(conn, key, owner, *lease_ms).await,
    }
}

async fn acquire_now(
    conn: &Connection,
    key: &str,
    counter: &str,
    owner: &str,
    lease_ms: u64,
    fencing_ttl_ms: u64,
) -> Result<Value, RedisError> {
    let mut pipe = redis::pipe();
    pipe.atomic().ignore_errors();
    pipe.cmd("SET")
        .arg(key)
        .arg(owner)
        .arg("NX")
        .arg("PX")
        .arg(lease_ms);
    pipe.cmd("INCR").arg(counter);
    if fencing_ttl_ms == 0 {
        // Redisson's `RFencedLock` shares the counter: it must not expire.
        pipe.cmd("PERSIST").arg(counter).ignore();
    }
    let mut replies = conn.query_pipe(&pipe).await?.into_iter();
    let (Some(set), Some(incr)) = (replies.next(), replies.next()) else {
        return Err(unexpected("acquire transaction", &[]));
    };
    match set {
        Value::Okay => {}
        Value::Nil => {
            // Asked only now: a `PTTL` in the transaction would cost every
            // acquire a reply more to read for what only a refusal needs.
            let ttl = conn.query::<Value>(redis::cmd("PTTL").arg(key)).await?;
            return Ok(Value::Array(vec![Value::Int(0), ttl_or_unknown(ttl)]));
        }
        Value::ServerError(e) => return Err(e.into()),
        other => return Err(unexpected("SET NX", &[other])),
    }
    // Ours from here: an error below must not leave it held. Anything but
    // a token in range (a counter that was missing, is not an integer, or
    // is at the ceiling) goes through `FENCE`, which issues the token or
    // raises exactly what the Redisson layout's acquire raises.
    let token = match incr {
        Value::Int(token) if (CLOCK_FLOOR..TOKEN_CEILING).contains(&token) => Ok(token),
        _ => {
            conn.run::<i64>(&fence_script(counter, fencing_ttl_ms))
                .await
        }
    };
    match token {
        Ok(token) => Ok(Value::Array(vec![Value::Int(1), Value::Int(token)])),
        Err(e) => {
            let channel = layout::channel(key);
            if let Err(undo) = release_now(conn, key, &channel, owner, conn.publish()).await {
                tracing::warn!(key, error = %undo, "could not release a lock whose fencing token failed; it expires after its lease");
            }
            Err(e)
        }
    }
}

/// How long a waiter sleeps before looking again at a string lock without
/// an expiry, in milliseconds: its holder may be a library that never
/// announces a release.
const NO_EXPIRY_POLL_MS: i64 = 100;

/// A refusal's `PTTL` reply as the time to sleep before the next attempt,
/// when no release message comes first: the key's time to live; `0` when
/// the key is gone already (freed since the `SET` by a holder that does not
/// announce); [`NO_EXPIRY_POLL_MS`] when it has no expiry.
fn ttl_or_unknown(ttl: Value) -> Value {
    match ttl {
        Value::Int(ms) if ms >= 0 => Value::Int(ms),
        Value::Int(-2) => Value::Int(0),
        _ => Value::Int(NO_EXPIRY_POLL_MS),
    }
}

async fn release_now(
    conn: &Connection,
    key: &str,
    channel: &str,
    owner: &str,
    publish: Publish,
) -> Result<Value, RedisError> {
    let natives = detect(conn).await;
    if natives != Natives::None {
        let mut pipe = redis::pipe();
        match natives {
            Natives::DelEx => pipe.cmd("DELEX").arg(key).arg("IFEQ").arg(owner),
            _ => pipe.cmd("DELIFEQ").arg(key).arg(owner),
        };
        // Sent with the delete, not after its reply: one round trip. A
        // refused release announces too, which only wakes a waiter to find
        // the lock still held.
        pipe.cmd(publish.command())
            .arg(channel)
            .arg(UNLOCK_MESSAGE)
            .ignore();
        match conn.query_pipe(pipe.ignore_errors()).await {
            Ok(replies) => {
                return match replies.into_iter().next() {
                    Some(Value::Int(1)) => Ok(Value::Int(1)),
                    Some(Value::Int(_)) => Ok(Value::Nil),
                    // Another type: not ours, left untouched.
                    Some(Value::ServerError(e)) if e.code() == "WRONGTYPE" => Ok(Value::Nil),
                    Some(Value::ServerError(e)) if !is_unknown_command(e.details()) => {
                        Err(e.into())
                    }
                    Some(Value::ServerError(_)) => {
                        conn.natives().set(Natives::None);
                        conn.run(&release_script(key, channel, owner, publish))
                            .await
                    }
                    other => Err(unexpected("compare-and-delete", &Vec::from_iter(other))),
                };
            }
            Err(e) if is_unknown_command(e.detail()) => conn.natives().set(Natives::None),
            Err(e) => return Err(e),
        }
    }
    conn.run(&release_script(key, channel, owner, publish))
        .await
}

async fn extend_now(
    conn: &Connection,
    key: &str,
    owner: &str,
    lease_ms: u64,
) -> Result<Value, RedisError> {
    if detect(conn).await != Natives::None {
        let cmd = redis::cmd("SET")
            .arg(key)
            .arg(owner)
            .arg("IFEQ")
            .arg(owner)
            .arg("PX")
            .arg(lease_ms)
            .to_owned();
        let renewed = |held: bool| Ok(Value::Array(vec![Value::Int(i64::from(held))]));
        match conn.query::<Value>(&cmd).await {
            Ok(Value::Okay) => return renewed(true),
            Ok(Value::Nil) => return renewed(false),
            Ok(other) => return Err(unexpected("SET IFEQ", &[other])),
            Err(e) if e.code() == Some("WRONGTYPE") => return renewed(false),
            Err(e) if is_unknown_command(e.detail()) || e.code() == Some("ERR") => {
                // A server without `IFEQ` reads it as a syntax error.
                conn.natives().set(Natives::None);
            }
            Err(e) => return Err(e),
        }
    }
    conn.run(&super::lock::renew(lease_ms, [(key, owner)]))
        .await
}

/// The server's compare-and-delete, found with `COMMAND INFO` on the
/// connection's first string-layout call and remembered on it.
async fn detect(conn: &Connection) -> Natives {
    let known = conn.natives().get();
    if known != Natives::Unknown {
        return known;
    }
    let reply = conn
        .query::<Vec<Value>>(
            redis::cmd("COMMAND")
                .arg("INFO")
                .arg("DELIFEQ")
                .arg("DELEX"),
        )
        .await;
    let found = match reply.as_deref() {
        Ok([delifeq, _]) if *delifeq != Value::Nil => Natives::DelIfEq,
        Ok([_, delex]) if *delex != Value::Nil => Natives::DelEx,
        Ok(_) => Natives::None,
        // A server that refuses `COMMAND` (an ACL user without it) gets
        // the scripts, which every server runs.
        Err(e) => {
            tracing::debug!(error = %e, "COMMAND INFO failed; string locks use scripts");
            Natives::None
        }
    };
    conn.natives().set(found);
    found
}

fn is_unknown_command(detail: Option<&str>) -> bool {
    detail.is_some_and(|d| d.contains("unknown command") || d.contains("syntax error"))
}

fn unexpected(what: &str, got: &[Value]) -> RedisError {
    RedisError::from((
        ErrorKind::UnexpectedReturnType,
        "unexpected reply",
        format!("{what}: {got:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::packed;

    #[test]
    fn release_script_packs_key_channel_owner_message_command() {
        let call = release_script("a", &layout::channel("a"), "u:1", Publish::Sharded);
        let (keys, args) = packed(&call);
        assert_eq!(keys, ["a", "redisson_lock__channel:{a}"]);
        assert_eq!(args, ["u:1", "0", "spublish"]);
        assert_eq!(call.script_name(), "string_release");
    }

    #[test]
    fn fence_script_packs_counter_and_ttl() {
        let (keys, args) = packed(&fence_script("redisson_lock_token:{a}", 0));
        assert_eq!(keys, ["redisson_lock_token:{a}"]);
        assert_eq!(args, ["0"]);
    }

    #[test]
    fn calls_name_the_lock_key_its_counter_and_channel() {
        let StringCall::Acquire { key, counter, .. } = acquire("o:1", 10, "u:1", 5) else {
            panic!("an acquire")
        };
        assert_eq!(
            (key.as_str(), counter.as_str()),
            ("o:1", "redisson_lock_token:{o:1}")
        );
        let StringCall::Release { channel, .. } = release("o:1", "u:1", Publish::Plain) else {
            panic!("a release")
        };
        assert_eq!(channel, "redisson_lock__channel:{o:1}");
    }
}
