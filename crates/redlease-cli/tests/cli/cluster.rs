//! `run`, `inspect` and `unlock --force` against a Redis Cluster given as
//! `redis-cluster://` (one shared 3-master cluster; every test has its own
//! keys).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    RedisCluster, cluster, eventually, listeners, on_master, output, redlease, stderr, stdout,
    temp_dir, unique, wait,
};

const LIMIT: Duration = Duration::from_secs(15);

/// Plants a lock on `key` held by a Redisson-style owner for 20 s, on the
/// master of its slot.
fn plant(cluster: &RedisCluster, key: &str) {
    on_master::<i64>(cluster, key, &["HSET", key, "8743c9c0-0795:12", "1"]);
    on_master::<i64>(cluster, key, &["PEXPIRE", key, "20000"]);
}

/// Waits until a `redlease run --wait` on `key` listens for its release:
/// it has found the lock busy and waits for the message.
fn waiting(cluster: &RedisCluster, key: &str, child: &mut Child) {
    let channel = format!("redisson_lock__channel:{{{key}}}");
    eventually(LIMIT, "the waiter to subscribe", || {
        listeners(cluster, &channel) > 0
    });
    assert!(child.try_wait().unwrap().is_none(), "the waiter gave up");
}

/// `sh -c` script: writes the fencing token to `token`, then holds until
/// the file `go` exists.
fn hold_until(token: &Path, go: &Path) -> String {
    format!(
        "echo $REDLEASE_FENCING_TOKEN > {t}; while [ ! -e {g} ]; do sleep 0.01; done",
        t = token.display(),
        g = go.display()
    )
}

fn token(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.trim().parse().unwrap_or_else(|_| panic!("{text:?}"))
}

/// A second `run --wait` on a key held by a running `run` waits, and runs
/// as soon as the first ends, with a larger fencing token; the lock lives
/// on the master of the key's slot.
#[test]
fn run_holds_the_lock_while_the_command_runs() {
    let cluster = cluster();
    let key = unique("cl:run");
    let dir = temp_dir("cluster-run");
    let (first, second, go) = (dir.join("first"), dir.join("second"), dir.join("go"));
    let mut holder = redlease(&cluster.url())
        .args([
            "run",
            "--key",
            &key,
            "--",
            "sh",
            "-c",
            &hold_until(&first, &go),
        ])
        .spawn()
        .unwrap();
    eventually(LIMIT, "the first command to start", || first.exists());
    assert_eq!(on_master::<i64>(cluster, &key, &["HLEN", &key]), 1);

    let script = format!("echo $REDLEASE_FENCING_TOKEN > {}", second.display());
    let mut waiter = redlease(&cluster.url())
        .args([
            "run", "--key", &key, "--wait", "10s", "--", "sh", "-c", &script,
        ])
        .spawn()
        .unwrap();
    waiting(cluster, &key, &mut waiter);
    assert!(!second.exists(), "ran while the lock was held");

    std::fs::write(&go, "").unwrap();
    assert!(wait(&mut holder, LIMIT).success());
    let released = Instant::now();
    assert!(wait(&mut waiter, LIMIT).success());
    // Woken by the release message, not by polling out the 10 s.
    assert!(
        released.elapsed() < Duration::from_secs(2),
        "{:?}",
        released.elapsed()
    );
    assert!(token(&second) > token(&first));
    assert_eq!(on_master::<i64>(cluster, &key, &["EXISTS", &key]), 0);
}

/// A lock held elsewhere makes `run --wait` give up with 75 after the wait.
#[test]
fn busy_lock_exits_with_the_conflict_code() {
    let cluster = cluster();
    let key = unique("cl:busy");
    plant(cluster, &key);
    let started = Instant::now();
    let out = output(
        redlease(&cluster.url()).args(["run", "--key", &key, "--wait", "300ms", "--", "true"]),
        LIMIT,
    );
    let waited = started.elapsed();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(stderr(&out).contains("busy"), "{}", stderr(&out));
    assert_eq!(on_master::<i64>(cluster, &key, &["HLEN", &key]), 1);
}

/// Locks on every master: `--json` says which master holds each one, the
/// table has a NODE column, and a scan cut short by `--limit` and resumed
/// with `--cursor` finds every lock exactly once.
#[test]
fn inspect_names_each_locks_node() {
    let cluster = cluster();
    let prefix = unique("cl:inspect");
    let masters = cluster.masters().count();
    let mut keys = Vec::new();
    // Three locks per master, so that pages span masters.
    for i in 0.. {
        let key = format!("{prefix}:{i}");
        let node = cluster.master_for_key(&key).address();
        if keys.iter().filter(|(_, n)| *n == node).count() < 3 {
            plant(cluster, &key);
            keys.push((key, node));
        }
        if keys.len() == 3 * masters {
            break;
        }
    }
    let pattern = format!("{prefix}:*");
    let inspect = |extra: &[&str]| {
        let out = output(
            redlease(&cluster.url())
                .args(["inspect", "--pattern", &pattern])
                .args(extra),
            LIMIT,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };

    let table = inspect(&[]);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.trim_end().ends_with("NODE"), "{table}");
    for (key, node) in &keys {
        let row = table.lines().find(|l| l.starts_with(&format!("{key} ")));
        assert!(
            row.is_some_and(|r| r.trim_end().ends_with(node.as_str())),
            "{key}: {table}"
        );
    }

    let mut found = Vec::new();
    let mut cursor = 0;
    for call in 0.. {
        assert!(call < 200, "the scan never completed");
        let text = inspect(&["--limit", "2", "--json", "--cursor", &cursor.to_string()]);
        let report: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        for lock in report["locks"].as_array().unwrap() {
            let key = lock["key"].as_str().unwrap();
            let (_, node) = keys.iter().find(|(k, _)| k == key).expect(key);
            assert_eq!(lock["node"], node.as_str(), "{key}");
            found.push(key.to_owned());
        }
        cursor = report["cursor"].as_u64().unwrap();
        if cursor == 0 {
            assert!(call > 0, "one call looked at every key");
            break;
        }
    }
    let once: BTreeSet<&String> = found.iter().collect();
    assert_eq!(
        once.len(),
        found.len(),
        "a lock was listed twice: {found:?}"
    );
    let all: BTreeSet<&String> = keys.iter().map(|(k, _)| k).collect();
    assert_eq!(once, all);
}

/// `unlock --force --yes` removes a lock another client holds, and a
/// `run --wait` on it proceeds at once: the unlock's sharded message woke
/// it.
#[test]
fn force_unlock_wakes_a_waiter() {
    let cluster = cluster();
    let key = unique("cl:unlock");
    plant(cluster, &key);
    let mut waiter = redlease(&cluster.url())
        .args(["run", "--key", &key, "--wait", "15s", "--", "true"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    waiting(cluster, &key, &mut waiter);
    let out = output(
        redlease(&cluster.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    let unlocked = Instant::now();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("removed lock {key:?}")), "{text}");
    assert!(
        text.contains("published unlock on redisson_lock__channel:{"),
        "{text}"
    );
    assert_eq!(wait(&mut waiter, LIMIT).code(), Some(0));
    assert!(
        unlocked.elapsed() < Duration::from_secs(2),
        "{:?}",
        unlocked.elapsed()
    );
}
