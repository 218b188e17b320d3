//! The watchdog at scale: one client holds many watchdog-mode locks at once
//! for a while; what does that cost the client and Redis, and does it lose
//! any?
//!
//! Each lock count runs in a fresh process (this program re-run as
//! `scale-worker`), so that the memory one count's locks leave behind in
//! the allocator does not hide the next count's. The worker connects one
//! client with the default watchdog (30 s lease, renewed every 10 s),
//! acquires the locks with 256 `try_lock` calls in flight, holds them for
//! the given time, then checks every guard and every key, and unlocks them
//! all with 256 `unlock` calls in flight.
//!
//! * **Client CPU**: user plus system time of the worker over the hold, from
//!   `/proc/self/stat`.
//! * **Client memory per lock**: `VmRSS` once the locks are held minus
//!   `VmRSS` after connecting and a warm-up lock, divided by the locks (an
//!   upper bound: it includes memory the allocator kept from the acquire's
//!   transient buffers), and again at the end of the hold, after renewal
//!   rounds. The handles are made before the acquires; a second run at one
//!   count makes each just before its acquire, which the allocator
//!   rewards less ([`Handles`]).
//! * **Renewal calls**: `EVALSHA` calls in `INFO commandstats`, sampled
//!   every 100 ms over the hold; nothing else talks to the server then, so
//!   every one is a renewal. Bursts of calls are renewal rounds.
//! * **Lost**: guards for which `is_lost()` is true or `lost()` has
//!   resolved (a loss is recorded in the guard, so this covers the whole
//!   hold), and keys whose owner field is gone or which have no expiry.

use std::future::Future;
use std::pin::pin;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use redlease_testkit::key_slot;

use crate::probe;
use crate::roundtrips::{Handles, acquire_all, release_all};
use crate::target::{Masters, Target};

/// How often the worker samples the server's `EVALSHA` count.
const SAMPLE: Duration = Duration::from_millis(100);

/// Prints the watchdog-at-scale tables: `seconds` of holding per count.
pub(crate) fn run(target: Target<'_>, seconds: u64, counts: &[usize]) {
    let reports: Vec<(usize, Report)> = counts
        .iter()
        .map(|&n| (n, worker_run(target, seconds, n, &[])))
        .collect();
    // The same acquires with each handle made just before its acquire, at
    // one count (the largest up to 100,000): what the allocator keeps
    // besides the client then.
    let interleaved = counts
        .iter()
        .copied()
        .filter(|&n| n <= 100_000)
        .max()
        .map(|n| (n, worker_run(target, 1, n, &["--interleaved"])));

    let on = match target {
        Target::Single(_) => String::new(),
        Target::Cluster(_) => format!(" on a cluster of {}", target.label()),
    };
    println!(
        "## Watchdog at scale{on}: locks held by one client, default watchdog (30 s lease, renewed every 10 s), {seconds} s hold\n"
    );
    println!(
        "| locks | acquire (256 in flight) | client RSS per lock, held | at end of hold | client CPU over hold (user+sys) | share of one core | Redis memory per lock | release (256 in flight) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, r) in &reports {
        let per = |bytes: f64| bytes / *n as f64;
        println!(
            "| {n} | {:.2} s ({:.0}/s) | {:.0} B | {:.0} B | {:.2} s | {:.2}% | {:.0} B | {:.2} s ({:.0}/s) |",
            r.acquire_s,
            *n as f64 / r.acquire_s,
            per(r.rss_held - r.rss_base),
            per(r.rss_end - r.rss_base),
            r.cpu_hold_s,
            100.0 * r.cpu_hold_s / r.hold_s,
            per(r.redis_held - r.redis_base),
            r.release_s,
            *n as f64 / r.release_s,
        );
    }
    println!();
    let mut note = "Client RSS per lock counts everything the process grew by while acquiring: the client's hold (guard, registration, loss signal, owner field, watchdog entry) and the lock's handle and name, made before the acquires.".to_owned();
    if let Some((n, r)) = interleaved {
        note += &format!(
            " With each handle made just before its acquire's task is spawned (`scale-worker --interleaved`), {n} locks grew the process by {:.0} B per lock: the names the guards keep land between the tasks' memory, and glibc's allocator cannot reuse the holes the finished tasks leave for the next ones.",
            (r.rss_held - r.rss_base) / n as f64
        );
    }
    println!("{note}");
    println!();
    println!(
        "| locks | hash slots in use | whole renewal rounds in hold | `EVALSHA` per round (min .. max) | expected: ceil(locks/100) per master, summed | `EVALSHA`/s | locks per `EVALSHA` | longest round (±{} ms) | guards lost (`is_lost` / `lost()`) | keys without owner or expiry | PTTL at end (min .. max) |",
        SAMPLE.as_millis()
    );
    println!("|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---|");
    for (n, r) in &reports {
        println!(
            "| {n} | {} | {:.0} | {:.0} .. {:.0} | {:.0} | {:.1} | {:.0} | {:.1} s | {:.0} / {:.0} | {:.0} | {:.1} s .. {:.1} s |",
            if matches!(target, Target::Single(_)) {
                "1 (no cluster)".to_owned()
            } else {
                format!("{:.0}", r.slots)
            },
            r.rounds,
            r.round_min,
            r.round_max,
            r.expected_calls,
            r.evalsha / r.hold_s,
            if r.round_calls > 0.0 {
                *n as f64 * r.rounds / r.round_calls
            } else {
                0.0
            },
            r.round_longest_s,
            r.lost_flag,
            r.lost_signal,
            r.keys_bad,
            r.pttl_min_ms / 1e3,
            r.pttl_max_ms / 1e3,
        );
    }
    println!();
}

