//! A client process of the redlease kinds: loops acquire, fenced write,
//! unfenced write, release on a few names until its deadline, logging each
//! step ([`crate::history`]). The loop is written once, over [`Locks`],
//! which the async API (driven on a runtime of its own) and the blocking
//! API each implement.
//!
//! With `--plant`, the client carries a known bug, so that a run can show
//! the checker catching it: a release that skips the owner check, or a
//! fencing token taken before the acquire instead of with it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use redlease::layout::Layout;

use crate::db::{Fenced, Guard, Table};
use crate::history::{Log, Op, Type, now_us};
use crate::rng::Rng;

/// Which redlease API and layout a client uses.
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
    /// Java Redisson's `RLock` (`getLock`), through the driver in
    /// `interop/redisson/`; it has no token, so the client takes one from
    /// the shared counter right after acquiring.
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

    /// Whether it is one of redlease's own clients (where bugs are planted).
    pub(crate) fn is_redlease(self) -> bool {
        !matches!(self, Kind::JavaRlock | Kind::JavaFenced)
    }

    fn layout(self) -> Layout {
        if self.redisson_layout() {
            Layout::Redisson
        } else {
            Layout::String
        }
    }
}

/// A bug to plant in the client, to check that the checker catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Plant {
    /// Release with a bare `DEL` (and the unlock message), as hand-rolled
    /// locks do: a holder whose lease ran out deletes its successor's lock.
    ReleaseWithoutOwnerCheck,
    /// Take the fencing token (`INCR` of the counter) before acquiring,
    /// with fencing off on the lock: tokens then need not follow the order
    /// in which the lock was held.
    TokenBeforeAcquire,
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
    /// comma-separated, for the Java and Python clients.
    #[arg(long, value_delimiter = ',')]
    pub(crate) nodes: Vec<String>,
    #[arg(long, default_value = "mymaster")]
    pub(crate) master_name: String,
    #[arg(long)]
    pub(crate) db: String,
    /// The phase's table.
    #[arg(long)]
    pub(crate) table: String,
    /// The lock names, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) names: Vec<String>,
    #[arg(long)]
    pub(crate) seed: u64,
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
    #[arg(long, value_enum)]
    pub(crate) plant: Option<Plant>,
    /// How fenced writes claim their row.
    #[arg(long, value_enum, default_value = "holder")]
    pub(crate) guard: Guard,
    /// The Redisson driver's launcher (`scripts/redisson` builds it), for
    /// the Java kinds.
    #[arg(long)]
    pub(crate) java: Option<PathBuf>,
}

/// A lock held by the loop, whatever the API.
struct Held<G> {
    guard: G,
    token: Option<u64>,
}

/// Why a call did not succeed.
enum Failure {
    /// It certainly did not happen: busy at the acquire, not the owner at
    /// the release.
    Definite(String),
    /// It may or may not have happened: an error, a time-out.
    Unknown(String),
}

impl Failure {
    /// A redlease error, definite when `definite` says so.
    fn of(e: &redlease::Error, definite: bool) -> Failure {
        match definite {
            true => Failure::Definite(e.to_string()),
            false => Failure::Unknown(e.to_string()),
        }
    }
}

/// What the loop needs of an API.
trait Locks {
    type Guard;
    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, Failure>;
    /// Whether the client was told it lost the lock (`None`: it cannot be).
    fn is_lost(&self, guard: &Self::Guard) -> Option<bool>;
    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure>;
    /// Acquires answer no token: the loop takes one after acquiring.
    fn needs_token(&self) -> bool {
        false
    }
}

/// The async API, driven on a runtime of its own (whose worker runs the
/// watchdog between calls).
struct AsyncLocks {
    rt: tokio::runtime::Runtime,
    client: redlease::Client,
    wait: Duration,
}

impl Locks for AsyncLocks {
    type Guard = redlease::LockGuard;

    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, Failure> {
        let guard = self
            .rt
            .block_on(self.client.lock(name).try_lock_for(self.wait))
            .map_err(|e| Failure::of(&e, e.is_busy()))?;
        let token = guard.fencing_token();
        Ok(Held { guard, token })
    }

