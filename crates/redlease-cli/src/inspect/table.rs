//! The human table of `inspect`.

use std::fmt::Write;
use std::time::Duration;

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use super::model::{Entry, Kind, Report};
use crate::duration;

const HEADER: [&str; 7] = ["KEY", "KIND", "OWNERS", "TTL", "AGE", "QUEUE", "PROBLEMS"];

pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    if !report.locks.is_empty() {
        // Borderless, columns two spaces apart, no trailing spaces: it reads
        // in a terminal and in a log alike.
        let mut table = Table::new();
        table.load_style(NOTHING).set_header(HEADER);
        table.add_rows(report.locks.iter().map(row));
        for column in table.column_iter_mut() {
            column.set_padding((0, 2));
        }
        out.push_str(&table.trim_fmt());
        out.push('\n');
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

#[cfg(test)]
mod tests {
    use super::super::read::{Now, Raw};
    use super::*;

    const NOW: Now = Now {
        micros: 1_800_000_000_000_000,
    };

    fn report(raws: Vec<Raw>) -> Report {
        Report {
            pattern: "lock:*".to_owned(),
            cursor: 0,
            complete: true,
            keys_seen: raws.len(),
            not_locks_skipped: 0,
            locks: raws
                .into_iter()
                .map(|raw| super::super::model::entry(raw, NOW))
                .collect(),
        }
    }

    #[test]
    fn columns_line_up_two_spaces_apart() {
        let held = Raw {
            name: "lock:held".to_owned(),
            key_type: "hash".to_owned(),
            pttl_ms: 20_000,
            fields: Some(vec![("u:1".to_owned(), "2".to_owned())]),
            token: Some((NOW.micros - 3_000_000).to_string()),
            ..Raw::default()
        };
        let stuck = Raw {
            name: "lock:a-longer-name".to_owned(),
            key_type: "hash".to_owned(),
            pttl_ms: -1,
            fields: Some(vec![("u:2".to_owned(), "1".to_owned())]),
            ..Raw::default()
        };
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
    fn no_locks_no_header() {
        assert_eq!(
            render(&report(Vec::new())),
            "\n0 lock key(s), 0 with problems, 0 key(s) scanned matching \"lock:*\"\n"
        );
    }
}
