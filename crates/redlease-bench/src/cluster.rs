//! redlease on a private 3-master Redis Cluster beside the single node, in
//! one run: uncontended pairs per second and Redis CPU per pair, and the
//! contended hand-off.
//!
//! The two targets take turns, `REPEATS` times per row, so that a slow
//! spell of this noisy machine falls on both; each cell is the median of
//! the repeats with their range. Redis CPU per pair is the servers'
//! user+sys time (`INFO cpu`) over the measurement, summed over the
//! masters, divided by the pairs: on one machine the masters share the
//! cores with the client, so the cluster's pairs per second say what
//! routing costs the client, not what three machines would serve.

use std::time::Duration;

use redlease_testkit::{RedisCluster, RedisServer};

use crate::compare::WORKERS;
use crate::handoff::{self, ms};
use crate::probe;
use crate::target::Target;
use crate::throughput::redlease_pairs;

/// Measurements of each cell, alternating between the targets.
const REPEATS: usize = 3;

/// Prints the cluster tables: `seconds` per pairs measurement, a row per
/// task count in `tasks`, then the hand-off.
pub(crate) async fn run(
    server: &RedisServer,
    cluster: &RedisCluster,
    seconds: u64,
    tasks: &[usize],
) {
    let targets = [Target::Single(server), Target::Cluster(cluster)];
    let mut clients = Vec::new();
    for target in targets {
        let client = redlease::Client::connect(&target.url())
            .await
            .expect("connect");
        // Connections up and scripts loaded on every master, before
        // anything is measured.
        for i in 0..64 {
            probe::warm_up(&client, &format!("bench:cluster:warmup:{i}")).await;
        }
        clients.push(client);
    }
    let duration = Duration::from_secs(seconds);

    println!(
        "## On a Redis Cluster of {} beside the single node, uncontended pairs (watchdog, {seconds} s per measurement, median of {REPEATS} with the range)\n",
        targets[1].label()
    );
    println!(
        "| tasks | single node pairs/s | cluster pairs/s | cluster / single | Redis CPU per pair, single node | cluster, summed over masters |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for &n in tasks {
        let mut rates = [Vec::new(), Vec::new()];
        let mut cpu = [Vec::new(), Vec::new()];
        for _ in 0..REPEATS {
            for (i, target) in targets.iter().enumerate() {
                let mut masters = target.masters();
                let before = masters.server_cpu();
                let (pairs, secs) = redlease_pairs(&clients[i], n, duration, None).await;
                let used = masters.server_cpu() - before;
                rates[i].push(pairs as f64 / secs);
                cpu[i].push(used / pairs as f64 * 1e6);
            }
        }
        let ratios: Vec<f64> = rates[1].iter().zip(&rates[0]).map(|(c, s)| c / s).collect();
        println!(
            "| {n} | {} | {} | {} | {} µs | {} µs |",
            spread(&rates[0], 0),
            spread(&rates[1], 0),
            spread(&ratios, 2),
            spread(&cpu[0], 1),
            spread(&cpu[1], 1),
        );
    }
    println!();

    let waiters = WORKERS - 1;
    println!(
        "## On a Redis Cluster: hand-off among {WORKERS} workers on one key, over {} clients (5 s per measurement, median of {REPEATS} with the range)\n",
        handoff::CLIENTS
    );
    println!("| where | hand-offs per second | p50 | p99 | commands per hand-off |");
    println!("|---|---:|---:|---:|---:|");
    let mut rows: [Vec<[f64; 4]>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..REPEATS {
        for (i, target) in targets.iter().enumerate() {
            let r =
                handoff::measure(*target, waiters, handoff::CLIENTS, Duration::from_secs(5)).await;
            rows[i].push([
                r.acquisitions as f64 / r.seconds,
                ms(r.quantile(50)),
                ms(r.quantile(99)),
                r.commands_per_handoff,
            ]);
        }
    }
    for (target, row) in targets.iter().zip(&rows) {
        let column = |c: usize| row.iter().map(|r| r[c]).collect::<Vec<_>>();
        println!(
            "| {} | {} | {} ms | {} ms | {} |",
            match target {
                Target::Single(_) => "single node".to_owned(),
                Target::Cluster(_) => format!("cluster of {}", target.label()),
            },
            spread(&column(0), 0),
            spread(&column(1), 2),
            spread(&column(2), 2),
            spread(&column(3), 2),
        );
    }
    println!();
}

/// [`spread`] of the values that are known (a driver that reports no CPU
/// time gives NaN), or nothing.
pub(crate) fn known(values: &[f64], decimals: usize) -> String {
    let known: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    match known.is_empty() {
        true => String::new(),
        false => spread(&known, decimals),
    }
}

/// `median (min .. max)` of `values`, with `decimals` decimals.
pub(crate) fn spread(values: &[f64], decimals: usize) -> String {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.as_slice() {
        [] => "-".to_owned(),
        [only] => format!("{only:.decimals$}"),
        _ => format!(
            "{:.decimals$} ({:.decimals$} .. {:.decimals$})",
            median(&sorted),
            sorted[0],
            sorted[sorted.len() - 1]
        ),
    }
}

/// The middle value of `values` (the upper one of an even count, as
/// [`spread`] prints it); NaN when there are none.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn spread_prints_the_median_and_the_range() {
        assert_eq!(spread(&[3.0, 1.0, 2.0], 0), "2 (1 .. 3)");
        assert_eq!(spread(&[0.25], 2), "0.25");
        assert_eq!(spread(&[], 1), "-");
    }
}
