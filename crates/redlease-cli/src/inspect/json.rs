//! `inspect --json`: the report as JSON, for tools. The field names are the
//! tool's interface; keep them stable.

use serde::Serialize;

use super::{Report, is_lock};
use redlease::layout::{LockState, StateKind};

#[derive(Serialize)]
struct ReportJson<'a> {
    pattern: &'a str,
    /// `0` when the scan went through every key, else the `--cursor` to go
    /// on with.
    cursor: u64,
    complete: bool,
    keys_seen: usize,
    not_locks_skipped: usize,
    locks: Vec<LockJson<'a>>,
}

#[derive(Serialize)]
struct LockJson<'a> {
    key: &'a str,
    /// The cluster node (`host:port`) holding the key; absent on one node.
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    kind: &'static str,
    #[serde(rename = "type")]
    key_type: &'a str,
    mode: Option<&'a str>,
    owners: Vec<OwnerJson<'a>>,
    /// A string-layout lock's owner: the key's value (bytes that are not
    /// UTF-8 as `\xNN`, cut after 128 bytes with `...`).
    holder: Option<&'a str>,
    /// Milliseconds to live; `None` when the key never expires or is absent.
    ttl_ms: Option<i64>,
    age_ms: Option<u64>,
    fencing_token: Option<u64>,
    queue_len: u64,
    waiters: Vec<WaiterJson<'a>>,
    /// A semaphore's available permits or a latch's count.
    value: Option<i64>,
    /// An expirable semaphore's acquired permits (at most the first 100).
    permits: Vec<PermitJson>,
    permits_acquired: u64,
    /// Connections subscribed to a string key's semaphore and latch
    /// channels; absent when not read (on a cluster).
    #[serde(skip_serializing_if = "Option::is_none")]
    listeners: Option<ListenersJson>,
    problems: Vec<ProblemJson>,
}

#[derive(Serialize)]
struct PermitJson {
    /// The permit id, as Redisson's API shows it (hex).
    id: String,
    /// Milliseconds until the permit expires (negative: expired, not yet
    /// reclaimed); `None` for a permit without lease.
    expires_in_ms: Option<i64>,
}

#[derive(Serialize)]
struct ListenersJson {
    semaphore: u64,
    latch: u64,
}

#[derive(Serialize)]
struct OwnerJson<'a> {
    field: &'a str,
    count: Option<i64>,
    /// `read` or `write` in a read-write lock; absent in a plain lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<&'static str>,
    /// A reader's newest hold: milliseconds to live (`-2`: its timeout
    /// key is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    hold_ttl_ms: Option<i64>,
}

#[derive(Serialize)]
struct WaiterJson<'a> {
    owner: &'a str,
    deadline_ms: Option<u64>,
    stale: bool,
}

#[derive(Serialize)]
struct ProblemJson {
    kind: &'static str,
    message: String,
}

pub(super) fn render(report: &Report) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&ReportJson {
        pattern: &report.pattern,
        cursor: report.scan.cursor,
        complete: report.scan.cursor == 0,
        keys_seen: report.scan.keys_seen,
        not_locks_skipped: report.not_locks_skipped,
        locks: report.locks().iter().map(lock).collect(),
    })
}

fn lock(state: &LockState) -> LockJson<'_> {
    LockJson {
        key: &state.name,
        node: state.node.as_deref(),
        kind: match state.kind() {
            StateKind::Lock => "lock",
            StateKind::ReadWriteLock => "rwlock",
            StateKind::QueueOnly => "queue_only",
            StateKind::Free => "free",
            StateKind::Semaphore => "semaphore",
            StateKind::ExpirableSemaphore => "expirable_semaphore",
            StateKind::CountDownLatch => "count_down_latch",
            StateKind::Counter => "counter",
            StateKind::StringLock => "string_lock",
            _ => "not_a_lock",
        },
        key_type: &state.key_type,
        mode: state.mode.as_deref().filter(|_| is_lock(state)),
        owners: state
            .owners()
            .iter()
            .map(|h| OwnerJson {
                field: &h.field,
                count: h.count(),
                side: match (state.kind(), h.is_writer()) {
                    (StateKind::ReadWriteLock, true) => Some("write"),
                    (StateKind::ReadWriteLock, false) => Some("read"),
                    _ => None,
                },
                hold_ttl_ms: h.hold_ttl_ms,
            })
            .collect(),
        holder: state.string_owner(),
        ttl_ms: (state.pttl_ms >= 0).then_some(state.pttl_ms),
        age_ms: state.age().map(|age| age.as_millis() as u64),
        fencing_token: state.lock_token(),
        queue_len: state.queue_len,
        waiters: state
            .waiters
            .iter()
            .map(|w| WaiterJson {
                owner: &w.owner,
                deadline_ms: w.deadline_ms.map(|d| d.max(0.0) as u64),
                stale: w.stale,
            })
            .collect(),
        value: state.counter().filter(|_| state.is_counter()),
        permits: state
            .permits
            .iter()
            .map(|p| PermitJson {
                id: p.id.clone(),
                expires_in_ms: p
                    .expires_ms
                    .map(|at| at as i64 - (state.server_time_us / 1_000) as i64),
            })
            .collect(),
        permits_acquired: state.permits_len,
        listeners: state.listeners.map(|l| ListenersJson {
            semaphore: l.semaphore,
            latch: l.latch,
        }),
        problems: state
            .problems()
            .into_iter()
            .map(|p| ProblemJson {
                kind: p.kind.name(),
                message: p.message,
            })
            .collect(),
    }
}
