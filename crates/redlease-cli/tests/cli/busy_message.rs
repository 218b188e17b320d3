//! A busy lock's message says how long `run` waited as people write
//! durations (`waited 302ms`, `waited 1.5s`), not as Rust's `Debug`
//! prints them (`waited 302.368643ms`) (issue #18).

use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::{RedisServer, eventually, output, redis, redlease, stderr, unique, wait};

const LIMIT: Duration = Duration::from_secs(15);

/// `run --key KEY -- sleep 30`, once it holds the lock.
fn holder(server: &RedisServer, key: &str) -> Child {
    let child = redlease(&server.url())
        .args(["run", "--key", key, "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redlease");
    eventually(LIMIT, "the holder's lock", || {
        redis::<i64>(server, &["EXISTS", key]) == 1
    });
    child
}

/// The wait in `lock "KEY" is busy (waited WAIT)`.
fn waited(server: &RedisServer, key: &str, wait_for: &str) -> String {
    let out = output(
        redlease(&server.url()).args(["run", "--key", key, "--wait", wait_for, "--", "true"]),
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{err}");
    let prefix = format!("redlease: lock {key:?} is busy (waited ");
    let rest = err.strip_prefix(&prefix).unwrap_or_else(|| panic!("{err}"));
    rest.trim_end()
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("{err}"))
        .to_owned()
}

#[test]
fn busy_waits_are_written_as_people_write_them() {
    let server = RedisServer::start();
    let key = unique("busy");
    let mut child = holder(&server, &key);
    // Whole milliseconds under a second, no fraction.
    let ms = waited(&server, &key, "300ms");
    let n: u64 = ms
        .strip_suffix("ms")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{ms}"));
    assert!((300..1_000).contains(&n), "{ms}");
    // One decimal of seconds from a second on.
    let s = waited(&server, &key, "1500ms");
    let tenths = s.strip_suffix('s').unwrap_or_else(|| panic!("{s}"));
    assert!(
        tenths
            .split_once('.')
            .is_some_and(|(whole, tenth)| whole.parse::<u64>().is_ok() && tenth.len() == 1)
            || tenths.parse::<u64>().is_ok(),
        "{s}"
    );
    let _ = child.kill();
    wait(&mut child, LIMIT);
}
