//! The read-only reader: [`LockState`]s from plain, pipelined reads (no
//! scripts, nothing written), so that it also works on a replica and for
//! an ACL user who may only read.

use std::collections::BTreeSet;

use redis::{FromRedisValue, RedisError, Value};

use crate::client::Client;
use crate::connection::{Connection, Node};
use crate::error::Error;
use crate::layout::state::{MAX_VALUE, escape};
use crate::layout::{Derived, Holder, Listeners, LockState, PERMIT_NO_EXPIRY, Permit, Waiter};
use crate::layout::{derived_from, is_redisson_aux, permits_key_owner, read_timeout_prefix};
use crate::scripts::commands::{self, Detail, Head};

/// Hashes with more fields than this are not read: no lock has that many
/// owners, and a big hash that matched a pattern must not cost much.
const MAX_FIELDS: u64 = 64;
/// Fair-queue entries read per lock, and acquired permits per expirable
/// semaphore.
const MAX_QUEUE: usize = 100;
/// How many keys one SCAN call is asked to look at (its COUNT hint).
const SCAN_BATCH: u64 = 100;

/// Reads what Redis holds for each of `names`, in three pipelined rounds.
/// Hashes of more than 64 fields are not read field by field, and fair
/// queues are read up to their first 100 entries. A string's value is
/// read up to its first 128 bytes: a lock of the string layout's owner, or
/// an integer (see [`LockState::value`]). Besides locks it reads
/// Redisson's semaphores, expirable semaphores and count-down latches: a
/// string key's value, its acquired permits (up to 100)
/// and, but on a cluster, who listens on its channels (`PUBSUB NUMSUB`).
/// A read-write lock's readers get the time to live of their newest hold.
///
/// # Errors
///
/// Connection and server errors; a key of an unexpected type is no error
/// (its state says what it is).
///
/// # Cancel safety
///
/// Cancel safe: it only reads.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::layout::{self, StateKind};
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:read:lock").try_lock().await?;
/// client.semaphore("doc:read:semaphore").try_set_available(3).await?;
/// let names = ["doc:read:lock", "doc:read:semaphore", "doc:read:absent"].map(String::from);
/// let states = redlease::admin::read(&client, &names).await?; // in the order asked
/// assert_eq!(states[0].kind(), StateKind::Lock);
/// assert_eq!(states[1].counter(), Some(3)); // nobody waits: a `Counter`
/// assert!(states[2].is_empty());
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
pub async fn read(client: &Client, names: &[String]) -> Result<Vec<LockState>, Error> {
    read_with(client.shared().conn(), names)
        .await
        .map_err(Error::from)
}

/// One call of [`scan`]: the locks found, and where to go on.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let _guard = client.lock("doc:scan-type:1").try_lock().await?;
/// let page = redlease::admin::scan(&client, "doc:scan-type:*", 0, 1_000).await?;
/// println!("{} keys looked at, {} locks", page.keys_seen, page.locks.len());
/// if page.cursor != 0 {
///     // More to scan: call again from `page.cursor`.
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Scan {
    /// Where the scan stopped: `0` when it went through every key, else the
    /// cursor to pass to the next call. On a cluster it also says which
    /// master the scan had reached (in its top 16 bits).
    pub cursor: u64,
    /// Keys SCAN returned in this call.
    pub keys_seen: usize,
    /// The lock names behind the keys, as [`read`] reads them, sorted by
    /// node, then name: each key, except a lock's auxiliary keys, which
    /// stand for their lock only when it was not scanned itself and they
    /// are a fair queue (a fencing counter outlives its lock by design).
    /// Keys gone since the scan, with no queue left under their name, are
    /// left out. On a cluster each state says its [node](LockState::node).
    pub locks: Vec<LockState>,
}

/// Bits of a scan cursor that hold one node's own cursor; the bits above
/// say which master of a cluster the scan is on.
const NODE_CURSOR_BITS: u32 = 48;

