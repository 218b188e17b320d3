//! The read-only reader: [`LockState`]s from plain, pipelined reads (no
//! scripts, nothing written), so that it also works on a replica and for
//! an ACL user who may only read.

use std::collections::BTreeSet;

use redis::{FromRedisValue, RedisError, Value};

use super::{Derived, Holder, LockState, Waiter, derived_from, is_redisson_aux};
use super::{queue_key, timeout_key, token_key};
use crate::client::Client;
use crate::connection::Connection;
use crate::error::Error;

/// Hashes with more fields than this are not read: no lock has that many
/// owners, and a big hash that matched a pattern must not cost much.
const MAX_FIELDS: u64 = 64;
/// Fair-queue entries read per lock.
const MAX_QUEUE: usize = 100;
/// How many keys one SCAN call is asked to look at (its COUNT hint).
const SCAN_BATCH: u64 = 100;

/// Reads what Redis holds for each of `names`, in three pipelined rounds.
/// Hashes of more than 64 fields are not read field by field, and fair
/// queues are read up to their first 100 entries.
///
/// # Errors
///
/// Connection and server errors; a key of an unexpected type is no error
/// (its state says what it is).
///
/// # Cancel safety
///
/// Cancel safe: it only reads.
pub async fn read(client: &Client, names: &[String]) -> Result<Vec<LockState>, Error> {
    read_with(client.conn(), names).await.map_err(Error::from)
}

/// One call of [`scan`]: the locks found, and where to go on.
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
pub async fn scan(client: &Client, pattern: &str, cursor: u64, limit: u64) -> Result<Scan, Error> {
    let conn = client.conn();
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
        let scan = redis::cmd("SCAN")
            .arg(node_cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count)
            .clone();
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
    let mut locks = Vec::new();
    for (index, keys) in found {
        let mut states = read_with(conn, &lock_names(&keys)).await?;
        for state in &mut states {
            state.node.clone_from(&masters[index].address);
        }
        locks.extend(states.into_iter().filter(|state| !state.is_empty()));
    }
    Ok(Scan {
        cursor,
        keys_seen,
        locks,
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
            None => {
                names.insert(key.clone());
            }
        }
    }
    for candidates in queued {
        if !candidates.iter().any(|c| keys.contains(c)) {
            names.insert(candidates[0].clone());
        }
    }
    names.into_iter().collect()
}

async fn read_with(conn: &Connection, names: &[String]) -> Result<Vec<LockState>, RedisError> {
    let (secs, micros): (u64, u64) = conn.query(&redis::cmd("TIME")).await?;
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
    let mut pipe = redis::pipe();
    for name in names {
        pipe.cmd("TYPE").arg(name);
        pipe.cmd("PTTL").arg(name);
        pipe.cmd("HLEN").arg(name);
        pipe.cmd("GET").arg(token_key(name));
        pipe.cmd("LLEN").arg(queue_key(name));
    }
    let replies = conn.query_each(&pipe).await?;
    for (state, r) in states.iter_mut().zip(replies.chunks_exact(5)) {
        state.key_type = get(&r[0]).unwrap_or_default();
        state.pttl_ms = get(&r[1]).unwrap_or(-2);
        state.field_count = get(&r[2]).unwrap_or(0);
        state.fencing_token = get::<String>(&r[3]).and_then(|t| t.parse().ok());
        state.queue_len = get(&r[4]).unwrap_or(0);
    }

    // Round 2: small hashes, queue heads, and deadlines that have passed.
    let now_ms = now_us / 1_000;
    let mut pipe = redis::pipe();
    for state in &states {
        // A placeholder keeps three replies per name.
        match small_hash(state) {
            true => pipe.cmd("HGETALL").arg(&state.name),
            false => pipe.cmd("PING"),
        };
        pipe.cmd("LRANGE")
            .arg(queue_key(&state.name))
            .arg(0)
            .arg(MAX_QUEUE - 1);
        pipe.cmd("ZRANGEBYSCORE")
            .arg(timeout_key(&state.name))
            .arg("-inf")
            .arg(now_ms)
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(0)
            .arg(MAX_QUEUE);
    }
    let replies = conn.query_each(&pipe).await?;
    let mut queues = Vec::new();
    let mut past = Vec::new();
    for (state, r) in states.iter_mut().zip(replies.chunks_exact(3)) {
        if let Some(fields) = get(&r[0]).filter(|_| small_hash(state)) {
            set_fields(state, fields);
        }
        queues.push(get::<Vec<String>>(&r[1]).unwrap_or_default());
        past.push(get::<Vec<(String, f64)>>(&r[2]).unwrap_or_default());
    }

    // Round 3: the deadline of each queue entry read.
    let mut pipe = redis::pipe();
    for (state, queue) in states.iter().zip(&queues) {
        for owner in queue {
            pipe.cmd("ZSCORE").arg(timeout_key(&state.name)).arg(owner);
        }
    }
    let mut scores = match pipe.is_empty() {
        true => Vec::new(),
        false => conn.query_each(&pipe).await?,
    }
    .into_iter();
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
    Ok(states)
}

fn small_hash(state: &LockState) -> bool {
    state.key_type == "hash" && state.field_count <= MAX_FIELDS
}

/// Sorts a hash's fields into `mode` and holders.
fn set_fields(state: &mut LockState, fields: Vec<(String, String)>) {
    for (field, value) in fields {
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
fn get<T: FromRedisValue>(reply: &Result<Value, RedisError>) -> Option<T> {
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
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(lock_names(&keys), ["lock:a", "lock:b", "plain"]);
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
}
