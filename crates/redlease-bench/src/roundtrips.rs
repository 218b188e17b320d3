//! Commands redlease sends per operation, counted by the server.
//!
//! One dedicated client, one dedicated `INFO` connection (made before the
//! first count, so its own set-up is not counted), and nothing else talking
//! to the server. Each operation's count is the `INFO commandstats` delta
//! around just that operation (repeated, then divided), leaving out the
//! `INFO` calls that take the counts. The commands a client can send
//! (`EVALSHA`, `SUBSCRIBE`, ...) are told apart from those the scripts run
//! inside Redis (`HEXISTS`, `PEXPIRE`, ...), which cost no round trip.

use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;
use tokio::task::JoinSet;

use crate::probe::{self, Calls};

/// Repetitions of each lock operation.
const REPS: u64 = 100;

/// The watchdog timeout of the renewal measurement: a round every second.
const RENEW_TIMEOUT: Duration = Duration::from_secs(3);

/// Renewal rounds counted per lock count.
const ROUNDS: usize = 3;

/// Prints the round-trip table.
pub(crate) async fn run(server: &RedisServer, renew_counts: &[usize]) {
    let mut stats = server.connection();
    // No measured call may meet NOSCRIPT.
    probe::load_scripts(&mut stats);
    let mut client = None;
    let connect = count(&mut stats, async {
        client = Some(
            redlease::Client::connect(&server.url())
                .await
                .expect("connect"),
        );
    })
    .await;
    let client = client.expect("connected");
    probe::warm_up(&client, "bench:rt:warmup").await;

    println!(
        "## Round trips: commands sent per operation, from `INFO commandstats` ({REPS} repetitions per row)\n"
    );
    println!(
        "| operation | commands sent per operation | sent, by command | run inside scripts (no round trip) | target |"
    );
    println!("|---|---:|---|---|---|");
    row(
        "`Client::connect` (once per client, not counted below)",
        &connect,
        1,
        "",
    );

    for (mode, lease) in [
        ("watchdog", None),
        ("fixed lease", Some(Duration::from_secs(30))),
    ] {
        let calls = count(&mut stats, async {
            for i in 0..REPS {
                let mut lock = client.lock(format!("bench:rt:pair:{mode}:{i}"));
                if let Some(lease) = lease {
                    lock = lock.lease(lease);
                }
                let guard = lock.try_lock().await.expect("uncontended lock");
                guard.unlock().await.expect("unlock");
            }
        })
        .await;
        row(&format!("`try_lock` + `unlock`, {mode}"), &calls, REPS, "2");
    }

    // Re-entry: one hold in a scope, re-entered REPS times, then the
    // re-entered guards released, each phase counted on its own.
    let (enter, leave) = redlease::scope(async {
        let lock = client.lock("bench:rt:reentrant");
        let outer = lock.try_lock().await.expect("outer lock");
        let mut inner = Vec::new();
        let enter = count(&mut stats, async {
            for _ in 0..REPS {
                inner.push(lock.try_lock().await.expect("re-entry"));
            }
        })
        .await;
        let leave = count(&mut stats, async {
            for guard in inner.drain(..).rev() {
                guard.unlock().await.expect("inner unlock");
            }
        })
        .await;
        outer.unlock().await.expect("outer unlock");
        (enter, leave)
    })
    .await;
    row(
        "re-entrant `try_lock` inside a held `redlease::scope`",
        &enter,
        REPS,
        "0 (issue #7); 1 by design (DESIGN.md)",
    );
    row("`unlock` of a re-entered guard", &leave, REPS, "(none set)");

    let renewer = redlease::Client::builder(&server.url())
        .watchdog_timeout(RENEW_TIMEOUT)
        .build()
        .await
        .expect("connect");
    for &n in renew_counts {
        let guards = acquire_all(&renewer, &format!("bench:rt:renew:{n}"), n, Handles::First).await;
        let mut rounds = Vec::new();
        let mut start = settle(&mut stats).await;
        for _ in 0..ROUNDS {
            let end = next_round(&mut stats, &start).await;
            rounds.push(probe::delta(&start, &end));
            start = end;
        }
        let mut calls = Calls::new();
        for round in &rounds {
            for (name, n) in round {
                *calls.entry(name.clone()).or_default() += n;
            }
        }
        let per_round: Vec<u64> = rounds
            .iter()
            .map(|r| probe::total(&probe::split(r).0))
            .collect();
        let consistent = per_round.iter().all(|&c| c == per_round[0]);
        row(
            &format!(
                "renewal of {n} lock{} (per round{})",
                if n == 1 { "" } else { "s" },
                if consistent { "" } else { ", rounds differ" }
            ),
            &calls,
            ROUNDS as u64,
            &format!("{} = ceil(N/100)", n.div_ceil(100)),
        );
        release_all(guards).await;
    }
    println!();
}

