//! Uncontended lock+unlock throughput against `redis-benchmark` replaying
//! the same scripts.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;

use crate::probe;

/// Prints the throughput table: `seconds` per measurement, for each number
/// of concurrent tasks in `tasks`.
pub(crate) async fn run(server: &RedisServer, seconds: u64, tasks: &[usize]) {
    let duration = Duration::from_secs(seconds);
    let client = redlease::Client::connect(&server.url())
        .await
        .expect("connect");
    // Load the scripts, so redis-benchmark's EVALSHA finds them.
    probe::warm_up(&client, "bench:warmup").await;

    println!("## Uncontended lock+unlock pairs per second ({seconds} s per measurement)\n");
    println!(
        "| tasks | mode | redlease pairs/s | redis-benchmark `-c N` | ratio | redis-benchmark `-c 1 -P N` | ratio |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for &n in tasks {
        let conns = reference(server, n, 1, duration).pairs();
        let pipelined = reference(server, 1, n, duration).pairs();
        for (mode, lease) in [
            ("watchdog", None),
            ("fixed lease", Some(Duration::from_secs(30))),
        ] {
            let (pairs, seconds) = redlease_pairs(&client, n, duration, lease).await;
            let ours = pairs as f64 / seconds;
            println!(
                "| {n} | {mode} | {ours:.0} | {conns:.0} | {:.2} | {pipelined:.0} | {:.2} |",
                ours / conns,
                ours / pipelined
            );
        }
    }
    println!();
}

/// Lock+unlock pairs with `tasks` tasks on one client, each on its own key:
/// how many, in how many seconds.
pub(crate) async fn redlease_pairs(
    client: &redlease::Client,
    tasks: usize,
    duration: Duration,
    lease: Option<Duration>,
) -> (u64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let pairs = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let mut lock = client.lock(format!("bench:redlease:{t}"));
        if let Some(lease) = lease {
            lock = lock.lease(lease);
        }
        let (stop, pairs) = (stop.clone(), pairs.clone());
        handles.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let guard = lock.try_lock().await.expect("uncontended lock");
                guard.unlock().await.expect("unlock");
                pairs.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep_until((start + duration).into()).await;
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.expect("bench task");
    }
    // The pairs finishing after the stop are counted, and so is their time.
    (pairs.load(Ordering::Relaxed), start.elapsed().as_secs_f64())
}

/// What `redis-benchmark` reaches for redlease's acquire and release
/// scripts, replayed with `EVALSHA`: the limit a client library on this
/// machine could approach.
pub(crate) struct Reference {
    /// Acquire scripts per second.
    pub(crate) acquire: f64,
    /// Release scripts per second.
    pub(crate) release: f64,
}

impl Reference {
    /// Lock+unlock pairs per second: one acquire and one release each.
    pub(crate) fn pairs(&self) -> f64 {
        1.0 / (1.0 / self.acquire + 1.0 / self.release)
    }
}

/// Runs both scripts with `conns` connections of `pipeline` requests in
/// flight each, for about `duration` in all, each on the path a real
/// lock+unlock pair takes: the acquire on a key nobody holds, the release
/// of a key its owner holds once (so it deletes and publishes). The
/// database is emptied before and after, so no expiring keys are left to
/// cost a later measurement.
pub(crate) fn reference(
    server: &RedisServer,
    conns: usize,
    pipeline: usize,
    duration: Duration,
) -> Reference {
    reference_of(Limit::RedissonScripts, server, conns, pipeline, duration)
}

/// The calls a limit replays.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Limit {
    /// redlease's own acquire and release scripts, Redisson's layout.
    RedissonScripts,
    /// `SET key owner NX PX` and Valkey 9's `DELIFEQ key owner`: the least
    /// a string-layout lock can cost (no fencing token, no announcement).
    NativeString,
}

