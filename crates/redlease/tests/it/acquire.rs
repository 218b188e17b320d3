use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{RedisServer, client, unique};

/// Two clients exclude each other, and the second gets the lock once the
/// first releases it.
#[tokio::test]
async fn two_clients_exclude_each_other() {
    let (a, b) = (client().await, client().await);
    let name = unique("exclude");
    let held = a.lock(&name).try_lock().await.unwrap();
    let err = b.lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_busy(), "{err:?}");
    assert_eq!(err.key(), Some(name.as_str()));
    held.unlock().await.unwrap();
    let second = b.lock(&name).try_lock().await.unwrap();
    second.unlock().await.unwrap();
}

/// Two acquisitions through one client are two owners: the second is busy
/// (reentrancy is opt-in, not an accident of sharing a client).
#[tokio::test]
async fn one_client_two_acquisitions_exclude() {
    let c = client().await;
    let name = unique("same-client");
    let held = c.lock(&name).try_lock().await.unwrap();
    assert!(c.lock(&name).try_lock().await.unwrap_err().is_busy());
    held.unlock().await.unwrap();
}

/// `try_lock_for` gives up after the wait, not before and not much later,
/// and reports how long it waited.
#[tokio::test]
async fn busy_after_wait_with_timing_bounds() {
    let (a, b) = (client().await, client().await);
    let name = unique("busy-wait");
    let held = a.lock(&name).try_lock().await.unwrap();
    for wait in [Duration::from_millis(100), Duration::from_millis(400)] {
        let start = Instant::now();
        let err = b.lock(&name).try_lock_for(wait).await.unwrap_err();
        let took = start.elapsed();
        assert!(err.is_busy(), "{err:?}");
        assert!(took >= wait, "gave up early: {took:?} < {wait:?}");
        assert!(
            took < wait + Duration::from_millis(150),
            "gave up late: {took:?}"
        );
        let waited = err.waited().unwrap();
        assert!(
            waited >= wait && waited <= took,
            "waited {waited:?}, took {took:?}"
        );
    }
    held.unlock().await.unwrap();
}

/// A waiter in `try_lock_for` gets the lock soon after the holder releases.
#[tokio::test]
async fn waiter_acquires_after_release() {
    let (a, b) = (client().await, client().await);
    let name = unique("handoff");
    let held = a.lock(&name).try_lock().await.unwrap();
    let lock = b.lock(&name);
    let waiter = tokio::spawn(async move {
        let g = lock.try_lock_for(Duration::from_secs(5)).await?;
        let at = Instant::now();
        g.unlock().await.map(|()| at)
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let acquired = waiter.await.unwrap().unwrap();
    // Woken by the release (a waiter that had to poll would still come
    // within one 64 ms backoff step; other tests tell the two apart).
    assert!(
        acquired - released < Duration::from_millis(150),
        "{:?}",
        acquired - released
    );
}

/// `lock()` waits as long as needed: here for a holder that releases after
/// 300 ms.
#[tokio::test]
async fn lock_waits_until_released() {
    let (a, b) = (client().await, client().await);
    let name = unique("lock-waits");
    let held = a.lock(&name).try_lock().await.unwrap();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        held.unlock().await.unwrap();
    });
    let start = Instant::now();
    let g = b.lock(&name).lock().await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(290));
    releaser.await.unwrap();
    g.unlock().await.unwrap();
}

/// Many tasks on several clients do a read-modify-write on a counter in
/// Redis with a yield in the middle; under the lock no update is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lost_update_under_contention() {
    const CLIENTS: usize = 4;
    const TASKS_PER_CLIENT: usize = 8;
    const ROUNDS: usize = 15;
    let server = RedisServer::shared();
    let name = unique("counter");
    let counter_key = format!("{name}:value");
    let in_section = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let c = client().await;
        for _ in 0..TASKS_PER_CLIENT {
            let (lock, key, in_section) = (c.lock(&name), counter_key.clone(), in_section.clone());
            let redis_client = redis::Client::open(server.url()).unwrap();
            tasks.push(tokio::spawn(async move {
                let mut conn = redis_client
                    .get_multiplexed_async_connection()
                    .await
                    .unwrap();
                for _ in 0..ROUNDS {
                    let g = lock.try_lock_for(Duration::from_secs(20)).await.unwrap();
                    assert_eq!(
                        in_section.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    let v: Option<u64> = redis::cmd("GET")
                        .arg(&key)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(v.unwrap_or(0) + 1)
                        .exec_async(&mut conn)
                        .await
                        .unwrap();
                    in_section.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    g.unlock().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total: u64 = redis::cmd("GET")
        .arg(&counter_key)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(total, (CLIENTS * TASKS_PER_CLIENT * ROUNDS) as u64);
}

/// A wait too long to represent (`Duration::MAX`) means "no limit", not a
/// panic.
#[tokio::test]
async fn huge_wait_is_no_limit() {
    let (a, b) = (client().await, client().await);
    let name = unique("huge-wait");
    let held = a.lock(&name).try_lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = b.lock(&name);
        async move { lock.try_lock_for(Duration::MAX).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished());
    held.unlock().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(2), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
}
