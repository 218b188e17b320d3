//! A client process of the redlease and Java kinds: loops over the
//! workloads (a plain lock, the fair lock, a read-write lock's sides, both
//! semaphores, the latches, a multi-lock) until its deadline, logging each
//! step ([`crate::history`]). The loop is written once, over [`Prims`],
//! which redlease's async API (on a runtime of its own) and its blocking
//! API ([`redlease`]) and Redisson through the driver ([`java`]) each
//! implement.
//!
//! Each hold works in steps, and asks before each whether its client was
//! told the hold is lost (the holders that can tell: redlease's); once it
//! is, the hold stops working and releases, as a careful service would. One
//! hold in ten is long, spanning one and a half leases, so that renewals
//! happen under it.

mod java;
mod redlease;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::db::{Fenced, Guard, Table};
use crate::history::{Event, Log, Op, Type, now_us};
use crate::rng::Rng;
use crate::workload::{Names, Workload};

/// Which client a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    /// The async API, Redisson's layout.
    AsyncRedisson,
    /// The async API, the string layout.
    AsyncString,
    /// The blocking API, Redisson's layout.
    BlockingRedisson,
    /// The blocking API, the string layout.
    BlockingString,
    /// Java Redisson through the driver in `interop/redisson/`: `RLock`,
    /// `RFairLock`, `RReadWriteLock`, `RSemaphore`,
    /// `RPermitExpirableSemaphore`, `RCountDownLatch` and `RedissonMultiLock`;
    /// its locks have no token, so the client takes one from the shared
    /// counter right after acquiring (on a single server).
    JavaRlock,
    /// Java Redisson's `RFencedLock` (`getFencedLock`), whose acquire
    /// answers a token.
    JavaFenced,
}

impl Kind {
    /// The name in the history's `c` field.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::AsyncRedisson => "redlease-async-redisson",
            Kind::AsyncString => "redlease-async-string",
            Kind::BlockingRedisson => "redlease-blocking-redisson",
            Kind::BlockingString => "redlease-blocking-string",
            Kind::JavaRlock => "redisson-rlock",
            Kind::JavaFenced => "redisson-fenced",
        }
    }

    /// Whether it locks in Redisson's layout (else the string layout).
    pub(crate) fn redisson_layout(self) -> bool {
        !matches!(self, Kind::AsyncString | Kind::BlockingString)
    }

    /// Whether it is one of redlease's own clients.
    pub(crate) fn is_redlease(self) -> bool {
        !matches!(self, Kind::JavaRlock | Kind::JavaFenced)
    }

    /// The workloads it takes part in. The string layout has the plain
    /// lock only; the rest of the family is on Redisson's keys whatever
    /// the client's layout, so its clients use the primitives without a
    /// lock in them too. `RFencedLock` is a lock only.
    pub(crate) fn workloads(self) -> &'static [Workload] {
        match self {
            Kind::AsyncRedisson | Kind::BlockingRedisson | Kind::JavaRlock => &Workload::ALL,
            Kind::AsyncString | Kind::BlockingString => &[
                Workload::Lock,
                Workload::Sem,
                Workload::Xsem,
                Workload::Latch,
            ],
            Kind::JavaFenced => &[Workload::Lock],
        }
    }

    fn layout(self) -> ::redlease::layout::Layout {
        if self.redisson_layout() {
            ::redlease::layout::Layout::Redisson
        } else {
            ::redlease::layout::Layout::String
        }
    }
}

/// How the clients reach Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Deployment {
    /// One server: `--redis` is its URL.
    Single,
    /// A master and replicas behind Sentinels: `--redis` is redlease's
    /// `redis-sentinel://` URL, `--nodes` the Sentinels, `--master-name`
    /// the master's name.
    Sentinel,
    /// A Redis Cluster: `--redis` is redlease's `redis-cluster://` URL,
    /// `--nodes` the seed nodes.
    Cluster,
}

