//! Peer driver: crates.io `redisson` (a Rust library, not Java's Redisson)
//! driven as its users would, for the redlease benchmark. One
//! `AsyncRedissonClient` with its defaults (a 30 s lease) but for its pool,
//! a connection per task (at least its default 10; see [`connect`]), shared
//! by N tokio tasks, each with an `AsyncRLock` of its own.
//!
//! Usage: `redisson-rs-peer uncontended <redis-url> <tasks> <seconds>`
//!    or: `redisson-rs-peer handoff <redis-url> <workers> <seconds>`
//!    or: `redisson-rs-peer hold <redis-url> <key> <hold_ms> <wait_ms>`
//! Prints one JSON line on stdout (see scripts/bench-peers for the protocol);
//! `hold`, for tests of one key shared with another lock, one line per event
//! (see [`hold`]).
//!
//! What the crate writes (its `LOCK_SCRIPT` and `UNLOCK_SCRIPT`): a hash
//! under the lock's name as given (no prefix), field a fresh UUID v4 per
//! acquire (no `:thread-id`), value the hold count, `PEXPIRE` the lease; the
//! acquire takes the key only when it does not exist, the release deletes
//! the key when the count reaches 0 and publishes nothing. Every connection
//! taken from its pool is checked with a `PING` first.

use std::process::exit;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redisson::{AsyncRedissonClient, RedissonConfig};
use tokio::sync::watch;

/// What the Rust peer drivers share (scripts/bench-peers copies the file
/// beside this project).
#[path = "../../common/driver.rs"]
mod driver;

use driver::{Board, cpu_seconds, event, parse, quantiles_us, unix_ms};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 6 && args[1] == "hold" {
        let (hold_ms, wait_ms) = (parse::<u64>(&args[4]), parse::<u64>(&args[5]));
        let status = hold(
            &args[2],
            &args[3],
            Duration::from_millis(hold_ms),
            Duration::from_millis(wait_ms),
        )
        .await;
        exit(status);
    }
    if args.len() != 5 {
        eprintln!(
            "usage: {} uncontended|handoff <redis-url> <n> <seconds>",
            args[0]
        );
        exit(2);
    }
    let (url, n, seconds) = (&args[2], parse::<usize>(&args[3]), parse::<f64>(&args[4]));
    // A pool of a connection per task, at least the default 10: with more
    // tasks than connections the crate stalls (see `connect`).
    let client = connect(url, n.max(DEFAULT_POOL)).await;
    let duration = Duration::from_secs_f64(seconds);
    let line = match args[1].as_str() {
        "uncontended" => uncontended(client, n, duration).await,
        "handoff" => handoff(client, n, duration).await,
        other => {
            eprintln!("unknown mode {other}");
            exit(2);
        }
    };
    println!("{line}");
    // Waiters still sleeping in `lock()` would keep the runtime busy on
    // drop; leave at once.
    exit(0);
}

/// The crate's default pool size (`RedissonConfig::pool_size`).
const DEFAULT_POOL: usize = 10;

/// A client with the crate's defaults but for a pool of `pool` connections.
///
/// With more tasks than connections the crate stalls: a task that finds
/// its thread's entry in the client's connection cache waits for a pool
/// slot while holding the cache's mutex, and the tasks that hold the slots
/// need that mutex before they return them. Each wait ends after the pool's
/// 3 s timeout with an error, and 5 errors open the client's circuit
/// breaker for 30 s, failing every call. Hence a slot per task.
async fn connect(url: &str, pool: usize) -> AsyncRedissonClient {
    let config = RedissonConfig::single_server(url).with_pool_size(pool as u32);
    match AsyncRedissonClient::new(config).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("connect: {e}");
            exit(1);
        }
    }
}