/// Runs `scale-worker` for `n` locks with `extra` arguments.
fn worker_run(target: Target<'_>, seconds: u64, n: usize, extra: &[&str]) -> Report {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(&exe)
        .args([
            "scale-worker",
            &target.url(),
            &seconds.to_string(),
            &n.to_string(),
        ])
        .args(target.master_urls())
        .args(extra)
        .stdout(Stdio::piped())
        .output()
        .expect("start scale worker");
    assert!(out.status.success(), "scale worker for {n} locks failed");
    Report::parse(&String::from_utf8_lossy(&out.stdout))
}

/// What a worker measured, printed as `name=value` words.
#[derive(Default)]
struct Report {
    acquire_s: f64,
    hold_s: f64,
    release_s: f64,
    rss_base: f64,
    rss_held: f64,
    rss_end: f64,
    cpu_hold_s: f64,
    redis_base: f64,
    redis_held: f64,
    evalsha: f64,
    /// Complete rounds: a burst cut by the start or the end of the hold is
    /// left out of these, and of `round_*`.
    rounds: f64,
    /// `EVALSHA` calls in the complete rounds.
    round_calls: f64,
    round_min: f64,
    round_max: f64,
    round_longest_s: f64,
    lost_flag: f64,
    lost_signal: f64,
    keys_bad: f64,
    pttl_min_ms: f64,
    pttl_max_ms: f64,
    /// Distinct hash slots of the lock names.
    slots: f64,
    /// Renewal calls a round needs: ceil(locks / 100) per master, summed.
    expected_calls: f64,
}

impl Report {
    fn fields(&mut self) -> [(&'static str, &mut f64); 22] {
        [
            ("acquire_s", &mut self.acquire_s),
            ("hold_s", &mut self.hold_s),
            ("release_s", &mut self.release_s),
            ("rss_base", &mut self.rss_base),
            ("rss_held", &mut self.rss_held),
            ("rss_end", &mut self.rss_end),
            ("cpu_hold_s", &mut self.cpu_hold_s),
            ("redis_base", &mut self.redis_base),
            ("redis_held", &mut self.redis_held),
            ("evalsha", &mut self.evalsha),
            ("rounds", &mut self.rounds),
            ("round_calls", &mut self.round_calls),
            ("round_min", &mut self.round_min),
            ("round_max", &mut self.round_max),
            ("round_longest_s", &mut self.round_longest_s),
            ("lost_flag", &mut self.lost_flag),
            ("lost_signal", &mut self.lost_signal),
            ("keys_bad", &mut self.keys_bad),
            ("pttl_min_ms", &mut self.pttl_min_ms),
            ("pttl_max_ms", &mut self.pttl_max_ms),
            ("slots", &mut self.slots),
            ("expected_calls", &mut self.expected_calls),
        ]
    }

    fn print(mut self) {
        let words: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(name, v)| format!("{name}={v}"))
            .collect();
        println!("{}", words.join(" "));
    }

    fn parse(text: &str) -> Report {
        let mut report = Report::default();
        for word in text.split_whitespace() {
            let (name, value) = word.split_once('=').expect("name=value");
            let value: f64 = value.parse().expect("number");
            for (field, slot) in report.fields() {
                if field == name {
                    *slot = value;
                }
            }
        }
        report
    }
}