/// `redlease-judge client`: one client process.
#[derive(Args, Debug, Clone)]
pub(crate) struct ClientArgs {
    #[arg(long, value_enum)]
    pub(crate) kind: Kind,
    /// The process name in the history.
    #[arg(long)]
    pub(crate) process: String,
    #[arg(long)]
    pub(crate) redis: String,
    #[arg(long, value_enum, default_value = "single")]
    pub(crate) deployment: Deployment,
    /// The Sentinels or the cluster's seed nodes, `host:port`,
    /// comma-separated, for the Java clients.
    #[arg(long, value_delimiter = ',')]
    pub(crate) nodes: Vec<String>,
    #[arg(long, default_value = "mymaster")]
    pub(crate) master_name: String,
    #[arg(long)]
    pub(crate) db: String,
    /// The phase's table.
    #[arg(long)]
    pub(crate) table: String,
    /// The phase's name prefix (see [`crate::workload`]).
    #[arg(long)]
    pub(crate) prefix: String,
    /// How many plain lock names each layout has.
    #[arg(long, default_value_t = 2)]
    pub(crate) names: usize,
    /// The workloads to take part in (default: all the kind can do).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) workloads: Vec<WorkloadArg>,
    #[arg(long)]
    pub(crate) seed: u64,
    /// When the phase began (the latches' rounds count from it), Unix µs.
    #[arg(long)]
    pub(crate) start_us: u64,
    /// Stop starting operations at this Unix time, in µs.
    #[arg(long)]
    pub(crate) until_us: u64,
    /// The watchdog timeout (the lease), in ms.
    #[arg(long, default_value_t = 1000)]
    pub(crate) lease_ms: u64,
    /// How long an acquire waits, in ms.
    #[arg(long, default_value_t = 2000)]
    pub(crate) wait_ms: u64,
    /// The work under the lock between read and write, in ms.
    #[arg(long, default_value_t = 30)]
    pub(crate) hold_ms: u64,
    #[arg(long)]
    pub(crate) history: PathBuf,
    /// How fenced writes claim their row.
    #[arg(long, value_enum, default_value = "holder")]
    pub(crate) guard: Guard,
    /// The Redisson driver's launcher (`scripts/redisson` builds it), for
    /// the Java kinds.
    #[arg(long)]
    pub(crate) java: Option<PathBuf>,
}

/// A workload on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum WorkloadArg {
    Lock,
    Fair,
    Rw,
    Sem,
    Xsem,
    Latch,
    Multi,
    Elect,
}

impl WorkloadArg {
    /// The workloads it stands for (`rw`: both sides).
    pub(crate) fn workloads(self) -> &'static [Workload] {
        match self {
            WorkloadArg::Lock => &[Workload::Lock],
            WorkloadArg::Fair => &[Workload::Fair],
            WorkloadArg::Rw => &[Workload::Read, Workload::Write],
            WorkloadArg::Sem => &[Workload::Sem],
            WorkloadArg::Xsem => &[Workload::Xsem],
            WorkloadArg::Latch => &[Workload::Latch],
            WorkloadArg::Multi => &[Workload::Multi],
            WorkloadArg::Elect => &[Workload::Elect],
        }
    }
}

/// Something held by the loop, whatever the API: the guard, and the token
/// of each name it holds (a multi-lock holds several).
pub(crate) struct Held<G> {
    guard: G,
    tokens: Vec<Option<u64>>,
}

/// Why a call did not succeed.
pub(crate) enum Failure {
    /// It certainly did not happen: busy at the acquire, not the owner at
    /// the release.
    Definite(String),
    /// It may or may not have happened: an error, a time-out.
    Unknown(String),
    /// A redlease error saying the server could not serve it for now (a
    /// failover under way): logged as unknown, marked for
    /// [`crate::check`]'s "failover error with time left".
    Unavailable(String),
}

impl Failure {
    /// A redlease error, definite when `definite` says so.
    fn of(e: &::redlease::Error, definite: bool) -> Failure {
        match definite {
            true => Failure::Definite(e.to_string()),
            false if e.is_unavailable() => Failure::Unavailable(e.to_string()),
            false => Failure::Unknown(e.to_string()),
        }
    }
}

