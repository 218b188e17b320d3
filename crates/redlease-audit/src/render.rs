//! The report for people: an aligned table of locks, then the warnings and
//! problems, each with its `file:line`. (Tools get the JSON instead.)

use std::fmt::Write;

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use crate::WATCHDOG_LEASE;
use crate::duration::format;
use crate::model::Audit;

/// The table: one row per lock (location, function, key, mode, wait,
/// lease, and `at least` when some lock has one), a `warnings` section, a `problems` section when there are any, and a
/// closing count. A missing wait reads `one attempt`, a missing lease
/// `watchdog (30s)`.
pub fn render_table(audit: &Audit) -> String {
    let mut out = String::new();
    if audit.locks.is_empty() {
        out.push_str("no #[distributed_lock] found\n");
    } else {
        let watchdog = format!("watchdog ({})", format(WATCHDOG_LEASE));
        let row = |lock: &crate::model::Declared| {
            [
                lock.location(),
                lock.function.clone(),
                lock.key.clone(),
                lock.mode.as_str().to_owned(),
                lock.wait
                    .as_ref()
                    .map_or_else(|| "one attempt".to_owned(), |w| w.text.clone()),
                lock.lease
                    .as_ref()
                    .map_or_else(|| watchdog.clone(), |l| l.text.clone()),
            ]
        };
        let header = ["location", "function", "key", "mode", "wait", "lease"];
        // A column of its own only where some lock keeps a least hold: the
        // common table stays as it was.
        if audit.locks.iter().any(|l| l.at_least.is_some()) {
            let rows = audit.locks.iter().map(|lock| {
                let [a, b, c, d, e, f] = row(lock);
                let at_least = lock.at_least.as_ref().map_or("-", |t| t.text.as_str());
                [a, b, c, d, e, f, at_least.to_owned()]
            });
            let [a, b, c, d, e, f] = header;
            push_aligned(&mut out, 0, Some([a, b, c, d, e, f, "at least"]), rows);
        } else {
            push_aligned(&mut out, 0, Some(header), audit.locks.iter().map(row));
        }
    }

    if !audit.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings ({}):", audit.warnings.len());
        let rows = audit.warnings.iter().map(|w| {
            [
                format!("{}:{}", w.file, w.line),
                w.kind.as_str().to_owned(),
                format!("{}: {}", w.function, w.message),
            ]
        });
        push_aligned(&mut out, 2, None, rows);
    }

    if !audit.problems.is_empty() {
        let _ = writeln!(out, "\nproblems ({}):", audit.problems.len());
        let rows = audit
            .problems
            .iter()
            .map(|p| [p.location(), p.kind.as_str().to_owned(), p.message.clone()]);
        push_aligned(&mut out, 2, None, rows);
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

/// Writes `rows` (after `header`, if any) with every column padded to its
/// widest cell (in display columns, so keys with non-ASCII text still line
/// up), two spaces apart, the first `indent` spaces in, and no trailing
/// spaces: a plain text table that reads in a terminal and diffs well.
fn push_aligned<const N: usize>(
    out: &mut String,
    indent: u16,
    header: Option<[&str; N]>,
    rows: impl Iterator<Item = [String; N]>,
) {
    let mut table = Table::new();
    table.load_style(NOTHING);
    if let Some(header) = header {
        table.set_header(header);
    }
    table.add_rows(rows);
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_padding((if i == 0 { indent } else { 0 }, 2));
    }
    out.push_str(&table.trim_fmt());
    out.push('\n');
}

fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `source` as `src/lib.rs`.
    fn table_of(source: &str) -> String {
        render_table(&crate::audit_source("src/lib.rs", source))
    }

    #[test]
    fn aligns_columns_and_names_defaults() {
        let table = table_of(
            r#"
#[distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
async fn issue_receipt(bill_id: u64) {}
#[distributed_lock(key = "{order_id}")]
async fn ship(order_id: u64) {}
"#,
        );
        assert_eq!(
            table,
            "\
location      function       key                           mode   wait         lease
src/lib.rs:2  issue_receipt  sales:receipt:lock:{bill_id}  plain  15s          120s
src/lib.rs:4  ship           {order_id}                    plain  one attempt  watchdog (30s)

warnings (1):
  src/lib.rs:4  key_without_prefix  ship: key `{order_id}` has no `prefix:` namespace before its first placeholder: locks of unrelated code (and other data in the same redis) can collide with it, and it cannot be grouped or scanned by prefix

2 locks, 1 warning, 0 problems
"
        );
    }

    #[test]
    fn issue_40_shows_at_least_when_a_lock_has_one() {
        let table = table_of(
            r#"
#[distributed_lock(key = "jobs:report:{day}", at_least = "50s", lease = "30s")]
async fn report(day: u32) {}
#[distributed_lock(key = "jobs:other:{day}")]
async fn other(day: u32) {}
"#,
        );
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "location      function  key                mode   wait         lease           at least",
                "src/lib.rs:2  report    jobs:report:{day}  plain  one attempt  30s             50s",
                "src/lib.rs:4  other     jobs:other:{day}   plain  one attempt  watchdog (30s)  -",
            ]
        );
        assert!(table.contains("at_least_over_lease"), "{table}");
    }

    #[test]
    fn shows_the_mode_of_each_side() {
        let table = table_of(
            r#"
#[distributed_lock(key = "catalog:prices:{region}", mode = "read", wait = "2s")]
async fn read_prices(region: &str) {}
#[distributed_lock(key = "catalog:prices:{region}", mode = "write", lease = "1m")]
async fn rebuild_prices(region: &str) {}
"#,
        );
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "location      function        key                      mode   wait         lease",
                "src/lib.rs:2  read_prices     catalog:prices:{region}  read   2s           watchdog (30s)",
                "src/lib.rs:4  rebuild_prices  catalog:prices:{region}  write  one attempt  1m",
            ]
        );
    }

    #[test]
    fn says_so_when_there_is_nothing() {
        assert_eq!(
            render_table(&Audit::default()),
            "no #[distributed_lock] found\n\n0 locks, 0 warnings, 0 problems\n"
        );
    }

    #[test]
    fn wide_characters_count_as_two_columns() {
        let lock = |function: &str, word: &str| {
            format!(
                "#[distributed_lock(key = \"stock:{word}:{{sku}}\", wait = \"1s\", lease = \"10s\")]\n\
                 async fn {function}(sku: u64) {{}}\n"
            )
        };
        let table = table_of(&(lock("wide", "中文") + &lock("narrow", "ab")));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[1],
            "src/lib.rs:1  wide      stock:中文:{sku}  plain  1s    10s"
        );
        assert_eq!(
            lines[2],
            "src/lib.rs:3  narrow    stock:ab:{sku}    plain  1s    10s"
        );
    }
}
