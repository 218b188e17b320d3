//! The bench program's command line: its measurements, their defaults, and
//! what one call runs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::fairness;

/// redlease's benchmarks, each next to a reference run against the same
/// private redis-server, printed as Markdown for docs/BENCHMARKS.md.
///
/// Without a command, runs `all`.
#[derive(Debug, Parser)]
#[command(name = "redlease-bench")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Bench>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Bench {
    /// Runs compare, versus, redisson, handoff, fairness, scale,
    /// roundtrips, cluster and scale --cluster, each with its own defaults
    /// (what scripts/bench does).
    ///
    /// SECONDS and COUNTS, when given, replace every measurement's own.
    All {
        /// Seconds each row measures, in every measurement.
        seconds: Option<u64>,
        /// The tasks, waiters and locks, in every measurement.
        counts: Vec<usize>,
    },
    /// redlease next to redis-benchmark's limit and the peer libraries:
    /// pairs per second by tasks, and the contended hand-off; draws
    /// target/bench/comparison.png.
    Compare {
        /// Seconds each row measures.
        #[arg(default_value_t = COMPARE.seconds)]
        seconds: u64,
        /// Tasks on one client, a row each.
        #[arg(value_name = "TASKS", default_values_t = COMPARE.counts.to_vec())]
        counts: Vec<usize>,
    },
    /// redlease against rslock (the fastest peer on throughput), and
    /// redsync beside it, uncontended pairs per second and Redis CPU per
    /// pair by tasks, RUNS times taking turns: the ratios' median and
    /// range. Needs scripts/bench-peers.
    Versus {
        /// Seconds each measurement runs.
        #[arg(default_value_t = VERSUS.seconds)]
        seconds: u64,
        /// Tasks on one client, a row each.
        #[arg(value_name = "TASKS", default_values_t = VERSUS.counts.to_vec())]
        counts: Vec<usize>,
        /// Runs of every row.
        #[arg(long, default_value_t = 3, value_parser = at_least_one())]
        runs: usize,
    },
    /// redlease's default client against Redisson's own `RLock` and
    /// `RFencedLock` (Java), with the `redisson` crate and rslock beside
    /// them: uncontended pairs per second, Redis CPU and client CPU per
    /// pair by tasks, RUNS times taking turns: the ratios' median and
    /// range, and whether the crate and Java exclude each other on one key.
    /// Needs scripts/redisson (and scripts/bench-peers for the crate and
    /// rslock).
    Redisson {
        /// Seconds each measurement runs (the JVM's start and warm-up come
        /// before).
        #[arg(default_value_t = REDISSON.seconds)]
        seconds: u64,
        /// Tasks (Java: threads) on one client, a row each.
        #[arg(value_name = "TASKS", default_values_t = REDISSON.counts.to_vec())]
        counts: Vec<usize>,
        /// Runs of every row.
        #[arg(long, default_value_t = 3, value_parser = at_least_one())]
        runs: usize,
    },
    /// Redis CPU per lock+unlock pair on the server alone (pipelined):
    /// redlease's scripts beside two empty scripts (the floor of any
    /// two-script pair) and rslock's pair.
    Scriptcost {
        /// Pairs per run.
        #[arg(default_value_t = 200_000, value_parser = at_least_one())]
        pairs: usize,
        /// Runs of every row.
        #[arg(long, default_value_t = 3, value_parser = at_least_one())]
        runs: usize,
    },
    /// Uncontended lock+unlock pairs per second by tasks on one client,
    /// next to redis-benchmark replaying the same scripts.
    Throughput {
        /// Seconds each row measures.
        #[arg(default_value_t = THROUGHPUT.seconds)]
        seconds: u64,
        /// Tasks on one client, a row each.
        #[arg(value_name = "TASKS", default_values_t = THROUGHPUT.counts.to_vec())]
        counts: Vec<usize>,
    },
    /// Hand-off latency and Redis commands per hand-off, by waiters on one
    /// lock.
    Handoff {
        /// Seconds each row measures.
        #[arg(default_value_t = HANDOFF.seconds)]
        seconds: u64,
        /// Tasks waiting for the lock, a row each.
        #[arg(value_name = "WAITERS", default_values_t = HANDOFF.counts.to_vec())]
        counts: Vec<usize>,
    },
    /// How evenly processes contending for one lock get it, plain lock and
    /// fair lock.
    Fairness {
        /// Seconds each lock contends.
        #[arg(default_value_t = FAIRNESS_SECONDS)]
        seconds: u64,
    },
    /// What holding many watchdog-mode locks, and as many renewed
    /// expirable-semaphore permits, at once costs the client and Redis, by
    /// number held.
    Scale {
        /// Seconds the locks are held, in each row.
        #[arg(default_value_t = SCALE.seconds)]
        seconds: u64,
        /// Locks (and permits) held at once, a row each.
        #[arg(value_name = "LOCKS", default_values_t = SCALE.counts.to_vec())]
        counts: Vec<usize>,
        /// On a private 3-master cluster instead of the single node.
        #[arg(long)]
        cluster: bool,
    },
    /// On a private 3-master cluster beside the single node: pairs per
    /// second and Redis CPU per pair by tasks, and the hand-off.
    Cluster {
        /// Seconds each measurement runs (each is repeated 3 times).
        #[arg(default_value_t = CLUSTER.seconds)]
        seconds: u64,
        /// Tasks on one client, a row each.
        #[arg(value_name = "TASKS", default_values_t = CLUSTER.counts.to_vec())]
        counts: Vec<usize>,
    },
    /// Commands redlease sends per operation, counted by the server.
    Roundtrips,
    /// One task, one lock+unlock pair at a time (#39): pairs/s, p50 and
    /// p99 of redlease in both layouts on both Tokio runtimes and from
    /// the blocking API, beside redis-rs alone sending the same commands,
    /// two `PING`s, rslock, redsync and redis-benchmark `-c 1`; worker
    /// parks and (with strace) system calls per pair. Not part of `all`.
    Latency {
        /// Seconds each measurement runs.
        #[arg(default_value_t = 3)]
        seconds: u64,
        /// Runs of every subject.
        #[arg(long, default_value_t = 3, value_parser = at_least_one())]
        runs: usize,
    },
    /// One `latency` subject's pairs after its warm-up, and nothing else
    /// (run by the bench itself, under strace).
    #[command(hide = true)]
    LatencyWorker {
        url: String,
        subject: String,
        pairs: u64,
    },
    /// redlease's RedLock beside rslock's over the same private,
    /// independent masters: lock+release latency (p50, p90, p99), pairs
    /// per second, and Redis's and the client's CPU per pair, the
    /// libraries taking turns.
    ///
    /// Not part of `all`: its results are written into docs/BENCHMARKS.md
    /// by hand. Needs scripts/bench-peers for rslock.
    Redlock {
        /// Seconds each measurement runs.
        #[arg(default_value_t = REDLOCK.seconds)]
        seconds: u64,
        /// Numbers of independent masters, a pair of rows each (the most
        /// are started, once).
        #[arg(
            value_name = "MASTERS",
            default_values_t = REDLOCK.counts.to_vec(),
            value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16),
        )]
        counts: Vec<usize>,
        /// Measurements per library and number of masters.
        #[arg(long, default_value_t = 3, value_parser = at_least_one())]
        runs: usize,
        /// Tasks on each side, each locking a key of its own.
        #[arg(long, default_value_t = 1, value_parser = at_least_one())]
        tasks: usize,
    },
    /// Redis memory and keys left after NAMES distinct names were each
    /// locked and unlocked once, per layout, fencing on and off (#28).
    /// Not part of `all`.
    Names {
        #[arg(default_value_t = 1_000_000, value_parser = at_least_one())]
        names: usize,
    },
    /// Replaces what is between FILE's generated-section markers with
    /// stdin (scripts/bench: `splice docs/BENCHMARKS.md < report.md`).
    Splice { file: PathBuf },
    /// Connects to URL, warms up, then takes and releases one lock PAIRS
    /// times and exits: for instruction counts under callgrind.
    PairsWorker {
        url: String,
        pairs: u64,
        /// The lock layout: `string` for the string layout.
        #[arg(long, default_value = "redisson", value_parser = ["redisson", "string"])]
        layout: String,
        /// `off`: a client built with `fencing(false)` (#28).
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        fencing: String,
        /// The same commands sent by redis-rs alone, without redlease:
        /// the floor under its cost (#28).
        #[arg(long)]
        floor: bool,
    },
    /// One of `fairness`'s contending processes (run by the bench itself).
    #[command(hide = true)]
    FairnessWorker {
        url: String,
        name: String,
        #[arg(value_parser = fairness::KINDS)]
        kind: String,
        seconds: u64,
    },
    /// One of `scale`'s lock counts (run by the bench itself); MASTERS
    /// are the servers to read statistics from, URL when none.
    #[command(hide = true)]
    ScaleWorker {
        url: String,
        seconds: u64,
        locks: usize,
        masters: Vec<String>,
        /// The client's watchdog timeout in milliseconds (the lease, renewed
        /// every third of it): a short one shows at 100,000 locks what the
        /// default shows at a million (#28).
        #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(30..))]
        watchdog_ms: u64,
        /// Makes each lock handle just before its acquire, not all first
        /// (what the allocator then keeps besides the client, #28).
        #[arg(long)]
        interleaved: bool,
        /// Holds renewed expirable-semaphore permits instead of locks
        /// (#38), 1,000 per semaphore.
        #[arg(long, conflicts_with = "interleaved")]
        permits: bool,
    },
}

