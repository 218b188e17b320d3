//! redlease's [`RedLock`] beside rslock's RedLock over
//! the same private, independent masters, in one run: the latency of an
//! uncontended acquire+release pair, and pairs per second.
//!
//! Both sides do the same thing: `tasks` tasks, each locking and releasing
//! a key of its own in a loop for the same time window, with a 30 s lease,
//! each pair timed from the acquire's call to the release's return. rslock
//! is driven by its peer driver (`redlock` mode, `peers/rslock`), which
//! uses `LockManager::new(urls)`, `lock()` and `release()` as its users
//! would; redlease by `RedLock::new(clients, name)` with one client per
//! master, `try_lock()` and `unlock()`, its per-master timeout left at its
//! default. rslock's `lock()` retries only a failed round, which an
//! uncontended key never has, so both make one round per acquire.
//!
//! The libraries take turns, `runs` times per master count, and the one
//! that goes first changes from run to run, so that a slow spell of this
//! noisy machine, or whatever one side leaves the servers doing, falls on
//! both; each cell is the median of the runs with their range. Redis CPU
//! per pair is the masters' user+sys time (`INFO cpu`) over the
//! measurement, summed over the masters, divided by the pairs; client CPU
//! per pair the same for the client's process (this one, or the driver,
//! which reports its own): on one machine both compete for the same
//! cores, so they explain much of the latency.

use std::path::Path;
use std::time::{Duration, Instant};

use redlease::RedLock;
use redlease_testkit::RedisServer;

use crate::cluster::spread;
use crate::handoff::percentiles;
use crate::peer::{self, Latencies, Peer, blocking};
use crate::probe;

/// The lease on every master, on both sides: the one the other
/// measurements give the peers.
const LEASE: Duration = Duration::from_secs(30);

/// What the `redlock` measurement is asked to do.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Seconds per measurement.
    pub(crate) seconds: u64,
    /// Numbers of masters, a row pair each.
    pub(crate) masters: Vec<usize>,
    /// Measurements per library and master count.
    pub(crate) runs: usize,
    /// Tasks, each locking a key of its own.
    pub(crate) tasks: usize,
}

/// One measurement's cells: pairs/s, p50, p90 and p99 in µs, Redis CPU
/// and client CPU per pair in µs.
type Cells = [f64; 6];

/// Starts the most masters the plan needs, measures, prints the table.
pub(crate) async fn run(plan: &Plan, manifest: &Path) {
    let rslock = match peer::load(manifest).and_then(|peers| {
        peers
            .into_iter()
            .find(|p| p.name == "rslock")
            .ok_or_else(|| format!("no rslock in {}", manifest.display()))
    }) {
        Ok(peer) => Some(peer),
        Err(why) => {
            println!("rslock: not measured ({why}).\n");
            None
        }
    };
    let most = plan.masters.iter().copied().max().unwrap_or(0);
    let servers: Vec<RedisServer> = (0..most).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let mut clients = Vec::new();
    for url in &urls {
        clients.push(redlease::Client::connect(url).await.expect("connect"));
    }
    let mut stats: Vec<redis::Connection> = servers.iter().map(RedisServer::connection).collect();

    if let Some(peer) = &rslock {
        println!("rslock {} ({})\n", peer.version, peer.driven);
    }
    println!(
        "## RedLock over independent masters: lock+release pairs, {} task{}, a key each, {} s lease ({} s per measurement, median of {} with the range)\n",
        plan.tasks,
        if plan.tasks == 1 { "" } else { "s" },
        LEASE.as_secs(),
        plan.seconds,
        plan.runs,
    );
    println!(
        "| masters | library | pairs/s | p50 | p90 | p99 | Redis CPU per pair, all masters | client CPU per pair | p50, rslock / redlease | failed pairs |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &m in &plan.masters {
        let mut ours: Vec<Cells> = Vec::new();
        let mut theirs: Vec<Result<Cells, String>> = Vec::new();
        let mut ratios = Vec::new();
        let mut failed = [0, 0];
        for run in 0..plan.runs {
            let tag = format!("{m}:{run}");
            // Who goes first alternates (see the module's doc).
            let peer_first = (run % 2 == 1)
                .then(|| measure_peer(rslock.as_ref(), &urls[..m], plan, &mut stats[..m]));
            let (mine, cpu) = measure_ours(&clients[..m], &mut stats[..m], plan, &tag).await;
            let peer = peer_first.unwrap_or_else(|| {
                measure_peer(rslock.as_ref(), &urls[..m], plan, &mut stats[..m])
            });
            failed[0] += mine.errors;
            let mine = cells(&mine, cpu);
            let peer = peer.map(|(l, cpu)| {
                failed[1] += l.errors;
                cells(&l, cpu)
            });
            if let Ok(p) = &peer {
                ratios.push(p[1] / mine[1]);
            }
            ours.push(mine);
            theirs.push(peer);
        }
        println!("| {m} | redlease {} | - | {} |", row(&ours), failed[0]);
        if rslock.is_some() {
            match theirs.into_iter().collect::<Result<Vec<Cells>, String>>() {
                Ok(peer) => println!(
                    "| {m} | rslock {} | {} | {} |",
                    row(&peer),
                    spread(&ratios, 2),
                    failed[1]
                ),
                Err(why) => println!("| {m} | rslock | {why} | | | | | | | |"),
            }
        }
    }
    println!();
}

