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

use crate::db::{Fenced, Table};
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
}

impl Kind {
    /// The name in the history's `c` field.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::AsyncRedisson => "redlease-async-redisson",
            Kind::AsyncString => "redlease-async-string",
            Kind::BlockingRedisson => "redlease-blocking-redisson",
            Kind::BlockingString => "redlease-blocking-string",
        }
    }

    fn layout(self) -> Layout {
        match self {
            Kind::AsyncRedisson | Kind::BlockingRedisson => Layout::Redisson,
            Kind::AsyncString | Kind::BlockingString => Layout::String,
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
}

/// A lock held by the loop, whatever the API.
struct Held<G> {
    guard: G,
    token: Option<u64>,
}

/// What the loop needs of an API.
trait Locks {
    type Guard;
    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, redlease::Error>;
    fn is_lost(&self, guard: &Self::Guard) -> bool;
    fn release(&mut self, guard: Self::Guard) -> Result<(), redlease::Error>;
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

    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, redlease::Error> {
        let guard = self
            .rt
            .block_on(self.client.lock(name).try_lock_for(self.wait))?;
        let token = guard.fencing_token();
        Ok(Held { guard, token })
    }

    fn is_lost(&self, guard: &Self::Guard) -> bool {
        guard.is_lost()
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), redlease::Error> {
        self.rt.block_on(guard.unlock())
    }
}

/// The blocking API, called outside any runtime.
struct BlockingLocks {
    client: redlease::blocking::Client,
    wait: Duration,
}

impl Locks for BlockingLocks {
    type Guard = redlease::blocking::LockGuard;

    fn acquire(&mut self, name: &str) -> Result<Held<Self::Guard>, redlease::Error> {
        let guard = self.client.lock(name).try_lock_for(self.wait)?;
        let token = guard.fencing_token();
        Ok(Held { guard, token })
    }

    fn is_lost(&self, guard: &Self::Guard) -> bool {
        guard.is_lost()
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), redlease::Error> {
        guard.unlock()
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
    let table = side.block_on(Table::connect(&args.db, &args.table))?;
    let raw = redis::Client::open(args.redis.as_str())?;
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
            run_loop(args, &mut log, &mut locks, &side, &table, &raw)
        }
        Kind::BlockingRedisson | Kind::BlockingString => {
            let client = redlease::blocking::Client::from_builder(
                redlease::Client::builder(&args.redis)
                    .layout(layout)
                    .fencing(fencing)
                    .watchdog_timeout(lease),
            )?;
            let mut locks = BlockingLocks { client, wait };
            run_loop(args, &mut log, &mut locks, &side, &table, &raw)
        }
    }
}

fn run_loop<L: Locks>(
    args: &ClientArgs,
    log: &mut Log,
    locks: &mut L,
    side: &tokio::runtime::Runtime,
    table: &Table,
    raw: &redis::Client,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Rng::new(args.seed);
    let hold = Duration::from_millis(args.hold_ms);
    while now_us() < args.until_us {
        let name = &args.names[rng.below(args.names.len() as u64) as usize];
        let early = match args.plant {
            Some(Plant::TokenBeforeAcquire) => side.block_on(take_token(raw, name)).ok(),
            _ => None,
        };
        log.write(&log.event(Op::Acquire, Type::Invoke, name))?;
        let held = match locks.acquire(name) {
            Ok(held) => held,
            Err(e) => {
                let busy = e.is_busy();
                let mut event = log.event(
                    Op::Acquire,
                    if busy { Type::Fail } else { Type::Info },
                    name,
                );
                event.err = Some(e.to_string());
                log.write(&event)?;
                if !busy {
                    std::thread::sleep(Duration::from_millis(50));
                }
                continue;
            }
        };
        let token = early.or(held.token);
        let mut ok = log.event(Op::Acquire, Type::Ok, name);
        ok.token = token;
        log.write(&ok)?;

        if let Some(token) = token {
            let mut invoke = log.event(Op::Write, Type::Invoke, name);
            invoke.token = Some(token);
            log.write(&invoke)?;
            let mut done = match side.block_on(table.fenced_increment(name, token, hold)) {
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
                let bare = side.block_on(bare_release(raw, name));
                // The guard's own release then finds the lock gone (or
                // someone else's) and does nothing.
                drop(held.guard);
                bare
            }
            _ => locks.release(held.guard),
        };
        let mut event = match released {
            Ok(()) => log.event(Op::Release, Type::Ok, name),
            Err(e) if e.is_not_owner() => {
                let mut event = log.event(Op::Release, Type::Fail, name);
                event.err = Some(e.to_string());
                event
            }
            Err(e) => {
                let mut event = log.event(Op::Release, Type::Info, name);
                event.err = Some(e.to_string());
                event
            }
        };
        event.lost = Some(lost);
        log.write(&event)?;
    }
    Ok(())
}

/// The planted token: the shared counter's next value, taken before the
/// acquire (seeded from the server's clock when small, as redlease seeds
/// it, so that it is comparable with the other clients' tokens).
async fn take_token(raw: &redis::Client, name: &str) -> redis::RedisResult<u64> {
    let mut conn = raw.get_multiplexed_async_connection().await?;
    let token: u64 = redis::Script::new(TOKEN_SCRIPT)
        .key(redlease::layout::token_key(name))
        .invoke_async(&mut conn)
        .await?;
    // A delay between token and acquire, as a network or a busy thread
    // would make: it lets tokens overtake each other.
    tokio::time::sleep(Duration::from_millis(20)).await;
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
async fn bare_release(raw: &redis::Client, name: &str) -> Result<(), redlease::Error> {
    let run = async {
        let mut conn = raw.get_multiplexed_async_connection().await?;
        redis::pipe()
            .cmd("DEL")
            .arg(name)
            .cmd("PUBLISH")
            .arg(redlease::layout::channel(name))
            .arg(0)
            .exec_async(&mut conn)
            .await
    };
    run.await.map_err(redlease::Error::from)
}
