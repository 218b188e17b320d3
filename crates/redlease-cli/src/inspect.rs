//! `redlease inspect`: a bounded SCAN for lock keys and their problems. The
//! reading and the judging are the library's ([`redlease::layout`]); this
//! module only renders them.

mod json;
mod table;

use std::io::Write;
use std::process::ExitCode;

use redlease::admin;
use redlease::layout::{LockState, StateKind};

use crate::connect::{Target, admin_hint, fail};

/// Lists the locks (and Redisson semaphores and count-down latches) whose
/// keys match a pattern, with their problems.
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
/// is gone). A read-write lock shows its mode, its writer and its readers,
/// each reader with the time to live of its newest hold. A string integer
/// is a semaphore's available permits or a latch's count, which the key
/// alone cannot tell apart: it is shown as a `semaphore` or a `latch` when
/// someone waits on that one's channel, as an `expirable-semaphore` (with
/// its acquired permits: hex ids and remaining leases) when it has a
/// `{name}:timeout` zset of permits, else as a `counter` (only with
/// --pattern: without it such keys are counted with those that are not
/// locks). A string that is no integer is a lock of the string layout
/// (`run --layout string`, or a SET NX lock of redis-py, rslock, redsync or
/// a hand-written script), shown as a lock, `lock:string` (JSON kind
/// `string_lock`), with its owner (the value: bytes that are not UTF-8 as
/// \xNN, cut after 128 bytes) and ttl, and without ttl as a problem;
/// `unlock --force` removes it as a lock; without --pattern only those with a
/// fencing counter (taken or tried by redlease) are listed, the others
/// counted with the keys that are not locks, since most strings are the
/// application's own data. Reads only (no scripts), so it also works on a
/// replica.
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
    /// Shows what locks leave behind instead of the locks: fencing
    /// counters of names nobody holds (kept), fair-queue entries and
    /// permits whose time is up, read-write lock timeout keys and election
    /// records of holders gone, unlock latches and request records; how
    /// many, how much memory, and what `redlease gc` would remove.
    #[arg(long)]
    leftovers: bool,
}

/// The answer of one `inspect` call.
#[derive(Debug)]
struct Report {
    pattern: String,
    scan: admin::Scan,
    /// Keys that are not locks, left out because no --pattern named them as
    /// lock keys.
    not_locks_skipped: usize,
}

impl Report {
    fn locks(&self) -> &[LockState] {
        &self.scan.locks
    }
}

pub(crate) async fn main(target: Target, args: InspectArgs) -> ExitCode {
    if args.leftovers {
        let scan = crate::gc::ScanArgs {
            pattern: args.pattern.unwrap_or_else(|| "*".to_owned()),
            limit: args.limit,
            cursor: args.cursor,
            json: args.json,
        };
        return crate::gc::inspect(target, &scan).await;
    }
    let client = match target.reader().await {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    let pattern = args.pattern.as_deref().unwrap_or("*");
    let mut scan = match admin::scan(&client, pattern, args.cursor, args.limit).await {
        Ok(scan) => scan,
        Err(e) => {
            let hint = admin_hint(&e);
            return fail(&target.scrub(&format!("cannot inspect: {e}{hint}")));
        }
    };
    // Scanning everything, most keys are the application's own data: a
    // wrong_type for each would bury the real problems.
    let before = scan.locks.len();
    // Likewise a string integer with nothing to show it is a semaphore or
    // a latch: most are the application's own counters; and a string with
    // no fencing counter beside it: most are its cached values, not
    // another library's locks.
    if args.pattern.is_none() {
        scan.locks.retain(|s| match s.kind() {
            StateKind::NotALock | StateKind::Counter => false,
            StateKind::StringLock => s.fencing_token.is_some(),
            _ => true,
        });
    }
    let report = Report {
        pattern: pattern.to_owned(),
        not_locks_skipped: before - scan.locks.len(),
        scan,
    };
    let out = if args.json {
        match json::render(&report) {
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

/// Whether a state is a lock: a lock (or read-write lock) hash, or a
/// string of the string layout.
fn is_lock(state: &LockState) -> bool {
    matches!(
        state.kind(),
        StateKind::Lock | StateKind::ReadWriteLock | StateKind::StringLock
    )
}
