//! Peer driver: crates.io `rslock` driven as its users would, for the
//! redlease benchmark comparison. One `LockManager` (one multiplexed
//! connection per server) shared by N tokio tasks.
//!
//! Usage: `rslock-peer uncontended <redis-url> <tasks> <seconds>`
//!    or: `rslock-peer handoff <redis-url> <workers> <seconds>`
//!    or: `rslock-peer redlock <redis-url>,<redis-url>,... <tasks> <seconds>`
//!    or: `rslock-peer hold <redis-url> <key> <hold_ms> <wait_ms>`
//! Prints one JSON line on stdout (see scripts/bench-peers for the protocol);
//! `hold`, for redlease's tests of one key shared with a peer, one line per
//! event (see [`hold`]).

use std::process::exit;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rslock::{LockError, LockManager};
use tokio::sync::watch;

/// What the Rust peer drivers share (scripts/bench-peers copies the file
/// beside this project).
#[path = "../../common/driver.rs"]
mod driver;

use driver::{Board, cpu_seconds, event, parse, quantiles_us, unix_ms};

const LEASE: Duration = Duration::from_secs(30);

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
            "usage: {} uncontended|handoff|redlock <redis-url>[,<redis-url>...] <n> <seconds>",
            args[0]
        );
        exit(2);
    }
    let (url, n, seconds) = (&args[2], parse::<usize>(&args[3]), parse::<f64>(&args[4]));
    // RedLock's masters are one argument, comma-separated; the other modes
    // take one server.
    let urls: Vec<&str> = match args[1].as_str() {
        "redlock" => url.split(',').collect(),
        _ => vec![url.as_str()],
    };
    let manager = LockManager::new(urls);
    // Connect outside the timed window: rslock connects on first use. (A GET
    // on every server; rslock reports no connection failure here, the lock
    // calls will.)
    let _ = manager
        .query_redis_for_key_value(b"bench:rslock:warm-up")
        .await;
    let duration = Duration::from_secs_f64(seconds);
    let line = match args[1].as_str() {
        "uncontended" => uncontended(manager, n, duration).await,
        "handoff" => handoff(manager, n, duration).await,
        "redlock" => redlock(manager, n, duration).await,
        other => {
            eprintln!("unknown mode {other}");
            exit(2);
        }
    };
    println!("{line}");
    // Waiters still spinning in `acquire()` would keep the runtime busy on
    // drop; leave at once.
    exit(0);
}