/// Walks the keyspace with `SCAN` (never `KEYS`) from `cursor`, looking at
/// about `limit` keys matching `pattern` (a glob), and reads the locks
/// behind them. On a cluster it walks every master, one after the other.
///
/// # Errors
///
/// As [`read`]; on a cluster, an error for which
/// [`is_invalid_argument`](Error::is_invalid_argument) is true when the
/// cursor names a master the cluster no longer has.
///
/// # Cancel safety
///
/// Cancel safe: it only reads.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let _a = client.lock("doc:scan:a").try_lock().await?;
/// let _b = client.lock("doc:scan:b").try_lock().await?;
/// let (mut cursor, mut found) = (0, Vec::new());
/// loop {
///     let page = redlease::admin::scan(&client, "doc:scan:*", cursor, 100).await?;
///     found.extend(page.locks.into_iter().map(|state| state.name));
///     cursor = page.cursor;
///     if cursor == 0 {
///         break;
///     }
/// }
/// found.sort();
/// assert_eq!(found, ["doc:scan:a", "doc:scan:b"]);
/// # Ok(())
/// # }
/// ```
pub async fn scan(client: &Client, pattern: &str, cursor: u64, limit: u64) -> Result<Scan, Error> {
    let conn = client.shared().conn();
    let walked = walk(conn, pattern, cursor, limit).await?;
    let mut locks = Vec::new();
    for (index, keys) in walked.found {
        let mut states = read_with(conn, &lock_names(&keys)).await?;
        for state in &mut states {
            state.node.clone_from(&walked.masters[index].address);
        }
        locks.extend(states.into_iter().filter(|state| !state.is_empty()));
    }
    Ok(Scan {
        cursor: walked.cursor,
        keys_seen: walked.keys_seen,
        locks,
    })
}

/// What one bounded walk of the keyspace found.
pub(super) struct Walk {
    /// Where to go on (`0`: done), as [`Scan::cursor`].
    pub(super) cursor: u64,
    pub(super) keys_seen: usize,
    /// The keys found, by the index of their master in `masters`.
    pub(super) found: Vec<(usize, BTreeSet<String>)>,
    pub(super) masters: Vec<Node>,
}

/// `SCAN` from `cursor` over about `limit` keys matching `pattern`, master
/// after master on a cluster; shared by [`scan`] and the leftovers'
/// reader.
pub(super) async fn walk(
    conn: &Connection,
    pattern: &str,
    cursor: u64,
    limit: u64,
) -> Result<Walk, Error> {
    let masters = conn.masters().await?;
    let mut index = (cursor >> NODE_CURSOR_BITS) as usize;
    let mut node_cursor = cursor & ((1 << NODE_CURSOR_BITS) - 1);
    if index >= masters.len() {
        return Err(Error::invalid(format!(
            "scan cursor {cursor} names master {index}, but the cluster has {}",
            masters.len()
        )));
    }
    let mut budget = limit;
    let mut found: Vec<(usize, BTreeSet<String>)> = Vec::new();
    let mut keys_seen = 0;
    while budget > 0 && index < masters.len() {
        let count = budget.min(SCAN_BATCH);
        let scan = commands::scan(node_cursor, pattern, count);
        let (next, batch): (u64, Vec<String>) = conn.query_on(&masters[index], &scan).await?;
        keys_seen += batch.len();
        match found.last_mut() {
            Some((i, keys)) if *i == index => keys.extend(batch),
            _ => found.push((index, batch.into_iter().collect())),
        }
        budget -= count;
        node_cursor = next;
        if node_cursor == 0 {
            index += 1;
        } else if node_cursor >> NODE_CURSOR_BITS != 0 {
            return Err(Error::invalid(format!(
                "a node's scan cursor {node_cursor} is too large to resume"
            )));
        }
    }
    let cursor = match index < masters.len() {
        true => ((index as u64) << NODE_CURSOR_BITS) | node_cursor,
        false => 0,
    };
    Ok(Walk {
        cursor,
        keys_seen,
        found,
        masters,
    })
}

/// The lock names behind scanned keys; see [`Scan::locks`].
fn lock_names(keys: &BTreeSet<String>) -> Vec<String> {
    let mut names = BTreeSet::new();
    let mut queued = Vec::new();
    for key in keys {
        match derived_from(key) {
            Some((Derived::Token, _)) => {}
            Some((_, candidates)) => queued.push(candidates),
            None if is_redisson_aux(key) => {}
            // An expirable semaphore's permits, shown with the semaphore.
            None => match permits_key_owner(key) {
                Some(candidates) => queued.push(candidates),
                None => {
                    names.insert(key.clone());
                }
            },
        }
    }
    for candidates in queued {
        if !candidates.iter().any(|c| keys.contains(c)) {
            names.insert(candidates[0].clone());
        }
    }
    names.into_iter().collect()
}

