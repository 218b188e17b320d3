//! The run: for each phase (one fault kind, or none), a private Redis, a
//! fresh table, the clients as separate processes, the nemesis on the
//! seed's schedule, a recovery probe once the faults stop, and the
//! checker's verdict.

use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use redlease_testkit::{RedisCluster, RedisServer, SentinelGroup, ServerOptions};
use serde::{Deserialize, Serialize};

use crate::check::{self, Check};
use crate::client::{Deployment, Kind, Plant};
use crate::db::{Guard, Table};
use crate::history::{self, Event, Op, Type, now_us};
use crate::nemesis::{self, Fault, FaultKind};
use crate::netns::{Network, Relay};
use crate::rng::Rng;

/// A client process of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClientSpec {
    AsyncRedisson,
    AsyncString,
    BlockingRedisson,
    BlockingString,
    /// Java Redisson's `RLock`.
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

    /// Whether it locks in Redisson's layout (else the string layout): the
    /// two are not mixed on one key (a hash lock refuses a string key as
    /// the wrong type, not as busy), so each has names of its own.
    fn redisson_layout(self) -> bool {
        self.kind().is_some_and(Kind::redisson_layout)
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
    #[arg(long, default_value_t = 2000)]
    pub(crate) heal_ms: u64,
    /// The clients, each a process of its own.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "async-redisson,async-string,blocking-redisson,blocking-string,java-rlock,java-fenced,redis-py"
    )]
    pub(crate) clients: Vec<ClientSpec>,
    /// How many lock names the clients of each layout share.
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
    /// `scripts/judge-peers` makes, target/judge/venv).
    #[arg(long)]
    pub(crate) python: Option<PathBuf>,
    /// The Redisson driver's launcher for the Java clients (default: the
    /// 4.7.0 one `scripts/redisson` builds).
    #[arg(long)]
    pub(crate) java: Option<PathBuf>,
    /// How fenced writes claim their row: by token and holder (the guard
    /// redlease documents), or by token alone (the guard before #29, which
    /// a repeated token gets past).
    #[arg(long, value_enum, default_value = "holder")]
    pub(crate) guard: Guard,
    /// Plant this bug in every redlease client.
    #[arg(long, value_enum)]
    pub(crate) plant: Option<Plant>,
}

/// One phase's outcome.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PhaseReport {
    pub(crate) fault: FaultKind,
    pub(crate) seconds: u64,
    pub(crate) faults: Vec<Fault>,
    /// How long each name took to acquire once the clients had stopped,
    /// after the last fault, in ms; `None`: not within three leases.
    pub(crate) recovery_ms: Vec<(String, Option<u64>)>,
    /// The final rows: name, fenced balance, unfenced counter.
    pub(crate) rows: Vec<(String, i64, i64)>,
    pub(crate) check: Check,
    /// Unix µs: the phase's start and end, and when the nemesis stopped.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) nemesis_end: u64,
}

impl PhaseReport {
    /// The checker's violations, and a name not acquirable within one lease
    /// after the faults stopped.
    pub(crate) fn violations(&self, lease_ms: u64) -> Vec<String> {
        let mut out = self.check.violations();
        for (name, ms) in &self.recovery_ms {
            match ms {
                Some(ms) if *ms <= lease_ms => {}
                Some(ms) => out.push(format!(
                    "{name} took {ms} ms to acquire after the faults stopped"
                )),
                None => out.push(format!(
                    "{name} could not be acquired after the faults stopped"
                )),
            }
        }
        out
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
    pub(crate) plant: Option<String>,
    pub(crate) guard: Guard,
    pub(crate) redis_version: String,
    pub(crate) phases: Vec<PhaseReport>,
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
    /// the Java and Python clients.
    deployment: Deployment,
    nodes: Vec<String>,
    master_name: String,
    table: String,
    names: Vec<String>,
    until_us: u64,
    seed: u64,
}

impl Phase<'_> {
    /// The names of `spec`'s layout.
    fn names_of(&self, spec: ClientSpec) -> Vec<String> {
        let layout = if spec.redisson_layout() { "r" } else { "s" };
        self.names
            .iter()
            .filter(|n| {
                n.rsplit(':')
                    .next()
                    .is_some_and(|last| last.starts_with(layout))
            })
            .cloned()
            .collect()
    }

