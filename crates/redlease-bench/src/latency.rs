//! One task, one pair at a time (#39): where a request handler's lock
//! spends its time, beside the floor under it.
//!
//! Every subject takes and releases a key of its own, one pair after the
//! other, for the plan's seconds; each pair and each of its two calls is
//! timed. The subjects: redlease in both layouts (fencing on, the
//! default), redis-rs alone sending the same commands, and two `PING`s on
//! redis-rs, each on Tokio's multi-thread runtime (`#[tokio::main]`'s) and
//! on its current-thread one; the blocking API from a plain thread beside
//! a synchronous redis-rs connection sending the same commands (and two
//! `PING`s); rslock and redsync (pairs/s only: they are other processes);
//! `redis-benchmark -c 1` sending `PING`s, and replaying Redisson's
//! layout's two scripts, the limit of any client that waits for each
//! reply. Subjects take turns, the first rotating from run to run, and
//! each cell is the median of the runs, with their range.
//!
//! The breakdown beside it: the runtime's parks per pair (its workers
//! going to sleep, from Tokio's stable metrics), and, when `strace` is
//! installed, the system calls per pair of each subject run alone
//! (`latency-worker` under `strace -f -c`), which tell a reply read on the
//! caller's thread from one handed over between threads (`futex`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use redlease::layout::Layout;
use redlease_testkit::RedisServer;

use crate::cluster::{known, median, spread};
use crate::compare::verdict;
use crate::floor::Commands;
use crate::peer::{self, Peer};
use crate::probe;
use crate::throughput::{self, Limit};

/// What `latency` is asked to do.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Seconds per measurement.
    pub(crate) seconds: u64,
    /// Runs of every subject.
    pub(crate) runs: usize,
}

/// A Tokio runtime, as a service builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `#[tokio::main]`'s: a worker per core.
    Multi,
    /// `#[tokio::main(flavor = "current_thread")]`'s.
    Current,
}

/// What is timed: one task doing pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    /// redlease's async API, default settings but the layout.
    Redlease(Layout, Flavor),
    /// redis-rs alone on one multiplexed connection, the same commands.
    Commands(Layout, Flavor),
    /// The same in Redisson's layout, on the multi-thread runtime, but
    /// for the release's unlock latch (#37): what the latch costs.
    Unlatched,
    /// redis-rs alone, two `PING`s.
    Pings(Flavor),
    /// redlease's blocking API, from a plain thread.
    Blocking(Layout),
    /// A synchronous redis-rs connection, the same commands.
    SyncCommands(Layout),
    /// A synchronous redis-rs connection, two `PING`s.
    SyncPings,
}

/// Every subject, in table order.
pub(crate) const SUBJECTS: [Subject; 16] = [
    Subject::Redlease(Layout::Redisson, Flavor::Multi),
    Subject::Redlease(Layout::String, Flavor::Multi),
    Subject::Commands(Layout::Redisson, Flavor::Multi),
    Subject::Unlatched,
    Subject::Commands(Layout::String, Flavor::Multi),
    Subject::Pings(Flavor::Multi),
    Subject::Redlease(Layout::Redisson, Flavor::Current),
    Subject::Redlease(Layout::String, Flavor::Current),
    Subject::Commands(Layout::Redisson, Flavor::Current),
    Subject::Commands(Layout::String, Flavor::Current),
    Subject::Pings(Flavor::Current),
    Subject::Blocking(Layout::Redisson),
    Subject::Blocking(Layout::String),
    Subject::SyncCommands(Layout::Redisson),
    Subject::SyncCommands(Layout::String),
    Subject::SyncPings,
];

