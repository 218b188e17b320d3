//! The judge's short form, as CI runs it (#29, #36): every fault kind
//! against the mixed clients, on every primitive, with a fixed seed, must
//! pass; and a run that could not do what it claims must not.
//!
//! A pass means the run was valid too: the judge itself fails a phase in
//! which a client kind acquired nothing (and was refused nothing: one that
//! only lost races must acquire in another phase), a process exited badly,
//! a fault's signal failed or no pause, kill or partition hit a holder, or
//! a name could not be acquired once the faults stopped while the clients
//! still contended (`check::validity`).
//!
//! Needs PostgreSQL (`$DATABASE_URL`, as the other fencing tests), the
//! Redisson driver of `scripts/redisson` and the redis-py venv of
//! `scripts/judge-peers`; `scripts/test` provides all three.

mod support;

use support::{database_url, judge};

#[test]
fn every_fault_kind_passes_with_mixed_clients() {
    let (code, report) = judge(
        env!("CARGO_BIN_EXE_redlease-judge"),
        "short",
        &[
            "--seed",
            "36",
            "--seconds",
            "12",
            "--failover-seconds",
            "20",
        ],
    );
    assert_eq!(code, 0, "{report}");
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
            .find(|l| {
                l.starts_with(&format!("| {phase} | 12 |"))
                    || l.starts_with(&format!("| {phase} | 20 |"))
            })
            .unwrap_or_else(|| panic!("no {phase} phase:\n{report}"));
        let faults: u32 = row
            .split('|')
            .nth(3)
            .and_then(|cell| cell.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no fault count in {row}"));
        assert_eq!(faults == 0, phase == "none", "{row}");
    }
}

/// #40: `redlease gc` run every 300 ms beside the mixed clients (Java
/// among them) loses nothing, through killed clients and a restarted
/// Redis; and it did run, through the phase's keys.
#[test]
fn issue_40_gc_beside_the_workload_loses_nothing() {
    let (code, report) = judge(
        env!("CARGO_BIN_EXE_redlease-judge"),
        "gc",
        &[
            "--seed",
            "40",
            "--seconds",
            "12",
            "--phases",
            "kill,restart",
            "--gc-ms",
            "300",
        ],
    );
    assert_eq!(code, 0, "{report}");
    for phase in ["kill", "restart"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} | 300 |")))
            .unwrap_or_else(|| panic!("no collector row for {phase}:\n{report}"));
        let runs: u32 = row.split('|').nth(3).unwrap().trim().parse().unwrap();
        assert!(runs >= 10, "{row}");
    }
}

/// A Java client without its driver, or a Python one without its venv, is
/// an error before anything runs (it used to exit at once and the run
/// pass).
#[test]
fn a_missing_java_launcher_or_python_is_an_error_not_a_pass() {
    let run = |flag: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_redlease-judge"))
            .args(["run", "--phases", "none", "--seconds", "1", "--db"])
            .arg(database_url())
            .args([flag, "/nonexistent/launcher"])
            .output()
            .expect("redlease-judge runs")
    };
    for flag in ["--java", "--python"] {
        let out = run(flag);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains("/nonexistent/launcher"), "{flag}: {stderr}");
    }
}

/// `--plant` in a build without the plants is refused, not ignored.
#[test]
fn a_plant_in_a_build_without_plants_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redlease-judge"))
        .args(["run", "--phases", "none", "--seconds", "1", "--db"])
        .arg(database_url())
        .args(["--plant", "fence-not-seeded"])
        .output()
        .expect("redlease-judge runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("redlease_plant"), "{stderr}");
}
