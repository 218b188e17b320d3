//! The audit over a fake crate tree (`tests/fixtures/app`): what it lists,
//! warns about and reports as problems, in both outputs, and the binary's
//! exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use redlease_audit::{Audit, ProblemKind, WarningKind, audit_path, audit_paths, render_table};
use serde_json::json;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app")
}

fn audit() -> Audit {
    audit_path(&fixture()).expect("the fixture tree is readable")
}

/// location, function, key, wait, lease: what the table shows.
type Row<'a> = (String, &'a str, &'a str, Option<&'a str>, Option<&'a str>);

#[test]
fn lists_every_lock_with_its_fields() {
    let audit = audit();
    let rows: Vec<_> = audit
        .locks
        .iter()
        .map(|l| {
            (
                l.location(),
                l.function.as_str(),
                l.key.as_str(),
                l.wait.as_ref().map(|w| w.text.as_str()),
                l.lease.as_ref().map(|l| l.text.as_str()),
            )
        })
        .collect();
    let expected: Vec<Row<'_>> = [
        (
            "src/billing.rs:9",
            "BillingService::finalize",
            "billing:invoice:{self.tenant}:{invoice.id}",
            Some("5s"),
            None,
        ),
        (
            "src/billing.rs:14",
            "Nightly::run",
            "nightly:{{cluster}}:run:{day}",
            None,
            Some("1h"),
        ),
        (
            "src/lib.rs:8",
            "issue_receipt",
            "sales:receipt:lock:{bill_id}",
            Some("15s"),
            Some("120s"),
        ),
        (
            "src/lib.rs:16",
            "jobs::monthly::run_payroll",
            "payroll:batch:{month}",
            None,
            Some("10m"),
        ),
        (
            "src/malformed.rs:10",
            "fine",
            "receipts:ok:{id}",
            Some("1s"),
            Some("10s"),
        ),
        (
            "src/reviews.rs:3",
            "ship",
            "orders:ship:{order_id}",
            Some("1m30s"),
            Some("2m"),
        ),
        (
            "src/reviews.rs:6",
            "pack",
            "orders:pack:{order_id}",
            Some("20s"),
            None,
        ),
        (
            "src/reviews.rs:9",
            "refund",
            "{order_id}",
            None,
            Some("30s"),
        ),
        ("src/reviews.rs:12", "everything", "lock", None, None),
        (
            "src/reviews.rs:15",
            "reserve",
            "inventory:sku:{sku}",
            None,
            Some("30s"),
        ),
        (
            "src/reviews.rs:18",
            "release",
            "inventory:sku:{sku}",
            None,
            Some("45s"),
        ),
        (
            "src/reviews.rs:21",
            "count",
            "inventory:sku:{sku}",
            None,
            Some("30s"),
        ),
        (
            "src/reviews.rs:24",
            "recount",
            "inventory:sku:{sku}",
            None,
            Some("10m"),
        ),
        (
            "src/reviews.rs:27",
            "sync",
            "inventory:sync:{sku}",
            None,
            Some("500ms"),
        ),
    ]
    .into_iter()
    .map(|(loc, f, k, w, l)| (loc.to_owned(), f, k, w, l))
    .collect();
    assert_eq!(rows, expected);

    // target/ and hidden directories are skipped; they hold `must_not_be_listed`.
    assert!(
        audit
            .locks
            .iter()
            .all(|l| l.function != "must_not_be_listed")
    );

    let ship = &audit.locks[5];
    assert_eq!(
        ship.wait.as_ref().unwrap().duration,
        Duration::from_secs(90)
    );
    assert_eq!(
        ship.lease.as_ref().unwrap().duration,
        Duration::from_secs(120)
    );
    assert_eq!(ship.prefix.as_deref(), Some("orders:ship"));
    let finalize = &audit.locks[0];
    assert_eq!(finalize.client.as_deref(), Some("self.locks"));
    assert_eq!(finalize.effective_lease(), Duration::from_secs(30));
    assert_eq!(
        audit.locks[1].prefix.as_deref(),
        Some("nightly:{cluster}:run")
    );
    assert_eq!(audit.locks[7].prefix, None);
}

