//! Holders that die without releasing (SIGKILL) on either side, and each
//! side's watchdog keeping its locks from the other: a killed holder's lock
//! is taken over by the other side's waiter within one lease.

use std::time::Duration;

use super::driver::{Java, Options, VERSIONS, now_us};
use super::side::{after, lock_channel, spawn_woken};
use crate::process::{child_says, spawn_child};
use crate::support::{RedisServer, client_with_watchdog, eventually, subscribers, unique};

/// The lease on both sides here (Redisson's `lockWatchdogTimeout`,
/// redlease's watchdog timeout): short, so a takeover comes quickly.
const LEASE: Duration = Duration::from_secs(2);

/// A takeover comes no later than one lease after the kill, plus this for
/// a loaded machine.
const SLACK: Duration = Duration::from_millis(1500);

/// A driver of its own (it will be killed) with a short watchdog.
fn own_java(version: usize, batch: Option<u32>) -> Java {
    Java::start(
        VERSIONS[version],
        &Options {
            url: RedisServer::shared().url(),
            watchdog_ms: Some(LEASE.as_millis() as u64),
            watchdog_batch: batch,
            ..Options::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_java_holder_is_taken_over_by_redlease_within_one_lease_v4() {
    killed_java_holder(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_java_holder_is_taken_over_by_redlease_within_one_lease_v3() {
    killed_java_holder(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_redlease_holder_is_taken_over_by_java_within_one_lease_v4() {
    killed_redlease_holder(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_redlease_holder_is_taken_over_by_java_within_one_lease_v3() {
    killed_redlease_holder(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_watchdog_keeps_its_locks_from_the_other_side_v4() {
    watchdogs_keep_their_locks(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_watchdog_keeps_its_locks_from_the_other_side_v3() {
    watchdogs_keep_their_locks(1).await;
}

/// Java holds with its watchdog past two leases; killed, its lock expires
/// one lease after the last renewal, and a redlease waiter (which gets no
/// release message) takes it then.
async fn killed_java_holder(version: usize) {
    let java = tokio::task::spawn_blocking(move || own_java(version, None))
        .await
        .unwrap();
    let name = unique("java-killed");
    let owner = format!("{name}/a");
    assert!(
        java.call(&owner, &format!("trylock lock {name} 0 -1"))
            .await
            .bool()
    );
    tokio::time::sleep(LEASE * 2).await;
    let c = client_with_watchdog(RedisServer::shared(), LEASE).await;
    let busy = c.lock(&name).try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "Java's watchdog kept its lock: {busy}");
    let lock = c.lock(&name);
    let waiter = spawn_woken(async move { lock.try_lock_for(Duration::from_secs(15)).await });
    let killed = now_us();
    java.kill();
    let (guard, at) = waiter.await.unwrap();
    let guard = guard.expect("redlease takes over the dead JVM's lock");
    let took = Duration::from_micros(after(killed, at));
    assert!(
        took <= LEASE + SLACK,
        "redlease took over {took:?} after the kill; the lease is {LEASE:?}"
    );
    guard.unlock().await.unwrap();
}

/// redlease holds in a child process with its watchdog; killed, the lock
/// expires one lease after the last renewal, and a Java waiter takes it.
async fn killed_redlease_holder(version: usize) {
    let java = tokio::task::spawn_blocking(move || own_java(version, None))
        .await
        .unwrap();
    let server = RedisServer::shared();
    let name = unique("rust-killed");
    let owner = format!("{name}/a");
    let mut child = spawn_child(&format!(
        "hold {} {name} {}",
        server.url(),
        LEASE.as_millis()
    ));
    child_says(&mut child, "ACQUIRED").await;
    tokio::time::sleep(LEASE * 2).await;
    assert!(
        !java
            .call(&owner, &format!("trylock lock {name} 0 -1"))
            .await
            .bool(),
        "redlease's watchdog kept its lock"
    );
    let pending = java.send(&owner, &format!("trylock lock {name} 15000 -1"));
    let channel = lock_channel(&name);
    let subscribed = eventually(Duration::from_secs(10), || {
        subscribers(server, &channel) >= 1
    })
    .await;
    assert!(subscribed.is_some(), "Java's waiter never subscribed");
    let killed = now_us();
    let _ = child.kill();
    let _ = child.wait();
    let got = java.reply(pending).await;
    assert!(got.bool(), "Java takes over the killed holder's lock");
    let took = Duration::from_micros(after(killed, got.end_us));
    assert!(
        took <= LEASE + SLACK,
        "Java took over {took:?} after the kill; the lease is {LEASE:?}"
    );
    java.call(&owner, &format!("unlock lock {name}"))
        .await
        .value();
}

/// Java holds more locks than its watchdog renews in one call
/// (`lockWatchdogBatchSize`, set to 4 here), and
/// redlease holds as many with its own watchdog; after three leases every
/// lock of each side still refuses the other side.
async fn watchdogs_keep_their_locks(version: usize) {
    let java = tokio::task::spawn_blocking(move || own_java(version, Some(4)))
        .await
        .unwrap();
    let base = unique("watchdogs");
    let owner = format!("{base}/java");
    let java_names: Vec<String> = (0..10).map(|i| format!("{base}:java:{i}")).collect();
    let rust_names: Vec<String> = (0..10).map(|i| format!("{base}:rust:{i}")).collect();
    for name in &java_names {
        assert!(
            java.call(&owner, &format!("trylock lock {name} 0 -1"))
                .await
                .bool()
        );
    }
    let c = client_with_watchdog(RedisServer::shared(), LEASE).await;
    let mut guards = Vec::new();
    for name in &rust_names {
        guards.push(c.lock(name).try_lock().await.unwrap());
    }
    tokio::time::sleep(LEASE * 3).await;
    for name in &java_names {
        let busy = c.lock(name).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "Java's watchdog let {name} go: {busy}");
    }
    for name in &rust_names {
        let other = format!("{base}/other");
        assert!(
            !java
                .call(&other, &format!("trylock lock {name} 0 -1"))
                .await
                .bool(),
            "redlease's watchdog let {name} go"
        );
    }
    for guard in guards {
        assert!(!guard.is_lost());
        guard.unlock().await.unwrap();
    }
    for name in &java_names {
        java.call(&owner, &format!("unlock lock {name}"))
            .await
            .value();
    }
}
