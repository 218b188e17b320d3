//! `redlease unlock --force`: wakes waiters, asks first, removes only locks,
//! and cleans fair queues.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, eventually, output, redis, redlease, stderr, stdout, unique, wait,
};

const LIMIT: Duration = Duration::from_secs(15);

/// Plants a lock held by a Redisson-style owner for `ms`.
fn plant(server: &RedisServer, key: &str, ms: u64) {
    redis::<i64>(
        server,
        &["HSET", key, "8743c9c0-0795-4907-87fd-6c719a6cb586:12", "2"],
    );
    redis::<i64>(server, &["PEXPIRE", key, &ms.to_string()]);
}

/// A `redlease run` waiting for a lock held for 20 s proceeds at once when
/// the lock is force-unlocked: the release message woke it.
#[test]
fn force_unlock_wakes_a_waiter() {
    let server = RedisServer::shared();
    let key = unique("unlock:wake");
    plant(server, &key, 20_000);
    let mut waiter = redlease(&server.url())
        .args(["run", "--key", &key, "--wait", "15s", "--", "true"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // It has tried once and waits on the channel: the server counts its
    // subscription (#12: a 500 ms sleep stood in for this; a waiter not yet
    // subscribed by then found the lock gone at its retry, message or not).
    let channel = format!("redisson_lock__channel:{{{key}}}");
    eventually(LIMIT, "the waiter to subscribe", || {
        redis::<(String, i64)>(server, &["PUBSUB", "NUMSUB", &channel]).1 == 1
    });
    assert!(
        waiter.try_wait().unwrap().is_none(),
        "the waiter gave up early"
    );
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", &key, "--yes"]),
        LIMIT,
    );
    let unlocked = Instant::now();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("removed lock {key:?}")), "{text}");
    assert!(
        text.contains("owner 8743c9c0-0795-4907-87fd-6c719a6cb586:12  count 2"),
        "{text}"
    );
    assert!(text.contains("ttl "), "{text}");
    assert!(
        text.contains(&format!(
            "published unlock on redisson_lock__channel:{{{key}}}"
        )),
        "{text}"
    );
    assert_eq!(wait(&mut waiter, LIMIT).code(), Some(0));
    assert!(
        unlocked.elapsed() < Duration::from_secs(2),
        "{:?}",
        unlocked.elapsed()
    );
}