/// What the loop needs of an API.
pub(crate) trait Prims {
    type Guard;
    /// Takes `name` for `w` (a multi-lock: `name` is its members joined by
    /// `,`).
    fn acquire(&mut self, w: Workload, name: &str) -> Result<Held<Self::Guard>, Failure>;
    /// Whether the client was told it lost the hold (`None`: it cannot
    /// be).
    fn is_lost(&self, guard: &Self::Guard) -> Option<bool>;
    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure>;
    fn count_down(&mut self, name: &str) -> Result<(), Failure>;
    /// Waits up to `wait` for the latch; whether it opened.
    fn await_latch(&mut self, name: &str, wait: Duration) -> Result<bool, Failure>;
    /// Whether its locks answer no token, so that the loop takes one from
    /// the shared counter after acquiring.
    fn needs_token(&self) -> bool {
        false
    }
    /// Whether its holds of `w` may be long (longer than a lease).
    fn long_holds(&self, _w: Workload) -> bool {
        true
    }
}

/// Runs a client until its deadline.
///
/// # Errors
///
/// The history file or the database could not be opened, or the client
/// could not be built.
pub(crate) fn run(args: &ClientArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut log = Log::open(&args.history, &args.process, args.kind.label())?;
    // The database and the raw commands run here; the async API runs on a
    // runtime of its own, as a service's would.
    let side = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let table = side.block_on(Table::connect(&args.db, &args.table, args.guard))?;
    // Raw commands (a token for a lock without them) go to a single server
    // only; elsewhere such a lock has no token, and no fenced write.
    let raw = match args.deployment {
        Deployment::Single => Some(::redis::Client::open(args.redis.as_str())?),
        _ => None,
    };
    let ctx = Loop {
        args,
        side: &side,
        table: &table,
        raw: raw.as_ref(),
    };
    match args.kind {
        Kind::AsyncRedisson | Kind::AsyncString => {
            let mut prims = redlease::AsyncPrims::connect(args)?;
            ctx.run(&mut log, &mut prims)
        }
        Kind::BlockingRedisson | Kind::BlockingString => {
            let mut prims = redlease::BlockingPrims::connect(args)?;
            ctx.run(&mut log, &mut prims)
        }
        Kind::JavaRlock | Kind::JavaFenced => {
            let launcher = args
                .java
                .as_deref()
                .ok_or("the Java kinds need --java, the Redisson driver's launcher")?;
            let mut prims = java::JavaPrims::start(launcher, args)?;
            ctx.run(&mut log, &mut prims)
        }
    }
}

/// What the loop works with.
struct Loop<'a> {
    args: &'a ClientArgs,
    side: &'a tokio::runtime::Runtime,
    table: &'a Table,
    raw: Option<&'a ::redis::Client>,
}

