//! The report for people: an aligned table of locks, then the warnings and
//! problems, each with its `file:line`. (Tools get the JSON instead.)

use std::fmt::Write;

use crate::WATCHDOG_LEASE;
use crate::duration::format;
use crate::model::Audit;

/// The table: one row per lock (location, function, key, wait, lease), a
/// `warnings` section, a `problems` section when there are any, and a
/// closing count. A missing wait reads `one attempt`, a missing lease
/// `watchdog (30s)`.
pub fn render_table(audit: &Audit) -> String {
    let mut out = String::new();
    if audit.locks.is_empty() {
        out.push_str("no #[distributed_lock] found\n");
    } else {
        let watchdog = format!("watchdog ({})", format(WATCHDOG_LEASE));
        let mut rows = vec![["location", "function", "key", "wait", "lease"].map(str::to_owned)];
        rows.extend(audit.locks.iter().map(|lock| {
            [
                lock.location(),
                lock.function.clone(),
                lock.key.clone(),
                lock.wait
                    .as_ref()
                    .map_or_else(|| "one attempt".to_owned(), |w| w.text.clone()),
                lock.lease
                    .as_ref()
                    .map_or_else(|| watchdog.clone(), |l| l.text.clone()),
            ]
        }));
        push_aligned(&mut out, "", &rows);
    }

    if !audit.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings ({}):", audit.warnings.len());
        let rows: Vec<[String; 3]> = audit
            .warnings
            .iter()
            .map(|w| {
                [
                    format!("{}:{}", w.file, w.line),
                    w.kind.as_str().to_owned(),
                    format!("{}: {}", w.function, w.message),
                ]
            })
            .collect();
        push_aligned(&mut out, "  ", &rows);
    }

    if !audit.problems.is_empty() {
        let _ = writeln!(out, "\nproblems ({}):", audit.problems.len());
        let rows: Vec<[String; 3]> = audit
            .problems
            .iter()
            .map(|p| [p.location(), p.kind.as_str().to_owned(), p.message.clone()])
            .collect();
        push_aligned(&mut out, "  ", &rows);
    }

    let _ = writeln!(
        out,
        "\n{}, {}, {}",
        count(audit.locks.len(), "lock"),
        count(audit.warnings.len(), "warning"),
        count(audit.problems.len(), "problem"),
    );
    out
}

/// Writes `rows` with every column but the last padded to its widest cell
/// (in characters, so keys with non-ASCII text still line up), two spaces
/// apart, and no trailing spaces.
fn push_aligned<const N: usize>(out: &mut String, indent: &str, rows: &[[String; N]]) {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let mut line = indent.to_owned();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < N {
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_and_names_defaults() {
        let audit = crate::audit_source(
            "src/lib.rs",
            r#"
#[distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
async fn issue_receipt(bill_id: u64) {}
#[distributed_lock(key = "{order_id}")]
async fn ship(order_id: u64) {}
"#,
        );
        assert_eq!(
            render_table(&audit),
            "\
location      function       key                           wait         lease
src/lib.rs:2  issue_receipt  sales:receipt:lock:{bill_id}  15s          120s
src/lib.rs:4  ship           {order_id}                    one attempt  watchdog (30s)

warnings (1):
  src/lib.rs:4  key_without_prefix  ship: key `{order_id}` has no `prefix:` namespace before its first placeholder: locks of unrelated code (and other data in the same redis) can collide with it, and it cannot be grouped or scanned by prefix

2 locks, 1 warning, 0 problems
"
        );
    }

    #[test]
    fn says_so_when_there_is_nothing() {
        assert_eq!(
            render_table(&Audit::default()),
            "no #[distributed_lock] found\n\n0 locks, 0 warnings, 0 problems\n"
        );
    }
}
