//! Hand-off latency and Redis commands per hand-off under contention.
//!
//! `waiters + 1` tasks spread over [`CLIENTS`] clients contend for one lock
//! in a loop. Each holder keeps the lock for a moment, unlocks, and rejoins
//! the waiters only once another task has taken the lock, so exactly
//! `waiters` tasks are waiting at every release. The hand-off latency is the
//! time from one holder's `unlock()` returning to the next holder's `lock()`
//! returning, or zero when the next holder got the lock before the release
//! returned (the unlock message can overtake the unlock's reply). Commands
//! per hand-off are the commands redlease sent (`EVALSHA`, `SUBSCRIBE`,
//! `UNSUBSCRIBE`) from `INFO commandstats`, divided by the acquisitions.
//!
//! The same measurement runs on the other exclusive primitives
//! ([`Primitive`]): the write side of a read-write lock, a semaphore with
//! one permit, and an expirable semaphore with one permit.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;
use tokio::sync::watch;

use crate::target::Target;

/// Clients the waiters are spread over, as several processes would be.
pub(crate) const CLIENTS: usize = 4;

/// What the tasks hand around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Primitive {
    /// `client.lock(name)`.
    Lock,
    /// `client.read_write_lock(name).write()`.
    Write,
    /// `client.semaphore(name)` with one permit.
    Semaphore,
    /// `client.expirable_semaphore(name)` with one permit (watchdog-renewed
    /// permits).
    Expirable,
}

impl Primitive {
    fn label(self) -> &'static str {
        match self {
            Primitive::Lock => "lock",
            Primitive::Write => "read-write lock, write side",
            Primitive::Semaphore => "semaphore, 1 permit",
            Primitive::Expirable => "expirable semaphore, 1 permit",
        }
    }
}

/// One task's handle on the primitive.
enum Handle {
    Lock(redlease::Lock),
    Semaphore(redlease::Semaphore),
    Expirable(redlease::ExpirableSemaphore),
}

/// What a task holds between its acquire and its release.
enum Held {
    Guard(redlease::LockGuard),
    Permit(redlease::SemaphorePermit),
    Expirable(redlease::PermitGuard),
}

impl Handle {
    fn new(primitive: Primitive, client: &redlease::Client, name: &str) -> Handle {
        match primitive {
            Primitive::Lock => Handle::Lock(client.lock(name)),
            Primitive::Write => Handle::Lock(client.read_write_lock(name).write()),
            Primitive::Semaphore => Handle::Semaphore(client.semaphore(name)),
            Primitive::Expirable => Handle::Expirable(client.expirable_semaphore(name)),
        }
    }

    /// Gives a semaphore its one permit; nothing for a lock.
    async fn prepare(&self) {
        match self {
            Handle::Lock(_) => {}
            Handle::Semaphore(sem) => sem.set_available(1).await.expect("set permits"),
            Handle::Expirable(sem) => sem.set_total(1).await.expect("set permits"),
        }
    }

    async fn acquire(&self) -> Held {
        match self {
            Handle::Lock(lock) => Held::Guard(lock.lock().await.expect("lock")),
            Handle::Semaphore(sem) => Held::Permit(sem.acquire(1).await.expect("acquire")),
            Handle::Expirable(sem) => Held::Expirable(sem.acquire().await.expect("acquire")),
        }
    }
}

impl Held {
    async fn release(self) {
        use redlease::Guard;
        match self {
            Held::Guard(guard) => guard.release().await,
            Held::Permit(permit) => permit.release().await,
            Held::Expirable(permit) => permit.release().await,
        }
        .expect("release");
    }
}

/// Prints the hand-off tables: `seconds` per row, one row per waiter count,
/// for the lock, then for every primitive.
pub(crate) async fn run(server: &RedisServer, seconds: u64, waiter_counts: &[usize]) {
    println!(
        "## Hand-off latency, `lock()` on one key, waiters over {CLIENTS} clients ({seconds} s per row)\n"
    );
    println!(
        "| waiters | hand-offs | measured from a release | p50 | p99 | max | commands per hand-off |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for &waiters in waiter_counts {
        let r = measure(
            Target::Single(server),
            waiters,
            CLIENTS,
            Duration::from_secs(seconds),
        )
        .await;
        println!(
            "| {waiters} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} |",
            r.acquisitions,
            r.handoffs,
            ms(r.quantile(50)),
            ms(r.quantile(99)),
            ms(r.quantile(100)),
            r.commands_per_handoff
        );
    }
    println!();
    println!(
        "## Hand-off latency by primitive, waiters over {CLIENTS} clients ({seconds} s per row)\n"
    );
    println!("| primitive | waiters | hand-offs | p50 | p99 | max | commands per hand-off |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let primitives = [
        Primitive::Lock,
        Primitive::Write,
        Primitive::Semaphore,
        Primitive::Expirable,
    ];
    for primitive in primitives {
        for &waiters in waiter_counts {
            let r = measure_primitive(
                Target::Single(server),
                primitive,
                waiters,
                CLIENTS,
                Duration::from_secs(seconds),
            )
            .await;
            println!(
                "| {} | {waiters} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} |",
                primitive.label(),
                r.acquisitions,
                ms(r.quantile(50)),
                ms(r.quantile(99)),
                ms(r.quantile(100)),
                r.commands_per_handoff
            );
        }
    }
    println!();
}