impl Loop<'_> {
    fn run<P: Prims>(
        &self,
        log: &mut Log,
        prims: &mut P,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let args = self.args;
        let names = Names::new(&args.prefix, args.names);
        let can: Vec<Workload> = match args.workloads.is_empty() {
            true => args.kind.workloads().to_vec(),
            false => (args.kind.workloads().iter().copied())
                .filter(|w| args.workloads.iter().any(|a| a.workloads().contains(w)))
                .collect(),
        };
        if can.is_empty() {
            return Err("no workload left for this client kind".into());
        }
        let mut rng = Rng::new(args.seed);
        let mut holds = 0u64;
        while now_us() < args.until_us {
            let w = crate::workload::pick(&can, rng.next_u64());
            if w == Workload::Latch {
                self.latch(log, prims, &names, &mut rng)?;
                continue;
            }
            let choices = names.of(w, args.kind.redisson_layout());
            let name = &choices[rng.below(choices.len() as u64) as usize];
            let long = prims.long_holds(w) && rng.below(10) == 0;
            holds += 1;
            self.hold(log, prims, w, name, long, holds)?;
        }
        Ok(())
    }

    /// One acquisition of `name` for `w`, its work in steps, its release.
    fn hold<P: Prims>(
        &self,
        log: &mut Log,
        prims: &mut P,
        w: Workload,
        name: &str,
        long: bool,
        n: u64,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let args = self.args;
        log.write(&log.event(w, Op::Acquire, Type::Invoke, name))?;
        let mut held = match prims.acquire(w, name) {
            Ok(held) => held,
            Err(failure) => {
                let error = !matches!(failure, Failure::Definite(_));
                log.write(&failed(log, w, Op::Acquire, name, failure))?;
                if error {
                    // Not a busy lock: no spinning on a server that is down.
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Ok(());
            }
        };
        let members: Vec<&str> = name.split(',').collect();
        // A lock without tokens: one from the shared counter for each name,
        // now that it is held, as its users would have to.
        if prims.needs_token() && w.is_exclusive() {
            for (member, token) in members.iter().zip(held.tokens.iter_mut()) {
                if token.is_none() {
                    *token = self
                        .raw
                        .and_then(|raw| self.side.block_on(take_token(raw, member)).ok());
                }
            }
        }
        let mut ok = log.event(w, Op::Acquire, Type::Ok, name);
        if members.len() > 1 {
            ok.tokens = held.tokens.clone();
        } else {
            ok.token = held.tokens.first().copied().flatten();
        }
        log.write(&ok)?;

        let holder = format!("{}/{n}", args.process);
        let work = Duration::from_millis(args.hold_ms);
        let steps = if long { 6 } else { 1 };
        for step in 0..steps {
            if step > 0 {
                std::thread::sleep(Duration::from_millis(args.lease_ms / 4));
            }
            // Asked before each step: a holder told of its loss stops.
            let lost = prims.is_lost(&held.guard);
            if lost == Some(true) {
                break;
            }
            let told = match w {
                Workload::Sem | Workload::Xsem => {
                    std::thread::sleep(work * 2);
                    false
                }
                Workload::Read => {
                    self.read(log, w, name, lost, work)?;
                    false
                }
                _ => self.write(log, prims, &held, w, &members, &holder)?,
            };
            if told {
                break;
            }
        }

        let mut invoke = log.event(w, Op::Release, Type::Invoke, name);
        invoke.lost = prims.is_lost(&held.guard);
        log.write(&invoke)?;
        let event = match prims.release(held.guard) {
            Ok(()) => log.event(w, Op::Release, Type::Ok, name),
            Err(failure) => failed(log, w, Op::Release, name, failure),
        };
        Ok(log.write(&event)?)
    }

    /// A step of writes: each name's fenced and unfenced write, each asked
    /// for right after asking whether the hold is lost; whether it was
    /// (the step then stops).
    fn write<P: Prims>(
        &self,
        log: &mut Log,
        prims: &P,
        held: &Held<P::Guard>,
        w: Workload,
        members: &[&str],
        holder: &str,
    ) -> std::io::Result<bool> {
        let work = Duration::from_millis(self.args.hold_ms);
        for (member, token) in members.iter().zip(&held.tokens) {
            if let Some(token) = token {
                let lost = prims.is_lost(&held.guard);
                if lost == Some(true) {
                    return Ok(true);
                }
                self.fenced(log, w, member, *token, holder, lost, work)?;
            }
            let lost = prims.is_lost(&held.guard);
            if lost == Some(true) {
                return Ok(true);
            }
            self.unfenced(log, w, member, lost, work)?;
        }
        Ok(false)
    }

    /// The fenced read-modify-write of `name`'s row with `token`.
    #[allow(clippy::too_many_arguments)]
    fn fenced(
        &self,
        log: &mut Log,
        w: Workload,
        name: &str,
        token: u64,
        holder: &str,
        lost: Option<bool>,
        work: Duration,
    ) -> std::io::Result<()> {
        let mut invoke = log.event(w, Op::Write, Type::Invoke, name);
        (invoke.token, invoke.lost) = (Some(token), lost);
        log.write(&invoke)?;
        let mut done =
            match (self.side).block_on(self.table.fenced_increment(name, token, holder, work)) {
                Ok(Fenced::Written { read }) => {
                    let mut e = log.event(w, Op::Write, Type::Ok, name);
                    (e.read, e.accepted) = (Some(read), Some(true));
                    e
                }
                Ok(Fenced::Refused) => {
                    let mut e = log.event(w, Op::Write, Type::Ok, name);
                    e.accepted = Some(false);
                    e
                }
                Err(err) => failed(log, w, Op::Write, name, Failure::Unknown(err.to_string())),
            };
        done.token = Some(token);
        log.write(&done)
    }

    /// The unfenced read-modify-write of `name`'s row.
    fn unfenced(
        &self,
        log: &mut Log,
        w: Workload,
        name: &str,
        lost: Option<bool>,
        work: Duration,
    ) -> std::io::Result<()> {
        let mut invoke = log.event(w, Op::Unfenced, Type::Invoke, name);
        invoke.lost = lost;
        log.write(&invoke)?;
        let done = match self
            .side
            .block_on(self.table.unfenced_increment(name, work))
        {
            Ok(read) => {
                let mut e = log.event(w, Op::Unfenced, Type::Ok, name);
                e.read = Some(read);
                e
            }
            Err(err) => failed(
                log,
                w,
                Op::Unfenced,
                name,
                Failure::Unknown(err.to_string()),
            ),
        };
        log.write(&done)
    }

    /// A reader's two reads of `name`'s unfenced counter.
    fn read(
        &self,
        log: &mut Log,
        w: Workload,
        name: &str,
        lost: Option<bool>,
        work: Duration,
    ) -> std::io::Result<()> {
        let mut invoke = log.event(w, Op::Read, Type::Invoke, name);
        invoke.lost = lost;
        log.write(&invoke)?;
        let done = match self.side.block_on(self.table.read_twice(name, work)) {
            Ok((first, second)) => {
                let mut e = log.event(w, Op::Read, Type::Ok, name);
                (e.read, e.read2) = (Some(first), Some(second));
                e
            }
            Err(err) => failed(log, w, Op::Read, name, Failure::Unknown(err.to_string())),
        };
        log.write(&done)
    }

    /// One latch operation on the current round's latch: a count-down, or
    /// a wait of at most one round.
    fn latch<P: Prims>(
        &self,
        log: &mut Log,
        prims: &mut P,
        names: &Names,
        rng: &mut Rng,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let w = Workload::Latch;
        let name = names.latch(self.args.start_us, now_us());
        if rng.below(2) == 0 {
            log.write(&log.event(w, Op::CountDown, Type::Invoke, &name))?;
            let event = match prims.count_down(&name) {
                Ok(()) => log.event(w, Op::CountDown, Type::Ok, &name),
                Err(failure) => failed(log, w, Op::CountDown, &name, failure),
            };
            log.write(&event)?;
        } else {
            let wait =
                Duration::from_millis((self.args.wait_ms).min(crate::workload::LATCH_ROUND_MS));
            log.write(&log.event(w, Op::Await, Type::Invoke, &name))?;
            let event = match prims.await_latch(&name, wait) {
                Ok(open) => {
                    let mut e = log.event(w, Op::Await, Type::Ok, &name);
                    e.open = Some(open);
                    e
                }
                Err(failure) => failed(log, w, Op::Await, &name, failure),
            };
            log.write(&event)?;
        }
        Ok(())
    }
}