impl Subject {
    /// The subject's name on `latency-worker`'s command line.
    pub(crate) fn name(self) -> String {
        let layout = |l: Layout| match l {
            Layout::String => "string",
            _ => "redisson",
        };
        let flavor = |f: Flavor| match f {
            Flavor::Multi => "multi",
            Flavor::Current => "current",
        };
        match self {
            Subject::Redlease(l, f) => format!("redlease-{}-{}", layout(l), flavor(f)),
            Subject::Commands(l, f) => format!("commands-{}-{}", layout(l), flavor(f)),
            Subject::Unlatched => "commands-redisson-unlatched".to_owned(),
            Subject::Pings(f) => format!("pings-{}", flavor(f)),
            Subject::Blocking(l) => format!("blocking-{}", layout(l)),
            Subject::SyncCommands(l) => format!("sync-commands-{}", layout(l)),
            Subject::SyncPings => "sync-pings".to_owned(),
        }
    }

    /// The subject named `name`, as [`Subject::name`] gives it.
    pub(crate) fn named(name: &str) -> Option<Subject> {
        SUBJECTS.into_iter().find(|s| s.name() == name)
    }

    fn label(self) -> String {
        let layout = |l: Layout| match l {
            Layout::String => "string layout",
            _ => "Redisson's layout",
        };
        match self {
            Subject::Redlease(l, _) => format!("redlease, {}", layout(l)),
            Subject::Commands(l, _) => format!("redis-rs alone, {}'s commands", layout(l)),
            Subject::Unlatched => {
                "redis-rs alone, Redisson's layout's commands without the unlock latch".to_owned()
            }
            Subject::Pings(_) => "redis-rs alone, two `PING`s".to_owned(),
            Subject::Blocking(l) => format!("redlease blocking API, {}", layout(l)),
            Subject::SyncCommands(l) => {
                format!("redis-rs `Connection`, {}'s commands", layout(l))
            }
            Subject::SyncPings => "redis-rs `Connection`, two `PING`s".to_owned(),
        }
    }

    /// Where the subject runs: a runtime's flavour, or a plain thread.
    fn runs_on(self) -> &'static str {
        match self {
            Subject::Redlease(_, Flavor::Multi)
            | Subject::Commands(_, Flavor::Multi)
            | Subject::Unlatched
            | Subject::Pings(Flavor::Multi) => "multi-thread runtime",
            Subject::Redlease(..) | Subject::Commands(..) | Subject::Pings(..) => {
                "current-thread runtime"
            }
            _ => "plain thread",
        }
    }
}

/// One subject's measurement: every pair's time and its acquire's.
#[derive(Clone, Debug, Default)]
struct Timed {
    pairs: Vec<Duration>,
    acquires: Vec<Duration>,
    seconds: f64,
    /// The runtime's worker parks over the measurement (async subjects).
    parks: Option<u64>,
    /// This process's CPU time (user and system, every thread) per pair,
    /// in µs: the client's work, the bench's idle threads aside.
    client_us: f64,
    /// The server's CPU time per pair, in µs, from `INFO`.
    server_us: f64,
}

/// Reads the client's and the server's CPU time around a measurement,
/// and the runtime's worker parks when it runs in one.
struct Probe {
    stats: redis::Connection,
    cpu: Duration,
    work: Option<probe::Work>,
    parks: Option<u64>,
}

impl Probe {
    fn open(url: &str) -> Probe {
        let client = redis::Client::open(url).expect("a redis URL");
        Probe {
            stats: client.get_connection().expect("connect"),
            cpu: Duration::ZERO,
            work: None,
            parks: None,
        }
    }

    fn start(&mut self) {
        self.work = Some(probe::server_work(&mut self.stats));
        self.parks = parks();
        self.cpu = probe::cpu_time();
    }

    /// Fills in `timed`'s CPU times per pair and parks since
    /// [`Probe::start`].
    fn stop(&mut self, timed: &mut Timed) {
        let cpu = probe::cpu_time() - self.cpu;
        timed.parks = parks().zip(self.parks).map(|(now, then)| now - then);
        let work = probe::server_work(&mut self.stats) - self.work.take().expect("started");
        let pairs = timed.pairs.len().max(1) as f64;
        timed.client_us = cpu.as_secs_f64() * 1e6 / pairs;
        timed.server_us = work.cpu_s * 1e6 / pairs;
    }
}