/// What one hand-off measurement saw.
pub(crate) struct Handoffs {
    /// Acquisitions in all.
    pub(crate) acquisitions: u64,
    /// Hand-off latencies measured: one per acquisition but the first.
    pub(crate) handoffs: usize,
    /// How long the measurement ran.
    pub(crate) seconds: f64,
    /// The 0th to 100th percentile of the hand-off latency.
    pub(crate) quantiles: Vec<Duration>,
    pub(crate) commands_per_handoff: f64,
}

impl Handoffs {
    /// The `q`th percentile (0 to 100), zero when nothing was measured.
    pub(crate) fn quantile(&self, q: usize) -> Duration {
        self.quantiles.get(q).copied().unwrap_or_default()
    }
}

/// The 0th to 100th percentile of `samples`, the sample at index
/// `(len - 1) * q / 100` of the sorted list; empty when there are none.
pub(crate) fn percentiles(samples: &mut [Duration]) -> Vec<Duration> {
    samples.sort();
    if samples.is_empty() {
        return Vec::new();
    }
    (0..=100)
        .map(|q| samples[(samples.len() - 1) * q / 100])
        .collect()
}

#[derive(Default)]
struct Board {
    /// The task that released last, and when its `unlock()` returned.
    last_release: Option<(usize, Instant)>,
    /// Acquisitions so far.
    acquisitions: u64,
    samples: Vec<Duration>,
}

/// `waiters + 1` tasks over `n_clients` clients hand one lock around for
/// `duration`.
pub(crate) async fn measure(
    target: Target<'_>,
    waiters: usize,
    n_clients: usize,
    duration: Duration,
) -> Handoffs {
    measure_primitive(target, Primitive::Lock, waiters, n_clients, duration).await
}

/// `waiters + 1` tasks over `n_clients` clients hand `primitive` around for
/// `duration`.
pub(crate) async fn measure_primitive(
    target: Target<'_>,
    primitive: Primitive,
    waiters: usize,
    n_clients: usize,
    duration: Duration,
) -> Handoffs {
    let mut clients = Vec::new();
    for _ in 0..n_clients {
        clients.push(
            redlease::Client::connect(&target.url())
                .await
                .expect("connect"),
        );
    }
    let name = format!("bench:handoff:{primitive:?}:{waiters}:{n_clients}");
    let board = Arc::new(Mutex::new(Board::default()));
    let (acquired_tx, acquired_rx) = watch::channel(0u64);
    let acquired_tx = Arc::new(acquired_tx);
    Handle::new(primitive, &clients[0], &name).prepare().await;
    let commands_before = client_commands(target);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..=waiters {
        let handle = Handle::new(primitive, &clients[task % n_clients], &name);
        let (board, acquired_tx, mut acquired_rx) =
            (board.clone(), acquired_tx.clone(), acquired_rx.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let held = handle.acquire().await;
                let seq = {
                    let mut board = board.lock().expect("board");
                    // Both clocks are read under the board's mutex, so a
                    // release recorded before this acquire is also earlier.
                    let now = Instant::now();
                    if let Some((previous, released)) = board.last_release.take()
                        && previous != task
                    {
                        board.samples.push(now - released);
                    }
                    board.acquisitions += 1;
                    // Sent under the board's mutex, so the channel's value
                    // only ever grows.
                    acquired_tx.send_replace(board.acquisitions);
                    board.acquisitions
                };
                // A short critical section.
                tokio::task::yield_now().await;
                held.release().await;
                {
                    let mut board = board.lock().expect("board");
                    if board.acquisitions == seq {
                        board.last_release = Some((task, Instant::now()));
                    } else {
                        // The next holder acquired before our `unlock()`
                        // returned (the unlock message can arrive before
                        // the unlock's reply): a hand-off in no time.
                        // Recording our release instead would make the
                        // next sample span a whole tenure.
                        board.samples.push(Duration::ZERO);
                    }
                }
                // Rejoin only once someone else holds the lock.
                if acquired_rx.wait_for(|n| *n > seq).await.is_err() {
                    return;
                }
            }
        }));
    }
    tokio::time::sleep_until((start + duration).into()).await;
    let (seconds, mut samples, acquisitions) = {
        let mut board = board.lock().expect("board");
        let seconds = start.elapsed().as_secs_f64();
        (
            seconds,
            std::mem::take(&mut board.samples),
            board.acquisitions,
        )
    };
    let commands = client_commands(target) - commands_before;
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    Handoffs {
        acquisitions,
        handoffs: samples.len(),
        seconds,
        quantiles: percentiles(&mut samples),
        commands_per_handoff: commands as f64 / acquisitions.max(1) as f64,
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Commands the masters have run for clients (not those run inside
/// scripts): every command redlease sends is one of these, counted from
/// `INFO commandstats`.
pub(crate) fn client_commands(target: Target<'_>) -> u64 {
    const SENT: [&str; 7] = [
        "evalsha",
        "eval",
        "script|load",
        "subscribe",
        "unsubscribe",
        "ssubscribe",
        "sunsubscribe",
    ];
    let calls = target.masters().command_calls();
    SENT.iter().filter_map(|name| calls.get(*name)).sum()
}
