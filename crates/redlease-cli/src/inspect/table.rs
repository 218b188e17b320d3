//! The human table of `inspect`.

use std::fmt::Write;
use std::time::Duration;

use redlease::layout::{LockState, StateKind};

use super::{Report, is_lock};
use crate::duration;

const HEADER: [&str; 7] = ["KEY", "KIND", "OWNERS", "TTL", "AGE", "QUEUE", "PROBLEMS"];

pub(crate) fn render(report: &Report) -> String {
    let rows: Vec<[String; 7]> = report.locks().iter().map(row).collect();
    let mut widths = HEADER.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            let _ = write!(text, "{cell:<w$}  ");
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    if !rows.is_empty() {
        line(&HEADER.map(String::from));
        for row in &rows {
            line(row);
        }
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
    let _ = writeln!(
        out,
        "\n{} lock key(s), {} with problems, {} key(s) scanned matching {:?}",
        report.locks().len(),
        with_problems.len(),
        report.scan.keys_seen,
        report.pattern
    );
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
        _ => s.key_type.clone(),
    };
    let owners = s
        .owners()
        .iter()
        .map(|o| match o.count() {
            Some(count) => format!("{} x{count}", o.field),
            None => format!("{} x?", o.field),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let age = s.age().map_or_else(|| "?".to_owned(), duration::human);
    let stale = s.waiters.iter().filter(|w| w.stale).count();
    let queue = match (s.queue_len, stale) {
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
