//! A lock holder in a separate process, killed with SIGKILL.
//!
//! The holder is this test binary re-run with `--ignored --exact` on
//! [`child_holder_process`] and its instructions in the environment.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{RedisServer, client_with_watchdog, exists, unique};

const CHILD_ENV: &str = "REDLEASE_TEST_CHILD";

/// A process holding a watchdog lock keeps it past many timeouts; killed
/// with SIGKILL (no unlock, no Drop), its lock frees within one timeout.
#[tokio::test]
async fn killed_holder_process_frees_lock_within_one_timeout() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(600);
    let name = unique("killed-holder");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "process::child_holder_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{} {} {}", server.url(), name, timeout.as_millis()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let acquired = tokio::task::spawn_blocking(move || {
        // libtest prints "test <name> ... " before the test's own output on
        // the same line.
        stdout
            .lines()
            .map_while(Result::ok)
            .any(|l| l.ends_with("ACQUIRED"))
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(30), acquired)
            .await
            .unwrap()
            .unwrap()
    );

    let c = client_with_watchdog(server, timeout).await;
    tokio::time::sleep(timeout * 3).await;
    assert!(
        exists(server, &name),
        "the live holder's watchdog did not keep the lock"
    );
    assert!(c.lock(&name).try_lock().await.unwrap_err().is_busy());

    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    let g = c.lock(&name).try_lock_for(timeout * 3).await.unwrap();
    let freed_after = killed.elapsed();
    assert!(
        freed_after <= timeout + Duration::from_millis(100),
        "took {freed_after:?}"
    );
    g.unlock().await.unwrap();
}

/// Not a test: the holder process for the test above. Does nothing unless
/// started by it.
#[tokio::test]
#[ignore = "helper process, started by killed_holder_process_frees_lock_within_one_timeout"]
async fn child_holder_process() {
    let spec = std::env::var(CHILD_ENV).expect("started by the parent test");
    let mut parts = spec.split(' ');
    let (url, name, timeout_ms) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let c = redlease::Client::builder(url)
        .watchdog_timeout(Duration::from_millis(timeout_ms.parse().unwrap()))
        .build()
        .await
        .unwrap();
    let _g = c.lock(name).try_lock().await.unwrap();
    println!("ACQUIRED");
    // Bounded, in case the parent dies without killing us.
    tokio::time::sleep(Duration::from_secs(60)).await;
}
