//! The run: for each phase (one fault kind, or none), a private Redis (or
//! Sentinel group, or cluster), a fresh table, the semaphores and latches
//! set, the clients as separate processes, the nemesis on the seed's
//! schedule, a recovery probe once the faults stop while the clients still
//! contend, and the checker's verdict.

use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use redlease_testkit::{RedisCluster, RedisServer, SentinelGroup, ServerOptions};
use serde::{Deserialize, Serialize};

use crate::check::validity::{self, Exit, Outcome};
use crate::check::{self, Check, Finals, PROBE, Params};
use crate::client::{Deployment, Kind, WorkloadArg};
use crate::db::{Guard, Table};
use crate::history::{self, Event, Log, Op, Type, now_us};
use crate::nemesis::{self, Fault, FaultKind};
use crate::netns::{Network, Relay};
use crate::rng::Rng;
use crate::workload::{LATCH_COUNT, Names, PERMITS, Workload};

/// A client process of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClientSpec {
    AsyncRedisson,
    AsyncString,
    BlockingRedisson,
    BlockingString,
    /// Java Redisson: `RLock` and the rest of its lock family.
    JavaRlock,
    /// Java Redisson's `RFencedLock`.
    JavaFenced,
    /// redis-py's `Lock` on the string layout
    /// (`crates/redlease-judge/clients/redis_py.py`).
    RedisPy,
}

impl ClientSpec {
    fn label(self) -> &'static str {
        match self {
            ClientSpec::RedisPy => "redis-py",
            other => other.kind().map_or("?", Kind::label),
        }
    }

    fn kind(self) -> Option<Kind> {
        match self {
            ClientSpec::AsyncRedisson => Some(Kind::AsyncRedisson),
            ClientSpec::AsyncString => Some(Kind::AsyncString),
            ClientSpec::BlockingRedisson => Some(Kind::BlockingRedisson),
            ClientSpec::BlockingString => Some(Kind::BlockingString),
            ClientSpec::JavaRlock => Some(Kind::JavaRlock),
            ClientSpec::JavaFenced => Some(Kind::JavaFenced),
            ClientSpec::RedisPy => None,
        }
    }

    fn is_redlease(self) -> bool {
        self.kind().is_some_and(Kind::is_redlease)
    }
}

/// A bug planted in redlease itself, for a run to show the checker
/// catching it. Only a build with `--cfg redlease_plant` (a debug build:
/// the library refuses to compile the plants otherwise) has them;
/// `scripts/judge-planted` makes one in `target/planted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Plant {
    /// A release that deletes the lock whoever holds it.
    ReleaseWithoutOwnerCheck,
    /// A renewal that extends the lock whoever holds it, and says it is
    /// ours.
    RenewWithoutOwnerCheck,
    /// A fencing counter that is not seeded from the clock when Redis has
    /// lost it: tokens begin again at 1.
    FenceNotSeeded,
    /// An acquire that takes a name another owner holds.
    AcquireTakesHeld,
    /// A client that hands a failover's errors (`MOVED`, `CLUSTERDOWN`,
    /// ...) to its caller at once, with time left to wait.
    FailoverErrorsNotRetried,
    /// A collector (`--gc-ms`) that gives back an expirable semaphore's
    /// permits whatever their lease (#40).
    GcReclaimsLivePermits,
    /// A collector that removes a fair queue's waiters whatever their
    /// deadline (#40).
    GcPrunesLiveWaiters,
}