impl Timed {
    fn per_sec(&self) -> f64 {
        self.pairs.len() as f64 / self.seconds
    }

    /// The `q` quantile of `which`, in µs.
    fn quantile(which: &[Duration], q: f64) -> f64 {
        let mut sorted = which.to_vec();
        sorted.sort_unstable();
        let i = ((sorted.len().saturating_sub(1)) as f64 * q).round() as usize;
        sorted.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
    }

    fn releases(&self) -> Vec<Duration> {
        (self.pairs.iter().zip(&self.acquires))
            .map(|(p, a)| p.saturating_sub(*a))
            .collect()
    }
}

/// Pairs until `until` or `limit` pairs, timing each and its acquire,
/// with the CPU times of `probe`'s, if given.
macro_rules! pairs {
    ($until:expr, $limit:expr, $acquire:expr, $release:expr) => {
        pairs!(None::<&mut Probe>, $until, $limit, $acquire, $release)
    };
    ($probe:expr, $until:expr, $limit:expr, $acquire:expr, $release:expr) => {{
        let (until, limit): (Instant, u64) = ($until, $limit);
        let mut probe: Option<&mut Probe> = $probe;
        if let Some(probe) = probe.as_mut() {
            probe.start();
        }
        let mut timed = Timed::default();
        let start = Instant::now();
        while Instant::now() < until && (timed.pairs.len() as u64) < limit {
            let t0 = Instant::now();
            $acquire;
            let t1 = Instant::now();
            $release;
            let t2 = Instant::now();
            timed.pairs.push(t2 - t0);
            timed.acquires.push(t1 - t0);
        }
        timed.seconds = start.elapsed().as_secs_f64();
        if let Some(probe) = probe {
            probe.stop(&mut timed);
        }
        timed
    }};
}

/// Pairs before a measurement, for connections, scripts and caches.
const WARM_UP: u64 = 200;

/// Runs `subject` against `url` for `duration` or `limit` pairs, whichever
/// ends first, on a thread of its own (with the runtime it names), after
/// [`WARM_UP`] pairs, on a key of its own.
fn time(subject: Subject, url: &str, duration: Duration, limit: u64) -> Timed {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let key = format!("bench:latency:{}", subject.name());
        match subject {
            Subject::Redlease(_, flavor)
            | Subject::Commands(_, flavor)
            | Subject::Pings(flavor) => on_runtime(flavor, subject, url, key, duration, limit),
            Subject::Unlatched => on_runtime(Flavor::Multi, subject, url, key, duration, limit),
            Subject::Blocking(_) | Subject::SyncCommands(_) | Subject::SyncPings => {
                timed_sync(subject, &url, &key, duration, limit)
            }
        }
    })
    .join()
    .expect("the measuring thread")
}