/// [`reference()`] for the calls `limit` names.
pub(crate) fn reference_of(
    limit: Limit,
    server: &RedisServer,
    conns: usize,
    pipeline: usize,
    duration: Duration,
) -> Reference {
    let field = "00000000-0000-0000-0000-000000000000:1";
    let mut conn = server.connection();
    let flush = |conn: &mut redis::Connection| {
        let _: () = redis::cmd("FLUSHDB").query(conn).expect("FLUSHDB");
    };
    let key = "bench:reference:__rand_int__";
    let text = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    // The calls redlease itself makes, packed by its own builders;
    // redis-benchmark replaces `__rand_int__` in every argument.
    let (acquire_args, release_args, seed) = match limit {
        Limit::RedissonScripts => (
            command(&redlease::scripts::acquire(key, 30_000, field, 86_400_000)),
            command(&redlease::scripts::release(key, 30_000, field)),
            SEED,
        ),
        Limit::NativeString => (
            text(&["SET", key, field, "NX", "PX", "30000"]),
            text(&["DELIFEQ", key, field]),
            SEED_STRINGS,
        ),
    };

    // Acquires on random keys out of 10^9: hardly one finds its key held.
    // A first run measures the rate; the real one is sized to last about
    // half of `duration`.
    flush(&mut conn);
    let fresh = 1_000_000_000;
    let quick = run_redis_benchmark(server, conns, pipeline, 20_000, fresh, &acquire_args);
    let requests = (quick * duration.as_secs_f64() / 2.0).max(20_000.0) as u64;
    let acquire_rate = run_redis_benchmark(server, conns, pipeline, requests, fresh, &acquire_args);

    // Releases of random keys out of four times as many held ones as
    // requests (at most 100,000, the release being the faster script): 88%
    // find their key held, the rest find it released already and cost less.
    flush(&mut conn);
    let requests = requests.min(100_000);
    let held = 4 * requests;
    let _: () = redis::cmd("EVAL")
        .arg(seed)
        .arg(0)
        .arg(held)
        .arg(field)
        .query(&mut conn)
        .expect("seed held locks");
    let release_rate = run_redis_benchmark(server, conns, pipeline, requests, held, &release_args);
    flush(&mut conn);
    Reference {
        acquire: acquire_rate,
        release: release_rate,
    }
}

/// A script call as `redis-benchmark` arguments.
fn command(call: &redlease::scripts::ScriptCall) -> Vec<String> {
    call.evalsha_args()
        .into_iter()
        .map(|arg| String::from_utf8(arg).expect("redlease packs text"))
        .collect()
}

/// [`SEED`] for the string layout: each key a string holding the owner.
const SEED_STRINGS: &str = "for i = 0, tonumber(ARGV[1]) - 1 do \
    local key = string.format('bench:reference:%012d', i) \
    redis.call('set', key, ARGV[2], 'px', 30000) \
end";

/// Holds `bench:reference:<i>` for `i` in `0..ARGV[1]`, as `redis-benchmark`
/// writes `__rand_int__` (12 digits), once each by owner field ARGV\[2\].
const SEED: &str = "for i = 0, tonumber(ARGV[1]) - 1 do \
    local key = string.format('bench:reference:%012d', i) \
    redis.call('hset', key, ARGV[2], 1) \
    redis.call('pexpire', key, 30000) \
end";

/// Runs `redis-benchmark` and returns its requests per second.
fn run_redis_benchmark(
    server: &RedisServer,
    conns: usize,
    pipeline: usize,
    requests: u64,
    keyspace: u64,
    command: &[String],
) -> f64 {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args([
            "-c",
            &conns.to_string(),
            "-P",
            &pipeline.to_string(),
            "-n",
            &requests.to_string(),
            "-r",
            &keyspace.to_string(),
            "--csv",
        ])
        .args(command)
        .output()
        .expect("redis-benchmark is on PATH (Debian package redis-tools)");
    // An error reply is fast and would count as a request served: a run
    // that saw any is no measurement.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("rror"),
        "redis-benchmark {command:?} got errors: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // CSV: a header line, then "name","rps",...
    stdout
        .lines()
        .nth(1)
        .and_then(|l| l.split(',').nth(1))
        .and_then(|v| v.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("unexpected redis-benchmark output: {stdout}"))
}

/// `pairs-worker URL PAIRS`: connects, warms up, then takes and releases
/// one lock `PAIRS` times in a row and exits. For instruction counts under
/// `valgrind --tool=callgrind`: the difference between two runs with
/// different `PAIRS`, divided by the difference, is the client's cost of one
/// pair without the set-up.
pub(crate) async fn pairs_worker(
    url: &str,
    pairs: u64,
    layout: redlease::layout::Layout,
    fencing: bool,
) {
    let client = redlease::Client::builder(url)
        .layout(layout)
        .fencing(fencing)
        // Under valgrind a reply takes many times longer than the default
        // allows on a busy machine.
        .response_timeout(Duration::from_secs(60))
        .build()
        .await
        .expect("connect");
    probe::warm_up(&client, "bench:pairs:warmup").await;
    let lock = client.lock("bench:pairs");
    // In a task of the runtime, as the peers' drivers run theirs (rslock's
    // `uncontended`): on `block_on`'s thread every reply would also cost a
    // wake-up of the main thread, which is the harness's cost, not the
    // library's.
    let pairs = tokio::spawn(async move {
        for _ in 0..pairs {
            lock.try_lock()
                .await
                .expect("uncontended lock")
                .unlock()
                .await
                .expect("unlock");
        }
    });
    pairs.await.expect("the pairs task");
}
