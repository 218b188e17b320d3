//! What one lock+unlock pair costs Redis, on the server alone: each pair's
//! commands are sent in large pipelines over one connection (so the
//! client's speed, latency and wake-ups drop out), and the server's CPU
//! time (`INFO cpu`, user+sys) over the run is divided by the pairs. Next
//! to redlease's own acquire and release scripts, the references that tell
//! where the cost lies: the same two calls with scripts that do nothing
//! (the floor of any two-script protocol), and rslock's pair (`SET NX PX`,
//! then its compare-and-delete script).
//!
//! The string layout's pairs (#17) beside them: its acquire transaction
//! with its release script (Redis 7.0) or with Valkey 9's `DELIFEQ` and the
//! announcement, and, for the record of why the acquire is a transaction,
//! the same pair with a Lua acquire. With fencing off (#28) the acquire is
//! rslock's `SET NX PX`, and the pair differs from rslock's by its release
//! script alone: two more rows split that difference between the release
//! announcement (rslock's script with a `PUBLISH` added) and the script's
//! other keys and arguments (redlease's without its `PUBLISH`). The Valkey
//! rows run on a private Valkey 9 when one is installed (`scripts/valkey`).
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
/// The string layout's acquire as a script, the alternative to its
/// transaction: `SET NX PX`, then the counter's `INCR`.
/// rslock's release script with redlease's announcement added: the
/// channel as KEYS\[2\], the message literal.
const RSLOCK_RELEASE_PUBLISH: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('publish', KEYS[2], '0') return redis.call('del', KEYS[1]) else return 0 end";
/// The string layout's release script without its announcement, called
/// with the same keys and arguments.
const STRING_RELEASE_SILENT: &str = "if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return nil end redis.call('del', KEYS[1]) return 1";
const LUA_STRING_ACQUIRE: &str = "if redis.call('set', KEYS[1], ARGV[2], 'nx', 'px', ARGV[1]) then return {1, redis.call('incr', KEYS[2])} end return {0, redis.call('pttl', KEYS[1])}";

/// One way of taking and releasing lock `name` as owner `owner`: the
/// commands of one pair.
type Pair = fn(&Shas, &str, &str) -> Vec<Cmd>;

/// The SHA1s of the scripts the pairs call, loaded on the server.
struct Shas {
    rslock: String,
    empty_acquire: String,
    empty_release: String,
    lua_string_acquire: String,
    string_release: String,
    rslock_publish: String,
    string_release_silent: String,
}

pub(crate) fn run(server: &RedisServer, pairs: usize, runs: usize) {
    let redis: [(&str, Pair); 9] = [
        ("redlease: acquire and release scripts", redlease_pair),
        ("two empty scripts, the same keys and arguments", empty_pair),
        (
            "rslock: `SET NX PX`, compare-and-delete script",
            rslock_pair,
        ),
        ("`SET NX PX`, `DEL` (no owner check)", bare_pair),
        (
            "redlease string layout: `MULTI`, `SET NX PX`, `INCR`, `EXEC`; release script",
            string_pair,
        ),
        (
            "string layout with a Lua acquire (`SET NX PX` + `INCR`); release script",
            lua_string_pair,
        ),
        (
            "redlease string layout, fencing off: `SET NX PX`; release script",
            string_unfenced_pair,
        ),
        (
            "`SET NX PX`; the release script without its `PUBLISH`",
            silent_release_pair,
        ),
        (
            "`SET NX PX`; rslock's script with a `PUBLISH`",
            rslock_publish_pair,
        ),
    ];
    measure_all(server, pairs, runs, &redis);
    let valkey = match RedisServer::try_start_valkey() {
        Ok(valkey) => valkey,
        Err(why) => {
            println!("On Valkey 9: not measured ({why}).\n");
            return;
        }
    };
    let rows: [(&str, Pair); 4] = [
        (
            "rslock: `SET NX PX`, compare-and-delete script",
            rslock_pair,
        ),
        (
            "redlease string layout, native: `MULTI`, `SET NX PX`, `INCR`, `EXEC`; `DELIFEQ`, `PUBLISH`",
            native_string_pair,
        ),
        (
            "redlease string layout with its release script",
            string_pair,
        ),
        ("redlease: acquire and release scripts", redlease_pair),
    ];
    println!("On a private Valkey 9, the same way:\n");
    measure_all(&valkey, pairs, runs, &rows);
}

