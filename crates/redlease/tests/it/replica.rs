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
    // The master streams writes to the replica once a write is acknowledged
    // *and* readable there: a replica that has just loaded its first copy
    // gets the stream only after its first acknowledgement, and until the
    // backlog exists `WAIT` may count it without any data flowing.
    let (mut conn, mut on_replica) = (master.connection(), replica.connection());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = redis::cmd("INCR").arg("probe").query(&mut conn).unwrap();
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(100).query(&mut conn).unwrap();
        let seen: Option<i64> = redis::cmd("GET")
            .arg("probe")
            .query(&mut on_replica)
            .unwrap();
        if acked == 1 && seen == Some(n) {
            break;
        }
        assert!(Instant::now() < deadline, "the replica did not sync");
        std::thread::sleep(Duration::from_millis(20));
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
    // Cancelled while waiting for the replica: withdrawn in the background,
    // behind the WAIT on its connection, long before its lease would end.
    let lease = Duration::from_secs(5);
    let cancelled = tokio::time::timeout(wait / 3, c.lock(&name).lease(lease).try_lock()).await;
    assert!(
        cancelled.is_err(),
        "the acquire did not wait for the replica"
    );
    assert!(
        exists(&master, &name),
        "the acquire did not reach the master"
    );
    let gone = eventually(wait * 2, || !exists(&master, &name)).await;
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
    assert!(err.to_string().contains("of 2 replicas"), "{err}");
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

/// An acquire cancelled while it waits behind another acquire's `WAIT` (the
/// replica is stopped, so each `WAIT` blocks its connection for the whole
/// wait) is withdrawn behind it on that connection, not overtaken by its own
/// withdrawal on another one, which would leave a lock nobody holds.
#[tokio::test]
async fn an_acquire_cancelled_behind_a_wait_leaves_no_lock() {
    let (master, replica) = master_and_replica();
    let wait = Duration::from_millis(400);
    let c = redlease::Client::builder(&master.url())
        .watchdog_timeout(Duration::from_secs(5))
        .require_replicas(1, wait)
        .build()
        .await
        .unwrap();
    replica.pause();
    let (first, second) = (unique("replica-first"), unique("replica-second"));
    let blocking = tokio::spawn({
        let lock = c.lock(&first);
        async move { lock.try_lock().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let lock = c.lock(&second);
    let cancelled = tokio::time::timeout(Duration::from_millis(100), lock.try_lock()).await;
    assert!(cancelled.is_err(), "the second acquire was not held up");
    assert!(blocking.await.unwrap().unwrap_err().is_not_replicated());
    // Its acquire runs after the first WAIT, then its withdrawal; well
    // before the 5 s lease would free a leaked lock.
    let gone = eventually(Duration::from_secs(2), || {
        !exists(&master, &second) && !exists(&master, &first)
    })
    .await;
    assert!(
        gone.is_some(),
        "left behind: {first} {}, {second} {}",
        exists(&master, &first),
        exists(&master, &second)
    );
    // And nothing shows up later, when everything queued has run.
    tokio::time::sleep(wait * 2).await;
    assert!(!exists(&master, &second));
    replica.resume();
}

/// Replicas that acknowledge only after a fixed lease has run out count as
/// not acknowledged: the lock may be someone else's by then.
#[tokio::test]
async fn an_acknowledgement_after_the_lease_is_refused() {
    let (master, replica) = master_and_replica();
    let c = redlease::Client::builder(&master.url())
        .require_replicas(1, Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let name = unique("replica-late");
    replica.pause();
    let resume = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        replica.resume();
        replica
    });
    let err = c
        .lock(&name)
        .lease(Duration::from_millis(100))
        .try_lock()
        .await
        .unwrap_err();
    assert!(err.is_not_replicated(), "{err:?}");
    assert!(err.to_string().contains("after its lease ran out"), "{err}");
    assert!(!exists(&master, &name));
    drop(resume.await.unwrap());
}

/// The layout reader reads only, so it works on a replica: a lock held on
/// the master, and a fair waiter queued there, are read back from the
/// replica with their owner, fencing token and queue (#12).
#[tokio::test]
async fn layout_reader_reads_a_replica() {
    let (master, replica) = master_and_replica();
    let c = client_with_watchdog(&master, Duration::from_secs(30)).await;
    let name = unique("replica-read");
    let guard = c.fair_lock(&name).try_lock().await.unwrap();
    // A waiter that gave up would leave the queue: queue one by hand, as a
    // waiter that died would have left itself.
    let mut conn = master.connection();
    redis::cmd("RPUSH")
        .arg(redlease::layout::queue_key(&name))
        .arg("gone:1")
        .exec(&mut conn)
        .unwrap();
    // WAIT on the connection that wrote last: the replica has then applied
    // that write and everything before it (the lock's). A replica still in
    // its first sync acknowledges nothing yet, which under load lasts a
    // while.
    let acked = (0..20).any(|_| {
        redis::cmd("WAIT")
            .arg(1)
            .arg(500)
            .query::<i64>(&mut conn)
            .unwrap()
            >= 1
    });
    assert!(acked, "the replica never acknowledged the writes");
    let reader = redlease::Client::connect(&replica.url()).await.unwrap();
    let states = redlease::admin::read(&reader, std::slice::from_ref(&name))
        .await
        .unwrap();
    let state = &states[0];
    assert_eq!(state.kind(), redlease::layout::StateKind::Lock);
    assert_eq!(state.owners()[0].field, guard.owner());
    assert_eq!(state.lock_token(), Some(guard.fencing_token().unwrap()));
    assert!(state.pttl_ms > 0);
    assert_eq!(state.queue_len, 1);
    assert!(
        state.waiters[0].stale,
        "a waiter without a deadline is gone"
    );
    let scan = redlease::admin::scan(&reader, "test:replica-read:*", 0, 1000)
        .await
        .unwrap();
    assert_eq!(scan.cursor, 0);
    assert_eq!(
        scan.locks.iter().map(|s| &s.name).collect::<Vec<_>>(),
        [&name]
    );
    guard.unlock().await.unwrap();
}
