//! Cancel safety: dropped futures and dropped guards leave no lock behind.

use std::time::Duration;

use crate::support::{
    RedisServer, assert_acquire_was_released, channel_of, client, client_with,
    client_with_watchdog, evalsha_calls, eventually, exists, subscribers, take_and_release, unique,
};

const SOON: Duration = Duration::from_secs(2);

/// `lock()` on a free lock, cancelled after a varying number of polls:
/// some cancels land while the acquire is in Redis (it succeeds there with
/// nobody to receive the guard). Every time, the lock is free again at once.
#[tokio::test]
async fn acquire_cancelled_in_flight_is_released() {
    let server = RedisServer::shared();
    let (c, other) = (client().await, client().await);
    let name = unique("cancel-sent");
    let mut cancelled = 0;
    for polls in 0..40 {
        let lock = c.lock(&name);
        // Boxed rather than pinned on the stack, so that it can be dropped
        // before the check below.
        let mut acquire = Box::pin(lock.lock());
        let mut guard = None;
        for _ in 0..=polls {
            tokio::select! {
                biased;
                g = &mut acquire => {
                    guard = Some(g.unwrap());
                    break;
                }
                _ = std::future::ready(()) => {}
            }
            tokio::task::yield_now().await;
        }
        match guard {
            Some(g) => g.unlock().await.unwrap(),
            None => cancelled += 1,
        }
        drop(acquire);
        assert!(
            eventually(SOON, || !exists(server, &name)).await.is_some(),
            "lock left behind after {polls} polls"
        );
        take_and_release(other.lock(&name)).await;
    }
    assert!(cancelled > 0, "no acquire was cancelled");
}

/// `lock()` cancelled while waiting on a held lock leaves nothing behind:
/// when the holder releases, the key is gone at once. Also when the cancel
/// lands just after the release woke the waiter, with its acquire on the
/// way to Redis: when that acquire runs, the release sent behind it frees
/// the lock, and the waiter's subscription is gone.
#[tokio::test]
async fn cancelled_waiting_lock_leaves_nothing() {
    // Its own server: it is frozen, and its EVALSHAs are counted.
    let server = RedisServer::start();
    let (a, b) = (
        redlease::Client::connect(&server.url()).await.unwrap(),
        redlease::Client::connect(&server.url()).await.unwrap(),
    );
    let name = unique("cancel-wait");
    let held = a.lock(&name).try_lock().await.unwrap();
    for _ in 0..5 {
        let r = tokio::time::timeout(Duration::from_millis(60), b.lock(&name).lock()).await;
        assert!(r.is_err(), "acquired a held lock");
    }
    held.unlock().await.unwrap();
    assert!(!exists(&server, &name));
    take_and_release(b.lock(&name)).await;

    // #12: while the lock is held a waiter's attempts all find it busy, so
    // there is nothing for a cancel to leave behind, and the part above
    // could not fail. Here the cancel lands while the woken waiter's
    // acquire is in flight.
    let held = a.lock(&name).try_lock().await.unwrap();
    let calls = evalsha_calls(&server);
    let lock = b.lock(&name);
    let mut waiting = Box::pin(lock.lock());
    // Asleep on the channel: subscribed, and its attempt and the retry
    // that follows the subscription have run.
    tokio::select! {
        _ = &mut waiting => panic!("acquired a held lock"),
        _ = async {
            while subscribers(&server, &channel_of(&name)) == 0
                || evalsha_calls(&server) < calls + 2
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } => {}
    }
    held.unlock().await.unwrap();
    // The release message is on its way to the waiter, which cannot have
    // run since (this task has not yielded): frozen now, the server takes
    // the woken acquire but does not run it.
    let before = evalsha_calls(&server);
    server.pause();
    let r = tokio::time::timeout(Duration::from_millis(100), &mut waiting).await;
    assert!(r.is_err(), "acquired from a frozen server");
    drop(waiting);
    server.resume();
    assert_acquire_was_released(&server, &name, before).await;
    assert!(
        eventually(SOON, || subscribers(&server, &channel_of(&name)) == 0)
            .await
            .is_some(),
        "subscription left behind"
    );
}

