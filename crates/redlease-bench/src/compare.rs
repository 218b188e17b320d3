//! redlease side by side with the limit and the peers, in one run against
//! one server: the limit (`redis-benchmark` replaying redlease's own
//! scripts), uncontended pairs per second by concurrency, and the hand-off
//! among 64 workers on one key. Prints the tables and the targets, and
//! draws the chart.

use std::path::Path;
use std::time::Duration;

use redlease_testkit::RedisServer;

use crate::chart::{self, Series};
use crate::handoff::{self, Handoffs, ms};
use crate::peer::{self, Peer, blocking};
use crate::probe;
use crate::target::Target;
use crate::throughput::{self, Reference};

/// Workers contending for one key in the hand-off comparison.
pub(crate) const WORKERS: usize = 64;

/// What the comparison is asked to do.
pub(crate) struct Plan<'a> {
    /// Seconds per uncontended measurement.
    pub(crate) seconds: u64,
    /// Concurrent tasks, one measurement each.
    pub(crate) tasks: &'a [usize],
    /// Seconds per hand-off measurement.
    pub(crate) handoff_seconds: u64,
    /// Where `peers.json` is.
    pub(crate) manifest: &'a Path,
    /// Where to write the chart, if anywhere.
    pub(crate) chart_dir: Option<&'a Path>,
}

/// One library's pairs per second at each concurrency of the plan.
struct Row {
    name: String,
    /// redlease, not a peer.
    ours: bool,
    rates: Vec<Result<peer::Pairs, String>>,
}

pub(crate) async fn run(server: &RedisServer, plan: &Plan<'_>) {
    let peers = match peer::load(plan.manifest) {
        Ok(peers) => peers,
        Err(why) => {
            println!("Peers: none measured ({why}).\n");
            Vec::new()
        }
    };
    let url = server.url();
    let client = redlease::Client::connect(&url).await.expect("connect");
    // Load the scripts, so redis-benchmark's EVALSHA finds them.
    probe::warm_up(&client, "bench:compare:warmup").await;
    print_peers(&peers);

    let duration = Duration::from_secs(plan.seconds);
    let mut stats = server.connection();
    let mut limits = Vec::new();
    for &n in plan.tasks {
        limits.push((
            throughput::reference(server, n, 1, duration),
            throughput::reference(server, 1, n, duration),
        ));
    }
    print_limits(plan.tasks, &limits, plan.seconds);

    // The string layout (#17), on this Redis its release is a script.
    let string = redlease::Client::builder(&url)
        .layout(redlease::layout::Layout::String)
        .build()
        .await
        .expect("connect");
    probe::warm_up(&string, "bench:compare:warmup").await;
    let mut rows = Vec::new();
    for (name, client, lease) in [
        ("redlease, watchdog", &client, None),
        (
            "redlease, fixed lease",
            &client,
            Some(Duration::from_secs(30)),
        ),
        ("redlease, string layout", &string, None),
    ] {
        let mut rates = Vec::new();
        for &n in plan.tasks {
            rates.push(Ok(
                redlease_pairs(client, &mut stats, n, duration, lease).await
            ));
        }
        rows.push(Row {
            name: name.to_owned(),
            ours: true,
            rates,
        });
    }
    for peer in &peers {
        let rates = plan
            .tasks
            .iter()
            .map(|&n| peer_pairs(peer, &url, &mut stats, n, plan.seconds))
            .collect();
        rows.push(Row {
            name: peer.name.clone(),
            ours: false,
            rates,
        });
    }
    print_uncontended(plan, &rows, &limits);

    let handoff_duration = Duration::from_secs(plan.handoff_seconds);
    let mut handoffs = vec![(
        "redlease".to_owned(),
        Ok(handoff::measure(Target::Single(server), WORKERS - 1, 1, handoff_duration).await),
    )];
    for peer in &peers {
        handoffs.push((
            peer.name.clone(),
            blocking(|| peer.handoff(&url, WORKERS, plan.handoff_seconds)),
        ));
    }
    print_handoffs(&handoffs, plan.handoff_seconds);
    print_targets(plan, &rows, &limits, &handoffs);

    if let Some(dir) = plan.chart_dir {
        draw(dir, plan, &rows, &limits, &handoffs);
    }
}

