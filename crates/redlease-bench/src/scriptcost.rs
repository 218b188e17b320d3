//! What one lock+unlock pair costs Redis, on the server alone: each pair's
//! commands are sent in large pipelines over one connection (so the
//! client's speed, latency and wake-ups drop out), and the server's CPU
//! time (`INFO cpu`, user+sys) over the run is divided by the pairs. Next
//! to redlease's own acquire and release scripts, the references that tell
//! where the cost lies: the same two calls with scripts that do nothing
//! (the floor of any two-script protocol), and rslock's pair (`SET NX PX`,
//! then its compare-and-delete script).
//!
//! Each pair uses one of 256 keys in turn, as the throughput measurements'
//! tasks do, so a lock's fencing counter lives on between its pairs.

use redis::{Cmd, Value};
use redlease_testkit::RedisServer;

use crate::cluster::spread;
use crate::probe;

/// Keys the pairs cycle over.
const KEYS: usize = 256;
/// Pairs per pipeline.
const BATCH: usize = 500;

/// rslock 0.10's release script (read from its source): delete the key if
/// it holds our value.
const RSLOCK_RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
/// Two scripts that do nothing, called with redlease's keys and arguments.
const EMPTY_ACQUIRE: &str = "return {1, 0}";
const EMPTY_RELEASE: &str = "return 1";

/// One way of taking and releasing lock `name` as owner `owner`.
type Pair = fn(&Shas, &str, &str) -> [Cmd; 2];

/// The SHA1s of the reference scripts, loaded on the server.
struct Shas {
    rslock: String,
    empty_acquire: String,
    empty_release: String,
}

pub(crate) fn run(server: &RedisServer, pairs: usize, runs: usize) {
    let mut conn = server.connection();
    let load = |conn: &mut redis::Connection, source: &str| -> String {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query(conn)
            .expect("SCRIPT LOAD")
    };
    // redlease's own scripts, and the references.
    for (_, _, source) in redlease::lua_scripts() {
        load(&mut conn, source);
    }
    let shas = Shas {
        rslock: load(&mut conn, RSLOCK_RELEASE),
        empty_acquire: load(&mut conn, EMPTY_ACQUIRE),
        empty_release: load(&mut conn, EMPTY_RELEASE),
    };
    let rows: [(&str, Pair); 4] = [
        ("redlease: acquire and release scripts", redlease_pair),
        ("two empty scripts, the same keys and arguments", empty_pair),
        (
            "rslock: `SET NX PX`, compare-and-delete script",
            rslock_pair,
        ),
        ("`SET NX PX`, `DEL` (no owner check)", bare_pair),
    ];
    println!(
        "## Redis CPU per lock+unlock pair, on the server alone ({pairs} pairs per run, pipelined, {KEYS} keys; median of {runs} runs with the range)\n"
    );
    println!(
        "| pair | Redis CPU per pair | time per pair by command, from `INFO commandstats` (µs; a script's own includes what it called) |"
    );
    println!("|---|---:|---|");
    for (name, pair) in rows {
        let mut cpu = Vec::new();
        let mut per_call = String::new();
        for _ in 0..runs {
            let (us, calls) = measure(&mut conn, &shas, pair, pairs);
            cpu.push(us);
            per_call = calls;
        }
        println!("| {name} | {} µs | {per_call} |", spread(&cpu, 1));
    }
    println!();
}

/// Runs `pairs` pairs; returns the server's CPU µs per pair and, from the
/// last run, the commands' own time per pair from `INFO commandstats`.
fn measure(conn: &mut redis::Connection, shas: &Shas, pair: Pair, pairs: usize) -> (f64, String) {
    let _: () = redis::cmd("FLUSHALL").query(conn).expect("FLUSHALL");
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(conn)
        .expect("CONFIG RESETSTAT");
    let names: Vec<String> = (0..KEYS).map(|k| format!("bench:cost:{k}")).collect();
    let owners: Vec<String> = (0..KEYS)
        .map(|k| format!("00000000-0000-4000-8000-000000000000:{k}"))
        .collect();
    let before = probe::server_cpu(conn);
    let mut done = 0;
    while done < pairs {
        let mut pipe = redis::pipe();
        for i in done..(done + BATCH).min(pairs) {
            for cmd in pair(shas, &names[i % KEYS], &owners[i % KEYS]) {
                pipe.add_command(cmd).ignore();
            }
        }
        let _: Value = pipe.query(conn).expect("pipeline");
        done += BATCH;
    }
    let us = (probe::server_cpu(conn) - before) * 1e6 / pairs as f64;
    (us, command_times(conn, pairs))
}

/// `name usec` per pair for each command the pairs ran, from
/// `INFO commandstats` (a script's own line includes what it called).
fn command_times(conn: &mut redis::Connection, pairs: usize) -> String {
    probe::command_stats(conn, "usec")
        .into_iter()
        .filter(|(name, _)| !matches!(name.as_str(), "info" | "config|resetstat" | "flushall"))
        .map(|(name, usec)| format!("{name} {:.2}", usec as f64 / pairs as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

fn evalsha(args: Vec<Vec<u8>>) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    for arg in args.into_iter().skip(1) {
        cmd.arg(arg);
    }
    cmd
}

/// redlease's acquire and release calls, as `EVALSHA` argument lists.
fn redlease_calls(name: &str, owner: &str) -> [Vec<Vec<u8>>; 2] {
    let acquire = redlease::scripts::acquire(name, 30_000, owner, 86_400_000);
    let release = redlease::scripts::release(name, 30_000, owner);
    [acquire.evalsha_args(), release.evalsha_args()]
}

fn redlease_pair(_: &Shas, name: &str, owner: &str) -> [Cmd; 2] {
    redlease_calls(name, owner).map(evalsha)
}

fn empty_pair(shas: &Shas, name: &str, owner: &str) -> [Cmd; 2] {
    let [mut acquire, mut release] = redlease_calls(name, owner);
    acquire[1] = shas.empty_acquire.as_bytes().to_vec();
    release[1] = shas.empty_release.as_bytes().to_vec();
    [evalsha(acquire), evalsha(release)]
}

fn rslock_pair(shas: &Shas, name: &str, owner: &str) -> [Cmd; 2] {
    let mut set = redis::cmd("SET");
    set.arg(name).arg(owner).arg("NX").arg("PX").arg(30_000);
    let mut release = redis::cmd("EVALSHA");
    release.arg(&shas.rslock).arg(1).arg(name).arg(owner);
    [set, release]
}

fn bare_pair(_: &Shas, name: &str, owner: &str) -> [Cmd; 2] {
    let mut set = redis::cmd("SET");
    set.arg(name).arg(owner).arg("NX").arg("PX").arg(30_000);
    let mut del = redis::cmd("DEL");
    del.arg(name);
    [set, del]
}
