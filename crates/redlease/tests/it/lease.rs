use std::time::{Duration, Instant};

use redlease::LostReason;

use crate::support::{RedisServer, client, client_with_watchdog, exists, pttl, unique};

/// A fixed lease expires by itself; another client then gets the lock, the
/// first guard's `lost()` says the lease expired, and its unlock fails as
/// not-owner without touching the new holder's lock.
#[tokio::test]
async fn fixed_lease_expires_and_hands_over() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("fixed");
    let first = a
        .lock(&name)
        .lease(Duration::from_millis(300))
        .try_lock()
        .await
        .unwrap();
    let ttl = pttl(server, &name);
    assert!(ttl > 200 && ttl <= 300, "pttl {ttl}");
    let start = Instant::now();
    let second = b
        .lock(&name)
        .try_lock_for(Duration::from_secs(3))
        .await
        .unwrap();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(450),
        "{took:?}"
    );
    assert!(first.is_lost());
    assert_eq!(first.lost().await, LostReason::Expired);
    assert!(!first.is_held().await.unwrap());
    let err = first.unlock().await.unwrap_err();
    assert!(err.is_not_owner(), "{err:?}");
    assert!(
        second.is_held().await.unwrap(),
        "non-owner unlock removed the new holder's lock"
    );
    second.unlock().await.unwrap();
    assert!(!exists(server, &name));
}

/// A fixed lease is never renewed: the TTL only goes down.
#[tokio::test]
async fn fixed_lease_is_not_renewed() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(&server, Duration::from_millis(90)).await;
    let name = unique("fixed-not-renewed");
    let g = c
        .lock(&name)
        .lease(Duration::from_millis(600))
        .try_lock()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let ttl = pttl(&server, &name);
    assert!(
        ttl > 0 && ttl <= 360,
        "fixed lease was extended: pttl {ttl}"
    );
    g.unlock().await.unwrap();
}

/// The watchdog keeps a lock alive for many times its timeout, and the
/// guard still owns it at the end.
#[tokio::test]
async fn watchdog_keeps_lock_past_timeout() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(300);
    let (a, b) = (
        client_with_watchdog(&server, timeout).await,
        client_with_watchdog(&server, timeout).await,
    );
    let name = unique("watchdog");
    let g = a.lock(&name).try_lock().await.unwrap();
    assert!(pttl(&server, &name) > 200);
    let start = Instant::now();
    while start.elapsed() < timeout * 5 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let ttl = pttl(&server, &name);
        assert!(ttl > 0, "lock expired at {:?}", start.elapsed());
        assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
    }
    assert!(!g.is_lost());
    assert!(g.is_held().await.unwrap());
    g.unlock().await.unwrap();
    assert!(!exists(&server, &name));
}

/// After unlock the watchdog stops: a new holder with a fixed lease is not
/// extended by the old holder's client.
#[tokio::test]
async fn unlock_stops_renewal() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(150);
    let a = client_with_watchdog(&server, timeout).await;
    let name = unique("stop-renewal");
    for _ in 0..20 {
        a.lock(&name)
            .try_lock()
            .await
            .unwrap()
            .unlock()
            .await
            .unwrap();
    }
    let g = a
        .lock(&name)
        .lease(Duration::from_millis(400))
        .try_lock()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ttl = pttl(&server, &name);
    assert!(ttl > 0 && ttl <= 100, "pttl {ttl}");
    drop(g);
}

/// Deleting the key behind the holder's back fires `lost()` with
/// `OwnerChanged` within about one renewal period.
#[tokio::test]
async fn lost_fires_when_key_deleted() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(&server, Duration::from_millis(300)).await;
    let name = unique("lost-deleted");
    let g = c.lock(&name).try_lock().await.unwrap();
    redis::cmd("DEL")
        .arg(&name)
        .exec(&mut server.connection())
        .unwrap();
    let start = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(2), g.lost())
        .await
        .unwrap();
    assert_eq!(reason, LostReason::OwnerChanged);
    assert!(
        start.elapsed() < Duration::from_millis(250),
        "{:?}",
        start.elapsed()
    );
    assert!(g.is_lost());
    assert!(g.unlock().await.unwrap_err().is_not_owner());
}

/// Replacing the holder's field with another owner's fires `lost()`, and
/// the old guard's unlock leaves the new owner's field in place.
#[tokio::test]
async fn lost_fires_when_owner_replaced() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(&server, Duration::from_millis(300)).await;
    let name = unique("lost-replaced");
    let g = c.lock(&name).try_lock().await.unwrap();
    let mut conn = server.connection();
    redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg(&name)
        .cmd("HSET")
        .arg(&name)
        .arg("someone-else:1")
        .arg(1)
        .cmd("PEXPIRE")
        .arg(&name)
        .arg(5000)
        .exec(&mut conn)
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), g.lost())
        .await
        .unwrap();
    assert_eq!(reason, LostReason::OwnerChanged);
    assert!(g.unlock().await.unwrap_err().is_not_owner());
    let other: Option<i64> = redis::cmd("HGET")
        .arg(&name)
        .arg("someone-else:1")
        .query(&mut conn)
        .unwrap();
    assert_eq!(other, Some(1));
}

/// With Redis frozen (SIGSTOP), renewals cannot succeed; `lost()` fires
/// with `RenewalFailed` once the lease could have expired by the client's
/// clock, not before, and not much later.
#[tokio::test]
async fn lost_fires_when_renewals_fail_until_lease_could_expire() {
    let server = RedisServer::start();
    let timeout = Duration::from_millis(600);
    let c = redlease::Client::builder(&server.url())
        .watchdog_timeout(timeout)
        .response_timeout(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let name = unique("lost-frozen");
    let acquired_before = Instant::now();
    let g = c.lock(&name).try_lock().await.unwrap();
    // Let one renewal succeed so the deadline comes from a renewal.
    tokio::time::sleep(Duration::from_millis(250)).await;
    server.pause();
    let paused_at = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(3), g.lost()).await;
    let at = paused_at.elapsed();
    server.resume();
    assert_eq!(reason.unwrap(), LostReason::RenewalFailed);
    // The last successful renewal was sent at most one period before the
    // pause, so the deadline lies between timeout - period and timeout
    // after the pause.
    assert!(
        at >= timeout - timeout / 3 - Duration::from_millis(10),
        "lost too early: {at:?}"
    );
    assert!(
        at <= timeout + Duration::from_millis(100),
        "lost too late: {at:?}"
    );
    assert!(acquired_before.elapsed() >= timeout);
    drop(g);
}

/// Redis restarted empty (no persistence) while a lock is held: the
/// watchdog reconnects, finds the key gone, and the holder is told within
/// one timeout; the client then locks again normally.
#[tokio::test]
async fn lost_fires_when_redis_restarts_empty() {
    let mut server = RedisServer::start();
    let timeout = Duration::from_millis(600);
    let c = client_with_watchdog(&server, timeout).await;
    let name = unique("restart-empty");
    let g = c.lock(&name).try_lock().await.unwrap();
    server.restart();
    let restarted = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(3), g.lost())
        .await
        .unwrap();
    assert!(
        matches!(reason, LostReason::OwnerChanged | LostReason::RenewalFailed),
        "{reason:?}"
    );
    assert!(
        restarted.elapsed() <= timeout + Duration::from_millis(100),
        "{:?}",
        restarted.elapsed()
    );
    drop(g);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut again = c.lock(&name).try_lock().await;
    while again.is_err() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        again = c.lock(&name).try_lock().await;
    }
    again.unwrap().unlock().await.unwrap();
}
