//! `redlease inspect --leftovers` and `redlease gc` (#40): what locks leave
//! behind is shown with its size; `--dry-run` changes nothing; `gc`
//! removes the dead and leaves, beside it, what live holders and waiters
//! use, on one server and on every master of a cluster.

use std::time::Duration;

use serde_json::Value;

use crate::support::{
    RedisServer, cluster, on_master, output, redis, redlease, stderr, stdout, unique,
};

const LIMIT: Duration = Duration::from_secs(30);

/// `redlease <args> --json` against `url`: the report.
fn json(url: &str, args: &[&str]) -> Value {
    let out = output(redlease(url).args(args).arg("--json"), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `(key, kind, dead, removed)` of each leftover.
fn rows(report: &Value) -> Vec<(String, String, u64, u64)> {
    report["leftovers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["key"].as_str().unwrap().to_owned(),
                l["kind"].as_str().unwrap().to_owned(),
                l["dead"].as_u64().unwrap(),
                l["removed"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Writes, as dead and live Java and Rust clients would have, one name's
/// keys: a lock held by `<id>:live` (with its counter and its leader
/// record), a fair queue whose head died with a live waiter behind it, and
/// a leader record of a leader gone.
fn plant(run: &dyn Fn(&[&str]), name: &str) {
    let held = format!("{name}:held");
    let record = |n: &str| format!("redlease_leader:{{{n}}}");
    run(&["HSET", &held, "java-id:live", "1"]);
    run(&["PEXPIRE", &held, "30000"]);
    run(&["SET", &format!("redisson_lock_token:{{{held}}}"), "7"]);
    run(&[
        "HSET",
        &record(&held),
        "owner",
        "java-id:live",
        "epoch",
        "7",
    ]);
    let fair = format!("{name}:fair");
    let (queue, deadlines) = (
        format!("redisson_lock_queue:{{{fair}}}"),
        format!("redisson_lock_timeout:{{{fair}}}"),
    );
    run(&["RPUSH", &queue, "gone:1", "live:2"]);
    run(&[
        "ZADD",
        &deadlines,
        "1",
        "gone:1",
        "99999999999999",
        "live:2",
    ]);
    let gone = format!("{name}:gone");
    run(&["HSET", &record(&gone), "owner", "gone:3", "epoch", "2"]);
}

#[test]
fn issue_40_gc_removes_the_dead_and_leaves_the_live() {
    let server = RedisServer::start();
    let url = server.url();
    let name = unique("gc");
    plant(
        &|args: &[&str]| {
            redis::<redis::Value>(&server, args);
        },
        &name,
    );
    let pattern = format!("*{name}*");

    let seen = json(&url, &["inspect", "--leftovers", "-p", &pattern]);
    let mut found = rows(&seen);
    found.sort();
    assert_eq!(
        found,
        [
            (
                format!("redisson_lock_queue:{{{name}:fair}}"),
                "fair-queue".into(),
                1,
                0
            ),
            (
                format!("redlease_leader:{{{name}:gone}}"),
                "leader-record".into(),
                1,
                0
            ),
        ],
        "a held lock's counter and record are no leftovers: {seen:#}"
    );
    assert_eq!(seen["mode"], "inspect");
    assert!(seen["totals"][0]["bytes"].as_u64().is_some(), "{seen:#}");

    let dry = json(&url, &["gc", "--dry-run", "-p", &pattern]);
    assert_eq!(rows(&dry).len(), 2);
    assert_eq!(dry["mode"], "dry-run");
    let dead_record = format!("redlease_leader:{{{name}:gone}}");
    assert_eq!(
        redis::<i64>(&server, &["EXISTS", &dead_record]),
        1,
        "dry run"
    );

    let done = json(&url, &["gc", "-p", &pattern]);
    assert!(rows(&done).iter().all(|r| r.3 == 1), "{done:#}");
    assert_eq!(redis::<i64>(&server, &["EXISTS", &dead_record]), 0);
    let queue: Vec<String> = redis(
        &server,
        &[
            "LRANGE",
            &format!("redisson_lock_queue:{{{name}:fair}}"),
            "0",
            "-1",
        ],
    );
    assert_eq!(queue, ["live:2"]);
    let held = format!("{name}:held");
    for key in [
        held.clone(),
        format!("redisson_lock_token:{{{held}}}"),
        format!("redlease_leader:{{{held}}}"),
    ] {
        assert_eq!(redis::<i64>(&server, &["EXISTS", &key]), 1, "{key}");
    }
    // Collected: a second run finds nothing to remove, and says so.
    let again = output(redlease(&url).args(["gc", "-p", &pattern]), LIMIT);
    let text = stdout(&again);
    assert!(text.contains("0 leftover key(s)"), "{text}");
    assert!(text.contains("0 entries removed"), "{text}");
}

#[test]
fn issue_40_gc_walks_every_master_of_a_cluster() {
    let cluster = cluster();
    // Names on different masters (their slots spread by the hash tag).
    let names: Vec<String> = (0..6).map(|i| unique(&format!("gc-cluster-{i}"))).collect();
    for name in &names {
        plant(
            &|args: &[&str]| {
                on_master::<redis::Value>(cluster, args[1], args);
            },
            name,
        );
    }
    let done = json(&cluster.url(), &["gc", "-p", "*gc-cluster-*"]);
    let removed: Vec<_> = rows(&done).into_iter().filter(|r| r.3 == 1).collect();
    assert_eq!(removed.len(), 2 * names.len(), "{done:#}");
    let nodes: std::collections::BTreeSet<&str> = done["leftovers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["node"].as_str())
        .collect();
    assert!(nodes.len() > 1, "found on one master only: {done:#}");
}
