//! The string layout's calls (#17): a lock is a string key holding its
//! owner's value, as the first design note's own lock, redis-py's `Lock`,
//! rslock, redsync and node-redlock keep it, so that a lock taken by any of
//! them and one taken by redlease exclude each other.
//!
//! * Acquire: `SET key owner NX PX lease` with the fencing counter's `INCR`
//!   in one `MULTI`/`EXEC` transaction: atomic like a script, at about two
//!   thirds of a script's cost in Redis (#17's profile); a refusal then asks
//!   the key's `PTTL`, for waiters. The transaction goes as a plain
//!   pipeline that redlease reads itself, which also copes with a server
//!   that refuses `MULTI` (#37).
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
use super::{Fencing, Lua, ScriptCall, UNLOCK_MESSAGE, command};
use crate::connection::{Connection, Natives, Publish};
use crate::layout::Prefixed;

/// A token `INCR` answers below this came from a counter that was missing
/// (or restarted by Redisson): see [`FENCE`](super::lock::FENCE).
const CLOCK_FLOOR: i64 = 1_000_000_000_000_000;
/// Tokens stay below 2^53 - 1, as [`FENCE`](super::lock::FENCE) keeps them.
const TOKEN_CEILING: i64 = 9_007_199_254_740_991;

/// One call of the string layout, before the connection picks its form.
/// It borrows its names: it is built and sent at once, and a copy of each
/// cost the hot path an allocation (#28).
#[derive(Debug)]
pub(crate) enum StringCall<'a> {
    /// Take `key` for `owner` for `lease_ms`, with a fencing token from
    /// `counter` unless fencing is off. Answers as the lock's acquire
    /// script: `{1, token}` (`{1, 0}` with fencing off) or `{0, pttl}`.
    Acquire {
        key: &'a str,
        counter: Prefixed<'a>,
        owner: &'a str,
        lease_ms: u64,
        fencing: Fencing,
    },
    /// Delete `key` if it holds `owner`, and announce the release on
    /// `channel`. Answers as the lock's release script: `1`, or nil when
    /// the key did not hold `owner`.
    Release {
        key: &'a str,
        channel: Prefixed<'a>,
        owner: &'a str,
        publish: Publish,
    },
    /// Set `key`'s expiry to `lease_ms` from now if it holds `owner`.
    /// Answers as the lock's renewal script for one lock: `{1}` or `{0}`.
    Extend {
        key: &'a str,
        owner: &'a str,
        lease_ms: u64,
    },
}

/// Take lock `name` for `owner`; see [`StringCall::Acquire`].
pub(crate) fn acquire<'a>(
    name: &'a str,
    lease_ms: u64,
    owner: &'a str,
    fencing: Fencing,
) -> StringCall<'a> {
    StringCall::Acquire {
        key: name,
        counter: Prefixed::token_key(name),
        owner,
        lease_ms,
        fencing,
    }
}

/// Release lock `name` held by `owner`; see [`StringCall::Release`].
pub(crate) fn release<'a>(name: &'a str, owner: &'a str, publish: Publish) -> StringCall<'a> {
    StringCall::Release {
        key: name,
        channel: Prefixed::channel(name),
        owner,
        publish,
    }
}