pub(super) async fn read_with(
    conn: &Connection,
    names: &[String],
) -> Result<Vec<LockState>, RedisError> {
    let (secs, micros): (u64, u64) = conn.query(&commands::time()).await?;
    let now_us = secs * 1_000_000 + micros;
    let mut states: Vec<LockState> = names
        .iter()
        .map(|name| LockState {
            server_time_us: now_us,
            ..LockState::absent(name.as_str())
        })
        .collect();
    if names.is_empty() {
        return Ok(states);
    }

    // Round 1: what each key is.
    let replies = each(conn, &commands::key_kinds(names)).await?;
    for (state, r) in states.iter_mut().zip(replies.chunks_exact(5)) {
        state.key_type = get(&r[0]).unwrap_or_default();
        state.pttl_ms = get(&r[1]).unwrap_or(-2);
        state.field_count = get(&r[2]).unwrap_or(0);
        state.fencing_token = get::<String>(&r[3]).and_then(|t| t.parse().ok());
        state.queue_len = get(&r[4]).unwrap_or(0);
    }

    // Round 2: small hashes and strings, queue heads, deadlines that have
    // passed, acquired permits and channel listeners.
    let now_ms = now_us / 1_000;
    let listeners = !conn.is_cluster();
    let details = states.iter().map(|state| Detail {
        name: &state.name,
        head: match (small_hash(state), state.key_type.as_str()) {
            (true, _) => Head::Hash,
            (false, "string") => Head::String,
            _ => Head::Nothing,
        },
        permits: matches!(state.key_type.as_str(), "string" | "none"),
        listeners: listeners && state.key_type == "string",
    });
    let pipe = commands::key_details(details, now_ms, MAX_VALUE, MAX_QUEUE);
    let replies = each(conn, &pipe).await?;
    let mut queues = Vec::new();
    let mut past = Vec::new();
    for (state, r) in states.iter_mut().zip(replies.chunks_exact(6)) {
        if small_hash(state) {
            if let Some(fields) = get::<Vec<(Vec<u8>, Vec<u8>)>>(&r[0]) {
                set_fields(state, fields);
            }
        } else if state.key_type == "string" {
            state.value = get::<Vec<u8>>(&r[0]).map(|v| escape(&v));
        }
        queues.push(get::<Vec<String>>(&r[1]).unwrap_or_default());
        past.push(get::<Vec<(String, f64)>>(&r[2]).unwrap_or_default());
        if let Some(len) = get::<u64>(&r[3]) {
            state.permits_len = len;
            let members = get::<Vec<(Vec<u8>, f64)>>(&r[4]).unwrap_or_default();
            state.permits = members
                .into_iter()
                .map(|(id, score)| Permit {
                    id: hex(&id),
                    expires_ms: (score < PERMIT_NO_EXPIRY).then_some(score),
                })
                .collect();
        }
        if state.key_type == "string" {
            state.listeners = get::<Vec<(String, u64)>>(&r[5]).map(|counts| Listeners {
                semaphore: counts.first().map_or(0, |c| c.1),
                latch: counts.get(1).map_or(0, |c| c.1),
            });
        }
    }

    // Round 3: the deadline of each queue entry read, then the time to
    // live of each reader's newest hold.
    let queued = states.iter().zip(&queues).flat_map(|(state, queue)| {
        queue
            .iter()
            .map(|owner| (state.name.as_str(), owner.as_str()))
    });
    let ttls = states.iter().flat_map(|state| {
        newest_holds(state).map(|(i, newest)| {
            let prefix = read_timeout_prefix(&state.name, &state.holders[i].field);
            format!("{prefix}:{newest}")
        })
    });
    let pipe = commands::deadlines_and_ttls(queued, ttls);
    let mut scores = each(conn, &pipe).await?.into_iter();
    for ((state, queue), mut past) in states.iter_mut().zip(queues).zip(past) {
        for owner in queue {
            let deadline = scores.next().and_then(|s| get::<f64>(&s));
            past.retain(|(o, _)| *o != owner);
            state.waiters.push(Waiter {
                stale: deadline.is_none_or(|d| d <= now_ms as f64),
                owner,
                deadline_ms: deadline,
            });
        }
        state
            .waiters
            .extend(past.into_iter().map(|(owner, d)| Waiter {
                owner,
                deadline_ms: Some(d),
                stale: true,
            }));
    }
    for state in &mut states {
        let readers: Vec<usize> = newest_holds(state).map(|(i, _)| i).collect();
        for i in readers {
            state.holders[i].hold_ttl_ms = scores.next().and_then(|s| get::<i64>(&s));
        }
    }
    Ok(states)
}