    fn is_lost(&self, guard: &Self::Guard) -> Option<bool> {
        Some(guard.is_lost())
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure> {
        self.rt
            .block_on(guard.unlock())
            .map_err(|e| Failure::of(&e, e.is_not_owner()))
    }
}

/// The blocking API, called outside any runtime.
struct BlockingLocks {
    client: redlease::blocking::Client,
    wait: Duration,
}

impl Locks for BlockingLocks {
    type Guard = redlease::blocking::LockGuard;

    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, Failure> {
        let guard = (self.client.lock(name).try_lock_for(self.wait))
            .map_err(|e| Failure::of(&e, e.is_busy()))?;
        let token = guard.fencing_token();
        Ok(Held { guard, token })
    }

    fn is_lost(&self, guard: &Self::Guard) -> Option<bool> {
        Some(guard.is_lost())
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure> {
        guard
            .unlock()
            .map_err(|e| Failure::of(&e, e.is_not_owner()))
    }
}

/// Java Redisson, through the driver's serve mode: one owner thread, one
/// request at a time on its stdin, one answer line on its stdout.
struct JavaLocks {
    driver: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
    fenced: bool,
    wait_ms: u64,
    next: u64,
}

/// A Java hold: the name, to unlock.
struct JavaGuard(String);

impl JavaLocks {
    /// Starts the driver on `redis` with Redisson's watchdog at `lease_ms`
    /// and waits for its `ready` line.
    fn start(java: &std::path::Path, args: &ClientArgs) -> std::io::Result<JavaLocks> {
        use std::io::BufRead;
        let nodes = || {
            let urls: Vec<String> = args.nodes.iter().map(|n| format!("redis://{n}")).collect();
            urls.join(",")
        };
        let place = match args.deployment {
            Deployment::Single => vec!["--url".to_owned(), args.redis.clone()],
            Deployment::Sentinel => vec![
                "--sentinel".to_owned(),
                args.master_name.clone(),
                "--url".to_owned(),
                nodes(),
            ],
            Deployment::Cluster => vec!["--cluster".to_owned(), "--url".to_owned(), nodes()],
        };
        let mut driver = std::process::Command::new(java)
            .arg("serve")
            .args(place)
            .args(["--watchdog-ms", &args.lease_ms.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let input = driver
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let mut output = std::io::BufReader::new(
            driver
                .stdout
                .take()
                .ok_or_else(|| std::io::Error::other("no stdout"))?,
        );
        let mut line = String::new();
        output.read_line(&mut line)?;
        if !line.starts_with("ready ") {
            return Err(std::io::Error::other(format!(
                "the Redisson driver said {line:?}"
            )));
        }
        Ok(JavaLocks {
            driver,
            input,
            output,
            fenced: args.kind == Kind::JavaFenced,
            wait_ms: args.wait_ms,
            next: 0,
        })
    }

    /// Sends `request` for owner `a`: `Ok(value)` or `Err((class,
    /// message))` as the driver answered.
    fn call(&mut self, request: &str) -> std::io::Result<Result<String, (String, String)>> {
        use std::io::{BufRead, Write};
        self.next += 1;
        let id = self.next.to_string();
        writeln!(self.input, "{id} a {request}")?;
        self.input.flush()?;
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("the Redisson driver exited"));
        }
        // `<id> ok|err <start_us> <end_us> <value or class and message>`
        let mut words = line.trim_end().splitn(5, ' ');
        let (answer, status) = (words.next(), words.next());
        let rest = words.nth(2).unwrap_or("").to_owned();
        if answer != Some(id.as_str()) {
            return Err(std::io::Error::other(format!(
                "answer out of turn: {line:?}"
            )));
        }
        Ok(match status {
            Some("ok") => Ok(rest),
            _ => {
                let (class, message) = rest.split_once(' ').unwrap_or((&rest, ""));
                Err((class.to_owned(), message.to_owned()))
            }
        })
    }

    fn kind(&self) -> &'static str {
        if self.fenced { "fenced" } else { "lock" }
    }
}

impl Drop for JavaLocks {
    fn drop(&mut self) {
        // `shutdown` ends the driver; it is waited for, so no JVM outlives
        // its client.
        let _ = self.call("shutdown");
        let _ = self.driver.wait();
    }
}

impl Locks for JavaLocks {
    type Guard = JavaGuard;

    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, Failure> {
        let request = match self.fenced {
            true => format!("token.trylock {name} {} -1", self.wait_ms),
            false => format!("trylock lock {name} {} -1", self.wait_ms),
        };
        let answer = self
            .call(&request)
            .map_err(|e| Failure::Unknown(e.to_string()))?;
        let guard = JavaGuard(name.to_owned());
        match answer {
            Ok(value) if value == "false" || value == "null" => {
                Err(Failure::Definite("busy".to_owned()))
            }
            Ok(value) if self.fenced => match value.parse() {
                Ok(token) => Ok(Held {
                    guard,
                    token: Some(token),
                }),
                Err(_) => Err(Failure::Unknown(format!("token {value:?}"))),
            },
            Ok(_) => Ok(Held { guard, token: None }),
            Err((class, message)) => Err(Failure::Unknown(format!("{class}: {message}"))),
        }
    }