/// Times `subject` in a task of a new runtime of `flavor`.
fn on_runtime(
    flavor: Flavor,
    subject: Subject,
    url: String,
    key: String,
    duration: Duration,
    limit: u64,
) -> Timed {
    let runtime = match flavor {
        Flavor::Multi => tokio::runtime::Builder::new_multi_thread(),
        Flavor::Current => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build()
    .expect("a runtime");
    // In a task, as a service's handler runs: not in the
    // runtime's own `block_on`, which the multi-thread runtime
    // polls on this thread instead of a worker.
    runtime.block_on(async move {
        tokio::spawn(timed_async(subject, url, key, duration, limit))
            .await
            .expect("the measured task")
    })
}

/// The worker parks of the current runtime so far, if in one.
fn parks() -> Option<u64> {
    let metrics = tokio::runtime::Handle::try_current().ok()?.metrics();
    Some(
        (0..metrics.num_workers())
            .map(|w| metrics.worker_park_count(w))
            .sum(),
    )
}

async fn timed_async(
    subject: Subject,
    url: String,
    key: String,
    duration: Duration,
    limit: u64,
) -> Timed {
    let far = Instant::now() + Duration::from_secs(600);
    let mut timed = match subject {
        Subject::Redlease(layout, _) => {
            let client = redlease::Client::builder(&url)
                .layout(layout)
                .build()
                .await
                .expect("connect");
            let lock = client.lock(&key);
            let mut guard;
            pairs!(
                far,
                WARM_UP,
                guard = Some(lock.try_lock().await.expect("uncontended")),
                guard.take().expect("held").unlock().await.expect("unlock")
            );
            let mut probe = Probe::open(&url);
            pairs!(
                Some(&mut probe),
                Instant::now() + duration,
                limit,
                guard = Some(lock.try_lock().await.expect("uncontended")),
                guard.take().expect("held").unlock().await.expect("unlock")
            )
        }
        Subject::Commands(..) | Subject::Unlatched => {
            let commands = match subject {
                Subject::Commands(layout, _) => Commands::new(layout, true),
                _ => Commands::new(Layout::Redisson, true).unlatched(),
            };
            let client = redis::Client::open(url.as_str()).expect("a redis URL");
            Commands::load(&mut client.get_connection().expect("connect"));
            // As redlease's connection: a manager, its default 1 s timeout.
            let config = redis::aio::ConnectionManagerConfig::new()
                .set_response_timeout(Some(Duration::from_secs(1)));
            let mut conn = redis::aio::ConnectionManager::new_with_config(client, config)
                .await
                .expect("connect");
            let mut request = 0;
            macro_rules! timed {
                ($probe:expr, $until:expr, $limit:expr) => {
                    pairs!(
                        $probe,
                        $until,
                        $limit,
                        {
                            let granted = (commands.acquire(&key).send_async(&mut conn).await)
                                .expect("acquire");
                            assert!(granted, "uncontended");
                        },
                        {
                            request += 1;
                            let released: i64 = (commands.release(&key, request))
                                .query_async(&mut conn)
                                .await
                                .expect("release");
                            assert_eq!(released, 1);
                        }
                    )
                };
            }
            timed!(None, far, WARM_UP);
            let mut probe = Probe::open(&url);
            timed!(Some(&mut probe), Instant::now() + duration, limit)
        }
        _ => {
            let client = redis::Client::open(url.as_str()).expect("a redis URL");
            let mut conn = (client.get_multiplexed_async_connection().await).expect("connect");
            let mut ping = async || {
                let pong: String = redis::cmd("PING")
                    .query_async(&mut conn)
                    .await
                    .expect("PING");
                assert_eq!(pong, "PONG");
            };
            pairs!(far, WARM_UP, ping().await, ping().await);
            let mut probe = Probe::open(&url);
            pairs!(
                Some(&mut probe),
                Instant::now() + duration,
                limit,
                ping().await,
                ping().await
            )
        }
    };
    timed.pairs.shrink_to_fit();
    timed
}

fn timed_sync(subject: Subject, url: &str, key: &str, duration: Duration, limit: u64) -> Timed {
    let far = Instant::now() + Duration::from_secs(600);
    match subject {
        Subject::Blocking(layout) => {
            let builder = redlease::Client::builder(url).layout(layout);
            let client = redlease::blocking::Client::from_builder(builder).expect("connect");
            let lock = client.lock(key);
            let mut guard;
            pairs!(
                far,
                WARM_UP,
                guard = Some(lock.try_lock().expect("uncontended")),
                guard.take().expect("held").unlock().expect("unlock")
            );
            let mut probe = Probe::open(url);
            pairs!(
                Some(&mut probe),
                Instant::now() + duration,
                limit,
                guard = Some(lock.try_lock().expect("uncontended")),
                guard.take().expect("held").unlock().expect("unlock")
            )
        }
        Subject::SyncCommands(layout) => {
            let client = redis::Client::open(url).expect("a redis URL");
            let mut conn = client.get_connection().expect("connect");
            conn.set_read_timeout(Some(Duration::from_secs(1)))
                .expect("a timeout");
            Commands::load(&mut conn);
            let commands = Commands::new(layout, true);
            let mut request = 0;
            let mut release = |conn: &mut redis::Connection| {
                request += 1;
                let released: i64 = commands.release(key, request).query(conn).expect("release");
                assert_eq!(released, 1);
            };
            let mut timed_pairs = |probe: Option<&mut Probe>, until: Instant, limit: u64| {
                pairs!(
                    probe,
                    until,
                    limit,
                    {
                        let granted = commands.acquire(key).send(&mut conn).expect("acquire");
                        assert!(granted, "uncontended");
                    },
                    release(&mut conn)
                )
            };
            timed_pairs(None, far, WARM_UP);
            let mut probe = Probe::open(url);
            timed_pairs(Some(&mut probe), Instant::now() + duration, limit)
        }
        _ => {
            let client = redis::Client::open(url).expect("a redis URL");
            let mut conn = client.get_connection().expect("connect");
            let mut ping = || {
                let pong: String = redis::cmd("PING").query(&mut conn).expect("PING");
                assert_eq!(pong, "PONG");
            };
            pairs!(far, WARM_UP, ping(), ping());
            let mut probe = Probe::open(url);
            pairs!(
                Some(&mut probe),
                Instant::now() + duration,
                limit,
                ping(),
                ping()
            )
        }
    }
}

/// `latency-worker URL SUBJECT PAIRS`: `SUBJECT`'s pairs, `PAIRS` of them
/// after the warm-up, and nothing else: what `strace -f -c` counts.
pub(crate) fn worker(url: &str, subject: &str, pairs: u64) -> Result<(), String> {
    let subject = Subject::named(subject).ok_or_else(|| format!("no subject {subject}"))?;
    time(subject, url, Duration::from_secs(3600), pairs);
    Ok(())
}

/// The subjects whose system calls are counted: redlease and the floor in
/// Redisson's layout on each runtime, and the blocking side.
const TRACED: [Subject; 7] = [
    Subject::Redlease(Layout::Redisson, Flavor::Multi),
    Subject::Commands(Layout::Redisson, Flavor::Multi),
    Subject::Pings(Flavor::Multi),
    Subject::Redlease(Layout::Redisson, Flavor::Current),
    Subject::Pings(Flavor::Current),
    Subject::Blocking(Layout::Redisson),
    Subject::SyncCommands(Layout::Redisson),
];

/// The pair counts of the two traced runs of a subject: their difference
/// leaves the process's start, connection and warm-up out.
const TRACED_PAIRS: (u64, u64) = (500, 2_500);

/// System calls by name, in one traced run.
type Calls = std::collections::BTreeMap<String, u64>;

/// `strace -f -c` of a `latency-worker` run: the calls of every thread.
fn trace(url: &str, subject: Subject, pairs: u64) -> Result<Calls, String> {
    let out = std::env::temp_dir().join(format!(
        "redlease-latency-{}-{}-{pairs}.strace",
        std::process::id(),
        subject.name()
    ));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .arg(exe)
        .args(["latency-worker", url, &subject.name(), &pairs.to_string()])
        .status()
        .map_err(|e| format!("strace: {e}"))?;
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return Err(format!("strace of {} exited with {status}", subject.name()));
    }
    Ok(parse_strace(&text?))
}