/// redlease's uncontended pairs with `tasks` tasks on `client` for
/// `duration`, with the server's CPU time per pair (read on `stats`).
pub(crate) async fn redlease_pairs(
    client: &redlease::Client,
    stats: &mut redis::Connection,
    tasks: usize,
    duration: Duration,
    lease: Option<Duration>,
) -> peer::Pairs {
    let before = probe::server_work(stats);
    // This whole process: the bench's own threads idle meanwhile.
    let cpu = || probe::process_cpu_time(std::process::id()).unwrap_or_default();
    let cpu_before = cpu();
    let (count, seconds) = throughput::redlease_pairs(client, tasks, duration, lease).await;
    let pairs = peer::Pairs {
        per_sec: count as f64 / seconds,
        seconds,
        errors: 0,
        server_us: f64::NAN,
        server_reads: f64::NAN,
        client_us: (cpu() - cpu_before).as_secs_f64() * 1e6 / (count.max(1) as f64),
    };
    per_pair(pairs, probe::server_work(stats) - before)
}

/// A peer's uncontended pairs, as [`redlease_pairs`]. The server's CPU
/// time here also covers the driver's start and connect, a few
/// milliseconds of its seconds.
pub(crate) fn peer_pairs(
    peer: &Peer,
    url: &str,
    stats: &mut redis::Connection,
    tasks: usize,
    seconds: u64,
) -> Result<peer::Pairs, String> {
    let before = probe::server_work(stats);
    let pairs = blocking(|| peer.uncontended(url, tasks, seconds))?;
    Ok(per_pair(pairs, probe::server_work(stats) - before))
}

/// `pairs` with the server's CPU time and read events per pair, from
/// `work` in all.
fn per_pair(mut pairs: peer::Pairs, work: probe::Work) -> peer::Pairs {
    let count = (pairs.per_sec * pairs.seconds).max(1.0);
    pairs.server_us = work.cpu_s * 1e6 / count;
    pairs.server_reads = work.reads / count;
    pairs
}

fn print_peers(peers: &[Peer]) {
    if peers.is_empty() {
        return;
    }
    println!("## The peers\n");
    println!("| library | language | version | driven as |");
    println!("|---|---|---|---|");
    for p in peers {
        println!(
            "| {} | {} | {} | {} |",
            p.name, p.language, p.version, p.driven
        );
    }
    println!();
}

fn print_limits(tasks: &[usize], limits: &[(Reference, Reference)], seconds: u64) {
    println!(
        "## The limit: `redis-benchmark` replaying redlease's acquire and release scripts with `EVALSHA` (about {seconds} s per cell)\n"
    );
    println!(
        "| requests in flight | acquire/s, `-c N` | release/s, `-c N` | pairs/s, `-c N` | acquire/s, `-c 1 -P N` | release/s, `-c 1 -P N` | pairs/s, `-c 1 -P N` |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (n, (conns, piped)) in tasks.iter().zip(limits) {
        println!(
            "| {n} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            conns.acquire,
            conns.release,
            conns.pairs(),
            piped.acquire,
            piped.release,
            piped.pairs()
        );
    }
    println!();
}

fn print_uncontended(plan: &Plan<'_>, rows: &[Row], limits: &[(Reference, Reference)]) {
    println!(
        "## Uncontended lock+unlock pairs per second, distinct keys, N tasks on one client ({} s per cell)\n",
        plan.seconds
    );
    println!(
        "| tasks | library | pairs/s | share of the limit `-c 1 -P N` | share of the limit `-c N` | Redis CPU per pair | errors |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for (i, &n) in plan.tasks.iter().enumerate() {
        let (conns, piped) = &limits[i];
        for row in rows {
            match &row.rates[i] {
                Ok(p) => println!(
                    "| {n} | {} | {:.0} | {:.2} | {:.2} | {:.1} µs | {} |",
                    row.name,
                    p.per_sec,
                    p.per_sec / piped.pairs(),
                    p.per_sec / conns.pairs(),
                    p.server_us,
                    p.errors
                ),
                Err(why) => println!("| {n} | {} | failed: {why} | | | | |", row.name),
            }
        }
    }
    println!();
}

