//! Running the judge from its tests: one run at a time, each into a
//! directory of its own, with leases long enough that a loaded CI
//! machine's scheduling does not by itself expire a lock (only the
//! nemesis's faults should). Each test binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// One run at a time: each starts its own Redis (or Sentinel group, or
/// cluster) and half a dozen processes.
static TURN: Mutex<()> = Mutex::new(());

pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Runs `binary run` with `args` into `dir` (under the target's temporary
/// directory); returns its exit code and its report.
pub(crate) fn judge(binary: &str, dir: &str, args: &[&str]) -> (i32, String) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    let output = Command::new(binary)
        .arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--db")
        .arg(database_url())
        .args(["--lease-ms", "2000", "--wait-ms", "4000"])
        .args(args)
        .output()
        .expect("redlease-judge runs");
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert!(
        matches!(code, 0 | 1),
        "redlease-judge failed to run ({code}): {stderr}"
    );
    eprintln!("{stderr}{report}");
    (code, report)
}