/// The calls column of `strace -c`'s summary, by system call.
fn parse_strace(text: &str) -> Calls {
    let mut calls = Calls::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "% time seconds usecs/call calls [errors] syscall"
        if fields.len() < 5 || fields[0].parse::<f64>().is_err() {
            continue;
        }
        let (Some(name), Ok(count)) = (fields.last(), fields[3].parse::<u64>()) else {
            continue;
        };
        if *name != "total" {
            calls.insert((*name).to_owned(), count);
        }
    }
    calls
}

/// The system calls of one pair of `subject`: the difference of two traced
/// runs, divided by the difference of their pairs.
fn calls_per_pair(url: &str, subject: Subject) -> Result<Vec<(String, f64)>, String> {
    let (few, many) = TRACED_PAIRS;
    let (a, b) = (trace(url, subject, few)?, trace(url, subject, many)?);
    let per = |name: &str| {
        let n = |c: &Calls| c.get(name).copied().unwrap_or(0) as f64;
        ((n(&b) - n(&a)) / (many - few) as f64).max(0.0)
    };
    let group = |names: &[&str]| names.iter().map(|n| per(n)).sum::<f64>();
    let all: f64 = b.keys().map(|n| per(n)).sum();
    let writes = group(&["write", "writev", "sendto", "sendmsg"]);
    let reads = group(&["read", "readv", "recvfrom", "recvmsg"]);
    let futex = per("futex");
    let waits = group(&["epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll"]);
    Ok(vec![
        ("all".to_owned(), all),
        ("futex".to_owned(), futex),
        ("epoll_wait".to_owned(), waits),
        ("write".to_owned(), writes),
        ("read".to_owned(), reads),
        (
            "other".to_owned(),
            (all - futex - waits - writes - reads).max(0.0),
        ),
    ])
}