/// The worker process: `scale-worker URL SECONDS LOCKS [MASTER...]
/// [--watchdog-ms MS]`, where the masters are `redis://` URLs of the
/// servers to read statistics from (URL itself when none are given).
pub(crate) async fn worker(
    url: &str,
    seconds: u64,
    n: usize,
    masters: &[String],
    watchdog: Duration,
    handles: Handles,
) {
    let hold = Duration::from_secs(seconds);
    let master_urls = if masters.is_empty() {
        vec![url.to_owned()]
    } else {
        masters.to_vec()
    };
    let mut stats = Masters::connect(&master_urls);
    // The first renewal must meet no NOSCRIPT.
    for url in &master_urls {
        let mut conn = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .expect("connect");
        probe::load_scripts(&mut conn);
    }
    let client = redlease::Client::builder(url)
        .watchdog_timeout(watchdog)
        .build()
        .await
        .expect("connect");
    probe::warm_up(&client, "bench:scale:warmup").await;
    probe::cpu_time(); // asks getconf once, before anything is measured
    let mut r = Report::default();

    tokio::time::sleep(Duration::from_millis(200)).await;
    r.rss_base = probe::memory("VmRSS") as f64;
    r.redis_base = stats.info_field("memory", "used_memory");
    let started = Instant::now();
    let guards = acquire_all(&client, &format!("bench:scale:{n}"), n, handles).await;
    r.acquire_s = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(200)).await;
    r.rss_held = probe::memory("VmRSS") as f64;
    r.redis_held = stats.info_field("memory", "used_memory");
    let mut per_slot = std::collections::HashMap::<u16, usize>::new();
    for guard in &guards {
        *per_slot.entry(key_slot(guard.name())).or_default() += 1;
    }
    r.slots = per_slot.len() as f64;
    r.expected_calls = stats
        .per_master(guards.iter().map(|g| g.name()))
        .iter()
        .map(|n| n.div_ceil(100))
        .sum::<usize>() as f64;

    // The hold: nothing runs but the watchdog and the sampler.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        let mut conn = Masters::connect(&master_urls);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let calls = conn.command_calls();
                samples.push((Instant::now(), calls.get("evalsha").copied().unwrap_or(0)));
                std::thread::sleep(SAMPLE);
            }
            samples
        })
    };
    let cpu_before = probe::cpu_time();
    let started = Instant::now();
    tokio::time::sleep(hold).await;
    let cpu_after = probe::cpu_time();
    r.hold_s = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().expect("sampler");
    r.cpu_hold_s = (cpu_after - cpu_before).as_secs_f64();
    r.rss_end = probe::memory("VmRSS") as f64;

    // Renewal rounds: bursts of EVALSHA calls with quiet between them. A
    // burst seen in the first interval may have begun before the hold, and
    // one still going at the last sample is cut by its end: neither is a
    // whole round.
    let mut bursts: Vec<(u64, Duration)> = Vec::new();
    let mut current: Option<(u64, Instant, Instant, bool)> = None;
    for (i, pair) in samples.windows(2).enumerate() {
        let ((t0, c0), (t1, c1)) = (pair[0], pair[1]);
        if c1 > c0 {
            current = Some(match current {
                Some((calls, first, _, whole)) => (calls + c1 - c0, first, t1, whole),
                None => (c1 - c0, t0, t1, i > 0),
            });
        } else if let Some((calls, first, last, whole)) = current.take()
            && whole
        {
            bursts.push((calls, last - first));
        }
    }
    r.evalsha = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => (b.1 - a.1) as f64,
        _ => 0.0,
    };
    r.rounds = bursts.len() as f64;
    r.round_calls = bursts.iter().map(|b| b.0).sum::<u64>() as f64;
    r.round_min = bursts.iter().map(|b| b.0).min().unwrap_or(0) as f64;
    r.round_max = bursts.iter().map(|b| b.0).max().unwrap_or(0) as f64;
    r.round_longest_s = bursts
        .iter()
        .map(|b| b.1)
        .max()
        .unwrap_or_default()
        .as_secs_f64();

    // Every guard and every key.
    r.lost_flag = guards.iter().filter(|g| g.is_lost()).count() as f64;
    // `lost()` resolves at its first poll if a loss was ever recorded; one
    // poll each, with no timer (a zero timeout waits for a timer tick).
    let mut cx = Context::from_waker(Waker::noop());
    r.lost_signal = guards
        .iter()
        .filter(|g| pin!(g.lost()).poll(&mut cx).is_ready())
        .count() as f64;
    let (mut bad, mut min, mut max) = (0u64, i64::MAX, i64::MIN);
    let names: Vec<&str> = guards.iter().map(|g| g.name()).collect();
    let replies = stats.per_key(&names, 2, |pipe, i| {
        pipe.cmd("HEXISTS").arg(names[i]).arg(guards[i].owner());
        pipe.cmd("PTTL").arg(names[i]);
    });
    for pair in replies.chunks(2) {
        if pair[0] != 1 || pair[1] < 0 {
            bad += 1;
        } else {
            min = min.min(pair[1]);
            max = max.max(pair[1]);
        }
    }
    r.keys_bad = bad as f64;
    r.pttl_min_ms = if min == i64::MAX { 0.0 } else { min as f64 };
    r.pttl_max_ms = if max == i64::MIN { 0.0 } else { max as f64 };

    let names: Vec<String> = guards.iter().map(|g| g.name().to_owned()).collect();
    let started = Instant::now();
    release_all(guards).await;
    r.release_s = started.elapsed().as_secs_f64();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let left: i64 = stats
        .per_key(&names, 1, |pipe, i| {
            pipe.cmd("EXISTS").arg(names[i]);
        })
        .iter()
        .sum();
    assert_eq!(left, 0, "{left} lock keys left after unlocking");
    r.print();
}