/// The replies to `pipe`'s commands, each on its own; none for an empty
/// pipeline, which is never sent: redis-rs refuses one ("empty command"),
/// and nothing to read is a normal answer (issue #18).
pub(super) async fn each(
    conn: &Connection,
    pipe: &redis::Pipeline,
) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
    match pipe.is_empty() {
        true => Ok(Vec::new()),
        false => conn.query_each(pipe).await,
    }
}

/// The readers of a read-write lock whose hold count was read, with the
/// index of their newest hold (their count: Redisson numbers a reader's
/// holds 1..count, and a release removes the highest).
fn newest_holds(state: &LockState) -> impl Iterator<Item = (usize, i64)> + '_ {
    let rwlock = state.mode.is_some() && small_hash(state);
    state
        .holders
        .iter()
        .enumerate()
        .filter(move |(_, h)| rwlock && !h.is_writer())
        .filter_map(|(i, h)| Some((i, h.count().filter(|&c| c > 0)?)))
}

/// Bytes in lowercase hex, as Redisson's API shows a permit id.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

fn small_hash(state: &LockState) -> bool {
    state.key_type == "hash" && state.field_count <= MAX_FIELDS
}

/// Sorts a hash's fields into `mode` and holders. A field or value that
/// is not UTF-8 (written by another client) is kept escaped as string
/// values are, so the lock still shows, with its bytes told apart.
fn set_fields(state: &mut LockState, fields: Vec<(Vec<u8>, Vec<u8>)>) {
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap_or_else(|e| escape(e.as_bytes()));
    for (field, value) in fields {
        let (field, value) = (text(field), text(value));
        if field == "mode" {
            state.mode = Some(value);
        } else {
            state.holders.push(Holder::new(field, value));
        }
    }
    // HLEN and HGETALL are two reads: keep the count of what was read.
    state.field_count = state.holders.len() as u64 + u64::from(state.mode.is_some());
}