/// `redlease-judge run`.
#[derive(Args, Debug, Clone)]
pub(crate) struct RunArgs {
    /// The seed of every random choice (default: from the clock); the
    /// report prints it.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// The phases, each with one kind of fault.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "none,pause,kill,restart,partition,sentinel,cluster"
    )]
    pub(crate) phases: Vec<FaultKind>,
    /// How long the clients run in each phase; the nemesis stops
    /// `--heal-ms` before the end.
    #[arg(long, default_value_t = 10)]
    pub(crate) seconds: u64,
    /// How long the clients run in the Sentinel and Cluster phases, whose
    /// failovers take about 12 and 6 s each.
    #[arg(long, default_value_t = 30)]
    pub(crate) failover_seconds: u64,
    /// How long before the clients stop the nemesis stops; the recovery
    /// probe runs then, while the clients still contend.
    #[arg(long, default_value_t = 3000)]
    pub(crate) heal_ms: u64,
    /// The clients, each a process of its own.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "async-redisson,async-string,blocking-redisson,blocking-string,java-rlock,java-fenced,redis-py"
    )]
    pub(crate) clients: Vec<ClientSpec>,
    /// The workloads the clients take part in (default: every one each
    /// kind can do).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) workloads: Vec<WorkloadArg>,
    /// How many plain lock names the clients of each layout share (at
    /// least 2: a multi-lock takes two).
    #[arg(long, default_value_t = 2)]
    pub(crate) names: usize,
    /// The lease (watchdog timeout) of every client, in ms.
    #[arg(long, default_value_t = 1000)]
    pub(crate) lease_ms: u64,
    #[arg(long, default_value_t = 2000)]
    pub(crate) wait_ms: u64,
    #[arg(long, default_value_t = 30)]
    pub(crate) hold_ms: u64,
    /// Where the histories and the report go.
    #[arg(long, default_value = "target/judge/run")]
    pub(crate) out: PathBuf,
    /// PostgreSQL (default: `$DATABASE_URL`).
    #[arg(long, env = "DATABASE_URL")]
    pub(crate) db: String,
    /// The Python with redis-py and psycopg (default: the venv
    /// `scripts/judge-peers` makes, target/judge/venv; required).
    #[arg(long)]
    pub(crate) python: Option<PathBuf>,
    /// The Redisson driver's launcher for the Java clients (default: the
    /// 4.7.0 one `scripts/redisson` builds; required).
    #[arg(long)]
    pub(crate) java: Option<PathBuf>,
    /// How fenced writes claim their row: by token and holder (the guard
    /// redlease documents), or by token alone (the guard before #29, which
    /// a repeated token gets past).
    #[arg(long, value_enum, default_value = "holder")]
    pub(crate) guard: Guard,
    /// Plant this bug in redlease (in every redlease client); needs a
    /// build with `--cfg redlease_plant`.
    #[arg(long, value_enum)]
    pub(crate) plant: Option<Plant>,
    /// Runs `redlease::admin::gc` over the phase's keys every this many
    /// ms while the clients work, in a process of its own (#40): it must
    /// take nothing a live client uses.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) gc_ms: Option<u64>,
}

/// One phase's outcome.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PhaseReport {
    pub(crate) fault: FaultKind,
    pub(crate) seconds: u64,
    pub(crate) faults: Vec<Fault>,
    pub(crate) outcome: Outcome,
    pub(crate) finals: Finals,
    pub(crate) check: Check,
    /// Unix µs: the phase's start and end, and when the nemesis stopped.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) nemesis_end: u64,
}

impl PhaseReport {
    /// What is wrong, one line each.
    pub(crate) fn violations(&self) -> Vec<String> {
        self.check.violations()
    }

    /// Judges the phase from its events: the checker, then whether the
    /// run did what it claims.
    pub(crate) fn judge(&mut self, events: &[Event], params: Params, wait_ms: u64) {
        self.check = check::check(events, &self.faults, &self.finals, params);
        let (invalid, recovered) = validity::check(
            &self.check,
            self.fault,
            &self.faults,
            &self.outcome,
            wait_ms,
            self.nemesis_end,
        );
        self.check.violations.extend(invalid);
        self.check.recovery_ms = recovered;
    }
}

/// The whole run.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunReport {
    pub(crate) seed: u64,
    pub(crate) clients: Vec<ClientSpec>,
    pub(crate) lease_ms: u64,
    pub(crate) wait_ms: u64,
    pub(crate) hold_ms: u64,
    pub(crate) names: usize,
    pub(crate) plant: Option<Plant>,
    pub(crate) guard: Guard,
    pub(crate) redis_version: String,
    pub(crate) phases: Vec<PhaseReport>,
}