/// redlease's pairs on the masters of `clients`, and the masters' CPU
/// seconds over them.
async fn measure_ours(
    clients: &[redlease::Client],
    stats: &mut [redis::Connection],
    plan: &Plan,
    tag: &str,
) -> (Latencies, f64) {
    let cpu = server_cpu(stats);
    let duration = Duration::from_secs(plan.seconds);
    let latencies = redlease_pairs(clients, plan.tasks, duration, tag).await;
    (latencies, server_cpu(stats) - cpu)
}

/// rslock's pairs on the masters at `urls`, and the masters' CPU seconds
/// over them (which also cover the driver's start, connect and warm-up, a
/// few milliseconds of its seconds).
fn measure_peer(
    rslock: Option<&Peer>,
    urls: &[String],
    plan: &Plan,
    stats: &mut [redis::Connection],
) -> Result<(Latencies, f64), String> {
    let peer = rslock.ok_or("not installed")?;
    let cpu = server_cpu(stats);
    let latencies = blocking(|| peer.redlock(urls, plan.tasks, plan.seconds))?;
    Ok((latencies, server_cpu(stats) - cpu))
}

/// `tasks` tasks on a RedLock over `clients`' masters, each locking and
/// releasing a name of its own until `duration` has passed.
async fn redlease_pairs(
    clients: &[redlease::Client],
    tasks: usize,
    duration: Duration,
    tag: &str,
) -> Latencies {
    let redlock = |name: String| {
        RedLock::new(clients.iter().cloned(), name)
            .expect("masters")
            .lease(LEASE)
    };
    // As the driver does: connections up and scripts loaded on every
    // master before anything is timed.
    let warm_up = redlock("bench:redlock:warm-up".to_owned());
    for _ in 0..10 {
        if let Ok(guard) = warm_up.try_lock().await {
            let _ = guard.unlock().await;
        }
    }
    // This process runs nothing else meanwhile: its CPU time is the
    // client's.
    let cpu = probe::cpu_time();
    let start = Instant::now();
    let deadline = start + duration;
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let lock = redlock(format!("bench:redlock:{tag}:{t}"));
            tokio::spawn(async move {
                let (mut samples, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let began = Instant::now();
                    match lock.try_lock().await {
                        Ok(guard) => match guard.unlock().await {
                            Ok(()) => samples.push(began.elapsed()),
                            Err(_) => errors += 1,
                        },
                        Err(_) => errors += 1,
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    let (mut samples, mut errors) = (Vec::new(), 0);
    for handle in handles {
        let (s, e) = handle.await.expect("bench task");
        samples.extend(s);
        errors += e;
    }
    Latencies {
        pairs: samples.len() as u64,
        seconds: start.elapsed().as_secs_f64(),
        errors,
        client_cpu: (probe::cpu_time() - cpu).as_secs_f64(),
        quantiles: percentiles(&mut samples),
    }
}

/// The masters' user+sys CPU seconds so far, summed.
fn server_cpu(stats: &mut [redis::Connection]) -> f64 {
    stats.iter_mut().map(probe::server_cpu).sum()
}

fn cells(l: &Latencies, cpu: f64) -> Cells {
    let us = |q| l.quantile(q).as_secs_f64() * 1e6;
    [
        l.pairs as f64 / l.seconds,
        us(50),
        us(90),
        us(99),
        cpu * 1e6 / (l.pairs as f64).max(1.0),
        l.client_cpu * 1e6 / (l.pairs as f64).max(1.0),
    ]
}

/// The table's cells from pairs/s to client CPU, each a median and range.
fn row(runs: &[Cells]) -> String {
    let column = |c: usize| runs.iter().map(|r| r[c]).collect::<Vec<_>>();
    format!(
        "| {} | {} µs | {} µs | {} µs | {} µs | {} µs",
        spread(&column(0), 0),
        spread(&column(1), 0),
        spread(&column(2), 0),
        spread(&column(3), 0),
        spread(&column(4), 0),
        spread(&column(5), 0),
    )
}
