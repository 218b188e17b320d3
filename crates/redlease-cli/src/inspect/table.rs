//! The human table of `inspect`.

use std::fmt::Write;
use std::time::Duration;

use comfy_table::Table;
use comfy_table::presets::NOTHING;
use redlease::layout::{Holder, LockState, StateKind};

use super::{Report, is_lock};
use crate::duration;

const HEADER: [&str; 7] = ["KEY", "KIND", "OWNERS", "TTL", "AGE", "QUEUE", "PROBLEMS"];

pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    if !report.locks().is_empty() {
        // Borderless, columns two spaces apart, no trailing spaces: it reads
        // in a terminal and in a log alike.
        let mut table = Table::new();
        // On a cluster, which master holds each lock.
        let nodes = report.locks().iter().any(|s| s.node.is_some());
        let mut header = HEADER.to_vec();
        if nodes {
            header.push("NODE");
        }
        table.load_style(NOTHING).set_header(header);
        table.add_rows(report.locks().iter().map(|s| {
            let mut cells = row(s).to_vec();
            if nodes {
                cells.push(s.node.clone().unwrap_or_else(|| "-".to_owned()));
            }
            cells
        }));
        for column in table.column_iter_mut() {
            column.set_padding((0, 2));
        }
        out.push_str(&table.trim_fmt());
        out.push('\n');
    }
    let with_problems: Vec<(&LockState, _)> = report
        .locks()
        .iter()
        .map(|s| (s, s.problems()))
        .filter(|(_, problems)| !problems.is_empty())
        .collect();
    if !with_problems.is_empty() {
        out.push_str("\nproblems:\n");
        for (state, problems) in &with_problems {
            for problem in problems {
                let _ = writeln!(
                    out,
                    "  {}: {}: {}",
                    state.name,
                    problem.kind.name(),
                    problem.message
                );
            }
        }
    }
    if report.scan.keys_seen == 0 {
        // Nothing matched: a normal answer, said in words rather than
        // as a row of zeros under an empty table (issue #18).
        let _ = writeln!(
            out,
            "no key matches {:?}{}",
            report.pattern,
            match report.scan.cursor {
                0 => "",
                _ => " in this part of the keyspace",
            }
        );
    } else {
        // A blank line after the table or the problems, none before.
        let gap = if out.is_empty() { "" } else { "\n" };
        let _ = writeln!(
            out,
            "{gap}{} lock key(s), {} with problems, {} key(s) scanned matching {:?}",
            report.locks().len(),
            with_problems.len(),
            report.scan.keys_seen,
            report.pattern
        );
    }
    if report.not_locks_skipped > 0 {
        let _ = writeln!(
            out,
            "{} key(s) that are not locks skipped; give --pattern to check a namespace as lock keys",
            report.not_locks_skipped
        );
    }
    if report.scan.cursor != 0 {
        let _ = writeln!(
            out,
            "stopped at --limit; continue with: --cursor {}",
            report.scan.cursor
        );
    }
    out
}

fn row(s: &LockState) -> [String; 7] {
    let kind = match (s.kind(), &s.mode) {
        (StateKind::Lock, _) => "lock".to_owned(),
        (StateKind::ReadWriteLock, Some(mode)) => format!("rwlock:{mode}"),
        (StateKind::ReadWriteLock, None) => "rwlock".to_owned(),
        (StateKind::QueueOnly, _) => "queue-only".to_owned(),
        (StateKind::Free, _) => "free".to_owned(),
        (StateKind::Semaphore, _) => "semaphore".to_owned(),
        (StateKind::ExpirableSemaphore, _) => "expirable-semaphore".to_owned(),
        (StateKind::CountDownLatch, _) => "latch".to_owned(),
        (StateKind::Counter, _) => "counter".to_owned(),
        (StateKind::StringLock, _) => "lock:string".to_owned(),
        _ => s.key_type.clone(),
    };
    let owners = match s.kind() {
        StateKind::Lock | StateKind::ReadWriteLock => {
            s.owners().iter().map(owner).collect::<Vec<_>>().join(", ")
        }
        // The owner alone: the key holds no count (re-entry counts in the
        // holder's client, if at all).
        StateKind::StringLock => s.string_owner().unwrap_or_default().to_owned(),
        _ if s.is_counter() => counter(s),
        _ => String::new(),
    };
    let age = s.age().map_or_else(|| "?".to_owned(), duration::human);
    let stale = s.waiters.iter().filter(|w| w.stale).count();
    let listening = s.listeners.map_or(0, |l| l.semaphore + l.latch);
    let queue = match (s.queue_len, stale) {
        (0, 0) if listening > 0 => format!("{listening} listening"),
        (0, 0) => "-".to_owned(),
        (n, 0) => n.to_string(),
        (n, s) => format!("{n} ({s} gone)"),
    };
    let problems = s
        .problems()
        .iter()
        .map(|p| p.kind.name())
        .collect::<Vec<_>>()
        .join(",");
    let ttl = match (s.pttl_ms, s.key_type.as_str()) {
        (ms, _) if ms >= 0 => duration::human(Duration::from_millis(ms as u64)),
        (_, "none") => "-".to_owned(),
        _ => "never".to_owned(),
    };
    [
        s.name.clone(),
        kind,
        if owners.is_empty() {
            "-".to_owned()
        } else {
            owners
        },
        ttl,
        if is_lock(s) { age } else { "-".to_owned() },
        queue,
        if problems.is_empty() {
            "-".to_owned()
        } else {
            problems
        },
    ]
}