/// Each task takes and releases a key of its own with `try_lock()` and
/// `unlock()` until the time is up. Before the clock starts every task does
/// one pair, so that the pool's connections are open and the scripts loaded
/// (`EVALSHA`, then `EVAL` on `NOSCRIPT`) outside the timed window.
async fn uncontended(client: AsyncRedissonClient, tasks: usize, duration: Duration) -> String {
    let pid = std::process::id();
    let locks: Vec<_> = (0..tasks)
        .map(|i| client.get_lock(&format!("bench:redisson-rs:u:{pid}:{i}")))
        .collect();
    let warm_ups: Vec<_> = (locks.iter().cloned())
        .map(|lock| {
            tokio::spawn(async move {
                if matches!(lock.try_lock().await, Ok(true)) {
                    let _ = lock.unlock().await;
                }
            })
        })
        .collect();
    for warm_up in warm_ups {
        warm_up.await.expect("warm-up task");
    }
    let cpu = cpu_seconds();
    let start = Instant::now();
    let deadline = start + duration;
    let handles: Vec<_> = locks
        .into_iter()
        .map(|lock| {
            tokio::spawn(async move {
                let (mut pairs, mut errors) = (0u64, 0u64);
                while Instant::now() < deadline {
                    match lock.try_lock().await {
                        // `unlock()` answers false for a full release too
                        // (its script returns 0 then, and the crate tests
                        // for more than 0), so any answer is a release.
                        Ok(true) => match lock.unlock().await {
                            Ok(_) => pairs += 1,
                            Err(e) => {
                                eprintln!("unlock: {e}");
                                errors += 1;
                            }
                        },
                        Ok(false) => {
                            eprintln!("try_lock: busy");
                            errors += 1;
                        }
                        Err(e) => {
                            eprintln!("try_lock: {e}");
                            errors += 1;
                        }
                    }
                }
                (pairs, errors)
            })
        })
        .collect();
    let (mut pairs, mut errors) = (0, 0);
    for handle in handles {
        let (p, e) = handle.await.expect("task");
        pairs += p;
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    format!(
        r#"{{"pairs": {pairs}, "seconds": {elapsed:.6}, "errors": {errors}, "cpu_seconds": {cpu:.3}}}"#
    )
}

/// Acquires `key` with the crate's `try_lock_with_timeout(wait)` (which
/// tries, then sleeps 100 ms between tries until `wait` has passed), holds
/// it for `hold`, releases it with `unlock()`; returns the exit status.
/// Prints, flushed at once, `{"event": "acquired", "value": <field>,
/// "at_ms": <Unix time>}` once it holds the key (the hash field the crate
/// wrote, a UUID, read back with `HKEYS`: the crate does not expose it), or
/// `{"event": "busy"}` and returns 3 if it could not within `wait`; then
/// `{"event": "releasing"}` just before the release and `{"event":
/// "released", "at_ms": ...}` after it.
async fn hold(url: &str, key: &str, hold: Duration, wait: Duration) -> i32 {
    let client = connect(url, DEFAULT_POOL).await;
    let lock = client.get_lock(key);
    match lock.try_lock_with_timeout(wait).await {
        Ok(true) => {}
        Ok(false) => {
            event(r#""event": "busy""#);
            return 3;
        }
        Err(e) => {
            eprintln!("try_lock: {e}");
            return 1;
        }
    }
    let at_ms = unix_ms();
    let fields: Vec<String> = match read_fields(url, key).await {
        Ok(fields) => fields,
        Err(e) => {
            eprintln!("HKEYS {key}: {e}");
            return 1;
        }
    };
    event(&format!(
        r#""event": "acquired", "value": "{}", "at_ms": {at_ms}"#,
        fields.join(",")
    ));
    tokio::time::sleep(hold).await;
    event(r#""event": "releasing""#);
    // False is the answer to a full release too (see `uncontended`).
    match lock.unlock().await {
        Ok(_) => {}
        Err(e) => {
            eprintln!("unlock: {e}");
            return 1;
        }
    }
    event(&format!(r#""event": "released", "at_ms": {}"#, unix_ms()));
    0
}

/// The fields of the hash at `key`, on a connection of its own.
async fn read_fields(url: &str, key: &str) -> redis::RedisResult<Vec<String>> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    redis::cmd("HKEYS").arg(key).query_async(&mut conn).await
}

/// Same hand-off definition as crates/redlease-bench/src/handoff.rs: one
/// holder, `workers - 1` waiting in `lock()` at every release, and a holder
/// rejoins only once another worker holds the lock. The crate's `lock()`
/// tries, then sleeps 100 ms between tries (it does not subscribe to
/// anything), so a hand-off waits for a waiter's next try.
async fn handoff(client: AsyncRedissonClient, workers: usize, duration: Duration) -> String {
    let key = format!("bench:redisson-rs:h:{}", std::process::id());
    let board = Arc::new(Mutex::new(Board::default()));
    let (seq_tx, seq_rx) = watch::channel(0u64);
    let seq_tx = Arc::new(seq_tx);
    let start = Instant::now();
    for me in 0..workers {
        // A lock object per worker: clones share their owner state.
        let lock = client.get_lock(&key);
        let (board, seq_tx, mut seq_rx) = (board.clone(), seq_tx.clone(), seq_rx.clone());
        tokio::spawn(async move {
            loop {
                if let Err(e) = lock.lock().await {
                    eprintln!("lock: {e}");
                    board.lock().expect("board").errors += 1;
                    continue;
                }
                let my_seq = {
                    let mut board = board.lock().expect("board");
                    // Both clocks are read under the board's mutex, so a
                    // release recorded before this acquisition is earlier.
                    let now = Instant::now();
                    if let Some((previous, released)) = board.last_release.take()
                        && previous != me
                    {
                        board.samples.push(now - released);
                    }
                    board.seq += 1;
                    seq_tx.send_replace(board.seq);
                    board.seq
                };
                // A short critical section.
                tokio::task::yield_now().await;
                if let Err(e) = lock.unlock().await {
                    eprintln!("unlock: {e}");
                    board.lock().expect("board").errors += 1;
                }
                {
                    // As in the rslock driver: the next holder may have
                    // taken the board before we got here, a hand-off in no
                    // time.
                    let mut board = board.lock().expect("board");
                    if board.seq == my_seq {
                        board.last_release = Some((me, Instant::now()));
                    } else {
                        board.samples.push(Duration::ZERO);
                    }
                }
                // Rejoin only once someone else holds the lock.
                if seq_rx.wait_for(|n| *n > my_seq).await.is_err() {
                    return;
                }
            }
        });
    }
    tokio::time::sleep(duration).await;
    let elapsed = start.elapsed().as_secs_f64();
    let (acquisitions, mut samples, errors) = {
        let mut board = board.lock().expect("board");
        (board.seq, std::mem::take(&mut board.samples), board.errors)
    };
    let quantiles = quantiles_us(&mut samples);
    format!(
        r#"{{"acquisitions": {acquisitions}, "handoffs": {}, "seconds": {elapsed:.6}, "errors": {errors}, "quantiles_us": [{}]}}"#,
        samples.len(),
        quantiles.join(", ")
    )
}