impl RunReport {
    pub(crate) fn params(&self) -> Params {
        Params {
            lease_ms: self.lease_ms,
            hold_ms: self.hold_ms,
            wait_ms: self.wait_ms,
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.phases.iter().any(|p| !p.violations().is_empty())
    }

    /// What is judged on the whole run once each phase is: a client kind
    /// that acquired nothing in any phase (filed under the first phase).
    pub(crate) fn judge_run(&mut self) {
        let starved = validity::starved(self.phases.iter().map(|p| (&p.outcome, &p.check)));
        if let Some(first) = self.phases.first_mut() {
            first.check.violations.extend(starved);
        }
    }
}

/// A running client process.
struct Proc {
    spec: ClientSpec,
    index: usize,
    incarnation: u32,
    process: String,
    history: PathBuf,
    child: Child,
}

/// What every client of a phase is given.
struct Phase<'a> {
    args: &'a RunArgs,
    dir: PathBuf,
    redis_url: String,
    /// The database as the clients reach it (through the relay, in the
    /// partition phase).
    db_url: String,
    /// Each client's network namespace, in the partition phase.
    namespaces: Vec<String>,
    /// How the clients reach Redis, and the Sentinels or seed nodes for
    /// the Java clients.
    deployment: Deployment,
    nodes: Vec<String>,
    master_name: String,
    table: String,
    names: Names,
    prefix: String,
    start_us: u64,
    until_us: u64,
    seed: u64,
}

impl Phase<'_> {
    /// The collector of `--gc-ms`: over every key of the phase (its names'
    /// prefix), on `url`, every `every` ms until the phase's end. A
    /// planted bug goes to it as to the redlease clients.
    fn spawn_collector(&self, url: &str, every: u64, log: &Path) -> std::io::Result<Child> {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg("gc")
            .args(["--redis", url])
            .args(["--pattern", &format!("*{}*", self.prefix)])
            .args(["--every-ms", &every.to_string()])
            .args(["--until-us", &self.until_us.to_string()])
            .arg("--log")
            .arg(log);
        if let Some(plant) = self.args.plant {
            cmd.env("REDLEASE_PLANT", value_name(plant));
        }
        let stderr = std::fs::File::create(self.dir.join("gc.stderr"))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
    }

    fn spawn(&self, spec: ClientSpec, index: usize, incarnation: u32) -> std::io::Result<Proc> {
        let process = format!("{}-{index}.{incarnation}", spec.label());
        let history = self.dir.join(format!("{process}.jsonl"));
        let seed = self
            .seed
            .wrapping_mul(31)
            .wrapping_add((index as u64) << 8 | u64::from(incarnation));
        let a = self.args;
        let mut common = vec![
            ("--process", process.clone()),
            ("--redis", self.redis_url.clone()),
            ("--db", self.db_url.clone()),
            ("--table", self.table.clone()),
            ("--seed", seed.to_string()),
            ("--until-us", self.until_us.to_string()),
            ("--lease-ms", a.lease_ms.to_string()),
            ("--wait-ms", a.wait_ms.to_string()),
            ("--hold-ms", a.hold_ms.to_string()),
            ("--history", history.display().to_string()),
            ("--deployment", value_name(self.deployment)),
            ("--guard", value_name(a.guard)),
            ("--nodes", self.nodes.join(",")),
            ("--master-name", self.master_name.clone()),
        ];
        let (program, mut argv): (PathBuf, Vec<String>) = match spec.kind() {
            Some(kind) => {
                let mut argv = vec!["client".to_owned(), "--kind".to_owned(), value_name(kind)];
                if !kind.is_redlease() {
                    argv.extend(["--java".to_owned(), java(a).display().to_string()]);
                }
                common.extend([
                    ("--prefix", self.prefix.clone()),
                    ("--names", a.names.to_string()),
                    ("--start-us", self.start_us.to_string()),
                ]);
                if !a.workloads.is_empty() {
                    let w: Vec<String> = a.workloads.iter().map(|w| value_name(*w)).collect();
                    common.push(("--workloads", w.join(",")));
                }
                (std::env::current_exe()?, argv)
            }
            None => {
                let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/redis_py.py");
                common.push(("--names", self.names.locks(false).join(",")));
                (python(a), vec![script.display().to_string()])
            }
        };
        for (flag, value) in common {
            argv.extend([flag.to_owned(), value]);
        }
        let mut cmd = match self.namespaces.get(index) {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns]).arg(&program);
                cmd
            }
            None => Command::new(&program),
        };
        cmd.args(argv);
        if let (Some(plant), true) = (a.plant, spec.is_redlease()) {
            cmd.env("REDLEASE_PLANT", value_name(plant));
        }
        let log = std::fs::File::create(self.dir.join(format!("{process}.stderr")))?;
        // A process group of its own: a fault stops or kills the client
        // with everything it started (the Java client's JVM).
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()?;
        Ok(Proc {
            spec,
            index,
            incarnation,
            process,
            history,
            child,
        })
    }
}