    fn spawn(&self, spec: ClientSpec, index: usize, incarnation: u32) -> std::io::Result<Proc> {
        let process = format!("{}-{index}.{incarnation}", spec.label());
        let history = self.dir.join(format!("{process}.jsonl"));
        let seed = self
            .seed
            .wrapping_mul(31)
            .wrapping_add((index as u64) << 8 | u64::from(incarnation));
        let a = self.args;
        let common = [
            ("--process", process.clone()),
            ("--redis", self.redis_url.clone()),
            ("--db", self.db_url.clone()),
            ("--table", self.table.clone()),
            ("--names", self.names_of(spec).join(",")),
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
                if kind.is_redlease()
                    && let Some(plant) = a.plant
                {
                    argv.extend(["--plant".to_owned(), value_name(plant)]);
                }
                if !kind.is_redlease() {
                    argv.extend(["--java".to_owned(), java(a).display().to_string()]);
                }
                (std::env::current_exe()?, argv)
            }
            None => {
                let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/redis_py.py");
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
/// [`Phase::spawn`]).
fn signal_group(name: &str, child: &Child) {
    let _ = Command::new("kill")
        .args([
            format!("-{name}"),
            "--".to_owned(),
            format!("-{}", child.id()),
        ])
        .stderr(Stdio::null())
        .status();
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
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/judge/venv/bin/python");
        if venv.exists() {
            venv
        } else {
            PathBuf::from("python3")
        }
    })
}

/// Runs every phase and writes the histories, `report.json`, `report.md`
/// and `chart.svg` under `--out`.
///
/// # Errors
///
/// Redis, PostgreSQL or a client could not be started, or a file could
/// not be written. Violations are in the report, not errors.
pub(crate) fn run(args: &RunArgs) -> Result<RunReport, Box<dyn std::error::Error>> {
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
            "redlease-judge: phase {}: {} ops, {} overlaps ({} unexplained), {} violations",
            fault.as_str(),
            report.check.ops,
            report.check.overlaps.len(),
            report
                .check
                .overlaps
                .iter()
                .filter(|o| o.cause == check::Cause::Unexplained)
                .count(),
            report.violations(args.lease_ms).len()
        );
        phases.push(report);
    }
    Ok(RunReport {
        seed,
        clients: args.clients.clone(),
        lease_ms: args.lease_ms,
        wait_ms: args.wait_ms,
        hold_ms: args.hold_ms,
        names: args.names,
        plant: args
            .plant
            .and_then(|p| p.to_possible_value())
            .map(|v| v.get_name().to_owned()),
        redis_version,
        guard: args.guard,
        phases,
    })
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
    let names: Vec<String> = ["r", "s"]
        .iter()
        .flat_map(|layout| (0..args.names).map(move |i| format!("{layout}{i}")))
        .map(|n| format!("judge:{seed}:{}:{n}", fault.as_str()))
        .collect();
    let table_name = format!("judge_{}_{seed}", fault.as_str());
    let table = rt.block_on(Table::connect(&args.db, &table_name, args.guard))?;
    rt.block_on(table.create(&names))?;
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
            let relay = Relay::start(bridge, db_port(&args.db))?;
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
    let (redis_url, db_url, namespaces) = match (&network, &relay) {
        (Some((network, namespaces)), Some(relay)) => (
            format!("redis://{}:{}", network.address(1), redis.port()),
            db_at(&args.db, relay.address()),
            namespaces.clone(),
        ),
        _ => match (&group, &cluster) {
            (Some(g), _) => (g.url(), args.db.clone(), Vec::new()),
            (_, Some(c)) => (c.url(), args.db.clone(), Vec::new()),
            _ => (redis.url(), args.db.clone(), Vec::new()),
        },
    };
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
        until_us: start + seconds * 1_000_000,
        seed,
    };
    let mut procs = Vec::new();
    for (index, &spec) in args.clients.iter().enumerate() {
        // Java's RLock takes its token with a raw command, which this
        // harness sends to a single server only.
        if deployment != Deployment::Single && spec == ClientSpec::JavaRlock {
            continue;
        }
        procs.push(phase.spawn(spec, index, 1)?);
    }
    if deployment != Deployment::Single && args.plant.is_some() {
        return Err("planted bugs run on a single server only".into());
    }
    let nemesis_log = dir.join("nemesis.jsonl");
    let nemesis_end = phase.until_us.saturating_sub(args.heal_ms * 1000);
    let mut rng = Rng::new(seed);
    let lease = Duration::from_millis(args.lease_ms);
    while fault != FaultKind::None && now_us() < nemesis_end {
        let gap = Duration::from_millis(rng.between(300, 1200));
        std::thread::sleep(gap.min(until(nemesis_end)));
        if now_us() >= nemesis_end {
            break;
        }
        let done = match fault {
            FaultKind::None => None,
            FaultKind::Pause => {
                let i = pick_holder(&procs, &mut rng);
                let p = &procs[i];
                let start = now_us();
                signal_group("STOP", &p.child);
                let stopped = lease + lease / 2 + Duration::from_millis(rng.below(500));
                std::thread::sleep(stopped);
                signal_group("CONT", &p.child);
                Some(Fault {
                    kind: fault,
                    target: p.process.clone(),
                    start,
                    end: now_us(),
                })
            }
            FaultKind::Kill => {
                let i = pick_holder(&procs, &mut rng);
                let start = now_us();
                let p = &mut procs[i];
                signal_group("KILL", &p.child);
                let _ = p.child.wait();
                let fault_done = Fault {
                    kind: fault,
                    target: p.process.clone(),
                    start,
                    end: now_us(),
                };
                let (spec, index, incarnation) = (p.spec, p.index, p.incarnation + 1);
                procs[i] = phase.spawn(spec, index, incarnation)?;
                Some(fault_done)
            }
            FaultKind::Partition => {
                let i = pick_holder(&procs, &mut rng);
                let (network, namespaces) = network.as_ref().ok_or("no network")?;
                let start = now_us();
                network.partition(&namespaces[procs[i].index])?;
                let cut = lease + lease / 2 + Duration::from_millis(rng.below(500));
                std::thread::sleep(cut);
                network.heal(&namespaces[procs[i].index])?;
                Some(Fault {
                    kind: fault,
                    target: procs[i].process.clone(),
                    start,
                    end: now_us(),
                })
            }
            FaultKind::Sentinel => {
                let group = group.as_mut().ok_or("no Sentinel group")?;
                let start = now_us();
                let master = group.failover_and_reconvert();
                Some(Fault {
                    kind: fault,
                    target: format!("master now {master}"),
                    start,
                    end: now_us(),
                })
            }
            FaultKind::Cluster => {
                let cluster = cluster.as_mut().ok_or("no cluster")?;
                let name = &names[rng.below(names.len() as u64) as usize];
                let master = cluster.master_for_key(name).clone();
                let start = now_us();
                let promoted = cluster.kill_master_and_wait_for_promotion(&master);
                // Back as a replica of the promoted one, for the next.
                cluster.restart_node(&master);
                Some(Fault {
                    kind: fault,
                    target: format!("master {} for {}", master.address(), promoted.address()),
                    start,
                    end: now_us(),
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
                })
            }
        };
        if let Some(f) = done {
            nemesis::record(&nemesis_log, &f)?;
        }
    }
    let nemesis_end = now_us().min(nemesis_end.max(start));
    // The clients stop at the phase's end, after their current operation.
    let grace = Instant::now()
        + until(phase.until_us)
        + Duration::from_millis(args.wait_ms + 4 * args.hold_ms)
        + Duration::from_secs(5);
    for p in &mut procs {
        while Instant::now() < grace {
            if p.child.try_wait()?.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if p.child.try_wait()?.is_none() {
            eprintln!("redlease-judge: {} did not stop; killed", p.process);
            signal_group("KILL", &p.child);
            let _ = p.child.wait();
        }
    }
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
    // From the run's own namespace: the partition phase's bridge is gone.
    let probe_url = match (&group, &cluster) {
        (Some(g), _) => g.url(),
        (_, Some(c)) => c.url(),
        _ => redis.url(),
    };
    let recovery_ms = rt.block_on(recovery(&probe_url, &names, lease));
    let rows = rt.block_on(table.rows())?;
    rt.block_on(table.drop_table())?;
    let events = history::read_dir(&dir)?;
    let faults = nemesis::read(&nemesis_log)?;
    let check = check::check(&events, &faults, &rows);
    Ok(PhaseReport {
        fault,
        seconds,
        faults,
        recovery_ms,
        rows,
        check,
        start,
        end,
        nemesis_end,
    })
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
/// to a second for one, then takes any.
fn pick_holder(procs: &[Proc], rng: &mut Rng) -> usize {
    let deadline = Instant::now() + Duration::from_secs(1);
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

/// Whether a process whose last event is `e` holds a lock.
fn holding(e: &Event) -> bool {
    match e.f {
        Op::Acquire => e.ty == Type::Ok,
        Op::Write | Op::Unfenced => true,
        Op::Release => e.ty == Type::Invoke,
    }
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

/// Acquires each name with a fresh client and says how long it took, in ms
/// (`None`: not within three leases).
async fn recovery(url: &str, names: &[String], lease: Duration) -> Vec<(String, Option<u64>)> {
    let Ok(client) = redlease::Client::builder(url)
        .watchdog_timeout(lease)
        .build()
        .await
    else {
        return names.iter().map(|n| (n.clone(), None)).collect();
    };
    let mut out = Vec::new();
    for name in names {
        let started = Instant::now();
        let took = match client.lock(name).try_lock_for(lease * 3).await {
            Ok(guard) => {
                let took = started.elapsed().as_millis() as u64;
                let _ = guard.unlock().await;
                Some(took)
            }
            Err(_) => None,
        };
        out.push((name.clone(), took));
    }
    out
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
