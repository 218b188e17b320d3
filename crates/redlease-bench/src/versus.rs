//! redlease's uncontended throughput against rslock's, the fastest peer on
//! it, repeated: the #17 targets judged on the median of several runs, with
//! the spread of each ratio, because one run on this noisy machine moves by
//! a third.
//!
//! Two servers, each a private one: Redis 7.0, where redlease runs in
//! Redisson's layout and in the string layout (whose release and extension
//! are scripts there), and Valkey 9, where the string layout releases with
//! Valkey's own `DELIFEQ`. On each, rslock (its peer driver, one
//! `LockManager`) is measured beside them. Each run measures, for each task
//! count, every subject one after the other on the same server, the order
//! rotating from run to run; each task locks and releases a key of its
//! own. A ratio is taken within one run (ours over rslock's), then the
//! ratios' median and range are reported. The targets (#28): on Redis,
//! the string layout at least rslock's pairs/s at every task count with at
//! most 1.25x its Redis CPU per pair, and Redisson's layout at least 0.8x
//! its pairs/s; on Valkey, the string layout at least 1.2x rslock's pairs/s
//! at 16 and 256 tasks. Each layout is also measured with fencing off
//! (`ClientBuilder::fencing(false)`, no target). The verdicts are returned
//! too, for the end of the bench's default run.
//!
//! redsync (Go, its peer driver on one go-redis client), another lock in
//! the string layout, is measured beside rslock when it is installed, in
//! the same turns: its ratios are to rslock's too, and the string layout's
//! ratios to redsync's are given under the targets (no target of its own).

use std::path::Path;
use std::time::Duration;

use redlease::layout::Layout;
use redlease_testkit::RedisServer;

use crate::chart::{self, Spread};
use crate::cluster::{known, median, spread};
use crate::compare::{self, verdict};
use crate::peer::{self, Pairs, Peer};
use crate::probe;
use crate::throughput::{self, Limit};

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

/// What is measured on one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subject {
    /// A redlease client in `layout`, with fencing tokens or without.
    Redlease {
        layout: Layout,
        fencing: bool,
    },
    Rslock,
    Redsync,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Redlease {
                layout: Layout::String,
                fencing: true,
            } => "redlease, string layout",
            Subject::Redlease {
                layout: Layout::String,
                fencing: false,
            } => "redlease, string layout, fencing off",
            Subject::Redlease { fencing: true, .. } => "redlease, Redisson's layout",
            Subject::Redlease { fencing: false, .. } => "redlease, Redisson's layout, fencing off",
            Subject::Rslock => "rslock",
            Subject::Redsync => "redsync",
        }
    }
}

/// redlease in `layout`, fencing on.
const fn fenced(layout: Layout) -> Subject {
    Subject::Redlease {
        layout,
        fencing: true,
    }
}

/// redlease in `layout`, fencing off.
const fn unfenced(layout: Layout) -> Subject {
    Subject::Redlease {
        layout,
        fencing: false,
    }
}

/// The peers `versus` drives: rslock, which the ratios and the targets are
/// to, and redsync beside it when installed.
struct Peers {
    rslock: Peer,
    redsync: Option<Peer>,
}

impl Peers {
    /// The peer that `subject` is, if it is one.
    fn of(&self, subject: Subject) -> Option<&Peer> {
        match subject {
            Subject::Rslock => Some(&self.rslock),
            Subject::Redsync => self.redsync.as_ref(),
            Subject::Redlease { .. } => None,
        }
    }

    /// The peers measured, with their versions, for the tables' titles.
    fn title(&self) -> String {
        let mut title = format!("rslock {}", self.rslock.version);
        if let Some(redsync) = &self.redsync {
            title += &format!(" and redsync {}", redsync.version);
        }
        title
    }

    /// `subjects` and the installed peers after them.
    fn with(&self, subjects: &[Subject]) -> Vec<Subject> {
        let mut all = subjects.to_vec();
        all.push(Subject::Rslock);
        if self.redsync.is_some() {
            all.push(Subject::Redsync);
        }
        all
    }
}