/// `redis-benchmark -c 1` sending `PING`s for about `duration`: pairs of
/// two per second, and the p50 and p99 of one `PING`, in µs.
fn benchmark_pings(server: &RedisServer, duration: Duration) -> Option<(f64, f64, f64)> {
    let requests = 15_000 * duration.as_secs().max(1);
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-c", "1", "-n", &requests.to_string(), "--csv", "PING"])
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    let row: Vec<f64> = (stdout.lines().nth(1)?.split(','))
        .filter_map(|f| f.trim_matches('"').parse().ok())
        .collect();
    Some((*row.first()? / 2.0, *row.get(3)? * 1e3, *row.get(5)? * 1e3))
}

/// One run's cells: each subject's measurement.
struct RunCells {
    subjects: Vec<Timed>,
    rslock: Option<peer::Pairs>,
    redsync: Option<peer::Pairs>,
    pings: Option<(f64, f64, f64)>,
    scripts: f64,
}

/// Measures and prints the one-task table and its breakdown.
pub(crate) fn run(server: &RedisServer, plan: &Plan, manifest: &Path) {
    let url = server.url();
    let duration = Duration::from_secs(plan.seconds);
    let mut installed = peer::load(manifest).unwrap_or_default();
    let mut take = |name: &str| -> Option<Peer> {
        let i = installed.iter().position(|p| p.name == name)?;
        Some(installed.swap_remove(i))
    };
    let (rslock, redsync) = (take("rslock"), take("redsync"));
    let mut stats = server.connection();
    let mut peer_rate = |peer: &Option<Peer>| {
        let peer = peer.as_ref()?;
        let before = probe::server_work(&mut stats);
        match peer.uncontended(&url, 1, plan.seconds) {
            Ok(mut p) => {
                let work = probe::server_work(&mut stats) - before;
                p.server_us = work.cpu_s * 1e6 / (p.per_sec * p.seconds).max(1.0);
                Some(p)
            }
            Err(why) => {
                eprintln!("latency: {} failed: {why}", peer.name);
                None
            }
        }
    };
    let mut runs = Vec::new();
    for run in 0..plan.runs {
        let mut subjects = vec![Timed::default(); SUBJECTS.len()];
        for turn in 0..SUBJECTS.len() {
            let i = (turn + run) % SUBJECTS.len();
            subjects[i] = time(SUBJECTS[i], &url, duration, u64::MAX);
        }
        runs.push(RunCells {
            subjects,
            rslock: peer_rate(&rslock),
            redsync: peer_rate(&redsync),
            pings: benchmark_pings(server, duration),
            scripts: throughput::reference_of(Limit::RedissonScripts, server, 1, 1, duration)
                .pairs(),
        });
    }
    print(plan, &runs);
    print_calls(&url);
}