#[test]
fn warns_about_each_case() {
    let audit = audit();
    let warnings: Vec<_> = audit
        .warnings
        .iter()
        .map(|w| {
            (
                format!("{}:{}", w.file, w.line),
                w.function.as_str(),
                w.kind,
            )
        })
        .collect();
    let expected: Vec<_> = [
        ("src/reviews.rs:3", "ship", WarningKind::WaitNearLease),
        ("src/reviews.rs:6", "pack", WarningKind::WaitNearLease),
        ("src/reviews.rs:9", "refund", WarningKind::KeyWithoutPrefix),
        (
            "src/reviews.rs:12",
            "everything",
            WarningKind::KeyWithoutPrefix,
        ),
        ("src/reviews.rs:24", "recount", WarningKind::LeaseOutlier),
        ("src/reviews.rs:27", "sync", WarningKind::ShortLease),
    ]
    .into_iter()
    .map(|(loc, f, k)| (loc.to_owned(), f, k))
    .collect();
    assert_eq!(warnings, expected);

    let messages: Vec<&str> = audit.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        messages[0].contains("a waiter can outwait the holder's lease"),
        "{}",
        messages[0]
    );
    assert!(
        messages[0].contains("busy only after 1m30s"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("watchdog lease (30s"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].starts_with("key `{order_id}` has no `prefix:` namespace"),
        "{}",
        messages[2]
    );
    assert!(
        messages[4].starts_with("lease 10m is 20x the median lease (30s) of the 3 other"),
        "{}",
        messages[4]
    );
    assert!(messages[4].contains("`inventory:sku`"), "{}", messages[4]);
    assert!(
        messages[5].starts_with("lease 500ms is under 1s"),
        "{}",
        messages[5]
    );
    for message in messages {
        assert_eq!(message, message.to_lowercase(), "messages are lowercase");
    }
}

#[test]
fn reports_problems_without_stopping() {
    let audit = audit();
    let problems: Vec<_> = audit
        .problems
        .iter()
        .map(|p| (p.location(), p.kind))
        .collect();
    assert_eq!(
        problems,
        [
            ("src/broken.rs:4".to_owned(), ProblemKind::UnparsableFile),
            (
                "src/malformed.rs:1".to_owned(),
                ProblemKind::MalformedAttribute
            ),
            (
                "src/malformed.rs:4".to_owned(),
                ProblemKind::MalformedAttribute
            ),
            (
                "src/malformed.rs:7".to_owned(),
                ProblemKind::MalformedAttribute
            ),
        ]
    );
    let messages: Vec<&str> = audit.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages[0].starts_with("file does not parse"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("invalid duration \"15 seconds\""),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].contains("missing option `key`"),
        "{}",
        messages[2]
    );
    assert!(
        messages[3].contains("`{receipt_id}` in the key is not an argument of `wrong_argument`"),
        "{}",
        messages[3]
    );
}

#[test]
fn json_shape() {
    let value = serde_json::to_value(audit()).unwrap();
    // Sorted: the order depends on serde_json's `preserve_order` feature.
    let mut keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["locks", "problems", "warnings"]);
    assert_eq!(
        value["locks"][0],
        json!({
            "file": "src/billing.rs",
            "line": 9,
            "function": "BillingService::finalize",
            "key": "billing:invoice:{self.tenant}:{invoice.id}",
            "mode": "plain",
            "prefix": "billing:invoice",
            "wait": { "text": "5s", "ms": 5000 },
            "lease": null,
            "at_least": null,
            "client": "self.locks",
        })
    );
    assert_eq!(value["locks"][1]["wait"], json!(null));
    assert_eq!(
        value["locks"][1]["lease"],
        json!({ "text": "1h", "ms": 3_600_000 })
    );
    let warning = &value["warnings"][4];
    assert_eq!(warning["file"], "src/reviews.rs");
    assert_eq!(warning["line"], 24);
    assert_eq!(warning["function"], "recount");
    assert_eq!(warning["key"], "inventory:sku:{sku}");
    assert_eq!(warning["kind"], "lease_outlier");
    assert!(warning["message"].is_string());
    assert_eq!(value["problems"][0]["kind"], "unparsable_file");
    assert_eq!(value["problems"][0]["line"], 4);
    assert_eq!(value["problems"][1]["kind"], "malformed_attribute");
}

