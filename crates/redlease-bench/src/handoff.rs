//! Hand-off latency and Redis commands per hand-off under contention.
//!
//! `waiters + 1` tasks spread over [`CLIENTS`] clients contend for one lock
//! in a loop. Each holder keeps the lock for a moment, unlocks, and rejoins
//! the waiters only once another task has taken the lock, so exactly
//! `waiters` tasks are waiting at every release. The hand-off latency is the
//! time from one holder's `unlock()` returning to the next holder's `lock()`
//! returning. Commands per hand-off are the commands redlease sent
//! (`EVALSHA`, `SUBSCRIBE`, `UNSUBSCRIBE`) from `INFO commandstats`, divided by
//! the hand-offs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;
use tokio::sync::watch;

/// Clients the waiters are spread over, as several processes would be.
pub(crate) const CLIENTS: usize = 4;

/// Prints the hand-off table: `seconds` per row, one row per waiter count.
pub(crate) async fn run(server: &RedisServer, seconds: u64, waiter_counts: &[usize]) {
    println!(
        "## Hand-off latency, `lock()` on one key, waiters over {CLIENTS} clients ({seconds} s per row)\n"
    );
    println!("| waiters | hand-offs | p50 | p99 | max | commands per hand-off |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for &waiters in waiter_counts {
        let r = measure(server, waiters, Duration::from_secs(seconds)).await;
        println!(
            "| {waiters} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} |",
            r.handoffs,
            ms(r.p50),
            ms(r.p99),
            ms(r.max),
            r.commands_per_handoff
        );
    }
    println!();
}

struct Result {
    handoffs: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
    commands_per_handoff: f64,
}

#[derive(Default)]
struct Board {
    /// The task that released last, and when its `unlock()` returned.
    last_release: Option<(usize, Instant)>,
    samples: Vec<Duration>,
}

async fn measure(server: &RedisServer, waiters: usize, duration: Duration) -> Result {
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(
            redlease::Client::connect(&server.url())
                .await
                .expect("connect"),
        );
    }
    let name = format!("bench:handoff:{waiters}");
    let board = Arc::new(Mutex::new(Board::default()));
    let (acquired_tx, acquired_rx) = watch::channel(0u64);
    let acquired_tx = Arc::new(acquired_tx);
    let commands_before = client_commands(server);
    let mut tasks = Vec::new();
    for task in 0..=waiters {
        let lock = clients[task % CLIENTS].lock(name.clone());
        let (board, acquired_tx, mut acquired_rx) =
            (board.clone(), acquired_tx.clone(), acquired_rx.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let guard = lock.lock().await.expect("lock");
                let now = Instant::now();
                {
                    let mut board = board.lock().expect("board");
                    if let Some((previous, released)) = board.last_release.take()
                        && previous != task
                    {
                        board.samples.push(now - released);
                    }
                }
                let mut seq = 0;
                acquired_tx.send_modify(|n| {
                    *n += 1;
                    seq = *n;
                });
                // A short critical section.
                tokio::task::yield_now().await;
                guard.unlock().await.expect("unlock");
                board.lock().expect("board").last_release = Some((task, Instant::now()));
                // Rejoin only once someone else holds the lock.
                if acquired_rx.wait_for(|n| *n > seq).await.is_err() {
                    return;
                }
            }
        }));
    }
    tokio::time::sleep(duration).await;
    let commands = client_commands(server) - commands_before;
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    let mut samples = std::mem::take(&mut board.lock().expect("board").samples);
    samples.sort();
    let handoffs = samples.len().max(1);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    Result {
        handoffs: samples.len(),
        p50: at(0.50),
        p99: at(0.99),
        max: at(1.0),
        commands_per_handoff: commands as f64 / handoffs as f64,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Commands the server has run for clients (not those run inside
/// scripts): every command redlease sends is one of these, counted from
/// `INFO commandstats`.
pub(crate) fn client_commands(server: &RedisServer) -> u64 {
    const SENT: [&str; 5] = ["evalsha", "eval", "script|load", "subscribe", "unsubscribe"];
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .expect("INFO commandstats");
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| l.split_once(":calls="))
        .filter(|(name, _)| SENT.contains(name))
        .filter_map(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok())
        .sum()
}