fn print(plan: &Plan, runs: &[RunCells]) {
    println!(
        "## One task, one lock+unlock pair at a time (#39): {} runs of {} s per cell (median, with the range)\n",
        plan.runs, plan.seconds
    );
    println!(
        "| runs on | subject | pairs/s | to redsync's | µs per pair, p50 | p99 | acquire, p50 | release, p50 | client CPU per pair | Redis CPU per pair | worker parks per pair |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let redsync: Vec<Option<f64>> = runs.iter().map(|r| Some(r.redsync?.per_sec)).collect();
    let to_redsync = |rates: &[f64]| {
        let ratios: Vec<f64> = (rates.iter().zip(&redsync))
            .filter_map(|(r, s)| Some(r / (*s)?))
            .collect();
        if ratios.is_empty() {
            String::new()
        } else {
            spread(&ratios, 2)
        }
    };
    let mut medians = Vec::new();
    for (i, subject) in SUBJECTS.iter().enumerate() {
        let cells: Vec<&Timed> = runs.iter().map(|r| &r.subjects[i]).collect();
        let col = |f: &dyn Fn(&Timed) -> f64| cells.iter().map(|t| f(t)).collect::<Vec<f64>>();
        let rates = col(&|t| t.per_sec());
        let parks = match cells.iter().all(|t| t.parks.is_some()) {
            true => spread(
                &col(&|t| t.parks.unwrap_or(0) as f64 / t.pairs.len().max(1) as f64),
                2,
            ),
            false => String::new(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} µs | {} µs | {parks} |",
            subject.runs_on(),
            subject.label(),
            spread(&rates, 0),
            to_redsync(&rates),
            spread(&col(&|t| Timed::quantile(&t.pairs, 0.5)), 0),
            spread(&col(&|t| Timed::quantile(&t.pairs, 0.99)), 0),
            spread(&col(&|t| Timed::quantile(&t.acquires, 0.5)), 0),
            spread(&col(&|t| Timed::quantile(&t.releases(), 0.5)), 0),
            spread(&col(&|t| t.client_us), 1),
            spread(&col(&|t| t.server_us), 1),
        );
        medians.push((*subject, median(&rates)));
    }
    let peer_row = |name: &str, pairs: Vec<peer::Pairs>| {
        let rates: Vec<f64> = pairs.iter().map(|p| p.per_sec).collect();
        let cpu = known(&pairs.iter().map(|p| p.client_us).collect::<Vec<_>>(), 1);
        if !rates.is_empty() {
            println!(
                "| its own process | {name} | {} | {} | | | | | {} | {} µs | |",
                spread(&rates, 0),
                to_redsync(&rates),
                match cpu.is_empty() {
                    true => cpu,
                    false => format!("{cpu} µs"),
                },
                spread(&pairs.iter().map(|p| p.server_us).collect::<Vec<_>>(), 1),
            );
        }
    };
    peer_row("rslock", runs.iter().filter_map(|r| r.rslock).collect());
    peer_row(
        "redsync (Go)",
        runs.iter().filter_map(|r| r.redsync).collect(),
    );
    let pings: Vec<(f64, f64, f64)> = runs.iter().filter_map(|r| r.pings).collect();
    if !pings.is_empty() {
        let rates: Vec<f64> = pings.iter().map(|p| p.0).collect();
        println!(
            "| redis-benchmark `-c 1` | two `PING`s (twice one's p50 and p99) | {} | {} | {} | {} | | | | | |",
            spread(&rates, 0),
            to_redsync(&rates),
            spread(&pings.iter().map(|p| 2.0 * p.1).collect::<Vec<_>>(), 0),
            spread(&pings.iter().map(|p| 2.0 * p.2).collect::<Vec<_>>(), 0),
        );
    }
    let scripts: Vec<f64> = runs.iter().map(|r| r.scripts).collect();
    println!(
        "| redis-benchmark `-c 1` | Redisson's layout's two scripts, replayed | {} | {} | | | | | | | |",
        spread(&scripts, 0),
        to_redsync(&scripts)
    );
    println!();
    let redsync: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.redsync?.per_sec))
        .collect();
    let Some(redsync) = (!redsync.is_empty()).then(|| median(&redsync)) else {
        println!("redsync not measured: no verdicts on #39's targets.\n");
        return;
    };
    let rate = |s: Subject| {
        medians
            .iter()
            .find(|(m, _)| *m == s)
            .map_or(f64::NAN, |m| m.1)
    };
    println!("Targets (#39), on the medians:\n");
    for layout in [Layout::Redisson, Layout::String] {
        for flavor in [Flavor::Multi, Flavor::Current] {
            let subject = Subject::Redlease(layout, flavor);
            let ratio = rate(subject) / redsync;
            println!(
                "- {}, {}: pairs/s at least 1.2x redsync's: **{}** ({ratio:.2}x).",
                subject.label(),
                subject.runs_on(),
                verdict(ratio >= 1.2)
            );
        }
    }
    if !pings.is_empty() {
        let ceiling = median(&pings.iter().map(|p| p.0).collect::<Vec<_>>());
        println!(
            "- The ceiling of any client that waits for each reply: redis-benchmark's two `PING`s, {ceiling:.0} pairs/s, are {:.2}x redsync's; 1.2x redsync's is {:.0} pairs/s.",
            ceiling / redsync,
            1.2 * redsync
        );
    }
    for layout in [Layout::Redisson, Layout::String] {
        let floor = rate(Subject::SyncCommands(layout));
        let blocking = rate(Subject::Blocking(layout));
        if floor.is_finite() {
            println!(
                "- {}: {:.2}x a synchronous redis-rs connection's pairs/s with the same commands.",
                Subject::Blocking(layout).label(),
                blocking / floor
            );
        }
    }
    println!();
}