/// Sends signal `name` to the process group of `child` (its own: see
/// [`Phase::spawn`]); whether it was delivered.
fn signal_group(name: &str, child: &Child) -> bool {
    Command::new("kill")
        .args([
            format!("-{name}"),
            "--".to_owned(),
            format!("-{}", child.id()),
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The command-line spelling of a clap value.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

fn java(args: &RunArgs) -> PathBuf {
    args.java.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/interop/redisson/4.7.0/run")
    })
}

fn python(args: &RunArgs) -> PathBuf {
    args.python.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/judge/venv/bin/python")
    })
}

/// Refuses a run that could not do what it was asked: a Java or Python
/// client without its runtime, a plant in a build without plants.
fn preflight(args: &RunArgs) -> Result<(), Box<dyn std::error::Error>> {
    let java_kinds = [ClientSpec::JavaRlock, ClientSpec::JavaFenced];
    if args.clients.iter().any(|c| java_kinds.contains(c)) && !java(args).exists() {
        return Err(format!(
            "no Redisson driver at {} for the Java clients: run scripts/redisson, or pass --java",
            java(args).display()
        )
        .into());
    }
    if args.clients.contains(&ClientSpec::RedisPy) && !python(args).exists() {
        return Err(format!(
            "no Python with redis-py at {} for the redis-py client: run scripts/judge-peers, or pass --python",
            python(args).display()
        )
        .into());
    }
    if args.plant.is_some() && !cfg!(redlease_plant) {
        return Err("--plant needs a build with --cfg redlease_plant: scripts/judge-planted makes one in target/planted".into());
    }
    if args.names < 2 {
        return Err("--names must be at least 2 (a multi-lock takes two)".into());
    }
    Ok(())
}

/// Runs every phase and writes the histories under `--out`; the caller
/// writes the reports.
///
/// # Errors
///
/// Redis, PostgreSQL or a client could not be started, a file could not be
/// written, or the run was asked for something it cannot do. Violations are
/// in the report, not errors.
pub(crate) fn run(args: &RunArgs) -> Result<RunReport, Box<dyn std::error::Error>> {
    preflight(args)?;
    let seed = args.seed.unwrap_or_else(|| now_us() % 1_000_000);
    eprintln!("redlease-judge: seed {seed}");
    std::fs::create_dir_all(&args.out)?;
    let mut redis = RedisServer::try_start_with(ServerOptions::default())?;
    let redis_version = server_version(&redis);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let mut phases = Vec::new();
    for (i, &fault) in args.phases.iter().enumerate() {
        let phase_seed = seed.wrapping_add(i as u64 * 1_000_003);
        let report = run_phase(args, &rt, &mut redis, fault, phase_seed)?;
        eprintln!(
            "redlease-judge: phase {}: {} ops, {} acquired, {} overlaps ({} unexplained), {} violations",
            fault.as_str(),
            report.check.counts.ops,
            report.check.counts.acquired,
            report.check.overlaps.len(),
            report.check.count(check::Class::UnexplainedOverlap),
            report.violations().len()
        );
        phases.push(report);
    }
    let mut report = RunReport {
        seed,
        clients: args.clients.clone(),
        lease_ms: args.lease_ms,
        wait_ms: args.wait_ms,
        hold_ms: args.hold_ms,
        names: args.names,
        plant: args.plant,
        redis_version,
        guard: args.guard,
        phases,
    };
    report.judge_run();
    Ok(report)
}

fn server_version(redis: &RedisServer) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut redis.connection())
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_owned()
}

