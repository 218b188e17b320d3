//! redlease's bench program: each measurement next to a reference run in the
//! same process, against the same private `redis-server`, because these
//! machines are noisy.
//!
//! ```text
//! scripts/bench                                              # peers, everything, the document
//! cargo run --release -p redlease-bench                      # everything
//! cargo run --release -p redlease-bench -- compare [SECONDS] [TASKS...]
//! cargo run --release -p redlease-bench -- versus [SECONDS] [TASKS...] [--runs N]
//! cargo run --release -p redlease-bench -- redisson [SECONDS] [TASKS...] [--runs N]
//! cargo run --release -p redlease-bench -- scriptcost [PAIRS] [--runs N]
//! cargo run --release -p redlease-bench -- throughput [SECONDS] [TASKS...]
//! cargo run --release -p redlease-bench -- handoff [SECONDS] [WAITERS...]
//! cargo run --release -p redlease-bench -- fairness [SECONDS]
//! cargo run --release -p redlease-bench -- scale [--cluster] [SECONDS] [LOCKS...]
//! cargo run --release -p redlease-bench -- cluster [SECONDS] [TASKS...]
//! cargo run --release -p redlease-bench -- roundtrips
//! cargo run --release -p redlease-bench -- latency [SECONDS] [--runs N]
//! cargo run --release -p redlease-bench -- names [NAMES]
//! cargo run --release -p redlease-bench -- redlock [SECONDS] [MASTERS...] [--runs N] [--tasks N]
//! cargo run --release -p redlease-bench -- --help
//! ```
//!
//! The output is Markdown, for `docs/BENCHMARKS.md`: `splice FILE` puts
//! what it reads from stdin between the file's generated-section markers.
//! `compare` also draws `target/bench/comparison.png`. `redlock` (RedLock
//! beside rslock's, on private masters of its own) is not part of `all`.

mod chart;
mod cli;
mod cluster;
mod compare;
mod fairness;
mod floor;
mod handoff;
mod latency;
mod names;
mod peer;
mod probe;
mod redisson;
mod redlock;
mod roundtrips;
mod scale;
mod scriptcost;
mod splice;
mod target;
mod throughput;
mod versus;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use redlease_testkit::{RedisCluster, RedisServer};

use cli::{Bench, Cli, Measurement, Run};
use target::Target;

#[tokio::main]
async fn main() -> ExitCode {
    let command = Cli::parse().command.unwrap_or(Bench::All {
        seconds: None,
        counts: Vec::new(),
    });
    let plan = match command {
        Bench::All { seconds, counts } => cli::all(seconds, &counts),
        Bench::Compare { seconds, counts } => vec![Measurement::Compare(Run { seconds, counts })],
        Bench::Versus {
            seconds,
            counts,
            runs,
        } => vec![Measurement::Versus(cli::versus(
            Run { seconds, counts },
            runs,
        ))],
        Bench::Redisson {
            seconds,
            counts,
            runs,
        } => vec![Measurement::Redisson(cli::redisson(
            Run { seconds, counts },
            runs,
        ))],
        Bench::Scriptcost { pairs, runs } => vec![Measurement::Scriptcost { pairs, runs }],
        Bench::Throughput { seconds, counts } => {
            vec![Measurement::Throughput(Run { seconds, counts })]
        }
        Bench::Handoff { seconds, counts } => vec![Measurement::Handoff(Run { seconds, counts })],
        Bench::Fairness { seconds } => vec![Measurement::Fairness { seconds }],
        Bench::Scale {
            seconds,
            counts,
            cluster: false,
        } => vec![Measurement::Scale(Run { seconds, counts })],
        Bench::Scale {
            seconds,
            counts,
            cluster: true,
        } => vec![Measurement::ClusterScale(Run { seconds, counts })],
        Bench::Cluster { seconds, counts } => vec![Measurement::Cluster(Run { seconds, counts })],
        Bench::Roundtrips => vec![Measurement::Roundtrips],
        Bench::Latency { seconds, runs } => {
            vec![Measurement::Latency(latency::Plan { seconds, runs })]
        }
        Bench::LatencyWorker {
            url,
            subject,
            pairs,
        } => {
            return match latency::worker(&url, &subject, pairs) {
                Ok(()) => ExitCode::SUCCESS,
                Err(why) => {
                    eprintln!("latency-worker: {why}");
                    ExitCode::FAILURE
                }
            };
        }
        Bench::Redlock {
            seconds,
            counts,
            runs,
            tasks,
        } => vec![Measurement::RedLock(redlock::Plan {
            seconds,
            masters: counts,
            runs,
            tasks,
        })],
        Bench::Names { names } => vec![Measurement::Names { names }],
        Bench::Splice { file } => {
            return match splice::splice(&file) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("cannot splice into {}: {e}", file.display());
                    ExitCode::FAILURE
                }
            };
        }
        Bench::PairsWorker {
            url,
            pairs,
            layout,
            fencing,
            floor,
        } => {
            let layout = match layout.as_str() {
                "string" => redlease::layout::Layout::String,
                _ => redlease::layout::Layout::Redisson,
            };
            let fencing = fencing == "on";
            match floor {
                true => floor::worker(&url, pairs, layout, fencing).await,
                false => throughput::pairs_worker(&url, pairs, layout, fencing).await,
            }
            return ExitCode::SUCCESS;
        }
        Bench::FairnessWorker {
            url,
            name,
            kind,
            seconds,
        } => {
            fairness::worker(&url, &name, &kind, seconds).await;
            return ExitCode::SUCCESS;
        }
        Bench::ScaleWorker {
            url,
            seconds,
            locks,
            masters,
            watchdog_ms,
            interleaved,
            permits,
        } => {
            let watchdog = std::time::Duration::from_millis(watchdog_ms);
            let handles = if interleaved {
                roundtrips::Handles::AsNeeded
            } else {
                roundtrips::Handles::First
            };
            let what = if permits {
                scale::What::Permits
            } else {
                scale::What::Locks
            };
            scale::worker(&url, seconds, locks, &masters, watchdog, handles, what).await;
            return ExitCode::SUCCESS;
        }
    };
    measure(plan).await;
    ExitCode::SUCCESS
}