/// Extend lock `name` held by `owner`; see [`StringCall::Extend`].
pub(crate) fn extend<'a>(name: &'a str, lease_ms: u64, owner: &'a str) -> StringCall<'a> {
    StringCall::Extend {
        key: name,
        owner,
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
fn release_script(key: &str, channel: Prefixed<'_>, owner: &str, publish: Publish) -> ScriptCall {
    ScriptCall::new(&RELEASE, (key, channel))
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
fn fence_script(counter: Prefixed<'_>, fencing_ttl_ms: u64) -> ScriptCall {
    ScriptCall::new(&FENCE_ONLY, counter).arg(fencing_ttl_ms)
}

/// Sends `call` on `conn` in the form the server takes best, and answers
/// in the shape of the Redisson layout's script of the same role.
pub(crate) async fn run(conn: &Connection, call: &StringCall<'_>) -> Result<Value, RedisError> {
    match *call {
        StringCall::Acquire {
            key,
            counter,
            owner,
            lease_ms,
            fencing,
        } => acquire_now(conn, key, counter, owner, lease_ms, fencing).await,
        StringCall::Release {
            key,
            channel,
            owner,
            publish,
        } => release_now(conn, key, channel, owner, publish).await,
        StringCall::Extend {
            key,
            owner,
            lease_ms,
        } => extend_now(conn, key, owner, lease_ms).await,
    }
}

async fn acquire_now(
    conn: &Connection,
    key: &str,
    counter: Prefixed<'_>,
    owner: &str,
    lease_ms: u64,
    fencing: Fencing,
) -> Result<Value, RedisError> {
    let Fencing::Counter {
        ttl_ms: fencing_ttl_ms,
    } = fencing
    else {
        // No token: the `SET` alone, no transaction and one reply (#28).
        let set = set_nx(key, owner, lease_ms);
        return match conn.query(&set).await? {
            Value::Okay => Ok(Value::Array(vec![Value::Int(1), Value::Int(0)])),
            Value::Nil => refused(conn, key).await,
            other => Err(unexpected("SET NX", &[other])),
        };
    };
    // `MULTI` .. `EXEC` sent as a plain pipeline, and read here: the same
    // bytes as redis-rs's atomic pipeline, whose reading of a transaction
    // panics (in builds with overflow checks, as users' tests are) when
    // `MULTI` itself is refused (#37).
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    let set = set_nx(key, owner, lease_ms);
    let mut incr = command("INCR", 1);
    incr.arg(counter);
    pipe.add_command(command("MULTI", 0))
        .add_command(set)
        .add_command(incr);
    if fencing_ttl_ms == 0 {
        // Redisson's `RFencedLock` shares the counter: it must not expire.
        let mut persist = command("PERSIST", 1);
        persist.arg(counter);
        pipe.add_command(persist);
    }
    pipe.add_command(command("EXEC", 0));
    let (set, incr) = transaction_replies(conn.query_pipe(&pipe).await?)?;
    match set {
        Value::Okay => {}
        Value::Nil => {
            // The `INCR` ran all the same. On a counter that was missing it
            // wrote 1, with no time to live: start it from the clock, with
            // its time to live, as a grant would have. (A counter `FENCE`
            // cannot use is the next grant's error to report, not this
            // refusal's.)
            if !matches!(incr, Value::Int(token) if token >= CLOCK_FLOOR)
                && let Err(e) = fence_script(counter, fencing_ttl_ms).run::<i64>(conn).await
            {
                tracing::debug!(key, error = %e, "fencing counter not started");
            }
            return refused(conn, key).await;
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
        _ => fence_script(counter, fencing_ttl_ms).run::<i64>(conn).await,
    };
    match token {
        Ok(token) => Ok(Value::Array(vec![Value::Int(1), Value::Int(token)])),
        Err(e) => {
            let channel = Prefixed::channel(key);
            if let Err(undo) = release_now(conn, key, channel, owner, conn.publish()).await {
                tracing::warn!(key, error = %undo, "could not release a lock whose fencing token failed; it expires after its lease");
            }
            Err(e)
        }
    }
}

/// `SET key owner NX PX lease_ms`: the acquire itself (without `NX` when
/// the judge's plant says so).
fn set_nx(key: &str, owner: &str, lease_ms: u64) -> redis::Cmd {
    let mut set = command("SET", 5);
    set.arg(key).arg(owner);
    if !crate::plant::on(crate::plant::Plant::AcquireTakesHeld) {
        set.arg("NX");
    }
    set.arg("PX").arg(lease_ms);
    set
}

/// The answer to a refused `SET NX`, `{0, retry_after}`: the key's `PTTL`
/// and holder are asked only now, since asking them with the `SET` would
/// cost every acquire replies to read for what only a refusal needs.
async fn refused(conn: &Connection, key: &str) -> Result<Value, RedisError> {
    let mut pipe = redis::pipe();
    pipe.cmd("PTTL").arg(key).cmd("GET").arg(key);
    let (ttl, holder) = match conn.query_pipe(pipe.ignore_errors()).await?.as_slice() {
        [ttl, holder] => (ttl.clone(), holder.clone()),
        other => return Err(unexpected("PTTL and GET", other)),
    };
    Ok(Value::Array(vec![Value::Int(0), retry_after(ttl, &holder)]))
}

/// How long a waiter sleeps, at most, before looking again at a string lock
/// whose holder does not announce its release (another library's), in
/// milliseconds: the peers themselves poll so (redis-py every 100 ms,
/// rslock every 0 to 200 ms).
const SILENT_HOLDER_POLL_MS: i64 = 100;

/// A refusal's `PTTL` and `GET` replies as the time to sleep before the next
/// attempt when no release message comes first: `0` when the key is gone
/// already (freed since the `SET` by a holder that does not announce); the
/// key's time to live when its holder is a redlease owner, whose release
/// wakes the waiter; else at most [`SILENT_HOLDER_POLL_MS`].
fn retry_after(ttl: Value, holder: &Value) -> Value {
    let ours = matches!(holder, Value::BulkString(v) if is_redlease_owner(v));
    match ttl {
        Value::Int(-2) => Value::Int(0),
        Value::Int(ms) if ms >= 0 && ours => Value::Int(ms),
        Value::Int(ms) if ms >= 0 => Value::Int(ms.min(SILENT_HOLDER_POLL_MS)),
        _ => Value::Int(SILENT_HOLDER_POLL_MS),
    }
}

/// Whether `value` is an owner as redlease writes it, `<uuid>:<n>` (a
/// holder that announces its release).
fn is_redlease_owner(value: &[u8]) -> bool {
    let Some((uuid, n)) = value.split_at_checked(36) else {
        return false;
    };
    let hex_or_dash = |b: &u8| b.is_ascii_hexdigit() || *b == b'-';
    uuid.iter().all(hex_or_dash)
        && uuid.iter().filter(|b| **b == b'-').count() == 4
        && n.len() > 1
        && n[0] == b':'
        && n[1..].iter().all(u8::is_ascii_digit)
}

async fn release_now(
    conn: &Connection,
    key: &str,
    channel: Prefixed<'_>,
    owner: &str,
    publish: Publish,
) -> Result<Value, RedisError> {
    let natives = detect(conn).await;
    // The planted release skips the owner check in the script; the
    // server's own compare-and-delete cannot skip it.
    let planted = crate::plant::on(crate::plant::Plant::ReleaseWithoutOwnerCheck);
    if natives != Natives::None && !planted {
        match native_release(conn, natives, key, channel, owner, publish).await {
            Some(answer) => return answer,
            None => conn.natives().set(Natives::None),
        }
    }
    release_script(key, channel, owner, publish).run(conn).await
}

/// The release by the server's own compare-and-delete; `None` when the
/// server (or the user's ACL) refused the command, so the script must do it.
async fn native_release(
    conn: &Connection,
    natives: Natives,
    key: &str,
    channel: Prefixed<'_>,
    owner: &str,
    publish: Publish,
) -> Option<Result<Value, RedisError>> {
    let mut pipe = redis::pipe();
    let delete = match natives {
        Natives::DelEx => {
            let mut delex = command("DELEX", 3);
            delex.arg(key).arg("IFEQ").arg(owner);
            delex
        }
        _ => {
            let mut delifeq = command("DELIFEQ", 2);
            delifeq.arg(key).arg(owner);
            delifeq
        }
    };
    pipe.add_command(delete);
    // Sent with the delete, not after its reply: one round trip. A refused
    // release announces too, which only wakes a waiter to find the lock
    // still held.
    pipe.cmd(publish.command())
        .arg(channel)
        .arg(UNLOCK_MESSAGE)
        .ignore();
    let replies = match conn.query_pipe(pipe.ignore_errors()).await {
        Ok(replies) => replies,
        Err(e) if refuses_native(e.detail()) => return None,
        Err(e) => return Some(Err(e)),
    };
    Some(match replies.into_iter().next() {
        Some(Value::Int(1)) => Ok(Value::Int(1)),
        Some(Value::Int(_)) => Ok(Value::Nil),
        // Another type: not ours, left untouched.
        Some(Value::ServerError(e)) if e.code() == "WRONGTYPE" => Ok(Value::Nil),
        Some(Value::ServerError(e)) if refuses_native(e.details()) => return None,
        Some(Value::ServerError(e)) => Err(e.into()),
        other => Err(unexpected("compare-and-delete", &Vec::from_iter(other))),
    })
}

async fn extend_now(
    conn: &Connection,
    key: &str,
    owner: &str,
    lease_ms: u64,
) -> Result<Value, RedisError> {
    if detect(conn).await != Natives::None {
        match native_extend(conn, key, owner, lease_ms).await {
            Some(answer) => return answer,
            None => conn.natives().set(Natives::None),
        }
    }
    super::lock::renew(lease_ms, [(key, owner)]).run(conn).await
}

/// The extension by `SET ... IFEQ`, answered as the renewal script for one
/// lock; `None` when the server refused it (a server without `IFEQ` reads
/// it as a syntax error), so the script must do it.
async fn native_extend(
    conn: &Connection,
    key: &str,
    owner: &str,
    lease_ms: u64,
) -> Option<Result<Value, RedisError>> {
    let cmd = redis::cmd("SET")
        .arg(key)
        .arg(owner)
        .arg("IFEQ")
        .arg(owner)
        .arg("PX")
        .arg(lease_ms)
        .to_owned();
    let renewed = |held: bool| Ok(Value::Array(vec![Value::Int(i64::from(held))]));
    Some(match conn.query::<Value>(&cmd).await {
        Ok(Value::Okay) => renewed(true),
        Ok(Value::Nil) => renewed(false),
        Ok(other) => Err(unexpected("SET IFEQ", &[other])),
        Err(e) if e.code() == Some("WRONGTYPE") => renewed(false),
        Err(e) if refuses_native(e.detail()) => return None,
        Err(e) => Err(e),
    })
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
        Err(e) if e.code().is_some() => {
            tracing::debug!(error = %e, "COMMAND INFO refused; string locks use scripts");
            Natives::None
        }
        // No answer (a lost connection): the scripts this time, and the
        // question again next time.
        Err(_) => return Natives::None,
    };
    conn.natives().set(found);
    found
}

/// The replies of `SET` and `INCR` from those of the pipeline `MULTI`,
/// `SET`, `INCR`, [`PERSIST`,] `EXEC`.
///
/// A transaction the server refused as it was queued (`EXECABORT`: a
/// read-only replica, a missing permission, no memory) answers the first
/// queued command's own error, which says what to fix. A `MULTI` the
/// server refused (an ACL without `+multi`, a renamed command) ran the
/// commands one by one: their own replies are then the answer, as they
/// would have been inside the transaction (the `SET` and the `INCR` run
/// back to back on one connection, and the hold cannot end between them),
/// and `EXEC`'s error ("without MULTI") is left aside.
fn transaction_replies(replies: Vec<Value>) -> Result<(Value, Value), RedisError> {
    let mut replies = replies.into_iter();
    let (Some(multi), Some(set), Some(incr), Some(exec)) = (
        replies.next(),
        replies.next(),
        replies.next(),
        replies.next_back(),
    ) else {
        return Err(unexpected("acquire transaction", &[]));
    };
    match multi {
        Value::Okay => {}
        Value::ServerError(e) => {
            tracing::debug!(error = %e, "MULTI refused; the acquire ran without it");
            return Ok((set, incr));
        }
        other => return Err(unexpected("MULTI", &[other])),
    }
    match exec {
        Value::Array(replies) => {
            let mut replies = replies.into_iter();
            match (replies.next(), replies.next()) {
                (Some(set), Some(incr)) => Ok((set, incr)),
                _ => Err(unexpected("EXEC", &[])),
            }
        }
        Value::ServerError(aborted) => {
            // `SET` and `INCR` answered `QUEUED` or their refusal.
            match [set, incr].into_iter().find_map(|queued| match queued {
                Value::ServerError(e) => Some(e),
                _ => None,
            }) {
                Some(first) => Err(first.into()),
                None => Err(aborted.into()),
            }
        }
        other => Err(unexpected("EXEC", &[other])),
    }
}

/// Whether an error means the server (or the user's ACL) does not let us
/// use its own command (unknown, a syntax it lacks, not permitted), so the
/// script must do the work.
fn refuses_native(detail: Option<&str>) -> bool {
    detail.is_some_and(|d| {
        d.contains("unknown command") || d.contains("syntax error") || d.contains("no permissions")
    })
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
        let call = release_script("a", Prefixed::channel("a"), "u:1", Publish::Sharded);
        let (keys, args) = packed(&call);
        assert_eq!(keys, ["a", "redisson_lock__channel:{a}"]);
        assert_eq!(args, ["u:1", "0", "spublish"]);
        assert_eq!(call.script_name(), "string_release");
    }

    #[test]
    fn a_silent_holder_is_looked_at_again_soon() {
        let ours = Value::BulkString(b"6f1c0c56-3a1e-4c55-9d7a-2f7f1b0c9e11:42".to_vec());
        let peer = Value::BulkString(b"d41d8cd98f00b204e9800998ecf8427e".to_vec());
        assert_eq!(retry_after(Value::Int(20_000), &ours), Value::Int(20_000));
        assert_eq!(retry_after(Value::Int(20_000), &peer), Value::Int(100));
        assert_eq!(retry_after(Value::Int(40), &peer), Value::Int(40));
        assert_eq!(retry_after(Value::Int(-1), &ours), Value::Int(100));
        // Freed between the `SET` and the `PTTL`.
        assert_eq!(retry_after(Value::Int(-2), &Value::Nil), Value::Int(0));
        assert!(!is_redlease_owner(b"6f1c0c56-3a1e-4c55-9d7a-2f7f1b0c9e11"));
        assert!(!is_redlease_owner(b"6f1c0c56-3a1e-4c55-9d7a-2f7f1b0c9e11:"));
        assert!(!is_redlease_owner(&[0xff; 40]));
    }

    #[test]
    fn fence_script_packs_counter_and_ttl() {
        let (keys, args) = packed(&fence_script(Prefixed::token_key("a"), 0));
        assert_eq!(keys, ["redisson_lock_token:{a}"]);
        assert_eq!(args, ["0"]);
    }

    #[test]
    fn calls_name_the_lock_key_its_counter_and_channel() {
        let StringCall::Acquire { key, counter, .. } =
            acquire("o:1", 10, "u:1", Fencing::Counter { ttl_ms: 5 })
        else {
            panic!("an acquire")
        };
        assert_eq!(
            (key, counter.to_string()),
            ("o:1", crate::layout::token_key("o:1"))
        );
        let StringCall::Release { channel, .. } = release("o:1", "u:1", Publish::Plain) else {
            panic!("a release")
        };
        assert_eq!(channel.to_string(), "redisson_lock__channel:{o:1}");
        // Packed as the `String` it stands for, with or without a hash tag.
        for name in ["o:1", "{o}:1"] {
            let mut cmd = redis::Cmd::new();
            cmd.arg(Prefixed::channel(name))
                .arg(Prefixed::token_key(name));
            let parts: Vec<&[u8]> = super::super::parts(&cmd).collect();
            let names = [crate::layout::channel(name), crate::layout::token_key(name)];
            assert_eq!(parts, names.map(String::into_bytes));
        }
    }
}