fn run_phase(
    args: &RunArgs,
    rt: &tokio::runtime::Runtime,
    redis: &mut RedisServer,
    fault: FaultKind,
    seed: u64,
) -> Result<PhaseReport, Box<dyn std::error::Error>> {
    let seconds = match fault {
        FaultKind::Sentinel | FaultKind::Cluster => args.failover_seconds,
        _ => args.seconds,
    };
    let dir = args.out.join(fault.as_str());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let prefix = format!("judge:{seed}:{}", fault.as_str());
    let names = Names::new(&prefix, args.names);
    let table_name = format!("judge_{}_{seed}", fault.as_str());
    let table = rt.block_on(Table::connect(&args.db, &table_name, args.guard))?;
    rt.block_on(table.create(&names.rows()))?;
    // The partition phase runs each client in a network namespace of its
    // own, Redis listening on the bridge too, the database through a relay.
    let (network, relay) = match fault {
        FaultKind::Partition => {
            let mut network = Network::new()?;
            let namespaces = (0..args.clients.len())
                .map(|i| network.namespace(i))
                .collect::<std::io::Result<Vec<_>>>()?;
            let bridge = network.address(1);
            let mut conn = redis.connection();
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("bind")
                .arg(format!("127.0.0.1 {bridge}"))
                .arg("protected-mode")
                .arg("no")
                .exec(&mut conn)?;
            // On the bridge's second address: a partition cuts the first.
            let relay = Relay::start(network.address(2), db_port(&args.db))?;
            (Some((network, namespaces)), Some(relay))
        }
        _ => (None, None),
    };
    // A Sentinel group or a cluster for the failover phases, started
    // afresh; the shared server otherwise.
    let mut group = match fault {
        FaultKind::Sentinel => Some(SentinelGroup::try_start(1, 3)?),
        _ => None,
    };
    let mut cluster = match fault {
        FaultKind::Cluster => Some(RedisCluster::try_start(3, 1)?),
        _ => None,
    };
    let (deployment, nodes, master_name) = match (&group, &cluster) {
        (Some(g), _) => (
            Deployment::Sentinel,
            g.sentinel_addresses(),
            g.master_name().to_owned(),
        ),
        (_, Some(c)) => (
            Deployment::Cluster,
            c.masters().map(|n| n.address()).collect(),
            String::new(),
        ),
        _ => (Deployment::Single, Vec::new(), String::new()),
    };
    // The run's own view of Redis, from its own namespace.
    let local_url = match (&group, &cluster) {
        (Some(g), _) => g.url(),
        (_, Some(c)) => c.url(),
        _ => redis.url(),
    };
    let (redis_url, db_url, namespaces) = match (&network, &relay) {
        (Some((network, namespaces)), Some(relay)) => (
            format!("redis://{}:{}", network.address(1), redis.port()),
            db_at(&args.db, relay.address()),
            namespaces.clone(),
        ),
        _ => (local_url.clone(), args.db.clone(), Vec::new()),
    };
    rt.block_on(set_up(&local_url, &names, seconds))?;
    let start = now_us();
    let phase = Phase {
        args,
        dir: dir.clone(),
        redis_url,
        db_url,
        namespaces,
        deployment,
        nodes,
        master_name,
        table: table_name,
        names: names.clone(),
        prefix,
        start_us: start,
        until_us: start + seconds * 1_000_000,
        seed,
    };
    let mut procs = Vec::new();
    for (index, &spec) in args.clients.iter().enumerate() {
        procs.push(phase.spawn(spec, index, 1)?);
    }
    // Faults hit a system that runs: every client has begun its loop
    // first (a JVM takes seconds to start), or 20 s have passed.
    let up_by = Instant::now() + Duration::from_secs(20);
    while Instant::now() < up_by && !procs.iter().all(|p| has_started(&p.history)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let gc_log = dir.join("gc.log");
    let mut collector = match args.gc_ms {
        Some(every) => Some(phase.spawn_collector(&local_url, every, &gc_log)?),
        None => None,
    };
    let nemesis_log = dir.join("nemesis.jsonl");
    let nemesis_end = phase.until_us.saturating_sub(args.heal_ms * 1000);
    let mut rng = Rng::new(seed);
    let lease = Duration::from_millis(args.lease_ms);
    let every_name = {
        let mut all = names.rows();
        all.extend(names.of(Workload::Sem, true));
        all.extend(names.of(Workload::Xsem, true));
        all.extend(names.latches(seconds));
        all
    };
    // A fault starts only if it can be over by the nemesis's end, so that
    // the recovery probe runs while the clients still contend.
    let lasts = match fault {
        FaultKind::Pause | FaultKind::Partition => 2 * lease,
        FaultKind::Sentinel => Duration::from_secs(13),
        FaultKind::Cluster => Duration::from_secs(7),
        FaultKind::None | FaultKind::Kill | FaultKind::Restart => Duration::from_millis(500),
    };
    while fault != FaultKind::None && now_us() < nemesis_end {
        let gap = Duration::from_millis(rng.between(300, 1200));
        std::thread::sleep(gap.min(until(nemesis_end)));
        if now_us() + lasts.as_micros() as u64 >= nemesis_end {
            break;
        }
        let fault_done = match fault {
            FaultKind::None => None,
            FaultKind::Pause => {
                let i = pick_holder(&procs, &mut rng);
                let p = &procs[i];
                let start = now_us();
                let stopped = signal_group("STOP", &p.child);
                let pause = lease + lease / 2 + Duration::from_millis(rng.below(500));
                std::thread::sleep(pause);
                let resumed = signal_group("CONT", &p.child);
                Some(Fault {
                    kind: fault,
                    target: p.process.clone(),
                    start,
                    end: now_us(),
                    ok: stopped && resumed,
                    names: Vec::new(),
                    settled: None,
                })
            }
            FaultKind::Kill => {
                let i = pick_holder(&procs, &mut rng);
                let start = now_us();
                let p = &mut procs[i];
                let killed = signal_group("KILL", &p.child);
                let _ = p.child.wait();
                let done = Fault {
                    kind: fault,
                    target: p.process.clone(),
                    start,
                    end: now_us(),
                    ok: killed,
                    names: Vec::new(),
                    settled: None,
                };
                let (spec, index, incarnation) = (p.spec, p.index, p.incarnation + 1);
                procs[i] = phase.spawn(spec, index, incarnation)?;
                Some(done)
            }
            FaultKind::Partition => {
                let i = pick_holder(&procs, &mut rng);
                let (network, namespaces) = network.as_ref().ok_or("no network")?;
                let ns = &namespaces[procs[i].index];
                let start = now_us();
                let cut = network.partition(ns);
                let pause = lease + lease / 2 + Duration::from_millis(rng.below(500));
                std::thread::sleep(pause);
                let healed = network.heal(ns);
                Some(Fault {
                    kind: fault,
                    target: procs[i].process.clone(),
                    start,
                    end: now_us(),
                    ok: cut.is_ok() && healed.is_ok(),
                    names: Vec::new(),
                    settled: None,
                })
            }
            FaultKind::Sentinel => {
                let group = group.as_mut().ok_or("no Sentinel group")?;
                let start = now_us();
                let master = group.failover();
                let end = now_us();
                // The old master goes on taking writes from clients that
                // have not followed until it is made a replica.
                group.wait_reconverted(&master);
                Some(Fault {
                    kind: fault,
                    target: format!("master now {master}"),
                    start,
                    end,
                    ok: true,
                    names: Vec::new(),
                    settled: Some(now_us()),
                })
            }
            FaultKind::Cluster => {
                let cluster = cluster.as_mut().ok_or("no cluster")?;
                let locks = names.locks(true);
                let name = &locks[rng.below(locks.len() as u64) as usize];
                let master = cluster.master_for_key(name).clone();
                let on_shard: Vec<String> = every_name
                    .iter()
                    .filter(|n| cluster.master_for_key(n.as_str()).port() == master.port())
                    .cloned()
                    .collect();
                let start = now_us();
                let promoted = cluster.kill_master_and_wait_for_promotion(&master);
                let end = now_us();
                // Back as a replica of the promoted one, for the next.
                cluster.restart_node(&master);
                Some(Fault {
                    kind: fault,
                    target: format!("master {} for {}", master.address(), promoted.address()),
                    start,
                    end,
                    ok: true,
                    names: on_shard,
                    settled: Some(now_us()),
                })
            }
            FaultKind::Restart => {
                let start = now_us();
                redis.restart();
                Some(Fault {
                    kind: fault,
                    target: "redis".to_owned(),
                    start,
                    end: now_us(),
                    ok: true,
                    names: Vec::new(),
                    settled: None,
                })
            }
        };
        if let Some(f) = fault_done {
            nemesis::record(&nemesis_log, &f)?;
        }
    }
    // The probe and the recovery count from when the last fault was over
    // (or, with no faults, from when they would have stopped).
    std::thread::sleep(until(nemesis_end));
    let nemesis_end = now_us();
    if network.is_some() {
        // Redis stays reachable on the bridge for the clients; the probe
        // works from the run's own namespace, on loopback.
        std::thread::sleep(Duration::from_millis(10));
    }
    // The clients still run: the probe contends with them.
    let recovery_ms = rt.block_on(recovery(
        &local_url,
        &names,
        lease,
        Duration::from_millis(validity::recovery_bound_ms(args.wait_ms)),
        &dir.join("probe.jsonl"),
    ));
    // The clients stop at the phase's end, after their current operation.
    let grace = Instant::now()
        + until(phase.until_us)
        + Duration::from_millis(args.wait_ms + 4 * args.hold_ms)
        + 2 * lease
        + Duration::from_secs(5);
    let mut exits = Vec::new();
    for p in &mut procs {
        exits.push(stop_by(&mut p.child, &p.process, grace)?);
    }
    let gc = match (&mut collector, args.gc_ms) {
        (Some(child), Some(every)) => {
            exits.push(stop_by(child, "gc", grace)?);
            Some(crate::gc::tally(&gc_log, every))
        }
        _ => None,
    };
    let end = now_us();
    if network.is_some() {
        drop((relay, network));
        // Its address is gone with the bridge.
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("bind")
            .arg("127.0.0.1")
            .exec(&mut redis.connection())?;
    }
    let rows = rt.block_on(table.rows())?;
    rt.block_on(table.drop_table())?;
    let permits = rt.block_on(final_permits(&local_url, &names));
    let faults = nemesis::read(&nemesis_log)?;
    let mut kinds: Vec<String> = args.clients.iter().map(|c| c.label().to_owned()).collect();
    kinds.sort();
    kinds.dedup();
    let mut report = PhaseReport {
        fault,
        seconds,
        faults,
        outcome: Outcome {
            kinds,
            exits,
            recovery_ms,
            gc,
        },
        finals: Finals { rows, permits },
        check: Check::default(),
        start,
        end,
        nemesis_end,
    };
    let events = history::read_dir(&dir)?;
    report.judge(&events, params(args), args.wait_ms);
    drop((group, cluster));
    Ok(report)
}

/// Waits for `child` (the process `process`) to stop by itself until
/// `grace`, then kills it (its process group) and says it overran.
fn stop_by(child: &mut Child, process: &str, grace: Instant) -> std::io::Result<Exit> {
    let mut status = None;
    while Instant::now() < grace {
        if let Some(s) = child.try_wait()? {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let overran = status.is_none();
    if overran {
        eprintln!("redlease-judge: {process} did not stop; killed");
        signal_group("KILL", child);
        let _ = child.wait();
    }
    Ok(Exit {
        process: process.to_owned(),
        code: status.and_then(|s| s.code()),
        overran,
    })
}

fn params(args: &RunArgs) -> Params {
    Params {
        lease_ms: args.lease_ms,
        hold_ms: args.hold_ms,
        wait_ms: args.wait_ms,
    }
}

/// Sets the phase's semaphores and latches, before any client starts.
async fn set_up(url: &str, names: &Names, seconds: u64) -> Result<(), Box<dyn std::error::Error>> {
    let client = redlease::Client::connect(url).await?;
    for name in names.of(Workload::Sem, true) {
        client.semaphore(name).try_set_available(PERMITS).await?;
    }
    for name in names.of(Workload::Xsem, true) {
        client
            .expirable_semaphore(name)
            .try_set_total(PERMITS)
            .await?;
    }
    for name in names.latches(seconds) {
        client
            .count_down_latch(name)
            .try_set_count(LATCH_COUNT)
            .await?;
    }
    Ok(())
}

/// Each semaphore's available permits, now that every client has stopped
/// (`-1` when it cannot be read).
async fn final_permits(url: &str, names: &Names) -> Vec<(String, i64)> {
    let Ok(client) = redlease::Client::connect(url).await else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in names.of(Workload::Sem, true) {
        let available = client.semaphore(&name).available_permits().await;
        out.push((name, available.unwrap_or(-1)));
    }
    for name in names.of(Workload::Xsem, true) {
        let available = client.expirable_semaphore(&name).available_permits().await;
        out.push((name, available.unwrap_or(-1)));
    }
    out
}

/// The port of the database URL `url` (5432 when it names none).
fn db_port(url: &str) -> u16 {
    host_port(url)
        .and_then(|hp| hp.rsplit_once(':'))
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or(5432)
}

/// The `host:port` part of a `postgres://user:password@host:port/db` URL.
fn host_port(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    Some(rest.split(['/', '?']).next().unwrap_or(rest))
}

/// `url` with its host and port replaced by `at`.
fn db_at(url: &str, at: SocketAddr) -> String {
    match host_port(url) {
        Some(hp) => url.replacen(hp, &at.to_string(), 1),
        None => url.to_owned(),
    }
}

/// Time left until Unix time `us`.
fn until(us: u64) -> Duration {
    Duration::from_micros(us.saturating_sub(now_us()))
}

/// A client holding a lock now, as its history's last line says; waits up
/// to two seconds for one, then takes any (the checker tells whether the
/// fault hit a holder).
fn pick_holder(procs: &[Proc], rng: &mut Rng) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let holders: Vec<usize> = (0..procs.len())
            .filter(|&i| last_event(&procs[i].history).is_some_and(|e| holding(&e)))
            .collect();
        if !holders.is_empty() {
            return holders[rng.below(holders.len() as u64) as usize];
        }
        if Instant::now() > deadline {
            return rng.below(procs.len() as u64) as usize;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a process whose last event is `e` holds something.
fn holding(e: &Event) -> bool {
    match e.f {
        Op::Acquire => e.ty == Type::Ok,
        Op::Write | Op::Unfenced | Op::Read => true,
        Op::Release => e.ty == Type::Invoke,
        Op::CountDown | Op::Await => false,
    }
}

/// Whether a client has begun its loop: its history has a line (the Java
/// client's first comes once its JVM is up).
fn has_started(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// The last complete line of a history file.
fn last_event(path: &Path) -> Option<Event> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(2048))).ok()?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).ok()?;
    tail.lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
}

/// Acquires each plain lock name with a fresh client of each layout while
/// the clients still contend, every name at once (one after the other, a
/// name held long by a client held up the probe of the next, which then
/// went unasked for longer than the bound while it was free: #37), logging
/// what each does in `history` as a process of its own (its holds are
/// judged with theirs), and says how long each took, in ms (`None`: not
/// within `bound`).
async fn recovery(
    url: &str,
    names: &Names,
    lease: Duration,
    bound: Duration,
    history: &Path,
) -> Vec<(String, Option<u64>)> {
    let mut probes = tokio::task::JoinSet::new();
    let mut n = 0;
    for layout in [
        redlease::layout::Layout::Redisson,
        redlease::layout::Layout::String,
    ] {
        let redisson = layout == redlease::layout::Layout::Redisson;
        let client = redlease::Client::builder(url)
            .layout(layout)
            .watchdog_timeout(lease)
            .build()
            .await;
        for name in names.locks(redisson) {
            let (client, history) = (client.as_ref().ok().cloned(), history.to_owned());
            let process = format!("probe-{n}.1");
            n += 1;
            probes.spawn(async move {
                let took = match (client, Log::open(&history, &process, PROBE)) {
                    (Some(client), Ok(mut log)) => probe(&client, &name, bound, &mut log).await,
                    _ => None,
                };
                (name, took)
            });
        }
    }
    let mut out: Vec<(String, Option<u64>)> = probes.join_all().await;
    out.sort();
    out
}

/// One probe of `name`: acquire within `bound`, release; how long the
/// acquire took, in ms.
async fn probe(
    client: &redlease::Client,
    name: &str,
    bound: Duration,
    log: &mut Log,
) -> Option<u64> {
    let w = Workload::Lock;
    let _ = log.write(&log.event(w, Op::Acquire, Type::Invoke, name));
    let started = Instant::now();
    match client.lock(name).try_lock_for(bound).await {
        Ok(guard) => {
            let took = started.elapsed().as_millis() as u64;
            let mut ok = log.event(w, Op::Acquire, Type::Ok, name);
            ok.token = guard.fencing_token();
            let _ = log.write(&ok);
            let mut release = log.event(w, Op::Release, Type::Invoke, name);
            release.lost = Some(guard.is_lost());
            let _ = log.write(&release);
            let done = match guard.unlock().await {
                Ok(()) => log.event(w, Op::Release, Type::Ok, name),
                Err(e) => {
                    let ty = if e.is_not_owner() {
                        Type::Fail
                    } else {
                        Type::Info
                    };
                    let mut event = log.event(w, Op::Release, ty, name);
                    event.err = Some(e.to_string());
                    event
                }
            };
            let _ = log.write(&done);
            Some(took)
        }
        Err(e) => {
            let ty = if e.is_busy() { Type::Fail } else { Type::Info };
            let mut event = log.event(w, Op::Acquire, ty, name);
            event.err = Some(e.to_string());
            let _ = log.write(&event);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_moved_to_the_relay() {
        let url = "postgres://postgres:redlease@127.0.0.1:5432/test";
        assert_eq!(db_port(url), 5432);
        assert_eq!(db_port("postgres://localhost/test"), 5432);
        let at: SocketAddr = "10.1.2.1:4000".parse().unwrap();
        assert_eq!(
            db_at(url, at),
            "postgres://postgres:redlease@10.1.2.1:4000/test"
        );
    }
}
