//! The watchdog at scale: one client holds many watchdog-mode locks at once
//! for a while, and then as many renewed expirable-semaphore permits (1,000
//! per semaphore, `scale-worker --permits`), which the same watchdog renews
//! (#38); what does that cost the client and Redis, and does it lose any?
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
    // Locks and permits at each count, side by side: the watchdog renews
    // both (#38).
    let reports: Vec<(usize, What, Report)> = counts
        .iter()
        .flat_map(|&n| [(n, What::Locks), (n, What::Permits)])
        .map(|(n, what)| {
            let extra: &[&str] = match what {
                What::Locks => &[],
                What::Permits => &["--permits"],
            };
            (n, what, worker_run(target, seconds, n, extra))
        })
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
        "## Watchdog at scale{on}: locks or expirable-semaphore permits held by one client, default watchdog (30 s lease, renewed every 10 s), {seconds} s hold\n"
    );
    println!(
        "| held | acquire (256 in flight) | client RSS per one held | at end of hold | client CPU over hold (user+sys) | share of one core | Redis memory per one held | release (256 in flight) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, what, r) in &reports {
        let per = |bytes: f64| bytes / *n as f64;
        println!(
            "| {n} {} | {:.2} s ({:.0}/s) | {:.0} B | {:.0} B | {:.2} s | {:.2}% | {:.0} B | {:.2} s ({:.0}/s) |",
            what.noun(),
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
    let mut note = format!(
        "Client RSS per one held counts everything the process grew by while acquiring: for a lock, the client's hold (guard, registration, loss signal, owner field, watchdog entry) and the lock's handle and name, made before the acquires; for a permit, its guard and watchdog entry ({PERMITS_PER_SEMAPHORE} permits per semaphore). Redis memory per permit is the zset member with its score."
    );
    if let Some((n, r)) = interleaved {
        note += &format!(
            " With each handle made just before its acquire's task is spawned (`scale-worker --interleaved`), {n} locks grew the process by {:.0} B per lock: the names the guards keep land between the tasks' memory, and glibc's allocator cannot reuse the holes the finished tasks leave for the next ones.",
            (r.rss_held - r.rss_base) / n as f64
        );
    }
    println!("{note}");
    println!();
    println!(
        "| held | hash slots in use | whole renewal rounds in hold | `EVALSHA` per round (min .. max) | expected: ceil(n/100) per master (locks) or per slot (permits), summed | `EVALSHA`/s | renewed per `EVALSHA` | longest round (±{} ms) | guards lost (`is_lost` / `lost()`) | keys without owner or expiry, permits gone | time left at end (min .. max) |",
        SAMPLE.as_millis()
    );
    println!("|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---|");
    for (n, what, r) in &reports {
        println!(
            "| {n} {} | {} | {:.0} | {:.0} .. {:.0} | {:.0} | {:.1} | {:.0} | {:.1} s | {:.0} / {:.0} | {:.0} | {:.1} s .. {:.1} s |",
            what.noun(),
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
    what: What,
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
    let held = match what {
        What::Locks => {
            Held::Locks(acquire_all(&client, &format!("bench:scale:{n}"), n, handles).await)
        }
        What::Permits => {
            Held::Permits(acquire_permits(&client, &format!("bench:scale:permits:{n}"), n).await)
        }
    };
    r.acquire_s = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(200)).await;
    r.rss_held = probe::memory("VmRSS") as f64;
    r.redis_held = stats.info_field("memory", "used_memory");
    let names = held.names();
    let mut per_slot = std::collections::HashMap::<u16, usize>::new();
    for name in &names {
        *per_slot.entry(key_slot(name)).or_default() += 1;
    }
    r.slots = per_slot.len() as f64;
    // Locks are renewed in batches per master, permits per slot.
    let per_batch = match what {
        What::Locks => stats.per_master(names.iter().copied()),
        What::Permits => per_slot.values().copied().collect(),
    };
    r.expected_calls = per_batch.iter().map(|n| n.div_ceil(100)).sum::<usize>() as f64;

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
    let (lost_flag, lost_signal) = held.lost();
    r.lost_flag = lost_flag as f64;
    r.lost_signal = lost_signal as f64;
    let (bad, min, max) = held.check(&mut stats);
    r.keys_bad = bad as f64;
    r.pttl_min_ms = if min == i64::MAX { 0.0 } else { min as f64 };
    r.pttl_max_ms = if max == i64::MIN { 0.0 } else { max as f64 };

    let started = Instant::now();
    let left = held.release(&mut stats).await;
    r.release_s = started.elapsed().as_secs_f64();
    assert_eq!(left, 0, "{left} locks or permits left after releasing");
    r.print();
}

/// What a scale run holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// Watchdog-mode locks, one name each.
    Locks,
    /// Renewed permits of expirable semaphores of [`PERMITS_PER_SEMAPHORE`]
    /// permits each.
    Permits,
}

impl What {
    fn noun(self) -> &'static str {
        match self {
            What::Locks => "locks",
            What::Permits => "permits",
        }
    }
}

/// Permits per semaphore in a permit run: many per semaphore, as a
/// semaphore is used, over enough semaphores to spread over a cluster.
const PERMITS_PER_SEMAPHORE: usize = 1_000;

/// What a worker holds.
enum Held {
    Locks(Vec<redlease::LockGuard>),
    Permits(Vec<redlease::PermitGuard>),
}

impl Held {
    /// The key each holds on, with repeats.
    fn names(&self) -> Vec<&str> {
        match self {
            Held::Locks(guards) => guards.iter().map(|g| g.name()).collect(),
            Held::Permits(guards) => guards.iter().map(|g| g.name()).collect(),
        }
    }