/// An acquire cancelled while its request sits in a frozen server: when the
/// server resumes the acquire runs, and the release sent behind it frees
/// the lock at once rather than after the 30 s lease.
#[tokio::test]
async fn cancelled_in_flight_acquire_is_released() {
    let server = RedisServer::start();
    let c = client_with(
        &server,
        redlease::DEFAULT_WATCHDOG_TIMEOUT,
        Duration::from_secs(5),
    )
    .await;
    let name = unique("cancel-in-flight");
    take_and_release(c.lock(&name)).await;
    let before = evalsha_calls(&server);
    server.pause();
    let r = tokio::time::timeout(Duration::from_millis(100), c.lock(&name).lock()).await;
    assert!(r.is_err());
    server.resume();
    assert_acquire_was_released(&server, &name, before).await;
}

/// Dropping the guard without `unlock` releases in the background: a waiter
/// gets the lock long before the lease would have run out.
#[tokio::test]
async fn dropped_guard_releases_in_background() {
    let (a, b) = (client().await, client().await);
    let name = unique("drop");
    let held = a.lock(&name).try_lock().await.unwrap();
    let waiter = {
        let lock = b.lock(&name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(5)).await })
    };
    drop(held);
    let g = tokio::time::timeout(SOON, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
}

/// A cancelled `unlock()` still releases (the guard's Drop takes over).
#[tokio::test]
async fn cancelled_unlock_still_releases() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("cancel-unlock");
    let g = c.lock(&name).try_lock().await.unwrap();
    {
        // Poll the unlock once (sending the release), then drop it.
        let unlock = g.unlock();
        tokio::pin!(unlock);
        tokio::select! {
            biased;
            _ = &mut unlock => panic!("unlock finished without waiting for redis"),
            _ = std::future::ready(()) => {}
        }
    }
    assert!(eventually(SOON, || !exists(server, &name)).await.is_some());
    // Dropped before its first poll: only the guard's Drop can release.
    let g = c.lock(&name).try_lock().await.unwrap();
    drop(g.unlock());
    assert!(eventually(SOON, || !exists(server, &name)).await.is_some());
}

/// A task aborted while holding a guard, and a task that panics while
/// holding one, both release the lock.
#[tokio::test]
async fn aborted_and_panicking_holders_release() {
    let server = RedisServer::shared();
    let c = client().await;
    let (aborted, panicked) = (unique("abort"), unique("panic"));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let lock = c.lock(&aborted);
    let task = tokio::spawn(async move {
        let _g = lock.try_lock().await.unwrap();
        tx.send(()).unwrap();
        std::future::pending::<()>().await;
    });
    rx.await.unwrap();
    assert!(exists(server, &aborted));
    task.abort();
    assert!(
        eventually(SOON, || !exists(server, &aborted))
            .await
            .is_some()
    );

    let lock = c.lock(&panicked);
    let task = tokio::spawn(async move {
        let _g = lock.try_lock().await.unwrap();
        panic!("boom while holding the lock");
    });
    assert!(task.await.unwrap_err().is_panic());
    assert!(
        eventually(SOON, || !exists(server, &panicked))
            .await
            .is_some()
    );
}

/// Dropped on a thread with no runtime, a guard neither panics nor blocks;
/// it stops the watchdog, so the lock expires after one timeout.
#[tokio::test]
async fn drop_without_runtime_stops_renewal() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(300);
    let c = client_with_watchdog(server, timeout).await;
    let name = unique("no-runtime");
    let g = c.lock(&name).try_lock().await.unwrap();
    std::thread::spawn(move || drop(g)).join().unwrap();
    assert!(exists(server, &name), "released without a runtime?");
    let gone = eventually(Duration::from_secs(2), || !exists(server, &name)).await;
    let gone = gone.expect("lock still renewed after its guard was dropped");
    assert!(gone <= timeout + Duration::from_millis(50), "{gone:?}");
}
