//! `redlease run`: a `flock` for a fleet. Holds a lock while a command runs.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use nix::sys::signal::Signal;
use redlease::{Error, Lock, LockGuard, LostReason, MultiGuard, PermitGuard};
use redlease_grammar::limits::quoted;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep_until};

use crate::connect::{LayoutArg, Target, fail, warn};
use crate::duration;
use crate::signals::{self, Caught};

/// Runs CMD while holding the lock KEY, like flock(1) across machines.
///
/// The lock is renewed by the watchdog while CMD runs (or held for a fixed
/// --lease), and released when CMD exits; redlease then exits with CMD's
/// status (128+N if CMD died of signal N). CMD gets the lock's fencing token
/// in REDLEASE_FENCING_TOKEN (larger for every acquisition of KEY) and the
/// key in REDLEASE_KEY. SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to
/// CMD (only CMD itself: a shell script should `exec` its last command or
/// pass them on), except a Ctrl-C, Ctrl-backslash or hangup from the terminal
/// while in the foreground, which reaches CMD directly. If the lock is lost
/// while CMD runs (deleted or taken over, renewals failing, or a fixed
/// lease running out), CMD is stopped with SIGTERM, then SIGKILL after
/// --grace, and redlease exits with --lost-exit-code; a loss found only when
/// releasing the lock after CMD exited exits with it too. If redlease itself
/// is killed with SIGKILL, CMD runs on and the lock expires within one
/// watchdog timeout. A CMD that exits with 75 or 76 itself is not told
/// apart from busy or lost: choose other codes with -E and
/// --lost-exit-code if it may.
///
/// With --read or --write, KEY names a read-write lock (Redisson's
/// RReadWriteLock) and CMD runs under its read side (shared with other
/// readers) or its write side (alone); without either, the plain lock. A
/// plain lock and a read-write lock of the same name exclude each other.
///
/// With --key given more than once, CMD runs holding all of the locks,
/// taken together or not at all (a multi-lock: in sorted order, releasing
/// what it took whenever one is busy, so two runs naming the same keys in
/// other orders never deadlock); REDLEASE_KEY then lists the keys and
/// REDLEASE_FENCING_TOKENS pairs each key with its token (`KEY=TOKEN ...`).
///
/// With --semaphore NAME --permits N instead of --key, at most N commands
/// run at once across the fleet: the semaphore NAME (Redisson's
/// RPermitExpirableSemaphore) gets N permits if it has none yet, and CMD
/// runs holding one, renewed like a lock (so a crashed redlease's permit
/// comes back within one watchdog timeout). CMD gets the permit's id in
/// REDLEASE_PERMIT_ID and NAME in REDLEASE_SEMAPHORE. A busy semaphore,
/// a lost permit and --lease behave as for a lock.
///
/// With --layout string, KEY is a string holding its owner, taken with
/// `SET KEY owner NX PX lease` like the SET NX locks of redis-py, rslock,
/// redsync or a hand-written script, so that CMD and the services using
/// those on the same key exclude each other (see --layout).
#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub(crate) struct RunArgs {
    /// The lock's name, which is its Redis key; several --key options take
    /// all of those locks together, or none.
    #[arg(
        long,
        short = 'k',
        value_name = "KEY",
        required_unless_present = "semaphore",
        conflicts_with = "semaphore"
    )]
    key: Vec<String>,
    /// Runs CMD holding one permit of the semaphore NAME (a Redis key)
    /// instead of a lock: at most --permits commands at once.
    #[arg(long, value_name = "NAME", requires = "permits", conflicts_with_all = ["read", "write"])]
    semaphore: Option<String>,
    /// The semaphore's number of permits, set only if it has none yet (a
    /// semaphore that exists keeps its count: change it with Redisson's
    /// setPermits or `ExpirableSemaphore::set_permits`).
    #[arg(
        long,
        value_name = "N",
        requires = "semaphore",
        // clap drops a requirement that conflicts with an argument given,
        // so with --key the one above would not be checked.
        conflicts_with = "key",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(i32::MAX))
    )]
    permits: Option<u32>,
    /// Takes the read side of the read-write lock KEY: runs beside other
    /// --read runs (and Redisson readers), waits for a writer.
    #[arg(long, conflicts_with = "write")]
    read: bool,
    /// Takes the write side of the read-write lock KEY: runs alone, with no
    /// reader and no other writer.
    #[arg(long)]
    write: bool,
    /// How KEY holds its owner. `string` is for sharing lock keys with
    /// services that lock with SET NX (redis-py's Lock, rslock, redsync, a
    /// hand-written `SET key uuid NX PX`): the key holds the owner
    /// (`<client-id>:<n>`), its ttl is the lease, REDLEASE_FENCING_TOKEN
    /// comes from the same counter as with `redisson`. A holder that does
    /// not announce its release (other libraries do not) is seen gone at
    /// the next retry, at the latest when its key expires, not at once.
    /// Plain locks only: not with --read, --write or --semaphore, which are
    /// Redisson's structures.
    #[arg(long, value_enum, value_name = "LAYOUT", default_value_t = LayoutArg::Redisson)]
    layout: LayoutArg,
    /// How long to wait while the lock is busy; 0 tries once. Waits as long
    /// as it takes when not given.
    #[arg(long, short = 'w', value_name = "DURATION", value_parser = duration::parse)]
    wait: Option<Duration>,
    /// Holds the lock for a fixed lease, never renewed: it expires this long
    /// after it was acquired, and CMD is stopped then (see --on-lost).
    /// Without it the watchdog keeps the lock for as long as CMD runs.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    lease: Option<Duration>,
    /// The watchdog's lease (default 30s), renewed every third of it: a
    /// crashed redlease frees the lock within it, and a lock deleted behind
    /// redlease is noticed within a third of it.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, conflicts_with = "lease")]
    watchdog_timeout: Option<Duration>,
    /// The exit code when the lock stays busy for --wait.
    #[arg(short = 'E', long, value_name = "CODE", default_value_t = 75)]
    conflict_exit_code: u8,
    /// The exit code when the lock was lost while CMD ran and CMD was
    /// stopped.
    #[arg(long, value_name = "CODE", default_value_t = 76)]
    lost_exit_code: u8,
    /// What to do when the lock is lost while CMD runs: stop CMD, or let it
    /// finish with a warning (its work may then overlap with the next
    /// holder's).
    #[arg(long, value_enum, value_name = "ACTION", default_value_t = OnLost::Stop)]
    on_lost: OnLost,
    /// How long CMD may take to exit after SIGTERM, when the lock was lost,
    /// before it gets SIGKILL.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "10s")]
    grace: Duration,
    /// The command and its arguments (after `--`).
    #[arg(
        value_name = "CMD",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

