//! `redlease inspect`: planted locks and problems, table and JSON, and the
//! bounded scan.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::{RedisServer, eventually, output, redis, redlease, stderr, stdout, wait};

const LIMIT: Duration = Duration::from_secs(15);

/// A private server with one of each case under `lock:`, plus a key that
/// does not match.
fn planted() -> RedisServer {
    let server = RedisServer::start();
    let r = |args: &[&str]| redis::<Value2>(&server, args);
    // A lock that never expires.
    r(&["HSET", "lock:nottl", "0c5e-uuid:1", "1"]);
    // Redisson's raw commands: hash field `<uuid>:<thread>` = count, PEXPIRE.
    r(&[
        "HSET",
        "lock:redisson",
        "8743c9c0-0795-4907-87fd-6c719a6cb586:1",
        "2",
    ]);
    r(&["PEXPIRE", "lock:redisson", "30000"]);
    // Another tool's SET NX lock: a lock of the string layout.
    r(&["SET", "lock:setnx", "owner-7", "NX", "PX", "30000"]);
    // A Redisson read-write lock in read mode.
    r(&["HSET", "lock:rw", "mode", "read", "8743c9c0:5", "1"]);
    r(&["PEXPIRE", "lock:rw", "30000"]);
    // A fair queue whose lock is gone: one waiter gone (deadline in the
    // past), one alive.
    r(&[
        "RPUSH",
        "redisson_lock_queue:{lock:fair}",
        "gone:1",
        "alive:2",
    ]);
    r(&[
        "ZADD",
        "redisson_lock_timeout:{lock:fair}",
        "1000",
        "gone:1",
        "99999999999999",
        "alive:2",
    ]);
    // No lock of any layout.
    r(&["RPUSH", "other:key", "x"]);
    server
}

/// Any reply, for setup commands whose answer does not matter.
type Value2 = redis::Value;