/// Measures and prints; returns the verdicts on the targets, one line
/// each, for the end of the bench's default run (empty when rslock is not
/// installed).
pub(crate) async fn run(
    server: &RedisServer,
    plan: &Plan,
    manifest: &Path,
    chart_dir: Option<&Path>,
) -> Vec<String> {
    let mut installed = match peer::load(manifest) {
        Ok(peers) => peers,
        Err(why) => {
            println!("Versus rslock: not measured ({why}).\n");
            return Vec::new();
        }
    };
    let mut take = |name: &str| {
        let i = installed.iter().position(|p| p.name == name)?;
        Some(installed.swap_remove(i))
    };
    let Some(rslock) = take("rslock") else {
        println!(
            "Versus rslock: not measured (no rslock in {}).\n",
            manifest.display()
        );
        return Vec::new();
    };
    let redsync = take("redsync");
    if redsync.is_none() {
        println!(
            "redsync: not measured (no redsync in {}).\n",
            manifest.display()
        );
    }
    let peers = Peers { rslock, redsync };
    let redis = peers.with(&[
        fenced(Layout::Redisson),
        unfenced(Layout::Redisson),
        fenced(Layout::String),
        unfenced(Layout::String),
    ]);
    let cells = measure(server, plan, &peers, &redis).await;
    let version = server_version(server);
    let mut verdicts = print(plan, &peers.title(), &version, &redis, &cells, None);
    let mut panels = vec![(format!("on {version}"), spreads(plan, &redis, &cells, None))];
    let valkey = match RedisServer::try_start_valkey() {
        Ok(valkey) => valkey,
        Err(why) => {
            println!("Versus the peers on Valkey 9: not measured ({why}).\n");
            draw(chart_dir, &panels);
            return verdicts;
        }
    };
    let subjects = peers.with(&[fenced(Layout::String), unfenced(Layout::String)]);
    let cells = measure(&valkey, plan, &peers, &subjects).await;
    // The limit of the string layout on Valkey: redis-benchmark's pipelined
    // `SET NX PX` and `DELIFEQ`, without fencing or announcement.
    let duration = Duration::from_secs(plan.seconds);
    let limits: Vec<f64> = (plan.tasks.iter())
        .map(|&n| throughput::reference_of(Limit::NativeString, &valkey, 1, n, duration).pairs())
        .collect();
    let version = server_version(&valkey);
    verdicts.extend(print(
        plan,
        &peers.title(),
        &version,
        &subjects,
        &cells,
        Some(&limits),
    ));
    panels.push((
        format!("on {version}"),
        spreads(plan, &subjects, &cells, Some(&limits)),
    ));
    draw(chart_dir, &panels);
    verdicts
}

/// Draws `versus.png` into `dir`, if given.
fn draw(dir: Option<&Path>, panels: &[(String, Vec<Spread>)]) {
    let Some(dir) = dir else { return };
    let path = dir.join("versus.png");
    match chart::draw_versus(&path, panels) {
        Ok(()) => eprintln!("drew {}", path.display()),
        Err(e) => eprintln!("cannot draw {}: {e}", path.display()),
    }
}

/// Each subject's pairs/s by tasks, median and range of the runs, for the
/// chart; the limit (if any) as a reference.
fn spreads(
    plan: &Plan,
    subjects: &[Subject],
    cells: &Cells,
    limits: Option<&[f64]>,
) -> Vec<Spread> {
    let mut out: Vec<Spread> = subjects
        .iter()
        .enumerate()
        .map(|(i, subject)| Spread {
            name: subject.label().to_owned(),
            points: (plan.tasks.iter().zip(cells))
                .filter_map(|(&n, runs)| {
                    let rates: Vec<f64> = runs.iter().filter_map(|r| Some(r[i]?.per_sec)).collect();
                    let lo = rates.iter().copied().reduce(f64::min)?;
                    let hi = rates.iter().copied().reduce(f64::max)?;
                    Some((n as f64, median(&rates), lo, hi))
                })
                .collect(),
            // As on the comparison chart: Redisson's layout 0, the string
            // layout 2, rslock (the first peer) 3, redsync (the fifth) 7;
            // fencing off 1 and 4, colours no peer there takes.
            color: Some(match subject {
                Subject::Redlease {
                    layout: Layout::String,
                    fencing,
                } => [4, 2][usize::from(*fencing)],
                Subject::Redlease { fencing, .. } => [1, 0][usize::from(*fencing)],
                Subject::Rslock => 3,
                Subject::Redsync => 7,
            }),
        })
        .collect();
    if let Some(limits) = limits {
        out.push(Spread {
            name: "limit: SET NX PX + DELIFEQ, redis-benchmark -c 1 -P N".to_owned(),
            points: (plan.tasks.iter().zip(limits))
                .map(|(&n, &l)| (n as f64, l, l, l))
                .collect(),
            color: None,
        });
    }
    out
}