/// The grammar of the DURATION options, from the one place the attribute
/// and the audit read it from too, then an example.
fn after_help() -> String {
    format!(
        "durations: {}\n\nexamples:\n  redlease run --key reports:nightly --wait 10s -- ./nightly-report\n  \
         redlease run --key catalog:prices --write -- ./rebuild-prices\n  \
         redlease run --key catalog:prices --read --wait 1m -- ./export-prices\n  \
         redlease run --semaphore jobs:export --permits 4 --wait 10m -- ./export\n  \
         redlease run --key account:17 --key account:4 --wait 5s -- ./transfer\n  \
         redlease run --key billing:close --layout string --wait 1m -- ./close-books",
        redlease_grammar::duration::GRAMMAR
    )
}

/// `--on-lost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum OnLost {
    /// Stop CMD: SIGTERM, then SIGKILL after --grace.
    Stop,
    /// Let CMD run on, and only warn.
    Ignore,
}

pub(crate) async fn main(target: Target, args: RunArgs) -> ExitCode {
    if args.key.len() > 1 && (args.read || args.write) {
        return crate::usage_error(
            "run",
            "--read and --write take one --key: several keys are taken as plain locks".to_owned(),
        );
    }
    if args.layout == LayoutArg::String && (args.read || args.write || args.semaphore.is_some()) {
        return crate::usage_error(
            "run",
            "--layout string takes plain locks (--key): --read, --write and --semaphore are \
             Redisson's structures"
                .to_owned(),
        );
    }
    // Known bad without a server: said as the other usage errors are,
    // before connecting (issue #18).
    if let Some(message) = args.invalid() {
        return crate::usage_error("run", message);
    }
    // Caught before anything else: from here on a signal is ours to handle,
    // so a lock being acquired or held is always let go.
    let mut caught = match Caught::new() {
        Ok(caught) => caught,
        Err(e) => return fail(&format!("cannot catch signals: {e}")),
    };
    let acquired = tokio::select! {
        acquired = acquire(&target, &args) => acquired,
        sig = caught.recv() => {
            // The dropped acquire releases whatever it may have taken in a
            // background task; give it a moment to run before the runtime
            // stops, or the lock would stay until its lease ends.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return ExitCode::from(signals::exit_status(sig));
        }
    };
    let held = match acquired {
        Ok(held) => held,
        Err(Failure::Busy(message)) => {
            eprintln!("redlease: {message}");
            return ExitCode::from(args.conflict_exit_code);
        }
        Err(Failure::Other(message)) => return fail(&message),
    };
    let mut child = match spawn(&args, &held) {
        Ok(child) => child,
        Err(e) => {
            let code = match e.kind() {
                io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            eprintln!(
                "redlease: cannot run {:?}: {e}",
                args.command[0].to_string_lossy()
            );
            release(&target, held, false).await;
            return ExitCode::from(code);
        }
    };
    let stop = (args.on_lost == OnLost::Stop).then_some(args.grace);
    let supervised = supervise(&mut child, held.lost(), &mut caught, &args.what(), stop).await;
    let (status, mut lost) = (supervised.status, supervised.lost);
    if status.is_err() {
        // Not knowing whether it still runs, make sure it does not outlive
        // the lock.
        let _ = child.start_kill();
    }
    let what = args.what();
    let gone = !release(&target, held, lost.is_some()).await;
    if gone && lost.is_none() {
        // Lost before the watchdog could tell (it checks every third of its
        // timeout), while the command ran: its work was not protected.
        lost = Some(LostReason::OwnerChanged);
        warn(&format!(
            "{what} was lost while the command ran (found when releasing it)"
        ));
    }
    match (status, lost) {
        (_, Some(_)) if args.on_lost == OnLost::Stop => ExitCode::from(args.lost_exit_code),
        (Ok(status), _) => ExitCode::from(exit_code(status)),
        (Err(e), _) => fail(&format!("cannot wait for the command: {e}")),
    }
}

impl RunArgs {
    /// What CMD runs under, for messages: `lock "k"` or `semaphore "s"`.
    fn what(&self) -> String {
        match (&self.key[..], &self.semaphore) {
            (_, Some(name)) => format!("a permit of semaphore {}", quoted(name)),
            ([key], None) => format!("lock {}", quoted(key)),
            (keys, None) => format!("locks [{}]", listed(keys)),
        }
    }

    /// What the library would refuse before sending anything: an empty
    /// name, one over the length limit, a zero lease.
    fn invalid(&self) -> Option<String> {
        let names = self.key.iter().map(|k| ("--key", k));
        let names = names.chain(self.semaphore.iter().map(|s| ("--semaphore", s)));
        for (option, name) in names {
            if name.is_empty() {
                return Some(format!("{option} must not be empty"));
            }
            if name.len() > redlease::MAX_NAME_LEN {
                return Some(format!(
                    "{option} {} is too long: at most {} bytes are allowed",
                    quoted(name),
                    redlease::MAX_NAME_LEN
                ));
            }
        }
        // The grammar's smallest unit is 1ms, so below it is only zero.
        match self.lease {
            Some(lease) if lease.is_zero() => {
                Some("--lease must be at least 1ms, but found 0s".to_owned())
            }
            _ => None,
        }
    }
}

/// Names quoted and comma-separated, as a list in a message.
fn listed(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| quoted(n)).collect();
    quoted.join(", ")
}