    /// How many are lost by `is_lost()`, and by a `lost()` that resolved.
    fn lost(&self) -> (usize, usize) {
        // `lost()` resolves at its first poll if a loss was ever recorded;
        // one poll each, with no timer (a zero timeout waits for a tick).
        let mut cx = Context::from_waker(Waker::noop());
        match self {
            Held::Locks(guards) => (
                guards.iter().filter(|g| g.is_lost()).count(),
                guards
                    .iter()
                    .filter(|g| pin!(g.lost()).poll(&mut cx).is_ready())
                    .count(),
            ),
            Held::Permits(guards) => (
                guards.iter().filter(|g| g.is_lost()).count(),
                guards
                    .iter()
                    .filter(|g| pin!(g.lost()).poll(&mut cx).is_ready())
                    .count(),
            ),
        }
    }

    /// In Redis: how many are gone or never expire, and the least and the
    /// most time left of the others, in ms (a lock's `PTTL`, a permit's
    /// score less the server's now).
    fn check(&self, stats: &mut Masters) -> (u64, i64, i64) {
        let names = self.names();
        let left: Vec<i64> = match self {
            Held::Locks(guards) => {
                let replies = stats.per_key(&names, 2, |pipe, i| {
                    pipe.cmd("HEXISTS").arg(names[i]).arg(guards[i].owner());
                    pipe.cmd("PTTL").arg(names[i]);
                });
                replies
                    .chunks(2)
                    .map(|pair| if pair[0] != 1 { -1 } else { pair[1] })
                    .collect()
            }
            Held::Permits(guards) => {
                let ids: Vec<Vec<u8>> = guards.iter().map(|g| unhex(g.id())).collect();
                stats.per_key(&names, 1, |pipe, i| {
                    pipe.cmd("EVAL")
                        .arg(TIME_LEFT)
                        .arg(1)
                        .arg(format!("{{{}}}:timeout", names[i]))
                        .arg(&ids[i]);
                })
            }
        };
        let (mut bad, mut min, mut max) = (0u64, i64::MAX, i64::MIN);
        for ms in left {
            if ms < 0 {
                bad += 1;
            } else {
                min = min.min(ms);
                max = max.max(ms);
            }
        }
        (bad, min, max)
    }

    /// Releases every one, 256 at a time; returns how many keys (locks) or
    /// ids (permits) are left in Redis.
    async fn release(self, stats: &mut Masters) -> i64 {
        match self {
            Held::Locks(guards) => {
                let names: Vec<String> = guards.iter().map(|g| g.name().to_owned()).collect();
                release_all(guards).await;
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                stats
                    .per_key(&names, 1, |pipe, i| {
                        pipe.cmd("EXISTS").arg(names[i]);
                    })
                    .iter()
                    .sum()
            }
            Held::Permits(guards) => {
                let mut names: Vec<String> = guards.iter().map(|g| g.name().to_owned()).collect();
                names.sort_unstable();
                names.dedup();
                release_permits(guards).await;
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                stats
                    .per_key(&names, 1, |pipe, i| {
                        pipe.cmd("ZCARD").arg(format!("{{{}}}:timeout", names[i]));
                    })
                    .iter()
                    .sum()
            }
        }
    }
}

/// A permit's time left in ms by the server's clock, `-1` when it is gone:
/// `KEYS[1]` the semaphore's `{name}:timeout` zset, `ARGV[1]` the raw id.
const TIME_LEFT: &str = "local s = redis.call('zscore', KEYS[1], ARGV[1]) \
if not s then return -1 end \
local t = redis.call('time') \
local left = tonumber(s) - (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) \
if left < 0 then return -1 end \
return left";

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("a permit id is hex"))
        .collect()
}

/// Acquires `n` renewed permits of semaphores `<prefix>:<k>`, of
/// [`PERMITS_PER_SEMAPHORE`] each, up to 256 at a time.
async fn acquire_permits(
    client: &redlease::Client,
    prefix: &str,
    n: usize,
) -> Vec<redlease::PermitGuard> {
    const IN_FLIGHT: usize = 256;
    let semaphores: Vec<redlease::ExpirableSemaphore> = (0..n.div_ceil(PERMITS_PER_SEMAPHORE))
        .map(|k| client.expirable_semaphore(format!("{prefix}:{k}")))
        .collect();
    for (k, semaphore) in semaphores.iter().enumerate() {
        let total = PERMITS_PER_SEMAPHORE.min(n - k * PERMITS_PER_SEMAPHORE);
        semaphore
            .set_total(total as u64)
            .await
            .expect("set the semaphore's permits");
    }
    let mut guards = Vec::with_capacity(n);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        if set.len() >= IN_FLIGHT {
            guards.push(set.join_next().await.expect("task").expect("join"));
        }
        let semaphore = semaphores[i / PERMITS_PER_SEMAPHORE].clone();
        set.spawn(async move { semaphore.try_acquire().await.expect("a free permit") });
    }
    while let Some(guard) = set.join_next().await {
        guards.push(guard.expect("join"));
    }
    guards
}

/// Releases every permit, up to 256 at a time.
async fn release_permits(guards: Vec<redlease::PermitGuard>) {
    const IN_FLIGHT: usize = 256;
    let mut set = tokio::task::JoinSet::new();
    for guard in guards {
        if set.len() >= IN_FLIGHT {
            set.join_next().await.expect("task").expect("join");
        }
        set.spawn(async move { guard.release().await.expect("release") });
    }
    while let Some(done) = set.join_next().await {
        done.expect("join");
    }
}