/// A lock owner with its hold count; a reader also with the time to live
/// of its newest hold.
fn owner(o: &Holder) -> String {
    let count = o.count().map_or_else(|| "?".to_owned(), |c| c.to_string());
    match o.hold_ttl_ms {
        Some(ms) => format!("{} x{count} ({})", o.field, ms_human(ms)),
        None => format!("{} x{count}", o.field),
    }
}

/// The permits or count of a string-keyed structure.
fn counter(s: &LockState) -> String {
    let value = s.value.as_deref().unwrap_or("-");
    match s.kind() {
        StateKind::Semaphore => format!("{value} permits available"),
        StateKind::CountDownLatch => format!("count {value}"),
        StateKind::ExpirableSemaphore => {
            let now_ms = (s.server_time_us / 1_000) as f64;
            let mut permits: Vec<String> = s
                .permits
                .iter()
                .take(3)
                .map(|p| match p.expires_ms {
                    Some(at) if at > now_ms => {
                        format!("{} ({})", p.id, ms_human((at - now_ms) as i64))
                    }
                    Some(_) => format!("{} (expired)", p.id),
                    None => format!("{} (no lease)", p.id),
                })
                .collect();
            if s.permits_len > 3 {
                permits.push(format!("+{} more", s.permits_len - 3));
            }
            format!(
                "{value} available, {} acquired: {}",
                s.permits_len,
                permits.join(", ")
            )
        }
        _ => format!("{value} (semaphore permits or latch count)"),
    }
}

/// A `PTTL` reply for people: a duration, `never` (-1) or `gone` (-2).
fn ms_human(ms: i64) -> String {
    match ms {
        -1 => "never".to_owned(),
        ms if ms < 0 => "gone".to_owned(),
        ms => duration::human(Duration::from_millis(ms as u64)),
    }
}

#[cfg(test)]
mod tests {
    use redlease::admin::Scan;
    use redlease::layout::Holder;

    use super::*;

    const NOW_US: u64 = 1_800_000_000_000_000;

    fn report(locks: Vec<LockState>) -> Report {
        let mut scan = Scan::default();
        scan.keys_seen = locks.len();
        scan.locks = locks;
        Report {
            pattern: "lock:*".to_owned(),
            scan,
            not_locks_skipped: 0,
        }
    }

    fn lock(name: &str, holder: Holder, pttl_ms: i64, token: Option<u64>) -> LockState {
        let mut state = LockState::absent(name);
        state.key_type = "hash".to_owned();
        state.holders = vec![holder];
        state.field_count = 1;
        state.pttl_ms = pttl_ms;
        state.fencing_token = token;
        state.server_time_us = NOW_US;
        state
    }

    #[test]
    fn columns_line_up_two_spaces_apart() {
        let held = lock(
            "lock:held",
            Holder::new("u:1", "2"),
            20_000,
            Some(NOW_US - 3_000_000),
        );
        let stuck = lock("lock:a-longer-name", Holder::new("u:2", "1"), -1, None);
        assert_eq!(
            render(&report(vec![held, stuck])),
            "\
KEY                 KIND  OWNERS  TTL    AGE   QUEUE  PROBLEMS
lock:held           lock  u:1 x2  20.0s  3.0s  -      -
lock:a-longer-name  lock  u:2 x1  never  ?     -      no_ttl

problems:
  lock:a-longer-name: no_ttl: never expires (no ttl): if its holder is gone it stays locked for ever

2 lock key(s), 1 with problems, 2 key(s) scanned matching \"lock:*\"
"
        );
    }

    #[test]
    fn string_locks_show_their_owner() {
        let mut state = LockState::absent("lock:setnx");
        state.key_type = "string".to_owned();
        state.value = Some("9b2e6c1a-uuid".to_owned());
        state.pttl_ms = 20_000;
        state.server_time_us = NOW_US;
        let mut forever = state.clone();
        forever.name = "lock:forever".to_owned();
        forever.pttl_ms = -1;
        assert_eq!(
            render(&report(vec![state, forever])),
            "\
KEY           KIND         OWNERS         TTL    AGE  QUEUE  PROBLEMS
lock:setnx    lock:string  9b2e6c1a-uuid  20.0s  ?    -      -
lock:forever  lock:string  9b2e6c1a-uuid  never  ?    -      no_ttl

problems:
  lock:forever: no_ttl: never expires (no ttl): if its holder is gone it stays locked for ever

2 lock key(s), 1 with problems, 2 key(s) scanned matching \"lock:*\"
"
        );
    }

    #[test]
    fn no_locks_no_header() {
        // Nothing scanned matched (#18): said so, not a table of nothing.
        assert_eq!(render(&report(Vec::new())), "no key matches \"lock:*\"\n");
    }
}
