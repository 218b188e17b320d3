//! The human table of `inspect`.

use std::fmt::Write;
use std::time::Duration;

use super::model::{Entry, Kind, Report};
use crate::duration;

const HEADER: [&str; 7] = ["KEY", "KIND", "OWNERS", "TTL", "AGE", "QUEUE", "PROBLEMS"];

pub(crate) fn render(report: &Report) -> String {
    let rows: Vec<[String; 7]> = report.locks.iter().map(row).collect();
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
    let with_problems: Vec<&Entry> = report
        .locks
        .iter()
        .filter(|e| !e.problems.is_empty())
        .collect();
    if !with_problems.is_empty() {
        out.push_str("\nproblems:\n");
        for entry in &with_problems {
            for problem in &entry.problems {
                let _ = writeln!(
                    out,
                    "  {}: {}: {}",
                    entry.key,
                    problem.kind.name(),
                    problem.message
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{} lock key(s), {} with problems, {} key(s) scanned matching {:?}",
        report.locks.len(),
        with_problems.len(),
        report.keys_seen,
        report.pattern
    );
    if report.not_locks_skipped > 0 {
        let _ = writeln!(
            out,
            "{} key(s) that are not locks skipped; give --pattern to check a namespace as lock keys",
            report.not_locks_skipped
        );
    }
    if !report.complete {
        let _ = writeln!(
            out,
            "stopped at --limit; continue with: --cursor {}",
            report.cursor
        );
    }
    out
}

fn row(e: &Entry) -> [String; 7] {
    let kind = match (e.kind, &e.mode) {
        (Kind::Lock, _) => "lock".to_owned(),
        (Kind::RwLock, Some(mode)) => format!("rwlock:{mode}"),
        (Kind::RwLock, None) => "rwlock".to_owned(),
        (Kind::QueueOnly, _) => "queue-only".to_owned(),
        (Kind::NotALock, _) => e.key_type.clone(),
    };
    let owners = e
        .owners
        .iter()
        .map(|o| match o.count {
            Some(count) => format!("{} x{count}", o.field),
            None => format!("{} x?", o.field),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let age = e.age_ms.map_or_else(
        || "?".to_owned(),
        |ms| duration::human(Duration::from_millis(ms)),
    );
    let stale = e.waiters.iter().filter(|w| w.stale).count();
    let queue = match (e.queue_len, stale) {
        (0, 0) => "-".to_owned(),
        (n, 0) => n.to_string(),
        (n, s) => format!("{n} ({s} gone)"),
    };
    let problems = e
        .problems
        .iter()
        .map(|p| p.kind.name())
        .collect::<Vec<_>>()
        .join(",");
    [
        e.key.clone(),
        kind,
        if owners.is_empty() {
            "-".to_owned()
        } else {
            owners
        },
        super::model::ttl_cell(e),
        if matches!(e.kind, Kind::Lock | Kind::RwLock) {
            age
        } else {
            "-".to_owned()
        },
        queue,
        if problems.is_empty() {
            "-".to_owned()
        } else {
            problems
        },
    ]
}