/// Runs the measurements of `plan`, in its order, against one private
/// server, and a private 3-master cluster for those that need one
/// (`redlock` starts independent masters of its own; the server idles).
async fn measure(plan: Vec<Measurement>) {
    let server = RedisServer::start();
    // A run of several measurements ends with `versus`'s verdicts, which
    // are otherwise far up in its output (#28).
    let several = plan.len() > 1;
    let mut ratios: Vec<String> = Vec::new();
    // Started at the first measurement that needs it, once.
    let mut cluster: Option<RedisCluster> = None;
    println!(
        "redis-server {}, {} cores\n",
        redis_version(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for measurement in plan {
        match measurement {
            Measurement::Compare(run) => {
                let chart_dir = workspace().join("target/bench");
                std::fs::create_dir_all(&chart_dir).expect("create target/bench");
                let plan = compare::Plan {
                    seconds: run.seconds,
                    tasks: &run.counts,
                    handoff_seconds: 5,
                    manifest: &workspace().join(peer::MANIFEST),
                    chart_dir: Some(&chart_dir),
                };
                compare::run(&server, &plan).await;
            }
            Measurement::Versus(plan) => {
                let chart_dir = workspace().join("target/bench");
                std::fs::create_dir_all(&chart_dir).expect("create target/bench");
                let manifest = workspace().join(peer::MANIFEST);
                ratios.extend(versus::run(&server, &plan, &manifest, Some(&chart_dir)).await);
            }
            Measurement::Redisson(plan) => {
                let manifest = workspace().join(peer::MANIFEST);
                let java = redisson::java_driver(&workspace());
                redisson::run(&server, &plan, &manifest, &java).await;
            }
            Measurement::Scriptcost { pairs, runs } => scriptcost::run(&server, pairs, runs),
            Measurement::Throughput(run) => {
                throughput::run(&server, run.seconds, &run.counts).await;
            }
            Measurement::Handoff(run) => handoff::run(&server, run.seconds, &run.counts).await,
            Measurement::Fairness { seconds } => fairness::run(&server, seconds),
            Measurement::Scale(run) => {
                scale::run(Target::Single(&server), run.seconds, &run.counts)
            }
            Measurement::Roundtrips => roundtrips::run(&server, &[1, 100, 101, 1000]).await,
            Measurement::Latency(plan) => {
                let manifest = workspace().join(peer::MANIFEST);
                tokio::task::block_in_place(|| latency::run(&server, &plan, &manifest));
            }
            Measurement::Cluster(run) => {
                cluster::run(&server, started(&mut cluster), run.seconds, &run.counts).await;
            }
            Measurement::Names { names } => names::run(&server, names).await,
            Measurement::RedLock(plan) => {
                redlock::run(&plan, &workspace().join(peer::MANIFEST)).await;
            }
            Measurement::ClusterScale(run) => {
                scale::run(
                    Target::Cluster(started(&mut cluster)),
                    run.seconds,
                    &run.counts,
                );
            }
        }
    }
    if several && !ratios.is_empty() {
        println!("## Against rslock, in this run (medians; the tables are above)\n");
        for line in ratios {
            println!("- {line}");
        }
        println!();
    }
}

/// The private cluster, started on first use: 3 masters, no replicas.
fn started(cluster: &mut Option<RedisCluster>) -> &RedisCluster {
    cluster.get_or_insert_with(|| RedisCluster::start(3, 0))
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

/// The workspace root, where `target/` and `docs/` are.
fn workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}