#[test]
fn without_yes_and_without_a_terminal_it_refuses() {
    let server = RedisServer::shared();
    let key = unique("unlock:refuse");
    plant(server, &key, 20_000);
    // `redlease` closes stdin (Stdio::null): no terminal, no answer.
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("refusing to force-unlock"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("count 2"),
        "shows what it would remove: {}",
        stderr(&out)
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    // And --force is required.
    let out = output(
        redlease(&server.url()).args(["unlock", &key, "--yes"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
}

#[test]
fn keys_that_are_not_locks_are_left_alone_unless_asked() {
    let server = RedisServer::shared();
    let key = unique("unlock:string");
    // A semaphore's permits, a latch's count: a string integer, no lock.
    redis::<String>(server, &["SET", &key, "7"]);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("holds a string integer (a semaphore's permits"),
        "{}",
        stderr(&out)
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", "--any-type", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("string key, not a lock"),
        "{}",
        stdout(&out)
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
    // Nothing left: nothing to remove.
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
}

/// A lock of the string layout (a `SET NX` string holding its owner, as
/// `run --layout string`, redis-py or rslock keep it) is a lock: removed
/// without --any-type, its owner shown, its waiters woken (#27).
#[test]
fn issue_27_a_string_layout_lock_is_removed_without_any_type() {
    let server = RedisServer::shared();
    let key = unique("unlock:string-layout");
    let owner = "3f1c9a52-6d0e-4b8f-a1c2-9e7d5b4a3c21:1";
    redis::<String>(server, &["SET", &key, owner, "NX", "PX", "20000"]);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("removed lock (string layout) {key:?} (ttl ")),
        "{text}"
    );
    assert!(text.contains(&format!("  owner {owner}\n")), "{text}");
    assert!(
        text.contains(&format!(
            "published unlock on redisson_lock__channel:{{{key}}}"
        )),
        "{text}"
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
    // Asked without --yes, it shows the same lock before refusing.
    redis::<String>(server, &["SET", &key, owner, "NX", "PX", "20000"]);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains(&format!("found lock (string layout) {key:?}")) && text.contains(owner),
        "{text}"
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    redis::<i64>(server, &["DEL", &key]);
}

/// #40: a string without an expiry is no lock (every lock has one): it
/// needs --any-type, as other types do.
#[test]
fn issue_40_a_string_without_expiry_needs_any_type() {
    let server = RedisServer::shared();
    let key = unique("unlock:string-no-ttl");
    redis::<String>(server, &["SET", &key, "cached page"]);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("no expiry") && text.contains("--any-type"),
        "{text}"
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", "--any-type", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
}

/// Gone waiters leave the fair queue and its deadlines; live ones stay.
#[test]
fn stale_fair_queue_entries_are_removed() {
    let server = RedisServer::shared();
    let key = unique("unlock:fair");
    let queue = format!("redisson_lock_queue:{{{key}}}");
    let timeout = format!("redisson_lock_timeout:{{{key}}}");
    plant(server, &key, 20_000);
    redis::<i64>(
        server,
        &["RPUSH", &queue, "gone:1", "alive:2", "nodeadline:3"],
    );
    redis::<i64>(
        server,
        &[
            "ZADD",
            &timeout,
            "1000",
            "gone:1",
            "99999999999999",
            "alive:2",
            "2000",
            "zsetonly:4",
        ],
    );
    let out = output(
        redlease(&server.url()).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("removed 3 gone waiter(s)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        redis::<Vec<String>>(server, &["LRANGE", &queue, "0", "-1"]),
        ["alive:2"]
    );
    assert_eq!(
        redis::<Vec<String>>(server, &["ZRANGE", &timeout, "0", "-1"]),
        ["alive:2"]
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
}

/// The library call behind the command deletes only locks (hashes and
/// string-layout locks), whatever the caller checked before (the key may
/// change in between).
#[tokio::test]
async fn admin_force_unlock_leaves_other_types_alone() {
    let server = RedisServer::shared();
    let key = unique("unlock:admin");
    redis::<String>(server, &["SET", &key, "7"]);
    let client = redlease::Client::connect(&server.url()).await.unwrap();
    let state = redlease::admin::force_unlock(&client, &key).await.unwrap();
    assert_eq!((state.key_type.as_str(), state.removed), ("string", false));
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    let state = redlease::admin::force_unlock_any_type(&client, &key)
        .await
        .unwrap();
    assert!(state.removed);
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
    // A lock hash goes, and says what it held.
    plant(server, &key, 20_000);
    let state = redlease::admin::force_unlock(&client, &key).await.unwrap();
    assert!(state.removed && state.is_lock());
    assert_eq!(state.holders[0].count(), Some(2));
    assert!((1..=20_000).contains(&state.pttl_ms), "{}", state.pttl_ms);
}

/// A lock that changed hands between the look an operator confirmed and
/// the removal stays with its new holder; unchanged, it is removed.
#[tokio::test]
async fn a_lock_taken_over_since_it_was_read_is_not_removed() {
    let server = RedisServer::shared();
    let key = unique("unlock:changed");
    redis::<i64>(server, &["HSET", &key, "old-owner:1", "1"]);
    let client = redlease::Client::connect(&server.url()).await.unwrap();
    let seen = redlease::admin::lock_state(&client, &key).await.unwrap();
    // Released and taken by a live holder while the prompt was open.
    redis::<i64>(server, &["DEL", &key]);
    redis::<i64>(server, &["HSET", &key, "new-owner:1", "1"]);
    let state = redlease::admin::force_unlock_if_unchanged(&client, &seen, false)
        .await
        .unwrap();
    assert!(state.changed && !state.removed);
    assert_eq!(state.holders[0].field, "new-owner:1");
    assert_eq!(redis::<i64>(server, &["HEXISTS", &key, "new-owner:1"]), 1);
    // Re-entered by the same owner (count 1 → 2) is the same lock.
    let seen = redlease::admin::lock_state(&client, &key).await.unwrap();
    redis::<i64>(server, &["HINCRBY", &key, "new-owner:1", "1"]);
    let state = redlease::admin::force_unlock_if_unchanged(&client, &seen, false)
        .await
        .unwrap();
    assert!(state.removed && !state.changed);
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
}
