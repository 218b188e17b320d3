//! The code `Semaphore` and `CountDownLatch` share, as both keep a number
//! in one string key: the name check (its channel must share the key's
//! cluster slot), the permit and count bounds, scripts run to completion
//! whatever happens to the caller, and the changes of a count sent again,
//! under one request id, until they are answered (#37).

use std::fmt;
use std::time::Duration;

use redis::FromRedisValue;

pub(crate) use crate::backoff::{REQUEST_TTL, REQUEST_TTL_MS};
use crate::connection::Connection;
use crate::error::{Error, quoted, wrong_type_message};
use crate::layout;
use crate::name;
use crate::scripts::ScriptCall;
use crate::scripts::commands;
use crate::scripts::semaphore::SetIfMissing;
use crate::shared::{Handle, Shared};

/// What a primitive that keeps a count in a string is called, what its
/// count means and which channel it announces on: the words of its checks
/// and errors.
pub(crate) struct Words {
    /// `semaphore`, `latch`.
    what: &'static str,
    /// What the string holds, for an error: "the number of available
    /// permits".
    holds: &'static str,
    /// Redisson's channel of the name, which must share its key's slot.
    channel: fn(&str) -> String,
}

/// A [`Semaphore`](crate::Semaphore)'s words.
pub(crate) const SEMAPHORE: Words = Words {
    what: "semaphore",
    holds: "the number of available permits",
    channel: layout::semaphore_channel,
};

/// A [`CountDownLatch`](crate::CountDownLatch)'s words.
pub(crate) const LATCH: Words = Words {
    what: "latch",
    holds: "the count still to go",
    channel: layout::latch_channel,
};

/// A handle on a count in a string: what the semaphore and the latch
/// share, written once (the name check, running a script to completion,
/// reading the count, errors that say which primitive and what the key
/// holds).
#[derive(Clone, Debug)]
pub(crate) struct Counter {
    pub(crate) handle: Handle,
    words: &'static Words,
}

impl fmt::Debug for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

impl Counter {
    pub(crate) fn new(handle: Handle, words: &'static Words) -> Counter {
        Counter { handle, words }
    }

    /// Checks the name and returns the connection to use.
    pub(crate) fn conn(&self) -> Result<&Connection, Error> {
        let name = &self.handle.name;
        check_name(
            &self.handle.client,
            self.words.what,
            name,
            &(self.words.channel)(name),
        )?;
        Ok(self.handle.client.conn())
    }

    /// Runs `call` to completion, whatever happens to the caller.
    pub(crate) async fn run<T>(&self, conn: &Connection, call: ScriptCall) -> Result<T, Error>
    where
        T: FromRedisValue + Send + 'static,
    {
        match run_to_completion(conn, call).await {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.error(conn, e).await),
        }
    }

    /// Runs `request`'s call to completion whatever happens to the caller,
    /// sending it again after a time-out or a lost connection for as long
    /// as the client retries writes: for the changes of a count whose scripts record their
    /// answer under the request's id ([`Counter::request`]), so that an
    /// attempt whose reply was lost is applied once, and answered.
    pub(crate) async fn run_retried<T>(
        &self,
        conn: &Connection,
        call: ScriptCall,
    ) -> Result<T, Error>
    where
        T: FromRedisValue + Send + 'static,
    {
        match run_retried(conn, call, self.handle.client.retry_writes_for()).await {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.error(conn, e).await),
        }
    }

    /// A new request id, for a change of the count sent until answered:
    /// the client's id and a number of its own, as owner fields are made.
    pub(crate) fn request(&self) -> std::sync::Arc<str> {
        self.handle.client.new_owner_field()
    }

    /// How long the record of a change's answer lasts, in ms.
    pub(crate) fn answer_ttl_ms(&self) -> u64 {
        self.handle.client.answer_ttl_ms()
    }

    /// The count as stored: 0 when the key is missing.
    pub(crate) async fn read(&self, conn: &Connection) -> Result<i64, Error> {
        match get(conn, &self.handle.name).await {
            Ok(count) => count.ok_or_else(|| self.not_a_count()),
            Err(e) => Err(self.error(conn, e.into()).await),
        }
    }

    /// Runs a script that sets the count if the key is missing: true if it
    /// was set.
    pub(crate) async fn try_set(&self, conn: &Connection, call: ScriptCall) -> Result<bool, Error> {
        match self.run::<SetIfMissing>(conn, call).await? {
            SetIfMissing::Set => Ok(true),
            SetIfMissing::Present => Ok(false),
            SetIfMissing::NotACount => Err(self.not_a_count()),
        }
    }

    /// `err` about this primitive's key; a `WRONGTYPE` says what the key
    /// holds (one `TYPE`, on this error path only).
    pub(crate) async fn error(&self, conn: &Connection, err: Error) -> Error {
        let name = &self.handle.name;
        let err = err.with_key(name);
        if !err.is_wrong_type() {
            return err;
        }
        let holds = commands::what_key_holds(conn, name, "string").await;
        let expected = format!("a string holding {}", self.words.holds);
        err.reworded(wrong_type_message(
            self.words.what,
            name,
            holds.as_deref(),
            &expected,
        ))
    }

    /// The error of a string that is not an integer.
    pub(crate) fn not_a_count(&self) -> Error {
        let name = &self.handle.name;
        Error::not_a_count(
            name,
            format!(
                "{} key {} holds a string that is not an integer; expected {}",
                self.words.what,
                quoted(name),
                self.words.holds
            ),
        )
    }
}