fn print_calls(url: &str) {
    if Command::new("strace").arg("-V").output().is_err() {
        println!("System calls per pair: not counted (no strace).\n");
        return;
    }
    let (few, many) = TRACED_PAIRS;
    println!(
        "## One task: system calls per pair, all threads (`strace -f -c` of `latency-worker` runs of {few} and {many} pairs, the difference)\n"
    );
    println!("| runs on | subject | all | futex | epoll_wait | write | read | other |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for subject in TRACED {
        match calls_per_pair(url, subject) {
            Ok(calls) => {
                let cells: Vec<String> = calls.iter().map(|(_, n)| format!("{n:.2}")).collect();
                println!(
                    "| {} | {} | {} |",
                    subject.runs_on(),
                    subject.label(),
                    cells.join(" | ")
                );
            }
            Err(why) => println!(
                "| {} | {} | {why} | | | | | |",
                subject.runs_on(),
                subject.label()
            ),
        }
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_is_found_by_its_name() {
        for subject in SUBJECTS {
            assert_eq!(Subject::named(&subject.name()), Some(subject));
        }
        assert_eq!(Subject::named("redlease-redisson"), None);
        let names: std::collections::BTreeSet<String> = SUBJECTS.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), SUBJECTS.len(), "names are distinct");
        assert!(TRACED.iter().all(|t| SUBJECTS.contains(t)));
    }

    #[test]
    fn strace_summaries_give_calls_by_name() {
        let summary = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 55.18    1.121811         528      2124       113 futex
 20.67    0.420246          18     22798           epoll_wait
 15.90    0.323220          16     19548           write
------ ----------- ----------- --------- --------- ------------------
100.00    2.033224          41     44470       170 total
";
        let calls = parse_strace(summary);
        assert_eq!(calls.get("futex"), Some(&2124));
        assert_eq!(calls.get("epoll_wait"), Some(&22798));
        assert_eq!(calls.get("write"), Some(&19548));
        assert_eq!(calls.len(), 3, "{calls:?}");
    }

    #[test]
    fn quantiles_pick_from_the_sorted_times() {
        let times: Vec<Duration> = [5, 1, 3, 2, 4].map(Duration::from_micros).to_vec();
        assert_eq!(Timed::quantile(&times, 0.5), 3.0);
        assert_eq!(Timed::quantile(&times, 0.0), 1.0);
        assert_eq!(Timed::quantile(&times, 1.0), 5.0);
        assert!(Timed::quantile(&[], 0.5).is_nan());
    }
}
