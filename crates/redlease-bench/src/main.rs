//! redlease's bench program: each measurement next to a reference run in the
//! same process, against the same private `redis-server`, because these
//! machines are noisy.
//!
//! ```text
//! cargo run --release -p redlease-bench                      # everything
//! cargo run --release -p redlease-bench -- throughput [SECONDS] [TASKS...]
//! cargo run --release -p redlease-bench -- handoff [SECONDS] [WAITERS...]
//! cargo run --release -p redlease-bench -- fairness [SECONDS]
//! cargo run --release -p redlease-bench -- scale [SECONDS] [LOCKS...]
//! cargo run --release -p redlease-bench -- roundtrips
//! ```
//!
//! The output is Markdown, for `docs/BENCHMARKS.md`.

mod fairness;
mod handoff;
mod probe;
mod roundtrips;
mod scale;
mod throughput;

use std::process::Command;

use redlease_testkit::RedisServer;

#[tokio::main]
async fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if all.first().map(String::as_str) == Some("fairness-worker") {
        fairness::worker(&all[1..]).await;
        return;
    }
    if all.first().map(String::as_str) == Some("scale-worker") {
        scale::worker(&all[1..]).await;
        return;
    }
    let mut args = all.into_iter();
    let what = args.next().unwrap_or_else(|| "all".to_owned());
    let seconds: Option<u64> = args
        .next()
        .map(|s| s.parse().expect("SECONDS must be a number"));
    let counts: Vec<usize> = args
        .map(|s| s.parse().expect("counts must be numbers"))
        .collect();
    let counts = |default: &[usize]| {
        if counts.is_empty() {
            default.to_vec()
        } else {
            counts.clone()
        }
    };
    let server = RedisServer::start();
    println!(
        "redis-server {}, {} cores\n",
        redis_version(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if matches!(what.as_str(), "all" | "throughput") {
        throughput::run(&server, seconds.unwrap_or(5), &counts(&[1, 64])).await;
    }
    if matches!(what.as_str(), "all" | "handoff") {
        handoff::run(&server, seconds.unwrap_or(5), &counts(&[1, 16, 256])).await;
    }
    if matches!(what.as_str(), "all" | "fairness") {
        fairness::run(&server, seconds.unwrap_or(10));
    }
    if matches!(what.as_str(), "all" | "scale") {
        scale::run(&server, seconds.unwrap_or(60), &counts(&[10_000, 100_000]));
    }
    if matches!(what.as_str(), "all" | "roundtrips") {
        roundtrips::run(&server, &[1, 100, 101, 1000]).await;
    }
    const KNOWN: [&str; 6] = [
        "all",
        "throughput",
        "handoff",
        "fairness",
        "scale",
        "roundtrips",
    ];
    if !KNOWN.contains(&what.as_str()) {
        eprintln!(
            "unknown measurement {what:?}: expected all, throughput, handoff, fairness, scale or roundtrips"
        );
        std::process::exit(2);
    }
}

fn redis_version() -> String {
    let out = Command::new("redis-server")
        .arg("--version")
        .output()
        .expect("redis-server");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .unwrap_or("?")
        .to_owned()
}
