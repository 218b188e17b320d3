use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, ServerOptions, client_with_watchdog, eventually, exists, unique,
};

/// A master and a replica of it whose link is up.
fn master_and_replica() -> (RedisServer, RedisServer) {
    let master = RedisServer::start();
    let replica = RedisServer::start_with(ServerOptions {
        replica_of: Some(master.port()),
        ..ServerOptions::default()
    });
    // The link is up, and the master streams writes to the replica, once a
    // write is acknowledged (a replica that has just loaded its first copy
    // gets the stream only after its first acknowledgement).
    let mut conn = master.connection();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let _: () = redis::cmd("SET")
            .arg("probe")
            .arg(1)
            .query(&mut conn)
            .unwrap();
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(100).query(&mut conn).unwrap();
        if acked == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the replica did not sync");
    }
    (master, replica)
}

/// With `require_replicas(1, ..)`, an acquire returns once the replica has
/// the lock and its fencing counter. With the replica stopped, acquires
/// (one attempt, or waiting) fail as not replicated after the wait, and
/// leave no lock on the master; meanwhile a lock already held keeps being
/// renewed, because the `WAIT`s block a connection of their own; and an
/// acquire cancelled during its `WAIT` is withdrawn. Once the replica is
/// back, acquires work again.
#[tokio::test]
async fn acquire_waits_for_replicas_and_releases_without_them() {
    let (master, replica) = master_and_replica();
    let wait = Duration::from_millis(300);
    let timeout = Duration::from_millis(300);
    let c = redlease::Client::builder(&master.url())
        .watchdog_timeout(timeout)
        .require_replicas(1, wait)
        .build()
        .await
        .unwrap();

    let held_name = unique("replica-held");
    let held = c.lock(&held_name).try_lock().await.unwrap();
    // WAIT returned: the replica has both keys now, no polling needed.
    assert!(exists(&replica, &held_name));
    assert!(exists(
        &replica,
        &format!("redisson_lock_token:{{{held_name}}}")
    ));

    replica.pause();
    let name = unique("replica-paused");
    let started = Instant::now();
    let err = c.lock(&name).try_lock().await.unwrap_err();
    let took = started.elapsed();
    assert!(err.is_not_replicated(), "{err:?}");
    assert_eq!(err.key(), Some(name.as_str()));
    assert!(took >= wait && took < wait * 3, "took {took:?}");
    assert!(!exists(&master, &name), "the unacknowledged lock was kept");
    let err = c
        .fair_lock(&name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.is_not_replicated(), "{err:?}");
    assert!(!exists(&master, &name));
    // Cancelled while waiting for the replica: withdrawn in the background.
    let cancelled = tokio::time::timeout(wait / 3, c.lock(&name).try_lock()).await;
    assert!(
        cancelled.is_err(),
        "the acquire did not wait for the replica"
    );
    assert!(
        exists(&master, &name),
        "the acquire did not reach the master"
    );
    // Sooner than the lease (300 ms) would free it.
    let gone = eventually(Duration::from_millis(100), || !exists(&master, &name)).await;
    assert!(gone.is_some(), "a cancelled acquire left its lock behind");
    // Well past the held lock's timeout, with WAITs blocking all along.
    for _ in 0..2 {
        assert!(
            c.lock(&name)
                .try_lock()
                .await
                .unwrap_err()
                .is_not_replicated()
        );
    }
    assert!(!held.is_lost());
    assert!(held.is_held().await.unwrap());
    // Another client, without the requirement, is not stopped by it.
    let other = client_with_watchdog(&master, timeout).await;
    other
        .lock(&name)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();

    replica.resume();
    let guard = c
        .lock(&name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(exists(&replica, &name));
    guard.unlock().await.unwrap();
    held.unlock().await.unwrap();
}

/// Requiring more replicas than there are fails every acquire, naming the
/// counts; bad settings are rejected when the client is built.
#[tokio::test]
async fn too_few_replicas_and_bad_settings() {
    let (master, _replica) = master_and_replica();
    let c = redlease::Client::builder(&master.url())
        .require_replicas(2, Duration::from_millis(50))
        .build()
        .await
        .unwrap();
    let name = unique("replica-too-few");
    let err = c.lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_not_replicated(), "{err:?}");
    assert!(err.to_string().contains("only 1 of 2 replicas"), "{err}");
    assert!(!exists(&master, &name));

    for (count, wait) in [(0, Duration::from_millis(50)), (1, Duration::ZERO)] {
        let err = redlease::Client::builder(&master.url())
            .require_replicas(count, wait)
            .build()
            .await
            .unwrap_err();
        assert!(err.is_invalid_argument(), "{err:?}");
    }
}
