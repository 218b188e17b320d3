use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, Timed, acquired_soon_after, acquired_within, channel_of, client, evalsha_calls,
    eventually, spawn_timed, subscribers, unique,
};

/// A Redisson client's owner field.
const JAVA_FIELD: &str = "5f0c7a43-9b1e-4c55-8f1f-0d6c2e1f9a77:87";

/// Holds `name` as a Redisson client would (raw commands), with `lease_ms`.
fn hold_raw(server: &RedisServer, name: &str, lease_ms: u64) {
    redis::pipe()
        .cmd("HINCRBY")
        .arg(name)
        .arg(JAVA_FIELD)
        .arg(1)
        .cmd("PEXPIRE")
        .arg(name)
        .arg(lease_ms)
        .exec(&mut server.connection())
        .unwrap();
}

/// Spawns a `try_lock_for(wait)` and returns when it has subscribed (so it
/// is asleep on the release channel).
async fn spawn_waiter(
    server: &RedisServer,
    lock: redlease::Lock,
    wait: Duration,
    expected_subscribers: i64,
) -> tokio::task::JoinHandle<Timed> {
    let channel = channel_of(lock.name());
    let task = spawn_timed(lock, wait);
    let subscribed = eventually(Duration::from_secs(2), || {
        subscribers(server, &channel) >= expected_subscribers
    })
    .await;
    assert!(
        subscribed.is_some(),
        "waiter did not subscribe to {channel}"
    );
    task
}

/// A waiter sleeping on a 30 s watchdog lock wakes as soon as the holder
/// unlocks, not when the lease ends.
#[tokio::test]
async fn waiter_wakes_on_unlock() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("wake-unlock");
    let held = a.lock(&name).try_lock().await.unwrap();
    let waiter = spawn_waiter(server, b.lock(&name), Duration::from_secs(20), 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let g = acquired_soon_after(waiter, released).await;
    g.unlock().await.unwrap();
}

/// A holder that dies sends no message; the waiter still takes the lock
/// within a few milliseconds of its expiry, not a whole lease later.
#[tokio::test]
async fn waiter_takes_expired_lock_without_message() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("wake-expiry");
    let lease = Duration::from_millis(400);
    hold_raw(server, &name, lease.as_millis() as u64);
    let held_at = Instant::now();
    let (g, at) = spawn_waiter(server, c.lock(&name), Duration::from_secs(5), 1)
        .await
        .await
        .unwrap();
    let after = at - held_at;
    assert!(
        after >= lease - Duration::from_millis(20),
        "took an unexpired lock: {after:?}"
    );
    assert!(after < lease + Duration::from_millis(60), "{after:?}");
    g.unwrap().unlock().await.unwrap();
}

/// Waiters that acquire, time out or are cancelled all leave the channel:
/// the client unsubscribes once its last waiter is gone.
#[tokio::test]
async fn no_subscription_left_behind() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("wake-leak");
    let channel = channel_of(&name);
    let held = a.lock(&name).try_lock().await.unwrap();
    // Timed out waiters.
    let mut timed_out = Vec::new();
    for _ in 0..5 {
        let lock = b.lock(&name);
        timed_out.push(tokio::spawn(async move {
            lock.try_lock_for(Duration::from_millis(300)).await
        }));
    }
    // Cancelled waiters.
    let mut cancelled = Vec::new();
    for _ in 0..5 {
        let lock = b.lock(&name);
        cancelled.push(tokio::spawn(async move { lock.lock().await }));
    }
    assert!(
        eventually(Duration::from_secs(2), || subscribers(server, &channel)
            == 1)
        .await
        .is_some()
    );
    for t in cancelled {
        t.abort();
    }
    for t in timed_out {
        assert!(t.await.unwrap().unwrap_err().is_busy());
    }
    let gone = eventually(Duration::from_secs(2), || {
        subscribers(server, &channel) == 0
    })
    .await;
    assert!(
        gone.is_some(),
        "subscription left after waiters timed out or were cancelled"
    );
    // Waiters that acquire.
    let waiter = spawn_waiter(server, b.lock(&name), Duration::from_secs(5), 1).await;
    held.unlock().await.unwrap();
    waiter.await.unwrap().0.unwrap().unlock().await.unwrap();
    let gone = eventually(Duration::from_secs(2), || {
        subscribers(server, &channel) == 0
    })
    .await;
    assert!(
        gone.is_some(),
        "subscription left after the waiter acquired"
    );
}