/// The largest count accepted: 2^53 - 1. The scripts compare and return
/// counts as Lua numbers, which are doubles and exact only up to 2^53
/// (Redisson's scripts do the same arithmetic in Lua).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let shards = client.count_down_latch("doc:count:max");
/// let e = shards.try_set_count(redlease::MAX_COUNT + 1).await.unwrap_err();
/// assert!(e.is_invalid_argument());
/// assert!(shards.try_set_count(redlease::MAX_COUNT).await?);
/// # Ok(())
/// # }
/// ```
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// The largest number of permits either semaphore holds, gives or takes:
/// `i32::MAX`, since Redisson reads a semaphore's counts as a Java `int`
/// (its `RSemaphore` and `RPermitExpirableSemaphore` take and answer
/// `int` permits), and a larger count would break the Java services that
/// share it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let permits = client.semaphore("doc:count:max-permits");
/// let e = permits.try_set_available(redlease::MAX_PERMITS + 1).await.unwrap_err();
/// assert!(e.is_invalid_argument());
/// assert!(permits.try_set_available(redlease::MAX_PERMITS).await?);
/// # Ok(())
/// # }
/// ```
pub const MAX_PERMITS: u64 = i32::MAX as u64;

/// Checks a number of permits (or a change of it, when `min` is
/// negative) against `min..=MAX_PERMITS`.
pub(crate) fn check_permits(what: &str, permits: i64, min: i64) -> Result<i64, Error> {
    // Redisson's bound, not ours: Java reads a semaphore's counts as an
    // `int` (#27).
    let max = i64::from(i32::MAX);
    if (min..=max).contains(&permits) {
        return Ok(permits);
    }
    Err(Error::invalid(format!(
        "{what} must be between {min} and {max} (a java int, as Redisson reads it), but found {permits}"
    )))
}

/// [`check_permits`] for a count given unsigned.
pub(crate) fn check_permits_u64(what: &str, permits: u64, min: i64) -> Result<u64, Error> {
    let checked = check_permits(what, i64::try_from(permits).unwrap_or(i64::MAX), min)?;
    Ok(checked.unsigned_abs())
}

/// The busy error of either semaphore: too few permits available.
pub(crate) fn too_few_permits(name: &str, waited: Duration) -> Error {
    Error::busy(name, waited).reworded(format!(
        "semaphore {} has too few permits available (waited {})",
        crate::error::quoted(name),
        crate::error::human(waited)
    ))
}

/// Checks a semaphore's or latch's name before anything is sent: a valid
/// name whose `channel` lies in the key's hash slot. On a cluster a script
/// that names both fails with `CROSSSLOT` otherwise; only Redisson's latch
/// channel can differ, for a name with a hash tag of its own (`a{b}c`), as
/// it always adds braces.
pub(crate) fn check_name(
    client: &Shared,
    what: &str,
    name: &str,
    channel: &str,
) -> Result<(), Error> {
    name::validate(name).map_err(|e| e.with_key(name))?;
    let conn = client.conn();
    if conn.slot(name) != conn.slot(channel) {
        return Err(Error::invalid(format!(
            "{what} {name:?} cannot be used on a cluster: its key and Redisson's channel \
             name for it, {channel:?}, are in different hash slots, so its scripts would fail \
             with CROSSSLOT; use a name without braces"
        ))
        .with_key(name));
    }
    Ok(())
}

/// Checks a number of permits or a count to send: at least `min`, at most
/// [`MAX_COUNT`].
pub(crate) fn check_count(what: &str, n: u64, min: u64) -> Result<u64, Error> {
    if n < min {
        return Err(Error::invalid(format!(
            "{what} must be at least {min}, but found {n}"
        )));
    }
    if n > MAX_COUNT {
        return Err(Error::invalid(format!(
            "{what} must be at most 2^53 - 1 ({MAX_COUNT}), but found {n}"
        )));
    }
    Ok(n)
}