/// The completion of a failed operation: `fail` when it certainly did not
/// happen, `info` when it may have.
fn failed(log: &Log, w: Workload, f: Op, name: &str, failure: Failure) -> Event {
    let (ty, why, kind) = match failure {
        Failure::Definite(why) => (Type::Fail, why, None),
        Failure::Unknown(why) => (Type::Info, why, None),
        Failure::Unavailable(why) => (Type::Info, why, Some("unavailable".to_owned())),
    };
    let mut event = log.event(w, f, ty, name);
    event.err = Some(why);
    event.kind = kind;
    event
}

/// A token from the shared counter (seeded from the server's clock when
/// small, as redlease seeds it, so that it is comparable with the other
/// clients' tokens), for a lock without tokens, right after acquiring.
async fn take_token(raw: &::redis::Client, name: &str) -> ::redis::RedisResult<u64> {
    let mut conn = raw.get_multiplexed_async_connection().await?;
    ::redis::Script::new(TOKEN_SCRIPT)
        .key(::redlease::layout::token_key(name))
        .invoke_async(&mut conn)
        .await
}

/// `INCR` of the counter, seeded from the server's clock in µs when below
/// 10^15, as redlease's acquire does.
pub(crate) const TOKEN_SCRIPT: &str = r"
local token = redis.call('incr', KEYS[1])
if token < 1000000000000000 then
    local clock = redis.call('time')
    token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
    redis.call('set', KEYS[1], token)
end
return token
";
