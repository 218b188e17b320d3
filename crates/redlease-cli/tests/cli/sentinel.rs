//! The CLI under Redis Sentinel (#14): `run`, `inspect`, `unlock --force`
//! and `demo` with a `redis-sentinel://` URL, on the master the sentinels
//! name, before and after a failover.

use std::time::Duration;

use redlease_testkit::SentinelGroup;

use crate::support::{output, redis, redlease, stderr, stdout, unique};

const LIMIT: Duration = Duration::from_secs(30);

/// `redlease run --key KEY` through `url`: the fencing token it was given.
fn run_for_token(url: &str, key: &str) -> u64 {
    let out = output(
        redlease(url).args([
            "run",
            "--key",
            key,
            "--",
            "sh",
            "-c",
            "echo $REDLEASE_FENCING_TOKEN",
        ]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().parse().unwrap()
}

#[test]
fn run_inspect_unlock_and_demo_through_the_sentinels() {
    let mut group = SentinelGroup::start(1, 3);
    let url = group.url();
    let key = unique("sentinel:run");
    let first = run_for_token(&url, &key);
    let counter = format!("redisson_lock_token:{{{key}}}");
    assert!(redis::<Option<String>>(group.master(), &["GET", &counter]).is_some());

    // After a failover: on the new master, with a larger token.
    group.failover();
    let second = run_for_token(&url, &key);
    assert!(second > first, "{second} after {first}");

    // A stuck lock on the new master: inspect finds it, unlock removes it.
    let stuck = unique("sentinel:stuck");
    redis::<i64>(
        group.master(),
        &[
            "HSET",
            &stuck,
            "8743c9c0-0795-4907-87fd-6c719a6cb586:1",
            "1",
        ],
    );
    let out = output(redlease(&url).args(["inspect", "--pattern", &stuck]), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&stuck), "{}", stdout(&out));
    let out = output(
        redlease(&url).args(["unlock", "--force", "--yes", &stuck]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(group.master(), &["EXISTS", &stuck]), 0);

    let out = output(
        redlease(&url)
            .args(["demo", "--stock", "10", "--clients", "2", "--workers", "4"])
            .args(["--watchdog-ms", "450", "--slow-ms", "0", "--json"]),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["locked"]["sold"], 10, "{summary:#}");
    assert_eq!(summary["locked"]["exact"], true, "{summary:#}");
}

#[test]
fn an_unknown_master_name_says_so() {
    let group = SentinelGroup::start(0, 1);
    let url = group
        .url()
        .replace(&format!("#{}", group.master_name()), "#nosuch");
    let out = output(
        redlease(&url).args(["run", "--key", "k", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("nosuch"), "{}", stderr(&out));
}
