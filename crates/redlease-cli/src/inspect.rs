//! `redlease inspect`: a bounded SCAN for lock keys and their problems.

mod model;
mod read;
mod table;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;

use redis::aio::MultiplexedConnection;
use redlease::layout::{self, Derived};

use crate::connect::{Target, fail};
use crate::url_or_default;
use model::Report;

/// How many keys one SCAN call is asked to look at (its COUNT hint).
const BATCH: usize = 100;

/// Lists the locks whose keys match a pattern, with their problems.
///
/// Walks the keyspace with SCAN (never KEYS), looking at no more than
/// --limit keys per call; when it stops early it prints the cursor to go on
/// with (--cursor). For each lock: its owners (`<client-id>:<owner>`) and
/// hold counts, time to live, age (since the newest fencing token of the
/// name, when redlease took it), and fair-queue waiters. Fencing counters,
/// fair queues and their deadline sets are shown with their lock, not as
/// locks of their own. Problems: a lock without ttl (never expires), a key
/// that is not a lock hash (only with --pattern: without it every key is
/// scanned and keys that are not locks are counted, not listed), a hold
/// count that is not a positive integer, and fair-queue entries whose
/// waiters are gone (deadline passed; listed also when the lock key itself
/// is gone).
#[derive(Debug, clap::Args)]
pub(crate) struct InspectArgs {
    /// SCAN MATCH pattern (glob) for lock keys, for example 'lock:*'. Every
    /// key it matches is expected to be a lock: one that is not is reported
    /// as wrong_type. Without it, all keys are scanned and only locks are
    /// listed.
    #[arg(long, short = 'p')]
    pattern: Option<String>,
    /// How many keys SCAN may look at in this call (the sum of its COUNT
    /// hints; Redis may return a few more).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    limit: u64,
    /// Goes on from where an earlier call stopped.
    #[arg(long, default_value_t = 0)]
    cursor: u64,
    /// Prints JSON for tools instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn main(url: Option<String>, args: InspectArgs) -> ExitCode {
    let target = Target::new(url_or_default(url));
    let mut conn = match target.connection().await {
        Ok(conn) => conn,
        Err(message) => return fail(&message),
    };
    let report = match inspect(&mut conn, &args).await {
        Ok(report) => report,
        Err(e) => {
            let e = redlease::Error::from(e);
            return fail(&target.scrub(&format!("cannot inspect: {e}")));
        }
    };
    let out = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => json + "\n",
            Err(e) => return fail(&format!("cannot write json: {e}")),
        }
    } else {
        table::render(&report)
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

async fn inspect(
    conn: &mut MultiplexedConnection,
    args: &InspectArgs,
) -> redis::RedisResult<Report> {
    let mut cursor = args.cursor;
    let mut budget = args.limit;
    let mut keys = BTreeSet::new();
    let mut seen = 0;
    let pattern = args.pattern.as_deref().unwrap_or("*");
    loop {
        let count = budget.min(BATCH as u64);
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count)
            .query_async(conn)
            .await?;
        seen += batch.len();
        keys.extend(batch);
        budget -= count;
        cursor = next;
        if cursor == 0 || budget == 0 {
            break;
        }
    }
    let names = lock_names(&keys);
    let (now, raws) = read::read(conn, &names).await?;
    let mut locks: Vec<model::Entry> = raws
        .into_iter()
        .filter(|raw| !vanished(raw))
        .map(|raw| model::entry(raw, now))
        .collect();
    // Scanning everything, most keys are the application's own data: a
    // wrong_type for each would bury the real problems.
    let before = locks.len();
    if args.pattern.is_none() {
        locks.retain(|e| e.kind != model::Kind::NotALock);
    }
    Ok(Report {
        pattern: pattern.to_owned(),
        cursor,
        complete: cursor == 0,
        keys_seen: seen,
        not_locks_skipped: before - locks.len(),
        locks,
    })
}

/// The lock names behind the scanned keys: each key, except auxiliary keys,
/// which stand for their lock only when it was not scanned itself and they
/// are a fair queue (a fencing counter outlives its lock by design).
fn lock_names(keys: &BTreeSet<String>) -> Vec<String> {
    let mut names = BTreeSet::new();
    let mut queued = Vec::new();
    for key in keys {
        match layout::derived_from(key) {
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

/// Whether a scanned key was gone when it was read, with no fair queue
/// left under its name: a lock released (or expired) in between, not a
/// lock to list.
fn vanished(raw: &read::Raw) -> bool {
    raw.key_type == "none" && raw.queue_len == 0 && raw.past_deadlines.is_empty()
}

/// Redisson's short-lived keys beside a lock: read-lock hold timeouts and
/// unlock latches.
fn is_redisson_aux(key: &str) -> bool {
    key.starts_with("redisson_unlock_latch:")
        || key
            .rsplit_once(":rwlock_timeout:")
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_gone_since_the_scan_are_not_listed() {
        let raw = |key_type: &str, queue_len| read::Raw {
            name: "lock:a".to_owned(),
            key_type: key_type.to_owned(),
            pttl_ms: -2,
            hash_len: 0,
            fields: None,
            token: None,
            queue: Vec::new(),
            queue_len,
            past_deadlines: Vec::new(),
        };
        assert!(vanished(&raw("none", 0)));
        assert!(!vanished(&raw("none", 1)), "a queue without its lock");
        assert!(!vanished(&raw("hash", 0)));
    }

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
}