/// Reads a count as the scripts do: an optional `-`, then decimal digits
/// (what `INCRBY` and `DECRBY` accept, save for a value out of their
/// range). `None` for anything else.
pub(crate) fn parse(value: &[u8]) -> Option<i64> {
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Reads the count in string `key` with a plain `GET`: 0 when missing,
/// `None` when the key holds a string that is not a count.
///
/// # Errors
///
/// `WRONGTYPE` for a key of another type, and connection and server
/// errors, as redis-rs reports them.
pub(crate) async fn get(conn: &Connection, key: &str) -> Result<Option<i64>, redis::RedisError> {
    let value: Option<Vec<u8>> = conn.query(&crate::scripts::commands::get(key)).await?;
    Ok(match value {
        // As the scripts read it: a missing semaphore has no permits, and
        // a deleted latch is open.
        None => Some(0),
        Some(value) => parse(&value),
    })
}

/// Runs `call` on `conn` in a task of its own and waits for its reply.
///
/// Dropping the returned future does not stop the script: once polled,
/// the call is sent and runs exactly as if its caller had waited (unless
/// the connection fails), so a cancelled release still releases and a
/// cancelled count-down still counts down, instead of leaving the caller
/// to guess.
pub(crate) async fn run_to_completion<T>(conn: &Connection, call: ScriptCall) -> Result<T, Error>
where
    T: FromRedisValue + Send + 'static,
{
    let conn = conn.clone();
    let task = tokio::spawn(async move { call.run::<T>(&conn).await });
    match task.await {
        Ok(reply) => reply.map_err(Error::from),
        // The task never answered: the runtime is shutting down. A runtime
        // error, not a made-up I/O error from Redis, which a waiter would
        // retry as a lost connection (#27).
        Err(_) => Err(runtime_stopped()),
    }
}

/// [`run_to_completion`], sending `call` again after a time-out or a lost
/// connection for up to `retry_for` (the steps of
/// [`backoff::retry_transient`](crate::backoff::retry_transient)). Only
/// for calls whose scripts record their answer under a request id: a
/// repeat then changes nothing and answers as the first attempt did.
pub(crate) async fn run_retried<T>(
    conn: &Connection,
    call: ScriptCall,
    retry_for: Duration,
) -> Result<T, Error>
where
    T: FromRedisValue + Send + 'static,
{
    let conn = conn.clone();
    // The repeats run in the task too: a change is sent until answered (for
    // up to `retry_for`) whether or not its caller is still there, so a
    // cancelled release or count-down is carried out, not left to guess at
    // (see `run_to_completion`).
    let task = tokio::spawn(async move { send_until_answered(&conn, &call, retry_for).await });
    match task.await {
        Ok(reply) => reply,
        Err(_) => Err(runtime_stopped()),
    }
}

/// Sends `call` on `conn`, and again after a time-out or a lost connection
/// for up to `retry_for`, in the caller's task: for calls whose scripts
/// record their answer under a request id, from a task already of their
/// own (a write sent in the background).
pub(crate) async fn send_until_answered<T: FromRedisValue>(
    conn: &Connection,
    call: &ScriptCall,
    retry_for: Duration,
) -> Result<T, Error> {
    crate::backoff::retry_transient(retry_for, || async {
        call.run::<T>(conn).await.map_err(Error::from)
    })
    .await
}

/// The error of a call whose task never answered: the runtime is shutting
/// down.
pub(crate) fn runtime_stopped() -> Error {
    Error::runtime_stopped("a script")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_decimal_integers_as_the_scripts_read_them() {
        assert_eq!(parse(b"0"), Some(0));
        assert_eq!(parse(b"42"), Some(42));
        assert_eq!(parse(b"-3"), Some(-3));
        for bad in [&b""[..], b"-", b"+3", b" 3", b"1.5", b"0x10", b"abc", b"3 "] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        // Matches the pattern but out of `i64`: Redis would refuse it too.
        assert_eq!(parse(b"99999999999999999999"), None);
    }

    #[test]
    fn counts_are_checked_against_their_bounds() {
        assert!(
            check_count("permits", 0, 1)
                .unwrap_err()
                .is_invalid_argument()
        );
        assert_eq!(check_count("permits", 0, 0).unwrap(), 0);
        assert_eq!(check_count("permits", MAX_COUNT, 1).unwrap(), MAX_COUNT);
        let e = check_count("permits", MAX_COUNT + 1, 1).unwrap_err();
        assert!(e.is_invalid_argument());
        assert_eq!(
            e.to_string(),
            "permits must be at most 2^53 - 1 (9007199254740991), but found 9007199254740992"
        );
        assert!(check_count("permits", u64::MAX, 1).is_err());
    }
}
