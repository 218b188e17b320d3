//! The Redis layout and messages must match Redisson's `RLock` exactly (see
//! `shared/reference/redisson.md`, section 1), so that Java and Rust
//! services exclude each other on one key.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, acquired_soon_after, channel_of, client, client_with_watchdog, eventually,
    listen_once, pttl, spawn_timed, subscribers, unique,
};

/// A Redisson client's owner field: `<client-uuid>:<thread-id>`.
const JAVA_FIELD: &str = "5f0c7a43-9b1e-4c55-8f1f-0d6c2e1f9a77:87";

/// A held lock is a hash with one field `<client-id>:<n>` = hold count 1,
/// with the watchdog lease (30 s by default) as its PEXPIRE.
#[tokio::test]
async fn layout_is_a_hash_with_owner_field_and_count() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("layout");
    let g = c.lock(&name).try_lock().await.unwrap();
    let mut conn = server.connection();
    let kind: String = redis::cmd("TYPE").arg(&name).query(&mut conn).unwrap();
    assert_eq!(kind, "hash");
    let fields: HashMap<String, String> =
        redis::cmd("HGETALL").arg(&name).query(&mut conn).unwrap();
    assert_eq!(fields.len(), 1);
    let (field, count) = fields.into_iter().next().unwrap();
    assert_eq!(count, "1");
    assert_eq!(field, g.owner());
    let (id, n) = field.rsplit_once(':').unwrap();
    assert_eq!(id, c.id());
    assert_eq!(
        id.len(),
        36,
        "client id should be a UUID like Redisson's: {id}"
    );
    n.parse::<u64>().unwrap();
    let ttl = pttl(server, &name);
    assert!(ttl > 29_000 && ttl <= 30_000, "pttl {ttl}");
    g.unlock().await.unwrap();
}

/// Unlock publishes the integer 0 on `redisson_lock__channel:{name}`, with
/// the braces left out when the name already has a hash tag.
#[tokio::test]
async fn unlock_publishes_zero_on_redisson_channel() {
    let c = client().await;
    for (name, channel) in [
        (unique("chan"), None),
        (format!("{{{}}}:tagged", unique("chan")), Some(())),
    ] {
        let expected = match channel {
            None => format!("redisson_lock__channel:{{{name}}}"),
            Some(()) => format!("redisson_lock__channel:{name}"),
        };
        let listener = listen_once(RedisServer::shared(), expected.clone());
        let g = c.lock(&name).try_lock().await.unwrap();
        g.unlock().await.unwrap();
        let (got_channel, payload) = listener.await.unwrap();
        assert_eq!(got_channel, expected);
        assert_eq!(payload, "0");
    }
}

/// A lock held by a Redisson client (written with the raw commands its
/// acquire script runs) makes redlease busy, and a Redisson-style release
/// (decrement, delete, publish 0) frees it for redlease.
#[tokio::test]
async fn redisson_holder_excludes_redlease() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("java-holds");
    let mut conn = server.connection();
    // Redisson re-entered twice: count 2.
    for _ in 0..2 {
        redis::pipe()
            .cmd("HINCRBY")
            .arg(&name)
            .arg(JAVA_FIELD)
            .arg(1)
            .cmd("PEXPIRE")
            .arg(&name)
            .arg(30_000)
            .exec(&mut conn)
            .unwrap();
    }
    let err = c
        .lock(&name)
        .try_lock_for(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(err.is_busy(), "{err:?}");
    // First Redisson unlock: count 2 -> 1, still held.
    let left: i64 = redis::cmd("HINCRBY")
        .arg(&name)
        .arg(JAVA_FIELD)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(left, 1);
    assert!(c.lock(&name).try_lock().await.unwrap_err().is_busy());
    // Second: count 0 -> delete and publish, as Redisson's unlock script
    // does; a waiter asleep on the channel takes the lock at once (#12: it
    // was given 5 s, which it waited out and then took the lock, message
    // or not).
    let waiter = spawn_timed(c.lock(&name), Duration::from_secs(5));
    let subscribed = eventually(Duration::from_secs(2), || {
        subscribers(server, &channel_of(&name)) == 1
    })
    .await;
    assert!(subscribed.is_some(), "the waiter did not subscribe");
    let left: i64 = redis::cmd("HINCRBY")
        .arg(&name)
        .arg(JAVA_FIELD)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(left, 0);
    let released = Instant::now();
    redis::pipe()
        .cmd("DEL")
        .arg(&name)
        .cmd("PUBLISH")
        .arg(format!("redisson_lock__channel:{{{name}}}"))
        .arg(0)
        .exec(&mut conn)
        .unwrap();
    let g = acquired_soon_after(waiter, released).await;
    g.unlock().await.unwrap();
}

/// While redlease holds a lock, Redisson's acquire logic (take it if the
/// key is absent or has our field, else report PTTL) refuses, and the
/// remaining TTL it would report is the lease.
#[tokio::test]
async fn redlease_holder_excludes_redisson() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("rust-holds");
    let g = c
        .lock(&name)
        .lease(Duration::from_secs(10))
        .try_lock()
        .await
        .unwrap();
    let mut conn = server.connection();
    let exists: bool = redis::cmd("EXISTS").arg(&name).query(&mut conn).unwrap();
    let java_holds: bool = redis::cmd("HEXISTS")
        .arg(&name)
        .arg(JAVA_FIELD)
        .query(&mut conn)
        .unwrap();
    assert!(exists && !java_holds, "Redisson would acquire");
    let ttl = pttl(server, &name);
    assert!(ttl > 9_000 && ttl <= 10_000, "pttl {ttl}");
    g.unlock().await.unwrap();
    let exists: bool = redis::cmd("EXISTS").arg(&name).query(&mut conn).unwrap();
    assert!(!exists, "Redisson would still see the lock");
}

/// Redisson's `forceUnlock` (DEL + publish) on a redlease lock is seen by
/// the watchdog, and the guard is told.
#[tokio::test]
async fn redisson_force_unlock_is_reported_lost() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(server, Duration::from_millis(300)).await;
    let name = unique("force");
    let g = c.lock(&name).try_lock().await.unwrap();
    redis::pipe()
        .cmd("DEL")
        .arg(&name)
        .cmd("PUBLISH")
        .arg(format!("redisson_lock__channel:{{{name}}}"))
        .arg(0)
        .exec(&mut server.connection())
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), g.lost())
        .await
        .unwrap();
    assert_eq!(reason, redlease::LostReason::OwnerChanged);
}