/// What CMD runs under: a lock, or a semaphore's permit.
enum Held {
    Lock(LockGuard),
    Locks(MultiGuard),
    Permit(PermitGuard),
}

impl Held {
    async fn lost(&self) -> LostReason {
        match self {
            Held::Lock(guard) => guard.lost().await,
            Held::Locks(guard) => guard.lost().await,
            Held::Permit(permit) => permit.lost().await,
        }
    }

    async fn release(self) -> Result<(), Error> {
        match self {
            Held::Lock(guard) => guard.unlock().await,
            Held::Locks(guard) => guard.unlock().await,
            Held::Permit(permit) => permit.release().await,
        }
    }
}

/// Why no lock was acquired: busy, or anything else; both as messages.
enum Failure {
    Busy(String),
    Other(String),
}

async fn acquire(target: &Target, args: &RunArgs) -> Result<Held, Failure> {
    let client = target
        .client(args.watchdog_timeout, args.layout)
        .await
        .map_err(Failure::Other)?;
    let failure = |e: Error| match e.is_busy() {
        true => Failure::Busy(e.to_string()),
        false => Failure::Other(target.scrub(&format!("cannot take {}: {e}", args.what()))),
    };
    if let (Some(name), Some(permits)) = (&args.semaphore, args.permits) {
        let mut semaphore = client.expirable_semaphore(name);
        if let Some(lease) = args.lease {
            semaphore = semaphore.lease(lease);
        }
        semaphore
            .try_set_total(u64::from(permits))
            .await
            .map_err(failure)?;
        let acquired = match args.wait {
            None => semaphore.acquire().await,
            Some(Duration::ZERO) => semaphore.try_acquire().await,
            Some(wait) => semaphore.try_acquire_for(wait).await,
        };
        return acquired.map(Held::Permit).map_err(failure);
    }
    if args.key.len() > 1 {
        let mut locks = client.multi_lock(args.key.iter().cloned());
        if let Some(lease) = args.lease {
            locks = locks.lease(lease);
        }
        let acquired = match args.wait {
            None => locks.lock().await,
            Some(Duration::ZERO) => locks.try_lock().await,
            Some(wait) => locks.try_lock_for(wait).await,
        };
        return acquired.map(Held::Locks).map_err(failure);
    }
    let key = args.key.first().map_or("", String::as_str);
    let mut lock: Lock = match (args.read, args.write) {
        (true, _) => client.read_write_lock(key).read(),
        (_, true) => client.read_write_lock(key).write(),
        _ => client.lock(key),
    };
    if let Some(lease) = args.lease {
        lock = lock.lease(lease);
    }
    let acquired = match args.wait {
        None => lock.lock().await,
        Some(Duration::ZERO) => lock.try_lock().await,
        Some(wait) => lock.try_lock_for(wait).await,
    };
    acquired.map(Held::Lock).map_err(failure)
}

