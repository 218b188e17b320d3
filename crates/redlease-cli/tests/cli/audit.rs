//! `redlease audit`: the same output and exit codes as `redlease-audit`.

use std::time::Duration;

use serde_json::Value;

use crate::support::{output, redlease, stderr, stdout, temp_dir};

const LIMIT: Duration = Duration::from_secs(15);

const CLEAN: &str = r#"
#[redlease::distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
async fn issue_receipt(bill_id: u64) {}
"#;

/// A key without a `prefix:` namespace: a warning.
const WARNED: &str = r#"
#[distributed_lock(key = "receipt{bill_id}")]
async fn reprint(bill_id: u64) {}
"#;

fn audit(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = redlease("redis://127.0.0.1:1");
    cmd.arg("audit").args(extra).arg(dir);
    output(&mut cmd, LIMIT)
}

#[test]
fn lists_declared_locks_with_exit_codes() {
    let dir = temp_dir("audit");
    std::fs::write(dir.join("sales.rs"), CLEAN).unwrap();
    let out = audit(&dir, &["--deny-warnings"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("issue_receipt") && table.contains("sales:receipt:lock:{bill_id}"),
        "{table}"
    );
    assert_eq!(
        table,
        redlease_audit::render_table(&redlease_audit::audit_path(&dir).unwrap())
    );

    std::fs::write(dir.join("print.rs"), WARNED).unwrap();
    let out = audit(&dir, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("key_without_prefix"),
        "{}",
        stdout(&out)
    );
    let out = audit(&dir, &["--deny-warnings"]);
    assert_eq!(out.status.code(), Some(1));

    let out = audit(&dir, &["--json"]);
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let functions: Vec<&str> = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["function"].as_str().unwrap())
        .collect();
    assert_eq!(functions, ["reprint", "issue_receipt"]);
}

#[test]
fn unreadable_path_exits_2() {
    let missing = temp_dir("audit-missing").join("nope");
    let out = audit(&missing, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("redlease: "), "{}", stderr(&out));
    let out = output(redlease("redis://127.0.0.1:1").arg("audit"), LIMIT);
    assert_eq!(out.status.code(), Some(2), "no PATH is a usage error");
}

/// The mode of a read-write lock's side shows in the table and the JSON.
#[test]
fn lists_the_mode_of_read_write_locks() {
    let dir = temp_dir("audit-mode");
    std::fs::write(
        dir.join("catalog.rs"),
        r#"
#[distributed_lock(key = "catalog:prices:{region}", mode = "read", wait = "2s")]
async fn read_prices(region: &str) {}
#[distributed_lock(key = "catalog:prices:{region}", mode = "write", wait = "2s")]
async fn rebuild_prices(region: &str) {}
"#,
    )
    .unwrap();
    let out = audit(&dir, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let row = |function: &str| {
        table
            .lines()
            .find(|l| l.contains(function))
            .unwrap_or_else(|| panic!("no {function}: {table}"))
            .split_whitespace()
            .nth(3)
            .map(str::to_owned)
    };
    assert!(table.starts_with("location "), "{table}");
    assert_eq!(row("read_prices").as_deref(), Some("read"), "{table}");
    assert_eq!(row("rebuild_prices").as_deref(), Some("write"), "{table}");

    let out = audit(&dir, &["--json"]);
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(json["locks"][0]["mode"], "read");
    assert_eq!(json["locks"][1]["mode"], "write");
}