/// A count that makes no sense at zero.
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// A measurement's default SECONDS and counts (tasks, waiters, locks).
struct Defaults {
    seconds: u64,
    counts: &'static [usize],
}

const COMPARE: Defaults = Defaults {
    seconds: 3,
    counts: &[1, 16, 256],
};
const VERSUS: Defaults = Defaults {
    seconds: 3,
    counts: &[1, 16, 256],
};
const REDISSON: Defaults = Defaults {
    seconds: 3,
    counts: &[1, 16, 256],
};
const THROUGHPUT: Defaults = Defaults {
    seconds: 5,
    counts: &[1, 64],
};
const HANDOFF: Defaults = Defaults {
    seconds: 5,
    counts: &[1, 16, 256],
};
const FAIRNESS_SECONDS: u64 = 10;
const SCALE: Defaults = Defaults {
    seconds: 60,
    counts: &[10_000, 100_000],
};
const CLUSTER: Defaults = Defaults {
    seconds: 3,
    counts: &[1, 16, 256],
};
const REDLOCK: Defaults = Defaults {
    seconds: 5,
    counts: &[3, 5],
};

/// A measurement's seconds and counts.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) seconds: u64,
    pub(crate) counts: Vec<usize>,
}

impl Defaults {
    /// This measurement with `seconds` and `counts` where given.
    fn or(&self, seconds: Option<u64>, counts: &[usize]) -> Run {
        Run {
            seconds: seconds.unwrap_or(self.seconds),
            counts: if counts.is_empty() {
                self.counts.to_vec()
            } else {
                counts.to_vec()
            },
        }
    }
}