/// Prints a table of `rows` measured on `server`.
fn measure_all(server: &RedisServer, pairs: usize, runs: usize, rows: &[(&str, Pair)]) {
    let mut conn = server.connection();
    // redlease's own scripts, and the references.
    probe::load_scripts(&mut conn);
    let string_release = redlease::lua_scripts()
        .into_iter()
        .find(|(name, _, _)| *name == "string_release")
        .map(|(_, sha, _)| sha.to_owned())
        .expect("the string layout's release script");
    let shas = Shas {
        rslock: probe::load_script(&mut conn, RSLOCK_RELEASE),
        empty_acquire: probe::load_script(&mut conn, EMPTY_ACQUIRE),
        empty_release: probe::load_script(&mut conn, EMPTY_RELEASE),
        lua_string_acquire: probe::load_script(&mut conn, LUA_STRING_ACQUIRE),
        string_release,
        rslock_publish: probe::load_script(&mut conn, RSLOCK_RELEASE_PUBLISH),
        string_release_silent: probe::load_script(&mut conn, STRING_RELEASE_SILENT),
    };
    println!(
        "## Redis CPU per lock+unlock pair, on the server alone ({pairs} pairs per run, pipelined, {KEYS} keys; median of {runs} runs with the range)\n"
    );
    println!(
        "| pair | Redis CPU per pair | time per pair by command, from `INFO commandstats` (µs; a script's own includes what it called) |"
    );
    println!("|---|---:|---|");
    for &(name, pair) in rows {
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
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "info" | "config|resetstat" | "flushall" | "script|load"
            )
        })
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

fn redlease_pair(_: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    redlease_calls(name, owner).map(evalsha).into()
}

fn empty_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let [mut acquire, mut release] = redlease_calls(name, owner);
    acquire[1] = shas.empty_acquire.as_bytes().to_vec();
    release[1] = shas.empty_release.as_bytes().to_vec();
    vec![evalsha(acquire), evalsha(release)]
}

fn set_nx(name: &str, owner: &str) -> Cmd {
    let mut set = redis::cmd("SET");
    set.arg(name).arg(owner).arg("NX").arg("PX").arg(30_000);
    set
}

fn rslock_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut release = redis::cmd("EVALSHA");
    release.arg(&shas.rslock).arg(1).arg(name).arg(owner);
    vec![set_nx(name, owner), release]
}

fn bare_pair(_: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut del = redis::cmd("DEL");
    del.arg(name);
    vec![set_nx(name, owner), del]
}

/// The string layout's acquire, as its transaction sends it.
fn string_acquire(name: &str, owner: &str) -> Vec<Cmd> {
    let mut incr = redis::cmd("INCR");
    incr.arg(redlease::layout::token_key(name));
    vec![
        redis::cmd("MULTI"),
        set_nx(name, owner),
        incr,
        redis::cmd("EXEC"),
    ]
}

/// The string layout's release script, as it is called.
fn string_release(shas: &Shas, name: &str, owner: &str) -> Cmd {
    release_as(&shas.string_release, name, owner)
}

/// Script `sha` called with the string layout release's keys and
/// arguments.
fn release_as(sha: &str, name: &str, owner: &str) -> Cmd {
    let mut release = redis::cmd("EVALSHA");
    release
        .arg(sha)
        .arg(2)
        .arg(name)
        .arg(redlease::layout::channel(name))
        .arg(owner)
        .arg(0)
        .arg("publish");
    release
}

fn string_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut cmds = string_acquire(name, owner);
    cmds.push(string_release(shas, name, owner));
    cmds
}

fn lua_string_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut acquire = redis::cmd("EVALSHA");
    acquire
        .arg(&shas.lua_string_acquire)
        .arg(2)
        .arg(name)
        .arg(redlease::layout::token_key(name))
        .arg(30_000)
        .arg(owner);
    vec![acquire, string_release(shas, name, owner)]
}

fn string_unfenced_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    vec![set_nx(name, owner), string_release(shas, name, owner)]
}

fn silent_release_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    vec![
        set_nx(name, owner),
        release_as(&shas.string_release_silent, name, owner),
    ]
}

fn rslock_publish_pair(shas: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut release = redis::cmd("EVALSHA");
    release
        .arg(&shas.rslock_publish)
        .arg(2)
        .arg(name)
        .arg(redlease::layout::channel(name))
        .arg(owner);
    vec![set_nx(name, owner), release]
}

fn native_string_pair(_: &Shas, name: &str, owner: &str) -> Vec<Cmd> {
    let mut cmds = string_acquire(name, owner);
    let mut delete = redis::cmd("DELIFEQ");
    delete.arg(name).arg(owner);
    let mut publish = redis::cmd("PUBLISH");
    publish.arg(redlease::layout::channel(name)).arg(0);
    cmds.extend([delete, publish]);
    cmds
}