    fn is_lost(&self, _: &Self::Guard) -> Option<bool> {
        None
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure> {
        let request = format!("unlock {} {}", self.kind(), guard.0);
        match self
            .call(&request)
            .map_err(|e| Failure::Unknown(e.to_string()))?
        {
            Ok(_) => Ok(()),
            // Redisson's answer to an unlock of a lock no longer ours.
            Err((class, message)) if class.contains("IllegalMonitorState") => {
                Err(Failure::Definite(format!("{class}: {message}")))
            }
            Err((class, message)) => Err(Failure::Unknown(format!("{class}: {message}"))),
        }
    }

    fn needs_token(&self) -> bool {
        !self.fenced
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
    // The database and the planted bugs' raw commands run here; the async
    // API runs on a runtime of its own, as a service's would.
    let side = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let table = side.block_on(Table::connect(&args.db, &args.table, args.guard))?;
    // Raw commands (a token for a lock without them, the planted bugs) go
    // to a single server only.
    let raw = match args.deployment {
        Deployment::Single => Some(redis::Client::open(args.redis.as_str())?),
        _ => None,
    };
    if raw.is_none() && (args.plant.is_some() || args.kind == Kind::JavaRlock) {
        return Err("planted bugs and Java's RLock need a single server".into());
    }
    let wait = Duration::from_millis(args.wait_ms);
    let lease = Duration::from_millis(args.lease_ms);
    let fencing = args.plant != Some(Plant::TokenBeforeAcquire);
    let layout = args.kind.layout();
    match args.kind {
        Kind::AsyncRedisson | Kind::AsyncString => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?;
            let client = rt.block_on(
                redlease::Client::builder(&args.redis)
                    .layout(layout)
                    .fencing(fencing)
                    .watchdog_timeout(lease)
                    .build(),
            )?;
            let mut locks = AsyncLocks { rt, client, wait };
            run_loop(args, &mut log, &mut locks, &side, &table, raw.as_ref())
        }
        Kind::JavaRlock | Kind::JavaFenced => {
            let java = args
                .java
                .as_deref()
                .ok_or("the Java kinds need --java, the Redisson driver's launcher")?;
            let mut locks = JavaLocks::start(java, args)?;
            run_loop(args, &mut log, &mut locks, &side, &table, raw.as_ref())
        }
        Kind::BlockingRedisson | Kind::BlockingString => {
            let client = redlease::blocking::Client::from_builder(
                redlease::Client::builder(&args.redis)
                    .layout(layout)
                    .fencing(fencing)
                    .watchdog_timeout(lease),
            )?;
            let mut locks = BlockingLocks { client, wait };
            run_loop(args, &mut log, &mut locks, &side, &table, raw.as_ref())
        }
    }
}

fn run_loop<L: Locks>(
    args: &ClientArgs,
    log: &mut Log,
    locks: &mut L,
    side: &tokio::runtime::Runtime,
    table: &Table,
    raw: Option<&redis::Client>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Rng::new(args.seed);
    let hold = Duration::from_millis(args.hold_ms);
    let mut holds = 0u64;
    while now_us() < args.until_us {
        let name = &args.names[rng.below(args.names.len() as u64) as usize];
        let early = match args.plant {
            Some(Plant::TokenBeforeAcquire) => {
                raw.and_then(|raw| side.block_on(take_token(raw, name, true)).ok())
            }
            _ => None,
        };
        log.write(&log.event(Op::Acquire, Type::Invoke, name))?;
        let held = match locks.acquire(name) {
            Ok(held) => held,
            Err(Failure::Definite(why)) => {
                let mut event = log.event(Op::Acquire, Type::Fail, name);
                event.err = Some(why);
                log.write(&event)?;
                continue;
            }
            Err(Failure::Unknown(why)) => {
                let mut event = log.event(Op::Acquire, Type::Info, name);
                event.err = Some(why);
                log.write(&event)?;
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        // A lock without tokens: one from the shared counter, now that it
        // is held, as its users would have to.
        let late = match (early, held.token) {
            (None, None) if locks.needs_token() => {
                raw.and_then(|raw| side.block_on(take_token(raw, name, false)).ok())
            }
            _ => None,
        };
        let token = early.or(held.token).or(late);
        holds += 1;
        let holder = format!("{}/{holds}", args.process);
        let mut ok = log.event(Op::Acquire, Type::Ok, name);
        ok.token = token;
        log.write(&ok)?;

        if let Some(token) = token {
            let mut invoke = log.event(Op::Write, Type::Invoke, name);
            invoke.token = Some(token);
            log.write(&invoke)?;
            let mut done = match side.block_on(table.fenced_increment(name, token, &holder, hold)) {
                Ok(Fenced::Written { read }) => {
                    let mut e = log.event(Op::Write, Type::Ok, name);
                    (e.read, e.accepted) = (Some(read), Some(true));
                    e
                }
                Ok(Fenced::Refused) => {
                    let mut e = log.event(Op::Write, Type::Ok, name);
                    e.accepted = Some(false);
                    e
                }
                Err(err) => {
                    let mut e = log.event(Op::Write, Type::Info, name);
                    e.err = Some(err.to_string());
                    e
                }
            };
            done.token = Some(token);
            log.write(&done)?;
        }

        log.write(&log.event(Op::Unfenced, Type::Invoke, name))?;
        let done = match side.block_on(table.unfenced_increment(name, hold)) {
            Ok(read) => {
                let mut e = log.event(Op::Unfenced, Type::Ok, name);
                e.read = Some(read);
                e
            }
            Err(err) => {
                let mut e = log.event(Op::Unfenced, Type::Info, name);
                e.err = Some(err.to_string());
                e
            }
        };
        log.write(&done)?;

        let lost = locks.is_lost(&held.guard);
        log.write(&log.event(Op::Release, Type::Invoke, name))?;
        let released = match args.plant {
            Some(Plant::ReleaseWithoutOwnerCheck) => {
                let bare = match raw {
                    Some(raw) => side
                        .block_on(bare_release(raw, name))
                        .map_err(|e| Failure::Unknown(e.to_string())),
                    None => Err(Failure::Unknown("no raw connection".to_owned())),
                };
                // The guard's own release then finds the lock gone (or
                // someone else's) and does nothing.
                drop(held.guard);
                bare
            }
            _ => locks.release(held.guard),
        };
        let mut event = match released {
            Ok(()) => log.event(Op::Release, Type::Ok, name),
            Err(Failure::Definite(why)) => {
                let mut event = log.event(Op::Release, Type::Fail, name);
                event.err = Some(why);
                event
            }
            Err(Failure::Unknown(why)) => {
                let mut event = log.event(Op::Release, Type::Info, name);
                event.err = Some(why);
                event
            }
        };
        event.lost = lost;
        log.write(&event)?;
    }
    Ok(())
}

/// A token from the shared counter (seeded from the server's clock when
/// small, as redlease seeds it, so that it is comparable with the other
/// clients' tokens): for a lock without tokens, right after acquiring; for
/// the planted bug, `before` the acquire.
async fn take_token(raw: &redis::Client, name: &str, before: bool) -> redis::RedisResult<u64> {
    let mut conn = raw.get_multiplexed_async_connection().await?;
    let token: u64 = redis::Script::new(TOKEN_SCRIPT)
        .key(redlease::layout::token_key(name))
        .invoke_async(&mut conn)
        .await?;
    if before {
        // A delay between token and acquire, as a network or a busy thread
        // would make: it lets tokens overtake each other.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(token)
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

/// The planted release: a bare `DEL` and the unlock message, whoever holds
/// the lock.
async fn bare_release(raw: &redis::Client, name: &str) -> redis::RedisResult<()> {
    let mut conn = raw.get_multiplexed_async_connection().await?;
    redis::pipe()
        .cmd("DEL")
        .arg(name)
        .cmd("PUBLISH")
        .arg(redlease::layout::channel(name))
        .arg(0)
        .exec_async(&mut conn)
        .await
}