/// Acquires `key` with rslock as its users would, holds it for `hold`,
/// releases it; returns the exit status. Prints, flushed at once,
/// `{"event": "acquired", "value": <hex>, "encoding": "hex", "at_ms": <Unix
/// time>}` once it holds the key (the value rslock stored, 20 random bytes,
/// in hex), or `{"event": "busy"}` and returns 3 if it could not within
/// `wait`; then `{"event": "releasing"}` just before the release and
/// `{"event": "released", "at_ms": ...}` after it.
///
/// rslock has no bounded wait: `lock()` tries 3 times, 0..200 ms apart at
/// random, and `acquire()` calls `lock()` forever. So `lock()` is called
/// again until `wait` has passed (which it may overrun by one `lock()`):
/// not `acquire()` under a timeout, since a `lock()` cancelled after its
/// `SET` would leave the key held for the whole lease.
async fn hold(url: &str, key: &str, hold: Duration, wait: Duration) -> i32 {
    let manager = LockManager::new(vec![url]);
    let deadline = Instant::now() + wait;
    let lock = loop {
        match manager.lock(key.as_bytes(), LEASE).await {
            Ok(lock) => break lock,
            Err(e) if Instant::now() >= deadline => {
                // Busy is an answer here, not a failure.
                if !matches!(e, LockError::Unavailable) {
                    eprintln!("lock: {e}");
                }
                event(r#""event": "busy""#);
                return 3;
            }
            Err(_) => {}
        }
    };
    let value: String = lock.val.iter().map(|b| format!("{b:02x}")).collect();
    event(&format!(
        r#""event": "acquired", "value": "{value}", "encoding": "hex", "at_ms": {}"#,
        unix_ms()
    ));
    tokio::time::sleep(hold).await;
    event(r#""event": "releasing""#);
    lock.release().await;
    event(&format!(r#""event": "released", "at_ms": {}"#, unix_ms()));
    0
}

/// Each task locks and unlocks a key of its own until the time is up.
/// `lock()` is rslock's try-lock (it retries 3 times on a busy key, which
/// never happens here).
async fn uncontended(manager: LockManager, tasks: usize, duration: Duration) -> String {
    let cpu = cpu_seconds();
    let start = Instant::now();
    let deadline = start + duration;
    let pid = std::process::id();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let manager = manager.clone();
            let key = format!("bench:rslock:u:{pid}:{i}");
            tokio::spawn(async move {
                let (mut pairs, mut errors) = (0u64, 0u64);
                while Instant::now() < deadline {
                    match manager.lock(key.as_bytes(), LEASE).await {
                        // `release()` is best effort and reports nothing, so
                        // only failed acquires can be counted as errors.
                        Ok(lock) => {
                            lock.release().await;
                            pairs += 1;
                        }
                        Err(e) => {
                            eprintln!("lock: {e}");
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

/// Like `uncontended`, on the RedLock the manager's servers make, timing
/// each pair: from the call to `lock()` to the return of `release()`, which
/// both wait for every server. Same definitions as the bench's own side
/// (crates/redlease-bench/src/redlock.rs).
async fn redlock(manager: LockManager, tasks: usize, duration: Duration) -> String {
    // The unlock script is loaded on each server by its first release
    // (`EVALSHA`, then `EVAL` on `NOSCRIPT`): a few pairs first, so that
    // no measured pair pays for it.
    for _ in 0..10 {
        if let Ok(lock) = manager.lock(b"bench:rslock:warm-up", LEASE).await {
            lock.release().await;
        }
    }
    let cpu = cpu_seconds();
    let start = Instant::now();
    let deadline = start + duration;
    let pid = std::process::id();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let manager = manager.clone();
            let key = format!("bench:rslock:r:{pid}:{i}");
            tokio::spawn(async move {
                let (mut samples, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let began = Instant::now();
                    match manager.lock(key.as_bytes(), LEASE).await {
                        Ok(lock) => {
                            lock.release().await;
                            samples.push(began.elapsed());
                        }
                        Err(e) => {
                            eprintln!("lock: {e}");
                            errors += 1;
                        }
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    let (mut samples, mut errors) = (Vec::new(), 0);
    for handle in handles {
        let (s, e) = handle.await.expect("task");
        samples.extend(s);
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    format!(
        r#"{{"pairs": {}, "seconds": {elapsed:.6}, "errors": {errors}, "cpu_seconds": {cpu:.3}, "quantiles_us": [{}]}}"#,
        samples.len(),
        quantiles_us(&mut samples).join(", ")
    )
}

/// Same hand-off definition as crates/redlease-bench/src/handoff.rs: one
/// holder, `workers - 1` waiting in `acquire()` at every release, and a
/// holder rejoins only once another worker holds the lock.
async fn handoff(manager: LockManager, workers: usize, duration: Duration) -> String {
    let key = format!("bench:rslock:h:{}", std::process::id());
    let board = Arc::new(Mutex::new(Board::default()));
    let (seq_tx, seq_rx) = watch::channel(0u64);
    let seq_tx = Arc::new(seq_tx);
    let start = Instant::now();
    for me in 0..workers {
        let (manager, key, board, seq_tx, mut seq_rx) = (
            manager.clone(),
            key.clone(),
            board.clone(),
            seq_tx.clone(),
            seq_rx.clone(),
        );
        tokio::spawn(async move {
            loop {
                // `acquire()` loops on `lock()` until it succeeds: each
                // `lock()` tries up to 3 times, 0..200 ms apart at random,
                // then `acquire()` calls it again at once.
                let guard = match manager.acquire(key.as_bytes(), LEASE).await {
                    Ok(guard) => guard,
                    Err(e) => {
                        eprintln!("acquire: {e}");
                        board.lock().expect("board").errors += 1;
                        continue;
                    }
                };
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
                guard.release().await;
                {
                    // On the multi-thread runtime the next holder may have
                    // taken the board before we got here: a hand-off in no
                    // time. Recording this release instead would give the
                    // holder after that a sample spanning a whole tenure.
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
