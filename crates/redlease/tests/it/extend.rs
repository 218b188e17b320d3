//! `LockGuard::extend` (#16): a fixed lease set to a new length from now,
//! owner-checked, with the guard's own expiry following; refused for a lock
//! that is gone or lost, and for watchdog guards.

use std::time::{Duration, Instant};

use redlease::LostReason;

use crate::support::{RedisServer, client, pttl, unique};

/// Extended before it ends, a fixed lease outlives its first length: Redis
/// and the guard agree on the new end, other owners stay out, and `lost()`
/// resolves at the new end, not the old one.
#[tokio::test]
async fn extending_before_the_end_moves_redis_and_the_guard() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("extend-longer");
    let g = a
        .lock(&name)
        .lease(Duration::from_millis(300))
        .try_lock()
        .await
        .unwrap();
    let first_end = g.expires_at().unwrap();
    let extended_at = Instant::now();
    g.extend(Duration::from_millis(900)).await.unwrap();
    let end = g.expires_at().unwrap();
    assert!(end > first_end + Duration::from_millis(500), "{end:?}");
    assert!(end <= Instant::now() + Duration::from_millis(900));
    let ttl = pttl(server, &name);
    assert!(ttl > 800 && ttl <= 900, "pttl {ttl}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!g.is_lost(), "lost at the old end");
    assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
    assert_eq!(g.lost().await, LostReason::Expired);
    let lasted = extended_at.elapsed();
    assert!(
        lasted >= Duration::from_millis(850) && lasted < Duration::from_millis(1500),
        "lost after {lasted:?}"
    );
    // Redis let it go too: another owner gets it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.lock(&name)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

/// A shorter lease shortens both ends.
#[tokio::test]
async fn extending_to_a_shorter_lease_shortens_it() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("extend-shorter");
    let g = c
        .lock(&name)
        .lease(Duration::from_secs(10))
        .try_lock()
        .await
        .unwrap();
    g.extend(Duration::from_millis(200)).await.unwrap();
    assert!(pttl(server, &name) <= 200);
    let started = Instant::now();
    assert_eq!(g.lost().await, LostReason::Expired);
    assert!(started.elapsed() < Duration::from_millis(400));
}

/// Past its end, or deleted behind the guard, the lock is not ours: not
/// owner at once, without touching the next holder's lock, and `lost()`
/// says so.
#[tokio::test]
async fn extending_a_lock_that_is_gone_is_not_owner() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("extend-gone");
    let g = a
        .lock(&name)
        .lease(Duration::from_millis(100))
        .try_lock()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let next = b
        .lock(&name)
        .lease(Duration::from_secs(5))
        .try_lock()
        .await
        .unwrap();
    let e = g.extend(Duration::from_secs(30)).await.unwrap_err();
    assert!(e.is_not_owner(), "{e}");
    let ttl = pttl(server, &name);
    assert!(ttl <= 5000, "the next holder's lock was extended: {ttl}");
    next.unlock().await.unwrap();

    let name = unique("extend-deleted");
    let g = a
        .lock(&name)
        .lease(Duration::from_secs(10))
        .try_lock()
        .await
        .unwrap();
    redis::cmd("DEL")
        .arg(&name)
        .exec(&mut server.connection())
        .unwrap();
    let e = g.extend(Duration::from_secs(30)).await.unwrap_err();
    assert!(e.is_not_owner(), "{e}");
    assert_eq!(g.lost().await, LostReason::OwnerChanged);
    assert!(g.is_lost());
    assert!(!crate::support::exists(server, &name), "extend revived it");
}

/// A watchdog guard renews itself: `extend` refuses it, as it refuses a
/// lease under 1 ms; neither sends anything or changes the lock.
#[tokio::test]
async fn extend_refuses_watchdog_guards_and_bad_leases() {
    let c = client().await;
    let name = unique("extend-refused");
    let g = c.lock(&name).try_lock().await.unwrap();
    assert_eq!(g.expires_at(), None);
    let e = g.extend(Duration::from_secs(5)).await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("watchdog"), "{e}");
    g.unlock().await.unwrap();
    let g = c
        .lock(&name)
        .lease(Duration::from_secs(5))
        .try_lock()
        .await
        .unwrap();
    let e = g.extend(Duration::ZERO).await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    g.unlock().await.unwrap();
}

/// A read hold's extension moves its timeout key too (another reader's
/// release reads it), and guards that re-entered one hold in a scope share
/// the new end, which their re-entries and releases keep.
#[tokio::test]
async fn read_holds_and_reentered_guards_follow_the_extension() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("extend-read");
    let read = c
        .read_write_lock(&name)
        .read()
        .lease(Duration::from_millis(500))
        .try_lock()
        .await
        .unwrap();
    read.extend(Duration::from_secs(5)).await.unwrap();
    let timeout = format!("{{{name}}}:{}:rwlock_timeout:1", read.owner());
    let ttl = pttl(server, &timeout);
    assert!(ttl > 4000, "timeout key pttl {ttl}");
    read.unlock().await.unwrap();

    let name = unique("extend-scope");
    let lock = c.lock(&name).lease(Duration::from_millis(500));
    redlease::scope(async {
        let outer = lock.try_lock().await.unwrap();
        let inner = lock.try_lock().await.unwrap();
        inner.extend(Duration::from_secs(5)).await.unwrap();
        assert_eq!(outer.expires_at(), inner.expires_at());
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!outer.is_lost());
        // Releasing a re-entered guard restores the extended lease, not
        // the first one: the key never ends before what the guards say.
        inner.unlock().await.unwrap();
        let ttl = pttl(server, &name);
        assert!(ttl > 4000, "pttl {ttl} after the re-entered release");
        let again = lock.try_lock().await.unwrap();
        let ttl = pttl(server, &name);
        assert!(ttl > 4500, "pttl {ttl} after a re-entry");
        again.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
}