/// One measurement to run.
#[derive(Debug)]
pub(crate) enum Measurement {
    Compare(Run),
    Versus(crate::versus::Plan),
    Redisson(crate::redisson::Plan),
    Scriptcost { pairs: usize, runs: usize },
    Throughput(Run),
    Handoff(Run),
    Fairness { seconds: u64 },
    Scale(Run),
    Roundtrips,
    Latency(crate::latency::Plan),
    Cluster(Run),
    ClusterScale(Run),
    RedLock(crate::redlock::Plan),
    Names { names: usize },
}

/// `all`: every measurement but throughput, in the order they run, each
/// with `seconds` and `counts` where given, else with its own.
pub(crate) fn all(seconds: Option<u64>, counts: &[usize]) -> Vec<Measurement> {
    vec![
        Measurement::Compare(COMPARE.or(seconds, counts)),
        Measurement::Versus(versus(VERSUS.or(seconds, counts), 3)),
        Measurement::Redisson(redisson(REDISSON.or(seconds, counts), 3)),
        Measurement::Handoff(HANDOFF.or(seconds, counts)),
        Measurement::Fairness {
            seconds: seconds.unwrap_or(FAIRNESS_SECONDS),
        },
        Measurement::Scale(SCALE.or(seconds, counts)),
        Measurement::Roundtrips,
        Measurement::Cluster(CLUSTER.or(seconds, counts)),
        Measurement::ClusterScale(SCALE.or(seconds, counts)),
    ]
}

/// The `versus` plan of `run`, `runs` times.
pub(crate) fn versus(run: Run, runs: usize) -> crate::versus::Plan {
    crate::versus::Plan {
        seconds: run.seconds,
        tasks: run.counts,
        runs,
    }
}

