//! Fairness: several processes contend for one lock; how evenly do they
//! get it?
//!
//! [`PROCESSES`] worker processes (this program, re-run as
//! `fairness-worker`) each loop for the given time: acquire with `lock()`,
//! hold for a short critical section, release, repeat at once. The figure is
//! the ratio of the most to the fewest acquisitions per process, for the
//! plain lock (which lets a releasing process barge back in) and the fair
//! lock (which queues it behind the others).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;

/// Contending processes.
const PROCESSES: usize = 8;

/// The locks compared, as the worker's KIND argument names them: the plain
/// lock and the fair lock.
pub(crate) const KINDS: [&str; 2] = ["plain", "fair"];

/// The critical section each holder runs.
const CRITICAL_SECTION: Duration = Duration::from_millis(1);

/// Prints the fairness table, `seconds` per lock kind.
pub(crate) fn run(server: &RedisServer, seconds: u64) {
    println!(
        "## Fairness: {PROCESSES} processes, `lock()` on one key, {:?} critical section ({seconds} s per row)\n",
        CRITICAL_SECTION
    );
    println!("| lock | acquisitions/s | per process (min .. max) | max/min |");
    println!("|---|---:|---|---:|");
    for kind in KINDS {
        let counts = contend(server, kind, seconds);
        let (min, max) = (
            *counts.iter().min().expect("counts"),
            *counts.iter().max().expect("counts"),
        );
        let total: u64 = counts.iter().sum();
        let ratio = if min == 0 {
            "∞".to_owned()
        } else {
            format!("{:.2}", max as f64 / min as f64)
        };
        println!(
            "| {kind} | {:.0} | {min} .. {max} | {ratio} |",
            total as f64 / seconds as f64
        );
    }
    println!();
}

fn contend(server: &RedisServer, kind: &str, seconds: u64) -> Vec<u64> {
    let name = format!("bench:fairness:{kind}");
    let exe = std::env::current_exe().expect("own path");
    let workers: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "fairness-worker",
                    &server.url(),
                    &name,
                    kind,
                    &seconds.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("start worker")
        })
        .collect();
    workers
        .into_iter()
        .map(|w| {
            let out = w.wait_with_output().expect("worker output");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("worker prints its count")
        })
        .collect()
}

/// The worker process: `fairness-worker URL NAME plain|fair SECONDS`.
/// Prints how many times it acquired the lock.
pub(crate) async fn worker(url: &str, name: &str, kind: &str, seconds: u64) {
    let client = redlease::Client::connect(url).await.expect("connect");
    let lock = match kind {
        "fair" => client.fair_lock(name),
        _ => client.lock(name),
    };
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut count = 0u64;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let Ok(guard) = tokio::time::timeout(left, lock.lock()).await else {
            break;
        };
        let guard = guard.expect("lock");
        count += 1;
        tokio::time::sleep(CRITICAL_SECTION).await;
        guard.unlock().await.expect("unlock");
    }
    println!("{count}");
}