/// `[row][run][subject]`: every subject's pairs, `None` where it failed.
type Cells = Vec<Vec<Vec<Option<Pairs>>>>;

async fn measure(server: &RedisServer, plan: &Plan, peers: &Peers, subjects: &[Subject]) -> Cells {
    let url = server.url();
    let mut clients = Vec::new();
    for subject in subjects {
        let client = match subject {
            Subject::Redlease { layout, fencing } => {
                let client = redlease::Client::builder(&url)
                    .layout(*layout)
                    .fencing(*fencing)
                    .build()
                    .await
                    .expect("connect");
                probe::warm_up(&client, "bench:versus:warmup").await;
                Some(client)
            }
            Subject::Rslock | Subject::Redsync => None,
        };
        clients.push(client);
    }
    let mut stats = server.connection();
    let duration = Duration::from_secs(plan.seconds);
    let mut cells: Cells = vec![Vec::new(); plan.tasks.len()];
    for run in 0..plan.runs {
        for (row, &n) in plan.tasks.iter().enumerate() {
            let mut measured = vec![None; subjects.len()];
            for turn in 0..subjects.len() {
                // The first subject of a run rotates from run to run.
                let i = (turn + run) % subjects.len();
                measured[i] = match &clients[i] {
                    Some(client) => {
                        Some(compare::redlease_pairs(client, &mut stats, n, duration, None).await)
                    }
                    None => {
                        let peer = peers.of(subjects[i]).expect("a peer subject");
                        match compare::peer_pairs(peer, &url, &mut stats, n, plan.seconds) {
                            Ok(p) => Some(p),
                            Err(why) => {
                                eprintln!("versus: {} at {n} tasks failed: {why}", peer.name);
                                None
                            }
                        }
                    }
                };
            }
            cells[row].push(measured);
        }
    }
    cells
}

/// The server's name and version, as `INFO server` gives them.
fn server_version(server: &RedisServer) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.connection())
        .unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    match (field("valkey_version:"), field("redis_version:")) {
        (Some(v), _) => format!("Valkey {v}"),
        (None, Some(v)) => format!("Redis {v}"),
        (None, None) => "an unknown server".to_owned(),
    }
}