/// The `redisson` plan of `run`, `runs` times.
pub(crate) fn redisson(run: Run, runs: usize) -> crate::redisson::Plan {
    crate::redisson::Plan {
        seconds: run.seconds,
        tasks: run.counts,
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Option<Bench> {
        let argv = std::iter::once("redlease-bench").chain(args.iter().copied());
        Cli::try_parse_from(argv).expect("valid arguments").command
    }

    #[test]
    fn positional_arguments_as_scripts_and_docs_write_them() {
        assert!(parse(&[]).is_none(), "no command: all");
        assert!(matches!(
            parse(&["compare", "3", "1", "16", "256"]),
            Some(Bench::Compare { seconds: 3, counts }) if counts == [1, 16, 256]
        ));
        assert!(matches!(
            parse(&["handoff"]),
            Some(Bench::Handoff { seconds: 5, counts }) if counts == [1, 16, 256]
        ));
        assert!(matches!(
            parse(&["pairs-worker", "redis://127.0.0.1:1", "1000"]),
            Some(Bench::PairsWorker { url, pairs: 1000, layout, fencing, floor: false }) if url == "redis://127.0.0.1:1" && layout == "redisson" && fencing == "on"
        ));
        assert!(matches!(
            parse(&["scale", "--cluster", "5", "100"]),
            Some(Bench::Scale { seconds: 5, cluster: true, counts }) if counts == [100]
        ));
        assert!(matches!(
            parse(&["cluster"]),
            Some(Bench::Cluster { seconds: 3, counts }) if counts == [1, 16, 256]
        ));
        assert!(matches!(
            parse(&["scale-worker", "redis-cluster://h:1", "2", "10", "redis://h:1", "redis://h:2"]),
            Some(Bench::ScaleWorker { locks: 10, masters, interleaved: false, .. }) if masters.len() == 2
        ));
        assert!(matches!(
            parse(&["scale-worker", "redis://h:1", "1", "10", "--interleaved"]),
            Some(Bench::ScaleWorker {
                interleaved: true,
                ..
            })
        ));
        assert!(matches!(
            parse(&["redlock"]),
            Some(Bench::Redlock { seconds: 5, counts, runs: 3, tasks: 1 }) if counts == [3, 5]
        ));
        assert!(matches!(
            parse(&["redlock", "2", "5", "--runs", "5", "--tasks", "4"]),
            Some(Bench::Redlock { seconds: 2, counts, runs: 5, tasks: 4 }) if counts == [5]
        ));
        assert!(matches!(
            parse(&["versus"]),
            Some(Bench::Versus { seconds: 3, counts, runs: 3 }) if counts == [1, 16, 256]
        ));
        assert!(matches!(
            parse(&["versus", "1", "16", "--runs", "5"]),
            Some(Bench::Versus { seconds: 1, counts, runs: 5 }) if counts == [16]
        ));
        assert!(matches!(
            parse(&["redisson"]),
            Some(Bench::Redisson { seconds: 3, counts, runs: 3 }) if counts == [1, 16, 256]
        ));
        assert!(matches!(
            parse(&["redisson", "2", "16", "--runs", "1"]),
            Some(Bench::Redisson { seconds: 2, counts, runs: 1 }) if counts == [16]
        ));
        assert!(matches!(
            parse(&["scriptcost"]),
            Some(Bench::Scriptcost {
                pairs: 200_000,
                runs: 3
            })
        ));
        assert!(matches!(
            parse(&["fairness-worker", "redis://h:1", "n", "fair", "2"]),
            Some(Bench::FairnessWorker { kind, seconds: 2, .. }) if kind == "fair"
        ));
        for bad in [
            &["compare", "soon"][..],
            &["roundtrips", "3"],
            &["fairness-worker", "redis://h:1", "n", "sideways", "2"],
            &["pairs-worker", "redis://h:1"],
            &["redlock", "5", "0"],
            &["redlock", "--runs", "0"],
            &["versus", "--runs", "0"],
            &["redisson", "--runs", "0"],
            &["unknown"],
        ] {
            let argv = std::iter::once("redlease-bench").chain(bad.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn all_gives_every_measurement_the_given_seconds_and_counts() {
        let plan = all(Some(1), &[7]);
        assert_eq!(plan.len(), 9, "{plan:?}");
        for measurement in &plan {
            match measurement {
                Measurement::Compare(run)
                | Measurement::Handoff(run)
                | Measurement::Scale(run)
                | Measurement::Cluster(run)
                | Measurement::ClusterScale(run) => {
                    assert_eq!((run.seconds, run.counts.as_slice()), (1, &[7][..]));
                }
                Measurement::Versus(plan) => {
                    assert_eq!((plan.seconds, plan.tasks.as_slice()), (1, &[7][..]));
                    assert_eq!(plan.runs, 3);
                }
                Measurement::Redisson(plan) => {
                    assert_eq!((plan.seconds, plan.tasks.as_slice()), (1, &[7][..]));
                    assert_eq!(plan.runs, 3);
                }
                Measurement::Fairness { seconds } => assert_eq!(*seconds, 1),
                Measurement::Roundtrips => {}
                Measurement::Throughput(_) => panic!("all leaves throughput out"),
                Measurement::Scriptcost { .. } => panic!("all leaves scriptcost out"),
                Measurement::RedLock(_) => panic!("all leaves redlock out"),
                Measurement::Names { .. } => panic!("all leaves names out"),
                Measurement::Latency(_) => panic!("all leaves latency out"),
            }
        }
        match &all(None, &[])[0] {
            Measurement::Compare(run) => {
                assert_eq!((run.seconds, run.counts.as_slice()), (3, &[1, 16, 256][..]));
            }
            other => panic!("compare runs first, not {other:?}"),
        }
    }
}