fn spawn(args: &RunArgs, held: &Held) -> io::Result<Child> {
    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    match held {
        Held::Lock(guard) => {
            if let Some(token) = guard.fencing_token() {
                command.env("REDLEASE_FENCING_TOKEN", token.to_string());
            }
            command.env("REDLEASE_KEY", guard.name())
        }
        Held::Locks(guard) => {
            let keys: Vec<&str> = guard.guards().iter().map(LockGuard::name).collect();
            let tokens: Vec<String> = guard
                .guards()
                .iter()
                .filter_map(|g| Some(format!("{}={}", g.name(), g.fencing_token()?)))
                .collect();
            command
                .env("REDLEASE_KEY", keys.join(" "))
                .env("REDLEASE_FENCING_TOKENS", tokens.join(" "))
        }
        Held::Permit(permit) => command
            .env("REDLEASE_PERMIT_ID", permit.id())
            .env("REDLEASE_SEMAPHORE", permit.name()),
    };
    command.spawn()
}

/// How a supervised command ended.
pub(crate) struct Supervised {
    /// Its exit status.
    pub(crate) status: io::Result<ExitStatus>,
    /// The loss, if what it ran under was lost meanwhile.
    pub(crate) lost: Option<LostReason>,
    /// Whether a signal arrived (and was passed on) meanwhile.
    pub(crate) signalled: bool,
}

/// Waits for CMD to exit, passing signals on and, when `lost` resolves,
/// stopping it if `stop` gives a grace (SIGTERM, then SIGKILL after it) or
/// only warning. `what` names what CMD runs under, for the warnings.
pub(crate) async fn supervise(
    child: &mut Child,
    lost: impl std::future::Future<Output = LostReason>,
    caught: &mut Caught,
    what: &str,
    stop: Option<Duration>,
) -> Supervised {
    tokio::pin!(lost);
    let mut loss = None;
    let mut signalled = false;
    let mut kill_at: Option<Instant> = None;
    loop {
        tokio::select! {
            status = child.wait() => {
                return Supervised { status, lost: loss, signalled };
            }
            sig = caught.recv() => {
                signalled = true;
                if !signals::reached_command(sig) {
                    signals::send(child.id(), sig);
                }
            }
            reason = &mut lost, if loss.is_none() => {
                loss = Some(reason);
                if let Some(grace) = stop {
                    warn(&format!(
                        "{what} lost ({reason}); stopping the command (SIGTERM, SIGKILL after {})",
                        duration::human(grace)
                    ));
                    signals::send(child.id(), Signal::SIGTERM);
                    kill_at = Some(Instant::now() + grace);
                } else {
                    warn(&format!(
                        "{what} lost ({reason}); the command keeps running (--on-lost=ignore)"
                    ));
                }
            }
            () = sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                kill_at = None;
                signals::send(child.id(), Signal::SIGKILL);
            }
        }
    }
}

/// Releases the lock (or permit) after CMD. Returns false when it was no
/// longer ours. Any other failure is only a warning, since CMD's status is
/// what the caller wants to see, and the lease frees the lock.
async fn release(target: &Target, held: Held, lost: bool) -> bool {
    let what = match &held {
        Held::Lock(guard) => format!("lock {}", quoted(guard.name())),
        Held::Locks(guard) => {
            let keys: Vec<String> = guard.guards().iter().map(|g| g.name().to_owned()).collect();
            format!("locks [{}]", listed(&keys))
        }
        Held::Permit(permit) => format!(
            "permit {} of semaphore {}",
            permit.id(),
            quoted(permit.name())
        ),
    };
    match held.release().await {
        Ok(()) => true,
        Err(e) if e.is_not_owner() => false,
        Err(e) => {
            if !lost {
                warn(&target.scrub(&format!(
                    "cannot release {what} ({e}); it expires after its lease"
                )));
            }
            true
        }
    }
}

/// CMD's exit code, or 128+N when it died of signal N, as shells report it.
pub(crate) fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(u8::MAX),
        (None, None) => 1,
    }
}