fn print(
    plan: &Plan,
    peers: &str,
    server: &str,
    subjects: &[Subject],
    cells: &Cells,
    limits: Option<&[f64]>,
) -> Vec<String> {
    let rslock = subjects
        .iter()
        .position(|s| *s == Subject::Rslock)
        .expect("rslock is measured");
    println!(
        "## redlease against {peers} on {server}: uncontended pairs per second, {} runs of {} s per cell (median, with the range)\n",
        plan.runs, plan.seconds
    );
    println!(
        "| tasks | subject | pairs/s | ratio to rslock | Redis CPU per pair | ratio to rslock | Redis reads per pair | client CPU per pair | ratio to rslock |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for (row, &n) in plan.tasks.iter().enumerate() {
        if let Some(limit) = limits.and_then(|l| l.get(row)) {
            println!(
                "| {n} | limit: `SET NX PX` + `DELIFEQ`, redis-benchmark `-c 1 -P {n}` | {limit:.0} | | | | | | |"
            );
        }
        for (i, subject) in subjects.iter().enumerate() {
            // Runs in which both this subject and rslock were measured.
            let pairs: Vec<(Pairs, Pairs)> = cells[row]
                .iter()
                .filter_map(|run| Some((run[i]?, run[rslock]?)))
                .collect();
            if pairs.is_empty() {
                println!("| {n} | {} | not measured | | | | | | |", subject.label());
                continue;
            }
            let col =
                |f: &dyn Fn(&(Pairs, Pairs)) -> f64| pairs.iter().map(f).collect::<Vec<f64>>();
            let rate = col(&|(o, t)| o.per_sec / t.per_sec);
            let cpu = col(&|(o, t)| o.server_us / t.server_us);
            let client = col(&|(o, t)| o.client_us / t.client_us);
            let (ratio, cpu_ratio, client_ratio) = match subject {
                Subject::Rslock => (String::new(), String::new(), String::new()),
                _ => (spread(&rate, 2), spread(&cpu, 2), known(&client, 2)),
            };
            println!(
                "| {n} | {} | {} | {ratio} | {} µs | {cpu_ratio} | {} | {} | {client_ratio} |",
                subject.label(),
                spread(&col(&|(o, _)| o.per_sec), 0),
                spread(&col(&|(o, _)| o.server_us), 1),
                spread(&col(&|(o, _)| o.server_reads), 2),
                match known(&col(&|(o, _)| o.client_us), 1) {
                    unknown if unknown.is_empty() => unknown,
                    us => format!("{us} µs"),
                },
            );
            if let Subject::Redlease { layout, fencing } = subject {
                verdicts.push((n, *layout, *fencing, median(&rate), median(&cpu)));
            }
        }
    }
    println!();
    let valkey = limits.is_some();
    let lines: Vec<String> = verdicts
        .into_iter()
        .map(|(n, layout, fencing, rate, cpu)| {
            let label = fenced_label(layout, fencing);
            let Some((min_rate, max_cpu)) = target(layout, fencing, valkey, n) else {
                return format!(
                    "{server}, {label}, {n} tasks (no target): {rate:.2}x rslock's pairs/s, {cpu:.2}x its Redis CPU per pair."
                );
            };
            let cpu = match max_cpu {
                Some(max) => format!(
                    "Redis CPU per pair at most {max}x rslock's: **{}** ({cpu:.2}x)",
                    verdict(cpu <= max)
                ),
                None => format!("Redis CPU per pair {cpu:.2}x rslock's"),
            };
            format!(
                "{server}, {label}, {n} tasks: pairs/s at least {min_rate}x rslock's: **{}** ({rate:.2}x); {cpu}.",
                verdict(rate >= min_rate)
            )
        })
        .collect();
    println!("Targets (#28) on {server}, on the medians:\n");
    for line in &lines {
        println!("- {line}");
    }
    println!();
    let position = |wanted| subjects.iter().position(|s| *s == wanted);
    let (Some(string), Some(redsync)) =
        (position(fenced(Layout::String)), position(Subject::Redsync))
    else {
        return lines;
    };
    println!("Beside redsync on {server}, on the medians (no target):\n");
    for (row, &n) in plan.tasks.iter().enumerate() {
        // Runs in which both were measured.
        let (rate, cpu): (Vec<f64>, Vec<f64>) = cells[row]
            .iter()
            .filter_map(|run| Some((run[string]?, run[redsync]?)))
            .map(|(o, t)| (o.per_sec / t.per_sec, o.server_us / t.server_us))
            .unzip();
        if rate.is_empty() {
            continue;
        }
        println!(
            "- string layout, {n} tasks: {:.2}x redsync's pairs/s, {:.2}x its Redis CPU per pair.",
            median(&rate),
            median(&cpu)
        );
    }
    println!();
    lines
}

/// A redlease subject's name in a verdict.
fn fenced_label(layout: Layout, fencing: bool) -> &'static str {
    Subject::Redlease { layout, fencing }
        .label()
        .trim_start_matches("redlease, ")
}

/// #28's target for a redlease subject at `n` tasks, as the least ratio of
/// pairs/s to rslock's and the most of Redis CPU per pair, if any: on
/// Redis, the string layout at least 1.0x with at most 1.25x the CPU and
/// Redisson's layout at least 0.8x; on Valkey (`valkey`), whose own
/// commands are the string layout's best case, at least 1.2x from 16 tasks.
/// Fencing off has none: it is measured to show what tokens cost.
fn target(layout: Layout, fencing: bool, valkey: bool, n: usize) -> Option<(f64, Option<f64>)> {
    match (layout, fencing, valkey) {
        (_, false, _) => None,
        (Layout::String, true, true) if n >= 16 => Some((1.2, None)),
        (_, true, true) => None,
        (Layout::String, true, false) => Some((1.0, Some(1.25))),
        (_, true, false) => Some((0.8, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_issue_28s() {
        assert_eq!(
            target(Layout::String, true, false, 1),
            Some((1.0, Some(1.25)))
        );
        assert_eq!(
            target(Layout::Redisson, true, false, 256),
            Some((0.8, None))
        );
        assert_eq!(target(Layout::String, true, true, 1), None);
        assert_eq!(target(Layout::String, true, true, 16), Some((1.2, None)));
        assert_eq!(target(Layout::Redisson, false, false, 16), None);
        assert_eq!(target(Layout::String, false, true, 256), None);
    }
}