fn print_handoffs(handoffs: &[(String, Result<Handoffs, String>)], seconds: u64) {
    println!(
        "## Contended hand-off: {WORKERS} workers on one key, one client, a yield inside the lock ({seconds} s per row)\n"
    );
    println!("| library | acquisitions/s | measured hand-offs | p50 | p99 | max |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, h) in handoffs {
        match h {
            Ok(h) => println!(
                "| {name} | {:.0} | {} | {:.3} ms | {:.3} ms | {:.3} ms |",
                h.acquisitions as f64 / h.seconds,
                h.handoffs,
                ms(h.quantile(50)),
                ms(h.quantile(99)),
                ms(h.quantile(100))
            ),
            Err(why) => println!("| {name} | failed: {why} | | | | |"),
        }
    }
    println!();
}

fn print_targets(
    plan: &Plan<'_>,
    rows: &[Row],
    limits: &[(Reference, Reference)],
    handoffs: &[(String, Result<Handoffs, String>)],
) {
    println!("## Targets\n");
    let Some(last) = plan.tasks.len().checked_sub(1) else {
        return;
    };
    let n = plan.tasks[last];
    let rate = |row: &Row| row.rates[last].as_ref().ok().map(|p| p.per_sec);
    let limit = limits[last].1.pairs();
    let best_peer = rows
        .iter()
        .filter(|r| !r.ours)
        .filter_map(|r| Some((rate(r)?, &r.name)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    for row in rows.iter().filter(|r| r.ours) {
        let Some(ours) = rate(row) else { continue };
        let share = ours / limit;
        println!(
            "- {}, {n} tasks, at least 0.70 of the pipelined limit: **{}** ({share:.2}).",
            row.name,
            verdict(share >= 0.70)
        );
        match best_peer {
            Some((theirs, name)) => println!(
                "- {}, {n} tasks, at least 2x the best peer ({name}): **{}** ({:.1}x).",
                row.name,
                verdict(ours >= 2.0 * theirs),
                ours / theirs
            ),
            None => println!("- {}, against the peers: not measured.", row.name),
        }
    }
    if let Some((_, Ok(ours))) = handoffs.first() {
        let p50 = ours.quantile(50);
        println!(
            "- redlease hand-off p50 under 1 ms: **{}** ({:.3} ms).",
            verdict(p50 < Duration::from_millis(1)),
            ms(p50)
        );
    }
    println!();
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "missed" }
}

fn draw(
    dir: &Path,
    plan: &Plan<'_>,
    rows: &[Row],
    limits: &[(Reference, Reference)],
    handoffs: &[(String, Result<Handoffs, String>)],
) {
    // Colours by library: redlease's rows first, then the peers, the same
    // on both sides; the reference in black.
    let ours = rows.iter().filter(|r| r.ours).count();
    let mut pairs: Vec<Series> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| Series {
            name: row.name.clone(),
            points: plan
                .tasks
                .iter()
                .zip(&row.rates)
                .filter_map(|(&n, r)| Some((n as f64, r.as_ref().ok()?.per_sec)))
                .collect(),
            color: Some(i),
        })
        .collect();
    pairs.push(Series {
        name: "limit: redis-benchmark -c 1 -P N".to_owned(),
        points: plan
            .tasks
            .iter()
            .zip(limits)
            .map(|(&n, l)| (n as f64, l.1.pairs()))
            .collect(),
        color: None,
    });
    let latencies: Vec<Series> = handoffs
        .iter()
        .enumerate()
        .filter_map(|(i, (name, h))| {
            let h = h.as_ref().ok()?;
            Some(Series {
                name: name.clone(),
                // A log axis has no zero: hand-offs in no time are drawn
                // at 1 µs.
                points: h
                    .quantiles
                    .iter()
                    .enumerate()
                    .map(|(q, d)| (ms(*d).max(1e-3), q as f64))
                    .collect(),
                // `handoffs` is redlease's, then the peers'.
                color: Some(if i == 0 { 0 } else { ours + i - 1 }),
            })
        })
        .collect();
    let path = dir.join("comparison.png");
    match chart::draw(&path, &pairs, &latencies, WORKERS) {
        Ok(()) => eprintln!("drew {}", path.display()),
        Err(e) => eprintln!("cannot draw {}: {e}", path.display()),
    }
}