#[test]
fn table_text() {
    let table = render_table(&audit());
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "location             function                    key                                         mode   wait         lease"
    );
    assert!(lines.contains(
        &"src/lib.rs:8         issue_receipt               sales:receipt:lock:{bill_id}                plain  15s          120s"
    ));
    assert!(lines.contains(
        &"src/billing.rs:9     BillingService::finalize    billing:invoice:{self.tenant}:{invoice.id}  plain  5s           watchdog (30s)"
    ));
    assert!(lines.contains(&"warnings (6):"));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  src/reviews.rs:24  lease_outlier       recount: lease 10m"))
    );
    assert!(lines.contains(&"problems (4):"));
    assert!(
        lines.iter().any(
            |l| l.starts_with("  src/broken.rs:4     unparsable_file      file does not parse")
        )
    );
    assert_eq!(lines.last(), Some(&"14 locks, 6 warnings, 4 problems"));
    assert!(
        lines.iter().all(|l| l.trim_end() == *l),
        "no trailing spaces"
    );
}

#[test]
fn several_roots_keep_their_paths_and_compare_leases_together() {
    let src = fixture().join("src");
    let audit = audit_paths(&[src.join("lib.rs"), src.join("reviews.rs")]).unwrap();
    assert_eq!(audit.locks.len(), 11);
    assert!(
        audit.locks[0]
            .file
            .ends_with("tests/fixtures/app/src/lib.rs"),
        "{}",
        audit.locks[0].file
    );
    assert_eq!(audit.warnings.len(), 6);
}

#[test]
fn a_missing_path_is_an_error() {
    let err = audit_path(&fixture().join("nope")).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("cannot read `"), "{message}");
    assert!(message.contains("no such file or directory"), "{message}");
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redlease-audit"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn binary_output_and_exit_codes() {
    let app = fixture();
    let app = app.to_str().unwrap();
    let clean = format!("{app}/src/lib.rs");

    let out = run(&[app]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).ends_with("14 locks, 6 warnings, 4 problems\n"));

    let out = run(&["--deny-warnings", app]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("warnings (6):"));

    let out = run(&["--deny-warnings", &clean]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    let out = run(&["--json", app]);
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["locks"].as_array().unwrap().len(), 14);

    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    assert!(
        help.starts_with("Lists every `#[distributed_lock]`"),
        "{help}"
    );
    assert!(
        help.contains("Usage: redlease-audit [OPTIONS] <PATH>..."),
        "{help}"
    );
    assert!(help.contains("--deny-warnings"), "{help}");
    assert!(help.contains("exit codes:"), "{help}");

    for (args, error) in [
        (
            vec![],
            "error: the following required arguments were not provided:\n  <PATH>...",
        ),
        (
            vec!["--yaml", app],
            "error: unexpected argument '--yaml' found",
        ),
        (
            vec!["/definitely/not/here"],
            "error: cannot read `/definitely/not/here`: no such file",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).starts_with(error),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}

/// `mode` is listed per lock, as `plain`, `read` or `write` in the JSON.
#[test]
fn json_names_the_mode() {
    let audit = redlease_audit::audit_source(
        "src/catalog.rs",
        r#"
#[distributed_lock(key = "catalog:prices:{region}", mode = "read")]
async fn read_prices(region: &str) {}
#[distributed_lock(key = "catalog:prices:{region}", mode = "write")]
async fn rebuild_prices(region: &str) {}
#[distributed_lock(key = "catalog:export:{region}")]
async fn export(region: &str) {}
"#,
    );
    let value = serde_json::to_value(&audit).unwrap();
    let modes: Vec<&str> = value["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["read", "write", "plain"]);
}