/// Many quick hand-offs between tasks on two clients, in a free-for-all
/// and in strict turns: a lost wake-up would leave a waiter asleep for the
/// 30 s lease and blow the time limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lost_wakeups_in_rapid_handoffs() {
    const ROUNDS: usize = 60;
    let name = unique("wake-rapid");
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let c = client().await;
        for _ in 0..3 {
            let (lock, done) = (c.lock(&name), done.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let g = lock.lock().await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                    g.unlock().await.unwrap();
                }
            }));
        }
    }
    let all = async {
        for t in tasks {
            t.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(20), all)
        .await
        .unwrap_or_else(|_| panic!("stuck after {} acquisitions", done.load(Ordering::Relaxed)));
    assert_eq!(done.load(Ordering::Relaxed), 6 * ROUNDS);

    // Two clients, one task each, taking strict turns: each asks for the
    // lock only once the other holds it, so every release is the only one
    // that can wake the waiter. Holds of 0 to 3 ms land the release before
    // the waiter's subscription, between its retry and its sleep, or while
    // it sleeps (#12: above, the next release woke a waiter whose wake-up
    // was lost, so the test passed without the retry after subscribing and
    // without keeping a wake-up for the next sleeper).
    let name = unique("wake-turns");
    let (turns, _) = tokio::sync::watch::channel(0usize);
    let turns = Arc::new(turns);
    let mut tasks = Vec::new();
    for me in 0..2 {
        let (lock, turns) = (client().await.lock(&name), turns.clone());
        tasks.push(tokio::spawn(async move {
            let mut seen = turns.subscribe();
            for round in 0..ROUNDS {
                // Acquisition number 2 * round + me is ours: wait for the
                // other's, except for the very first.
                let mine = 2 * round + me;
                if mine > 0 {
                    seen.wait_for(|n| *n >= mine).await.unwrap();
                }
                let g = lock.lock().await.unwrap();
                turns.send_modify(|n| *n += 1);
                tokio::time::sleep(Duration::from_millis(round as u64 % 4)).await;
                g.unlock().await.unwrap();
            }
        }));
    }
    let all = async {
        for t in tasks {
            t.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(20), all)
        .await
        .unwrap_or_else(|_| panic!("stuck after {} turns", *turns.borrow()));
    assert_eq!(*turns.borrow(), 2 * ROUNDS);
}

/// One release wakes one waiter per client: with 40 waiters in one client,
/// a hand-off costs the same few commands as with one.
#[tokio::test]
async fn one_release_wakes_one_local_waiter() {
    let server = RedisServer::start();
    let holder = redlease::Client::connect(&server.url()).await.unwrap();
    let waiters = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("wake-herd");
    let mut held = holder.lock(&name).try_lock().await.unwrap();
    let acquired = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..40 {
        let (lock, acquired, tx) = (waiters.lock(&name), acquired.clone(), tx.clone());
        tokio::spawn(async move {
            let g = lock.lock().await.unwrap();
            acquired.fetch_add(1, Ordering::SeqCst);
            tx.send(g).unwrap();
        });
    }
    // Let every waiter make its attempts and go to sleep.
    assert!(
        eventually(Duration::from_secs(2), || subscribers(
            &server,
            &channel_of(&name)
        ) == 1)
        .await
        .is_some()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    for round in 0..3 {
        let before = evalsha_calls(&server);
        held.unlock().await.unwrap();
        held = tokio::time::timeout(Duration::from_secs(2), rx.recv())
            .await
            .unwrap()
            .unwrap();
        // Give any other woken waiter time to send its attempt.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let calls = evalsha_calls(&server) - before;
        // The release, and one attempt by the one woken waiter.
        assert!(
            calls <= 3,
            "round {round}: {calls} commands for one hand-off with 40 waiters"
        );
        assert_eq!(acquired.load(Ordering::SeqCst), round + 1);
    }
    drop(held);
}

/// Redis restarted empty while waiters on two clients wait: they
/// reconnect, re-subscribe, and all still acquire in turn, and the
/// subscriptions are gone afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_survive_redis_restart() {
    let mut server = RedisServer::start();
    let holder = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("wake-restart");
    let channel = channel_of(&name);
    let held = holder.lock(&name).try_lock().await.unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let c = redlease::Client::connect(&server.url()).await.unwrap();
        for _ in 0..3 {
            let (lock, done) = (c.lock(&name), done.clone());
            tasks.push(tokio::spawn(async move {
                let g = lock.lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
                g.unlock().await.unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }));
        }
    }
    assert!(
        eventually(Duration::from_secs(2), || subscribers(&server, &channel)
            == 2)
        .await
        .is_some()
    );
    let server = tokio::task::spawn_blocking(move || {
        server.restart();
        server
    })
    .await
    .unwrap();
    let all = async {
        for t in tasks {
            t.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .unwrap_or_else(|_| panic!("only {} of 6 waiters acquired", done.load(Ordering::SeqCst)));
    let gone = eventually(Duration::from_secs(2), || {
        subscribers(&server, &channel) == 0
    })
    .await;
    assert!(gone.is_some(), "subscriptions left after the restart");
    // The holder's lock vanished with the data.
    assert!(held.unlock().await.unwrap_err().is_not_owner());
}

/// A `SUBSCRIBE` whose reply comes after the response timeout (it ran on
/// the server all the same): the client retries it, the waiters stop
/// polling and sleep once it works, and the channel is still unsubscribed
/// when the last waiter leaves. (Review of #3: the subscription leaked and
/// waiters polled for as long as the lock stayed contended.)
#[tokio::test]
async fn late_subscribe_reply_is_retried_and_cleaned_up() {
    // Its own server: the test counts every EVALSHA the server sees.
    let server = &RedisServer::start();
    let (arm, port) =
        crate::support::subscribe_delaying_proxy(server.port(), Duration::from_millis(300)).await;
    let holder = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("wake-late-subscribe");
    let channel = channel_of(&name);
    let held = holder.lock(&name).try_lock().await.unwrap();
    let w = redlease::Client::builder(&format!("redis://127.0.0.1:{port}"))
        .response_timeout(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    arm.store(true, Ordering::SeqCst);
    let first = spawn_timed(w.lock(&name), Duration::from_secs(10));
    // The late SUBSCRIBE runs at 300 ms, the retry 500 ms after the failure.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let second = spawn_timed(w.lock(&name), Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = evalsha_calls(server);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let polls = evalsha_calls(server) - before;
    assert!(
        polls <= 2,
        "{polls} attempts in 1 s by two waiters on a held lock: still polling"
    );
    let released = Instant::now();
    held.unlock().await.unwrap();
    acquired_soon_after(first, released)
        .await
        .unlock()
        .await
        .unwrap();
    second.await.unwrap().0.unwrap().unlock().await.unwrap();
    let gone = eventually(Duration::from_secs(3), || {
        subscribers(server, &channel) == 0
    })
    .await;
    assert!(gone.is_some(), "server-side subscription leaked");
}

/// A release that happens while the waiter's `SUBSCRIBE` is still on its way
/// (its message is missed) is caught by the retry that follows the
/// subscription, not a whole lease later.
#[tokio::test]
async fn release_during_subscribe_is_caught_by_the_retry() {
    let server = RedisServer::shared();
    let (arm, port) =
        crate::support::subscribe_delaying_proxy(server.port(), Duration::from_millis(300)).await;
    let holder = client().await;
    let name = unique("wake-during-subscribe");
    let held = holder.lock(&name).try_lock().await.unwrap();
    let w = redlease::Client::connect(&format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap();
    arm.store(true, Ordering::SeqCst);
    let waiter = spawn_timed(w.lock(&name), Duration::from_secs(10));
    // The first attempt has failed and the SUBSCRIBE is held back.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    let released = Instant::now();
    held.unlock().await.unwrap();
    let g = acquired_within(waiter, released, Duration::from_secs(1)).await;
    g.unlock().await.unwrap();
}

/// Issue #37: a waiter whose subscription is gone and cannot be made again
/// yet (here its user lost the right to the channel, which cuts its
/// connection; in a Cluster, the slot's new master not known yet) polls
/// until it is back, so the release is heard within a poll step, not when
/// the holder's 30 s lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_37_a_waiter_without_its_subscription_polls_until_it_is_back() {
    let server = RedisServer::start();
    let acl = |args: &[&str]| {
        let () = redis::cmd("ACL")
            .arg(args)
            .query(&mut server.connection())
            .unwrap();
    };
    acl(&["SETUSER", "waiter", "on", ">pw", "~*", "&*", "+@all"]);
    let holder = redlease::Client::connect(&server.url()).await.unwrap();
    let url = format!("redis://waiter:pw@127.0.0.1:{}", server.port());
    let waiting = redlease::Client::connect(&url).await.unwrap();
    let name = unique("wake-unsubscribed");
    let held = holder.lock(&name).try_lock().await.unwrap();
    let waiter = spawn_waiter(&server, waiting.lock(&name), Duration::from_secs(20), 1).await;
    // No channel for the waiter's user: Redis cuts its connection, and the
    // subscriptions made again after it are refused.
    acl(&["SETUSER", "waiter", "resetchannels"]);
    let unsubscribed = eventually(Duration::from_secs(2), || {
        subscribers(&server, &channel_of(&name)) == 0
    })
    .await;
    assert!(unsubscribed.is_some(), "the waiter is still subscribed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let g = acquired_within(waiter, released, Duration::from_secs(1)).await;
    // Its release publishes on the channel.
    acl(&["SETUSER", "waiter", "allchannels"]);
    g.unlock().await.unwrap();
}