/// Prints one table row for `calls` made over `per` operations.
fn row(what: &str, calls: &Calls, per: u64, target: &str) {
    let (sent, scripted) = probe::split(calls);
    println!(
        "| {what} | {} | {} | {} | {target} |",
        probe::fmt_ratio(probe::total(&sent), per),
        probe::breakdown(&sent, per),
        probe::breakdown(&scripted, per),
    );
}

/// The commands the server ran while `op` ran.
async fn count(stats: &mut redis::Connection, op: impl std::future::Future<Output = ()>) -> Calls {
    let before = probe::command_calls(stats);
    op.await;
    let after = probe::command_calls(stats);
    probe::delta(&before, &after)
}

/// How long without a new renewal call ends a round (rounds are a second
/// apart and take milliseconds).
const QUIET: Duration = Duration::from_millis(200);

/// Waits until no renewal has run for [`QUIET`]; returns the counts then.
async fn settle(stats: &mut redis::Connection) -> Calls {
    let mut last = probe::command_calls(stats);
    let mut since = Instant::now();
    while since.elapsed() < QUIET {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = probe::command_calls(stats);
        if evalsha(&now) != evalsha(&last) {
            since = Instant::now();
        }
        last = now;
    }
    last
}

/// Waits for the next renewal round to start and end; returns the counts
/// after it.
async fn next_round(stats: &mut redis::Connection, start: &Calls) -> Calls {
    let deadline = Instant::now() + RENEW_TIMEOUT * 2;
    while evalsha(&probe::command_calls(stats)) == evalsha(start) {
        assert!(Instant::now() < deadline, "no renewal round came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    settle(stats).await
}

fn evalsha(calls: &Calls) -> u64 {
    calls.get("evalsha").copied().unwrap_or(0)
}

/// When [`acquire_all`] makes its lock handles.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handles {
    /// All before the first acquire, so that what the client keeps per
    /// held lock is measured alone (#28).
    First,
    /// Each just before its acquire's task is spawned, as a service making
    /// one per request does. With glibc's allocator each handle's name
    /// (which its guard keeps) lands between the spawned tasks' memory, and
    /// the holes the finished tasks leave are too small for the next ones:
    /// the process grows by more than the client keeps (#28 measured
    /// 2.4 KiB per held lock this way, against 0.6 KiB with handles first).
    AsNeeded,
}

/// Acquires `n` locks named `<prefix>:<i>`, up to 256 at a time.
pub(crate) async fn acquire_all(
    client: &redlease::Client,
    prefix: &str,
    n: usize,
    handles: Handles,
) -> Vec<redlease::LockGuard> {
    const IN_FLIGHT: usize = 256;
    let name = |i: usize| format!("{prefix}:{i}");
    let mut made = match handles {
        Handles::First => (0..n).map(|i| client.lock(name(i))).collect(),
        Handles::AsNeeded => Vec::new(),
    }
    .into_iter();
    let mut guards = Vec::with_capacity(n);
    let mut set = JoinSet::new();
    for i in 0..n {
        if set.len() >= IN_FLIGHT {
            guards.push(set.join_next().await.expect("task").expect("join"));
        }
        let lock = made.next().unwrap_or_else(|| client.lock(name(i)));
        set.spawn(async move { lock.try_lock().await.expect("uncontended lock") });
    }
    while let Some(guard) = set.join_next().await {
        guards.push(guard.expect("join"));
    }
    guards
}

/// Unlocks every guard, up to 256 at a time.
pub(crate) async fn release_all(guards: Vec<redlease::LockGuard>) {
    const IN_FLIGHT: usize = 256;
    let mut set = JoinSet::new();
    for guard in guards {
        if set.len() >= IN_FLIGHT {
            set.join_next().await.expect("task").expect("join");
        }
        set.spawn(async move { guard.unlock().await.expect("unlock") });
    }
    while let Some(done) = set.join_next().await {
        done.expect("join");
    }
}
