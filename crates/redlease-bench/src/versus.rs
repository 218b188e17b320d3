//! redlease's uncontended throughput against rslock's, the fastest peer on
//! it, repeated: the #17 targets (redlease's pairs per second at least
//! rslock's, and Redis CPU per pair at most 1.5 times rslock's) judged on
//! the median of several runs, with the spread of each ratio, because one
//! run on this noisy machine moves by a third.
//!
//! Each run measures, for each task count, redlease (watchdog mode, one
//! client) and rslock (its peer driver, one `LockManager`) one after the
//! other on the same private server, the one that goes first changing
//! from run to run; each task locks and releases a key of its own. A ratio
//! is taken within one run (ours over theirs), then the ratios' median and
//! range are reported.

use std::path::Path;
use std::time::Duration;

use redlease_testkit::RedisServer;

use crate::cluster::{median, spread};
use crate::compare::{self, verdict};
use crate::peer::{self, Pairs};
use crate::probe;

/// What `versus` is asked to do.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Seconds per measurement.
    pub(crate) seconds: u64,
    /// Tasks on one client, a row each.
    pub(crate) tasks: Vec<usize>,
    /// Runs of every row.
    pub(crate) runs: usize,
}

pub(crate) async fn run(server: &RedisServer, plan: &Plan, manifest: &Path) {
    let rslock = match peer::load(manifest).and_then(|peers| {
        peers
            .into_iter()
            .find(|p| p.name == "rslock")
            .ok_or_else(|| format!("no rslock in {}", manifest.display()))
    }) {
        Ok(peer) => peer,
        Err(why) => {
            println!("Versus rslock: not measured ({why}).\n");
            return;
        }
    };
    let url = server.url();
    let client = redlease::Client::connect(&url).await.expect("connect");
    probe::warm_up(&client, "bench:versus:warmup").await;
    let mut stats = server.connection();
    let duration = Duration::from_secs(plan.seconds);
    // [row][run] = (ours, theirs)
    let mut cells: Vec<Vec<(Pairs, Pairs)>> = vec![Vec::new(); plan.tasks.len()];
    for run in 0..plan.runs {
        for (row, &n) in plan.tasks.iter().enumerate() {
            let mut ours = None;
            let mut theirs = None;
            for turn in 0..2 {
                // Even runs start with redlease, odd ones with rslock.
                if (turn + run) % 2 == 0 {
                    ours =
                        Some(compare::redlease_pairs(&client, &mut stats, n, duration, None).await);
                } else {
                    match compare::peer_pairs(&rslock, &url, &mut stats, n, plan.seconds) {
                        Ok(p) => theirs = Some(p),
                        Err(why) => eprintln!("versus: rslock at {n} tasks failed: {why}"),
                    }
                }
            }
            if let (Some(o), Some(t)) = (ours, theirs) {
                cells[row].push((o, t));
            }
        }
    }
    print(plan, &rslock.version, &cells);
}

fn print(plan: &Plan, version: &str, cells: &[Vec<(Pairs, Pairs)>]) {
    println!(
        "## redlease against rslock {version}: uncontended pairs per second, {} runs of {} s per cell (median, with the range)\n",
        plan.runs, plan.seconds
    );
    println!(
        "| tasks | redlease pairs/s | rslock pairs/s | ratio | Redis CPU per pair, redlease | rslock | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for (row, &n) in plan.tasks.iter().enumerate() {
        let runs = &cells[row];
        if runs.is_empty() {
            println!("| {n} | not measured | | | | | |");
            continue;
        }
        let col = |f: &dyn Fn(&(Pairs, Pairs)) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
        let rate = col(&|(o, t)| o.per_sec / t.per_sec);
        let cpu = col(&|(o, t)| o.server_us / t.server_us);
        println!(
            "| {n} | {} | {} | {} | {} µs | {} µs | {} |",
            spread(&col(&|(o, _)| o.per_sec), 0),
            spread(&col(&|(_, t)| t.per_sec), 0),
            spread(&rate, 2),
            spread(&col(&|(o, _)| o.server_us), 1),
            spread(&col(&|(_, t)| t.server_us), 1),
            spread(&cpu, 2),
        );
        verdicts.push((n, median(&rate), median(&cpu)));
    }
    println!();
    println!("Targets (#17), on the medians:\n");
    for (n, rate, cpu) in verdicts {
        println!(
            "- {n} tasks: pairs/s at least rslock's: **{}** ({rate:.2}x); Redis CPU per pair at most 1.5x rslock's: **{}** ({cpu:.2}x).",
            verdict(rate >= 1.0),
            verdict(cpu <= 1.5)
        );
    }
    println!();
}