#[test]
fn table_lists_locks_and_problems() {
    let server = planted();
    let out = output(
        redlease(&server.url()).args(["inspect", "--pattern", "*"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let row = |key: &str| -> String {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row for {key}:\n{table}"))
            .to_owned()
    };
    assert!(
        row("lock:nottl").contains("never") && row("lock:nottl").contains("no_ttl"),
        "{table}"
    );
    let redisson = row("lock:redisson");
    assert!(
        redisson.contains("8743c9c0-0795-4907-87fd-6c719a6cb586:1 x2"),
        "{table}"
    );
    assert!(redisson.trim_end().ends_with('-'), "no problem: {table}");
    let setnx = row("lock:setnx");
    assert!(
        setnx.contains("lock:string  owner-7  ") && setnx.trim_end().ends_with('-'),
        "{table}"
    );
    assert!(
        row("lock:rw").contains("rwlock:read") && row("lock:rw").trim_end().ends_with('-'),
        "{table}"
    );
    let fair = row("lock:fair");
    assert!(
        fair.contains("queue-only")
            && fair.contains("2 (1 gone)")
            && fair.contains("stale_waiters"),
        "{table}"
    );
    assert!(
        row("other:key").contains("list") && row("other:key").contains("wrong_type"),
        "{table}"
    );
    // Auxiliary keys are attached to their lock, not listed.
    assert!(!table.contains("redisson_lock_"), "{table}");
    assert!(table.contains("problems:\n"), "{table}");
    assert!(!table.contains("--cursor"), "complete scan: {table}");
}

/// Without --pattern every key is scanned, and the application's own keys
/// are counted, not reported as broken locks.
#[test]
fn without_pattern_lists_locks_only() {
    let server = planted();
    let out = output(redlease(&server.url()).args(["inspect"]), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("lock:nottl") && table.contains("no_ttl"),
        "{table}"
    );
    assert!(table.contains("lock:redisson"), "{table}");
    assert!(
        table.contains("lock:fair") && table.contains("stale_waiters"),
        "{table}"
    );
    assert!(
        !table.contains("lock:setnx") && !table.contains("other:key"),
        "{table}"
    );
    assert!(!table.contains("wrong_type"), "{table}");
    assert!(
        table.contains("2 key(s) that are not locks skipped"),
        "{table}"
    );
}

#[test]
fn json_has_every_field() {
    let server = planted();
    let inspect = |pattern: &str| -> Value {
        let out = output(
            redlease(&server.url()).args(["inspect", "--pattern", pattern, "--json"]),
            LIMIT,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).expect("json")
    };
    let keys = |report: &Value| -> Vec<String> {
        let locks = report["locks"].as_array().unwrap();
        locks
            .iter()
            .map(|l| l["key"].as_str().unwrap().to_owned())
            .collect()
    };
    // The fair queue's key does not match `lock:*`, nor does `other:key`.
    let narrow = inspect("lock:*");
    assert_eq!(
        keys(&narrow),
        ["lock:nottl", "lock:redisson", "lock:rw", "lock:setnx"]
    );
    let report = inspect("*");
    assert_eq!(report["complete"], true);
    assert_eq!(report["cursor"], 0);
    // The fair queue stands for its lock, which is gone.
    let all = [
        "lock:fair",
        "lock:nottl",
        "lock:redisson",
        "lock:rw",
        "lock:setnx",
        "other:key",
    ];
    assert_eq!(keys(&report), all);
    let locks = report["locks"].as_array().unwrap();
    let lock = |key: &str| {
        locks
            .iter()
            .find(|l| l["key"] == key)
            .unwrap_or_else(|| panic!("{key}"))
    };
    let problems = |key: &str| -> Vec<String> {
        lock(key)["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(problems("lock:nottl"), ["no_ttl"]);
    assert_eq!(lock("lock:nottl")["ttl_ms"], Value::Null);
    assert_eq!(problems("lock:setnx"), Vec::<String>::new());
    assert_eq!(lock("lock:setnx")["type"], "string");
    assert_eq!(lock("lock:setnx")["kind"], "string_lock");
    assert_eq!(lock("lock:setnx")["holder"], "owner-7");
    assert_eq!(lock("lock:setnx")["owners"], serde_json::json!([]));
    assert_eq!(problems("other:key"), ["wrong_type"]);
    assert_eq!(lock("other:key")["kind"], "not_a_lock");
    assert_eq!(lock("lock:redisson")["holder"], Value::Null);
    assert_eq!(problems("lock:redisson"), Vec::<String>::new());
    assert_eq!(lock("lock:redisson")["owners"][0]["count"], 2);
    let ttl = lock("lock:redisson")["ttl_ms"].as_i64().unwrap();
    assert!((1..=30_000).contains(&ttl), "{ttl}");
    // Redisson keeps no clock token: the age is unknown.
    assert_eq!(lock("lock:redisson")["age_ms"], Value::Null);
    assert_eq!(lock("lock:rw")["kind"], "rwlock");
    assert_eq!(lock("lock:rw")["mode"], "read");
    assert_eq!(problems("lock:fair"), ["stale_waiters"]);
    let waiters = lock("lock:fair")["waiters"].as_array().unwrap();
    let stale: Vec<(&str, bool)> = waiters
        .iter()
        .map(|w| (w["owner"].as_str().unwrap(), w["stale"].as_bool().unwrap()))
        .collect();
    assert_eq!(stale, [("gone:1", true), ("alive:2", false)]);
}

/// A raw `SET key uuid NX PX` lock (redis-py's, rslock's, a hand-written
/// one) is a lock, `lock:string`, with its holder and ttl; so is one taken by
/// `run --layout string`, which is also listed without --pattern (by its
/// fencing counter, where another library's is counted as skipped).
#[test]
fn string_locks_show_their_holder_and_ttl() {
    let server = RedisServer::start();
    let uuid = "3f1c9a52-6d0e-4b8f-a1c2-9e7d5b4a3c21";
    let set: String = redis(&server, &["SET", "lock:py", uuid, "NX", "PX", "20000"]);
    assert_eq!(set, "OK");
    // rslock's owner: random bytes, not UTF-8, maybe a newline: escaped,
    // on one line.
    let _: Value2 = redis::cmd("SET")
        .arg("lock:rs")
        .arg(&[0xff_u8, 0xfe, b'A', b'\n'][..])
        .arg("PX")
        .arg(20_000)
        .query(&mut server.connection())
        .unwrap();
    let inspect = |args: &[&str]| -> String {
        let out = output(redlease(&server.url()).arg("inspect").args(args), LIMIT);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let table = inspect(&["--pattern", "lock:*"]);
    let row = |key: &str| -> String {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row for {key}:\n{table}"))
            .to_owned()
    };
    let py = row("lock:py");
    assert!(
        py.contains(&format!("lock:string  {uuid}  ")) && py.trim_end().ends_with('-'),
        "{table}"
    );
    assert!(row("lock:rs").contains(r"\xff\xfeA\n  "), "{table}");

    let report: Value =
        serde_json::from_str(&inspect(&["--pattern", "lock:py", "--json"])).unwrap();
    let lock = &report["locks"][0];
    assert_eq!(
        (&lock["key"], &lock["kind"], &lock["type"], &lock["holder"]),
        (
            &Value::from("lock:py"),
            &Value::from("string_lock"),
            &Value::from("string"),
            &Value::from(uuid)
        ),
        "{report}"
    );
    let ttl = lock["ttl_ms"].as_i64().expect("a ttl");
    assert!((10_000..=20_000).contains(&ttl), "{ttl}");
    // Another library keeps no fencing counter: no token, no age.
    assert_eq!(
        (&lock["fencing_token"], &lock["age_ms"]),
        (&Value::Null, &Value::Null)
    );
    assert!(lock["problems"].as_array().unwrap().is_empty(), "{report}");

    // Without --pattern, strings without a fencing counter are counted, not
    // listed: most are the application's data.
    let table = inspect(&[]);
    assert!(!table.contains("lock:py"), "{table}");
    assert!(
        table.contains("2 key(s) that are not locks skipped"),
        "{table}"
    );

    let mut holder = redlease(&server.url())
        .args([
            "run", "--layout", "string", "--key", "lock:rl", "--", "sleep", "30",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the lock", || {
        redis::<i64>(&server, &["EXISTS", "lock:rl"]) == 1
    });
    let owner: String = redis(&server, &["GET", "lock:rl"]);
    let report: Value = serde_json::from_str(&inspect(&["--json"])).unwrap();
    let locks = report["locks"].as_array().unwrap();
    assert_eq!(locks.len(), 1, "the token key is not a lock: {locks:?}");
    assert_eq!(locks[0]["key"], "lock:rl");
    assert_eq!(locks[0]["kind"], "string_lock");
    assert_eq!(locks[0]["holder"], owner.as_str());
    assert!(locks[0]["fencing_token"].as_u64().is_some(), "{report}");
    assert!(locks[0]["age_ms"].as_u64().is_some(), "{report}");
    assert!(
        locks[0]["ttl_ms"].as_i64().is_some_and(|t| t > 0),
        "{report}"
    );
    let term = std::process::Command::new("kill")
        .args(["-TERM", &holder.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert_eq!(wait(&mut holder, LIMIT).code(), Some(143));
    assert_eq!(redis::<i64>(&server, &["EXISTS", "lock:rl"]), 0);
}

/// A lock held by `redlease run` shows its owner, TTL and an age from its
/// fencing token.
#[test]
fn held_lock_has_an_age() {
    let server = RedisServer::start();
    let mut holder = redlease(&server.url())
        .args(["run", "--key", "lock:held", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the lock", || {
        redis::<i64>(&server, &["EXISTS", "lock:held"]) == 1
    });
    std::thread::sleep(Duration::from_millis(300));
    let out = output(redlease(&server.url()).args(["inspect", "--json"]), LIMIT);
    let report: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let locks = report["locks"].as_array().unwrap();
    assert_eq!(locks.len(), 1, "the token key is not a lock: {locks:?}");
    let age = locks[0]["age_ms"].as_u64().expect("an age");
    assert!((300..3_000).contains(&age), "{age}");
    assert!(locks[0]["fencing_token"].as_u64().is_some());
    assert!(locks[0]["problems"].as_array().unwrap().is_empty());
    // SIGTERM is forwarded to `sleep`, which dies of it: 128 + 15.
    let term = std::process::Command::new("kill")
        .args(["-TERM", &holder.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert_eq!(wait(&mut holder, LIMIT).code(), Some(143));
}

/// With a limit below the number of keys, a call stops with a cursor, and
/// following the cursors visits every key.
#[test]
fn scan_is_bounded_and_resumable() {
    let server = RedisServer::start();
    let all: BTreeSet<String> = (0..40).map(|i| format!("lock:many:{i}")).collect();
    for key in &all {
        redis::<i64>(&server, &["HSET", key, "u:1", "1"]);
        redis::<i64>(&server, &["PEXPIRE", key, "60000"]);
    }
    let out = output(
        redlease(&server.url()).args(["inspect", "--limit", "5"]),
        LIMIT,
    );
    let table = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        table.contains("stopped at --limit; continue with: --cursor "),
        "{table}"
    );

    let mut found = BTreeSet::new();
    let mut cursor = 0;
    for call in 0.. {
        assert!(call < 100, "the scan never completed");
        let out = output(
            redlease(&server.url()).args([
                "inspect",
                "--limit",
                "5",
                "--json",
                "--cursor",
                &cursor.to_string(),
            ]),
            LIMIT,
        );
        let report: Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
        let locks = report["locks"].as_array().unwrap();
        assert!(locks.len() < 40, "one call looked at every key");
        found.extend(locks.iter().map(|l| l["key"].as_str().unwrap().to_owned()));
        cursor = report["cursor"].as_u64().unwrap();
        assert_eq!(report["complete"], cursor == 0);
        if cursor == 0 {
            assert!(call > 0, "stopped only at the end");
            break;
        }
    }
    assert_eq!(found, all);
}

/// Redisson's lock family planted with raw commands: a read-write lock
/// with two readers, one downgraded from its write hold; a semaphore and a
/// latch each with a waiter subscribed; an expirable semaphore with two
/// acquired permits; a counter nobody waits on. Returns the server and the
/// subscriptions, which must live while inspect runs.
fn planted_family() -> (RedisServer, redis::Connection, redis::Connection) {
    let server = RedisServer::start();
    let r = |args: &[&[u8]]| {
        let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        let _: Value2 = cmd.query(&mut server.connection()).unwrap();
    };
    r(&[
        b"HSET",
        b"fam:rw",
        b"mode",
        b"write",
        b"w-uuid:1:write",
        b"1",
        b"w-uuid:1",
        b"1",
        b"r-uuid:4",
        b"2",
    ]);
    r(&[b"PEXPIRE", b"fam:rw", b"30000"]);
    r(&[
        b"SET",
        b"{fam:rw}:w-uuid:1:rwlock_timeout:1",
        b"1",
        b"PX",
        b"25000",
    ]);
    r(&[
        b"SET",
        b"{fam:rw}:r-uuid:4:rwlock_timeout:1",
        b"1",
        b"PX",
        b"5000",
    ]);
    r(&[
        b"SET",
        b"{fam:rw}:r-uuid:4:rwlock_timeout:2",
        b"1",
        b"PX",
        b"20000",
    ]);
    r(&[b"SET", b"fam:sem", b"3"]);
    r(&[b"SET", b"fam:latch", b"2"]);
    r(&[b"SET", b"fam:xsem", b"1"]);
    let permit: Vec<u8> = (0u8..16).collect();
    r(&[b"ZADD", b"{fam:xsem}:timeout", b"922337203685477", &permit]);
    r(&[b"SET", b"fam:counter", b"41"]);
    let listen = |channel: &str| {
        let mut conn = server.connection();
        let _: Value2 = redis::cmd("SUBSCRIBE")
            .arg(channel)
            .query(&mut conn)
            .unwrap();
        conn
    };
    let semaphore = listen("redisson_sc:{fam:sem}");
    let latch = listen("redisson_countdownlatch__channel__{fam:latch}");
    (server, semaphore, latch)
}

/// Every structure of the family in the table: the read-write lock's mode,
/// writer and readers with their newest hold's ttl; semaphore and latch by
/// their listeners; the expirable semaphore's permits; a counter only with
/// --pattern. Auxiliary keys are never rows of their own.
#[test]
fn table_shows_the_lock_family() {
    let (server, _semaphore, _latch) = planted_family();
    let out = output(
        redlease(&server.url()).args(["inspect", "--pattern", "fam:*"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let row = |key: &str| -> String {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row for {key}:\n{table}"))
            .to_owned()
    };
    let rw = row("fam:rw");
    assert!(
        rw.contains("rwlock:write") && rw.contains("w-uuid:1:write x1"),
        "{table}"
    );
    let reader = rw.split("r-uuid:4 x2 (").nth(1).expect(&table);
    let ttl: f64 = reader.split('s').next().unwrap().parse().expect(&table);
    assert!(ttl > 15.0 && ttl <= 20.0, "newest hold's ttl: {table}");
    assert!(
        row("fam:sem").contains(" semaphore ") && row("fam:sem").contains(" 3 permits available "),
        "{table}"
    );
    assert!(row("fam:sem").contains("1 listening"), "{table}");
    assert!(
        row("fam:latch").contains(" latch ") && row("fam:latch").contains(" count 2 "),
        "{table}"
    );
    assert!(
        row("fam:xsem").contains(" expirable-semaphore ")
            && row("fam:xsem")
                .contains(" 1 available, 1 acquired: 000102030405060708090a0b0c0d0e0f (no lease) "),
        "{table}"
    );
    assert!(
        row("fam:counter").contains(" counter ")
            && row("fam:counter").contains(" 41 (semaphore permits or latch count) "),
        "{table}"
    );
    assert!(
        !table.contains("problems:"),
        "none of them is a problem: {table}"
    );

    let out = output(redlease(&server.url()).args(["inspect"]), LIMIT);
    let table = stdout(&out);
    for key in ["fam:rw", "fam:sem", "fam:latch", "fam:xsem"] {
        assert!(
            table.lines().any(|l| l.starts_with(&format!("{key} "))),
            "{key}: {table}"
        );
    }
    assert!(!table.contains("fam:counter"), "{table}");
    assert!(!table.contains("timeout"), "{table}");
}

#[test]
fn json_shows_the_lock_family() {
    let (server, _semaphore, _latch) = planted_family();
    let out = output(
        redlease(&server.url()).args(["inspect", "--pattern", "fam:*", "--json"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let lock = |key: &str| -> Value {
        json["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["key"] == key)
            .unwrap_or_else(|| panic!("no {key}: {json}"))
            .clone()
    };
    let rw = lock("fam:rw");
    assert_eq!(
        (&rw["kind"], &rw["mode"]),
        (&Value::from("rwlock"), &Value::from("write"))
    );
    let sides: BTreeSet<(String, String)> = rw["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["field"].as_str().unwrap().to_owned(),
                o["side"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        sides,
        [
            ("r-uuid:4", "read"),
            ("w-uuid:1", "read"),
            ("w-uuid:1:write", "write")
        ]
        .map(|(f, s)| (f.to_owned(), s.to_owned()))
        .into()
    );
    let sem = lock("fam:sem");
    assert_eq!(
        (&sem["kind"], &sem["value"]),
        (&Value::from("semaphore"), &Value::from(3))
    );
    assert_eq!(sem["listeners"]["semaphore"], 1);
    assert_eq!(lock("fam:latch")["kind"], "count_down_latch");
    let xsem = lock("fam:xsem");
    assert_eq!(xsem["kind"], "expirable_semaphore");
    assert_eq!(xsem["permits_acquired"], 1);
    assert_eq!(xsem["permits"][0]["id"], "000102030405060708090a0b0c0d0e0f");
    assert_eq!(xsem["permits"][0]["expires_in_ms"], Value::Null);
    assert_eq!(lock("fam:counter")["kind"], "counter");
}

/// A lock hash whose owner field is not UTF-8 (written by another client)
/// is still a lock, its owner shown escaped as string-layout owners are,
/// not an error or a wrong_type (issue #18).
#[test]
fn an_owner_that_is_not_utf8_shows_escaped() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let _: () = redis::cmd("HSET")
        .arg("lock:bytes")
        .arg(b"\xff\xfeab:1".as_slice())
        .arg("1")
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg("lock:bytes")
        .arg(60_000)
        .query(&mut conn)
        .unwrap();
    let out = output(
        redlease(&server.url()).args(["inspect", "--pattern", "lock:*"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let row = table.lines().find(|l| l.starts_with("lock:bytes")).unwrap();
    assert!(row.contains(r"\xff\xfeab:1 x1"), "{table}");
    assert!(!table.contains("wrong_type"), "{table}");
    let out = output(
        redlease(&server.url()).args(["inspect", "--pattern", "lock:*", "--json"]),
        LIMIT,
    );
    let report: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let owner = &report["locks"][0]["owners"][0];
    assert_eq!(owner["field"].as_str(), Some(r"\xff\xfeab:1"), "{report}");
}