/// One reply as `T`; `None` for errors, nil, and replies of another shape.
pub(super) fn get<T: FromRedisValue>(reply: &Result<Value, RedisError>) -> Option<T> {
    match reply {
        Ok(Value::Nil) | Err(_) => None,
        Ok(value) => redis::from_redis_value_ref(value).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auxiliary_keys_attach_to_their_lock() {
        let keys: BTreeSet<String> = [
            "lock:a",
            "redisson_lock_token:{lock:a}",
            "redisson_lock_queue:{lock:a}",
            "redisson_lock_timeout:{lock:b}",
            "redisson_lock_token:{lock:c}",
            "{lock:d}:u:1:rwlock_timeout:2",
            "redisson_unlock_latch:{lock:d}:ab12",
            "plain",
            "sem:e",
            "{sem:e}:timeout",
            "{sem:f}:timeout",
            "session:timeout",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(
            lock_names(&keys),
            [
                "lock:a",
                "lock:b",
                "plain",
                "sem:e",
                "sem:f",
                "session:timeout"
            ]
        );
    }

    #[test]
    fn values_are_escaped_and_cut() {
        assert_eq!(escape(b"7f9c-uuid:1"), "7f9c-uuid:1");
        assert_eq!(escape(b"a\\b\nc\xff\x00"), "a\\\\b\\nc\\xff\\u{0}");
        assert_eq!(escape("h\u{e9}".as_bytes()), "h\u{e9}");
        let long = "x".repeat(MAX_VALUE + 1);
        assert_eq!(escape(long.as_bytes()), "x".repeat(MAX_VALUE) + "...");
        // A character across the cut is left out whole.
        let across = "x".repeat(MAX_VALUE - 1) + "\u{e9}";
        assert_eq!(escape(across.as_bytes()), "x".repeat(MAX_VALUE - 1) + "...");
    }

    #[test]
    fn fields_split_into_mode_and_holders() {
        let mut state = LockState::absent("k");
        state.key_type = "hash".to_owned();
        set_fields(
            &mut state,
            vec![("mode".into(), "read".into()), ("u:1".into(), "2".into())],
        );
        assert_eq!(state.mode.as_deref(), Some("read"));
        assert_eq!(state.holders.len(), 1);
        assert_eq!(state.field_count, 2);
    }

    #[test]
    fn fields_that_are_not_utf8_are_kept_escaped() {
        let mut state = LockState::absent("k");
        state.key_type = "hash".to_owned();
        set_fields(&mut state, vec![(b"\xff\xfeab:1".to_vec(), b"1".to_vec())]);
        assert_eq!(state.holders.len(), 1);
        assert_eq!(state.holders[0].field, "\\xff\\xfeab:1");
        assert_eq!(state.holders[0].count(), Some(1));
    }

    /// States built with raw commands, as Redisson writes them, on a real
    /// server, read back.
    mod on_a_server {
        use std::time::Duration;

        use redlease_testkit::RedisServer;

        use super::super::read;
        use crate::layout::{
            Layout, StateKind, latch_channel, permits_key, semaphore_channel, token_key,
        };
        use crate::{Client, layout::LockState};

        fn raw(args: &[&[u8]]) {
            let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
            for arg in &args[1..] {
                cmd.arg(*arg);
            }
            let _: redis::Value = cmd.query(&mut RedisServer::shared().connection()).unwrap();
        }

        fn name(what: &str) -> String {
            format!("layout-read:{what}:{}", std::process::id())
        }

        async fn one(name: &str) -> LockState {
            let client = Client::connect(&RedisServer::shared().url()).await.unwrap();
            read(&client, &[name.to_owned()]).await.unwrap().remove(0)
        }

        #[tokio::test]
        async fn read_write_lock_readers_have_their_newest_holds_ttl() {
            let name = name("rw");
            let n = name.as_bytes();
            raw(&[b"HSET", n, b"mode", b"read", b"u-1:1", b"2", b"u-2:7", b"1"]);
            raw(&[b"PEXPIRE", n, b"30000"]);
            let timeout = |field: &str, i: u32| format!("{{{name}}}:{field}:rwlock_timeout:{i}");
            raw(&[b"SET", timeout("u-1:1", 1).as_bytes(), b"1", b"PX", b"5000"]);
            raw(&[
                b"SET",
                timeout("u-1:1", 2).as_bytes(),
                b"1",
                b"PX",
                b"20000",
            ]);
            // u-2:7's only hold has no timeout key left.
            let state = one(&name).await;
            assert_eq!(state.kind(), StateKind::ReadWriteLock);
            assert_eq!(state.mode.as_deref(), Some("read"));
            let ttl = |field: &str| {
                state
                    .holders
                    .iter()
                    .find(|h| h.field == field)
                    .unwrap()
                    .hold_ttl_ms
            };
            let newest = ttl("u-1:1").unwrap();
            assert!(newest > 15_000 && newest <= 20_000, "{state:?}");
            assert_eq!(ttl("u-2:7"), Some(-2));

            // Downgraded: the writer keeps no timeout key, its own read does.
            raw(&[b"DEL", n]);
            raw(&[
                b"HSET",
                n,
                b"mode",
                b"write",
                b"u-1:1:write",
                b"1",
                b"u-1:1",
                b"1",
            ]);
            let state = one(&name).await;
            let writer = state.holders.iter().find(|h| h.is_writer()).unwrap();
            assert_eq!(
                (writer.field.as_str(), writer.hold_ttl_ms),
                ("u-1:1:write", None)
            );
            let reader = state.holders.iter().find(|h| !h.is_writer()).unwrap();
            assert!(reader.hold_ttl_ms.is_some_and(|t| t > 1_000), "{state:?}");
            raw(&[
                b"DEL",
                n,
                timeout("u-1:1", 1).as_bytes(),
                timeout("u-1:1", 2).as_bytes(),
            ]);
        }

        #[tokio::test]
        async fn string_integers_are_counters_until_something_tells_them_apart() {
            let name = name("counter");
            raw(&[b"SET", name.as_bytes(), b"3"]);
            let state = one(&name).await;
            assert_eq!(
                (state.kind(), state.counter(), state.permits_len),
                (StateKind::Counter, Some(3), 0)
            );
            assert_eq!(
                state.listeners.map(|l| (l.semaphore, l.latch)),
                Some((0, 0))
            );
            assert!(state.problems().is_empty(), "no ttl is no problem here");

            raw(&[b"SET", name.as_bytes(), b"owner-7"]);
            let state = one(&name).await;
            assert_eq!(state.kind(), StateKind::StringLock);
            assert_eq!(state.counter(), None);
            raw(&[b"DEL", name.as_bytes()]);
        }

        /// A lock of the string layout, taken by redlease or by a raw
        /// `SET NX PX` of another library, shows its owner and lease.
        #[tokio::test]
        async fn string_locks_show_their_owner_and_ttl() {
            let name = name("string");
            let client = Client::builder(&RedisServer::shared().url())
                .layout(Layout::String)
                .build()
                .await
                .unwrap();
            let guard = client
                .lock(name.as_str())
                .lease(Duration::from_secs(20))
                .try_lock()
                .await
                .unwrap();
            let state = one(&name).await;
            assert_eq!(
                (state.kind(), state.key_type.as_str()),
                (StateKind::StringLock, "string")
            );
            let owner = state.string_owner().unwrap();
            assert!(owner.starts_with(&format!("{}:", client.id())), "{state:?}");
            assert!(
                state.pttl_ms > 15_000 && state.pttl_ms <= 20_000,
                "{state:?}"
            );
            assert_eq!(state.lock_token(), guard.fencing_token());
            assert!(
                state.age().is_some() && state.problems().is_empty(),
                "{state:?}"
            );
            guard.unlock().await.unwrap();
            assert!(one(&name).await.string_owner().is_none());

            // rslock's owner: 20 random bytes, mostly not UTF-8.
            let value: Vec<u8> = (0xe0u8..0xf4).collect();
            raw(&[b"SET", name.as_bytes(), &value, b"NX", b"PX", b"20000"]);
            let state = one(&name).await;
            assert_eq!(state.kind(), StateKind::StringLock);
            let owner = state.string_owner().unwrap();
            assert!(owner.starts_with("\\xe0\\xe1"), "{owner}");
            assert!(owner.is_ascii(), "{owner}");
            raw(&[b"DEL", name.as_bytes()]);

            // Without expiry: held for ever if its holder is gone.
            raw(&[b"SET", name.as_bytes(), b"9b2e6c1a-uuid", b"NX"]);
            let state = one(&name).await;
            assert_eq!(state.string_owner(), Some("9b2e6c1a-uuid"));
            assert_eq!(state.pttl_ms, -1);
            assert_eq!(state.problems()[0].kind, crate::layout::ProblemKind::NoTtl);
            raw(&[b"DEL", name.as_bytes(), token_key(&name).as_bytes()]);
        }

        /// A waiter subscribed to one structure's channel says which it is.
        #[tokio::test]
        async fn a_listener_tells_a_semaphore_from_a_latch() {
            for (what, channel, kind) in [
                (
                    "sem",
                    semaphore_channel as fn(&str) -> String,
                    StateKind::Semaphore,
                ),
                ("latch", latch_channel, StateKind::CountDownLatch),
            ] {
                let name = name(what);
                raw(&[b"SET", name.as_bytes(), b"2"]);
                let mut conn = RedisServer::shared().connection();
                let mut pubsub = conn.as_pubsub();
                pubsub.subscribe(channel(&name)).unwrap();
                let state = one(&name).await;
                assert_eq!(state.kind(), kind, "{state:?}");
                drop(pubsub);
                raw(&[b"DEL", name.as_bytes()]);
            }
        }

        #[tokio::test]
        async fn expirable_semaphore_lists_its_permits_in_hex() {
            let name = name("expirable");
            raw(&[b"SET", name.as_bytes(), b"1"]);
            let permits = permits_key(&name);
            let leased: Vec<u8> = (0u8..16).collect();
            let forever = [0xffu8; 16];
            let (secs, _): (u64, u64) = redis::cmd("TIME")
                .query(&mut RedisServer::shared().connection())
                .unwrap();
            let expiry = (secs * 1_000 + 60_000).to_string();
            raw(&[b"ZADD", permits.as_bytes(), expiry.as_bytes(), &leased]);
            raw(&[b"ZADD", permits.as_bytes(), b"922337203685477", &forever]);
            let state = one(&name).await;
            assert_eq!(state.kind(), StateKind::ExpirableSemaphore);
            assert_eq!((state.counter(), state.permits_len), (Some(1), 2));
            assert_eq!(state.permits[0].id, "000102030405060708090a0b0c0d0e0f");
            let lease =
                state.permits[0].expires_ms.unwrap() - (state.server_time_us / 1_000) as f64;
            assert!(lease > 55_000.0 && lease <= 60_000.0, "{state:?}");
            assert_eq!(state.permits[1].id, "ff".repeat(16));
            assert_eq!(state.permits[1].expires_ms, None);

            // Every permit taken and the available count deleted: still
            // shown, by its permits.
            raw(&[b"DEL", name.as_bytes()]);
            let state = one(&name).await;
            assert_eq!(state.kind(), StateKind::ExpirableSemaphore);
            assert!(!state.is_empty());
            raw(&[b"DEL", permits.as_bytes()]);
        }
    }
}
