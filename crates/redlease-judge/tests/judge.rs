//! The judge's short form, as CI runs it (#29): every fault kind against
//! the mixed clients must pass, and each planted bug must fail the checker.
//! About two minutes in all; the runs take turns, since each starts its own
//! Redis (or Sentinel group, or cluster) and half a dozen processes.
//!
//! Needs PostgreSQL (`$DATABASE_URL`, as the other fencing tests) and the
//! redis-py venv of `scripts/judge-peers`; `scripts/test` provides both.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// One run at a time.
static TURN: Mutex<()> = Mutex::new(());

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Runs `redlease-judge run` with `args` into a directory of its own;
/// returns whether it passed and its report.
fn judge(dir: &str, args: &[&str]) -> (bool, String) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/judge/venv/bin/python");
    assert!(
        venv.exists(),
        "no redis-py venv at {}: run scripts/judge-peers (scripts/test does)",
        venv.display()
    );
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    let output = Command::new(env!("CARGO_BIN_EXE_redlease-judge"))
        .arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--db")
        .arg(database_url())
        // Leases long enough that a loaded CI machine's scheduling does not
        // by itself expire a lock: only the nemesis's faults should.
        .args(["--lease-ms", "2000", "--wait-ms", "4000"])
        .args(args)
        .output()
        .expect("redlease-judge runs");
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "redlease-judge failed to run: {stderr}"
    );
    eprintln!("{stderr}{report}");
    (output.status.success(), report)
}

#[test]
fn every_fault_kind_passes_with_mixed_clients() {
    let (passed, report) = judge("short", &["--seconds", "7", "--failover-seconds", "16"]);
    assert!(passed, "{report}");
    // Every phase ran, and its faults were injected.
    for phase in [
        "none",
        "pause",
        "kill",
        "restart",
        "partition",
        "sentinel",
        "cluster",
    ] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} |")))
            .unwrap_or_else(|| panic!("no {phase} phase:\n{report}"));
        let faults: u32 = row.split('|').nth(3).unwrap().trim().parse().unwrap();
        assert_eq!(faults == 0, phase == "none", "{row}");
    }
}

#[test]
fn a_release_that_skips_the_owner_check_is_caught() {
    let (passed, report) = judge(
        "planted-release",
        &[
            "--phases",
            "pause",
            "--seconds",
            "12",
            "--names",
            "1",
            "--clients",
            "async-redisson,async-string,blocking-redisson,async-redisson,blocking-string",
            "--plant",
            "release-without-owner-check",
        ],
    );
    assert!(!passed, "the checker missed the planted bug:\n{report}");
    assert!(report.contains("unexplained overlap"), "{report}");
}

#[test]
fn a_token_taken_before_the_acquire_is_caught() {
    let (passed, report) = judge(
        "planted-token",
        &[
            "--phases",
            "none",
            "--seconds",
            "6",
            "--plant",
            "token-before-acquire",
        ],
    );
    assert!(!passed, "the checker missed the planted bug:\n{report}");
    assert!(report.contains("tokens against the hold order"), "{report}");
}
