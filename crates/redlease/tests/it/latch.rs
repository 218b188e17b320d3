//! `CountDownLatch`: Redisson's `RCountDownLatch` layout and messages,
//! waiters woken in every client, time-outs, cancel safety and bad input.

use std::time::{Duration, Instant};

use redlease::{CountDownLatch, layout};

use crate::support::{
    RedisServer, across_a_stall, client, eventually, exists, impatient_client, listen_until,
    median, publish, subscribers, unique, until_subscribed,
};

/// Redisson's `countDown` script: KEYS = [name, channel], ARGV = [0].
const JAVA_COUNT_DOWN: &str = "local v = redis.call('decr', KEYS[1]); \
    if v <= 0 then redis.call('del', KEYS[1]) end; \
    if v == 0 then redis.call('publish', KEYS[2], ARGV[1]) end;";

fn java_count_down(server: &RedisServer, name: &str) {
    redis::cmd("EVAL")
        .arg(JAVA_COUNT_DOWN)
        .arg(2)
        .arg(name)
        .arg(layout::latch_channel(name))
        .arg(0)
        .exec(&mut server.connection())
        .unwrap();
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// What a spawned waiter returns: whether the latch opened, and when.
type Timed = (Result<(), redlease::Error>, Instant);

fn spawn_waiter(latch: CountDownLatch, timeout: Duration) -> tokio::task::JoinHandle<Timed> {
    tokio::spawn(async move {
        let r = latch.wait_for(timeout).await;
        (r, Instant::now())
    })
}

/// Waits for a spawned waiter (at most 6 s) and returns when the latch
/// opened for it.
async fn opened(waiter: tokio::task::JoinHandle<Timed>) -> Instant {
    let (open, at) = tokio::time::timeout(Duration::from_secs(6), waiter)
        .await
        .expect("waiter still waiting")
        .unwrap();
    open.expect("the waiter timed out");
    at
}

/// The key is a string of the count, deleted at zero; the channel is
/// `redisson_countdownlatch__channel__{name}` (braces always added) and
/// carries `1` when armed and `0` when the latch opens or is deleted.
#[tokio::test]
async fn layout_and_messages_are_redissons() {
    let server = RedisServer::shared();
    let c = client().await;
    for name in [
        unique("latch-layout"),
        format!("{{{}}}:parts", unique("latch-layout")),
    ] {
        let channel = layout::latch_channel(&name);
        assert_eq!(
            channel,
            format!("redisson_countdownlatch__channel__{{{name}}}")
        );
        let messages = listen_until(server, channel.clone(), "end");
        let latch = c.count_down_latch(&name);
        assert_eq!(latch.count().await.unwrap(), 0, "a missing latch is open");
        assert!(latch.try_set_count(2).await.unwrap());
        assert_eq!(get(server, &name).as_deref(), Some("2"));
        assert!(!latch.try_set_count(5).await.unwrap(), "armed twice");
        assert_eq!(latch.count().await.unwrap(), 2);
        latch.count_down().await.unwrap();
        assert_eq!(get(server, &name).as_deref(), Some("1"));
        latch.count_down().await.unwrap();
        assert!(!exists(server, &name), "an open latch left its key");
        // Counting down an open latch changes and publishes nothing.
        latch.count_down().await.unwrap();
        assert!(!exists(server, &name));
        assert!(latch.try_set_count(1).await.unwrap());
        assert!(latch.delete().await.unwrap());
        assert!(!latch.delete().await.unwrap());
        assert!(!exists(server, &name));
        publish(server, &channel, "end");
        assert_eq!(messages.await.unwrap(), ["1", "0", "1", "0"], "{name}");
    }
}

/// A waiter returns true when another client counts the latch down to
/// zero, and not before; prints the median time from the last count-down
/// to the waiter's return.
#[tokio::test]
async fn wait_for_returns_when_counted_down_elsewhere() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let mut latencies = Vec::new();
    for _ in 0..12 {
        let name = unique("latch-open");
        let latch = a.count_down_latch(&name);
        assert!(latch.try_set_count(2).await.unwrap());
        let waiter = spawn_waiter(b.count_down_latch(&name), Duration::from_secs(5));
        until_subscribed(server, &layout::latch_channel(&name), 1).await;
        latch.count_down().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "returned with the count at 1");
        let counted = Instant::now();
        latch.count_down().await.unwrap();
        let latency = opened(waiter).await - counted;
        assert!(latency < Duration::from_secs(1), "{latency:?}");
        latencies.push(latency);
    }
    let p50 = median(&mut latencies);
    println!("latch wake latency p50: {p50:?}");
    assert!(p50 < Duration::from_millis(100), "{p50:?}");
}

/// A latch that stays armed: `wait_for` is busy at its timeout (#27: the
/// busy rule of every waiting call), and the count is untouched.
#[tokio::test]
async fn wait_for_times_out_busy() {
    let c = client().await;
    let latch = c.count_down_latch(unique("latch-timeout"));
    assert!(latch.try_set_count(1).await.unwrap());
    let started = Instant::now();
    let e = latch
        .wait_for(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert!(e.to_string().contains("still armed"), "{e}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(latch.count().await.unwrap(), 1);
}

/// One opening wakes every waiter, five in each of two clients, counted
/// down by a third client and by Redisson's script.
#[tokio::test]
async fn every_waiter_of_every_client_wakes() {
    let server = RedisServer::shared();
    let (a, b, c) = (client().await, client().await, client().await);
    for java in [false, true] {
        let name = unique("latch-all");
        let channel = layout::latch_channel(&name);
        assert!(a.count_down_latch(&name).try_set_count(1).await.unwrap());
        let mut waiters = Vec::new();
        for i in 0..10 {
            let client = if i % 2 == 0 { &b } else { &c };
            waiters.push(spawn_waiter(
                client.count_down_latch(&name),
                Duration::from_secs(5),
            ));
        }
        until_subscribed(server, &channel, 2).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(waiters.iter().all(|w| !w.is_finished()));
        let counted = Instant::now();
        if java {
            java_count_down(server, &name);
        } else {
            a.count_down_latch(&name).count_down().await.unwrap();
        }
        for waiter in waiters {
            let after = opened(waiter).await - counted;
            assert!(after < Duration::from_secs(1), "woken {after:?} later");
        }
        let gone = eventually(Duration::from_secs(2), || {
            subscribers(server, &channel) == 0
        });
        assert!(gone.await.is_some(), "subscriptions left on {channel}");
    }
}

/// A waiter that starts on an open latch (never armed, or counted down
/// already) returns true at once, without subscribing.
#[tokio::test]
async fn waiter_on_an_open_latch_returns_at_once() {
    let c = client().await;
    let name = unique("latch-open-already");
    let latch = c.count_down_latch(&name);
    for _ in 0..2 {
        let started = Instant::now();
        latch.wait_for(Duration::from_secs(5)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), latch.wait())
            .await
            .expect("wait() on an open latch waited")
            .unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_millis(500), "{took:?}");
        assert!(latch.try_set_count(1).await.unwrap());
        latch.count_down().await.unwrap();
    }
}

/// Waits dropped by time-outs of 0 to 20 ms leave no subscription behind
/// and change nothing; a count-down dropped after its first poll still
/// counts down (its script needs a `SCRIPT LOAD` and a second call, the
/// scripts having been flushed).
#[tokio::test]
async fn cancelled_calls_leave_the_latch_consistent() {
    // Its own server: its scripts are flushed.
    let server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("latch-cancel");
    let channel = layout::latch_channel(&name);
    let latch = c.count_down_latch(&name);
    assert!(latch.try_set_count(3).await.unwrap());
    for ms in 0..20 {
        let r = tokio::time::timeout(Duration::from_millis(ms), latch.wait()).await;
        assert!(r.is_err(), "an armed latch let a waiter through");
    }
    let gone = eventually(Duration::from_secs(2), || {
        subscribers(&server, &channel) == 0
    });
    assert!(gone.await.is_some(), "subscription left on {channel}");
    assert_eq!(latch.count().await.unwrap(), 3);

    for (polls, left) in [(1, "2"), (2, "1")] {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .exec(&mut server.connection())
            .unwrap();
        let mut count_down = Box::pin(latch.count_down());
        for _ in 0..polls {
            tokio::select! {
                biased;
                _ = count_down.as_mut() => panic!("counted down without a round trip"),
                _ = std::future::ready(()) => {}
            }
        }
        drop(count_down);
        let counted = eventually(Duration::from_secs(2), || {
            get(&server, &name).as_deref() == Some(left)
        });
        assert!(
            counted.await.is_some(),
            "count-down dropped after {polls} polls was lost"
        );
    }
}

/// A key of another type, a string that is not an integer and a zero count
/// are typed errors, and the key is left alone.
#[tokio::test]
async fn bad_input_gives_typed_errors() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("latch-bad");
    let latch = c.count_down_latch(&name);
    for e in [
        latch.try_set_count(0).await.unwrap_err(),
        latch
            .try_set_count(redlease::MAX_COUNT + 1)
            .await
            .unwrap_err(),
        c.count_down_latch("").count().await.unwrap_err(),
    ] {
        assert!(e.is_invalid_argument(), "{e}");
    }
    assert!(!exists(server, &name));

    redis::cmd("HSET")
        .arg(&name)
        .arg("f")
        .arg("v")
        .exec(&mut server.connection())
        .unwrap();
    for e in [
        latch.try_set_count(1).await.unwrap_err(),
        latch.count_down().await.unwrap_err(),
        latch.count().await.unwrap_err(),
        latch.wait_for(Duration::from_secs(5)).await.unwrap_err(),
        latch.delete().await.unwrap_err(),
    ] {
        assert!(e.is_wrong_type(), "{e}");
        // What the key holds, read when the error came (#27).
        assert!(
            e.to_string().starts_with(&format!(
                "latch key {name:?} holds a hash, not a string holding the count still to go"
            )),
            "{e}"
        );
    }
    assert!(exists(server, &name), "a key of another type was deleted");

    redis::cmd("SET")
        .arg(&name)
        .arg("soon")
        .exec(&mut server.connection())
        .unwrap();
    for e in [
        latch.try_set_count(1).await.unwrap_err(),
        latch.count_down().await.unwrap_err(),
        latch.count().await.unwrap_err(),
        latch.wait_for(Duration::from_secs(5)).await.unwrap_err(),
    ] {
        assert!(e.is_wrong_type(), "{e}");
    }
    assert_eq!(get(server, &name).as_deref(), Some("soon"));
    // Deleting is how such a key is cleared.
    assert!(latch.delete().await.unwrap());
    assert_eq!(latch.count().await.unwrap(), 0);
}

/// On a cluster, a name with a hash tag of its own is refused clearly
/// (Redisson's channel for it lies in another slot); a plain name works,
/// woken by sharded messages.
#[tokio::test]
async fn a_braced_name_is_refused_on_a_cluster() {
    use crate::cluster_support::{cluster_client, key_slot, shared_cluster};
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let braced = format!("{}{{tag}}:parts", unique("latch-cluster"));
    assert_ne!(key_slot(&braced), key_slot(layout::latch_channel(&braced)));
    let e = c
        .count_down_latch(&braced)
        .try_set_count(1)
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("CROSSSLOT"), "{e}");

    let name = unique("latch-cluster");
    let latch = c.count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = spawn_waiter(latch.clone(), Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(100)).await;
    latch.count_down().await.unwrap();
    opened(waiter).await;
    // The semaphore's channel follows the brace rule: any name works.
    let sem = c.semaphore(&braced);
    assert!(sem.try_set_available(1).await.unwrap());
    sem.try_acquire(1).await.unwrap().forget();
    sem.release(1).await.unwrap();
}

/// A deleted latch reads as open, and its deletion (which publishes `0`)
/// wakes every waiter to see that, even one waiting without a limit.
#[tokio::test]
async fn deleting_the_latch_releases_its_waiters() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("latch-delete");
    let channel = layout::latch_channel(&name);
    assert!(a.count_down_latch(&name).try_set_count(3).await.unwrap());
    let unbounded = {
        let latch = b.count_down_latch(&name);
        tokio::spawn(async move { latch.wait().await })
    };
    let bounded = spawn_waiter(b.count_down_latch(&name), Duration::from_secs(30));
    until_subscribed(server, &channel, 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let deleted = Instant::now();
    assert!(a.count_down_latch(&name).delete().await.unwrap());
    let after = opened(bounded).await - deleted;
    assert!(after < Duration::from_secs(1), "woken {after:?} later");
    tokio::time::timeout(Duration::from_secs(2), unbounded)
        .await
        .expect("the unbounded waiter slept through the deletion")
        .unwrap()
        .unwrap();
}

/// Issue #37: a count-down whose reply was lost (the server stalled past
/// the response time-out) failed with "cannot reach redis" though it had
/// counted, or was about to, and sending it again would have counted twice.
/// Now it is sent again, under one request id, until answered: the caller
/// is told it worked, and the latch counted once.
#[tokio::test]
async fn issue_37_a_count_down_whose_reply_is_lost_counts_once() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    let latch = c.count_down_latch(unique("latch-lost-reply"));
    assert!(latch.try_set_count(3).await.unwrap());
    let stalled = latch.clone();
    let answered = across_a_stall(&server, async move { stalled.count_down().await }).await;
    assert!(answered.is_ok(), "{answered:?}");
    // Every attempt has reached the server by now: none counted again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(get(&server, latch.name()).as_deref(), Some("2"));
    assert_eq!(latch.count().await.unwrap(), 2);
}

/// Issue #37: `retry_writes_for(ZERO)` sends each write once, so the
/// count-down across the same stall reports its time-out, and counts at
/// most once (here, not at all: the client dropped the timed-out
/// connection, and the server with it what it had not read).
#[tokio::test]
async fn issue_37_writes_sent_once_report_a_lost_reply() {
    let server = RedisServer::start();
    let c = redlease::Client::builder(&server.url())
        .response_timeout(Duration::from_millis(200))
        .retry_writes_for(Duration::ZERO)
        .build()
        .await
        .unwrap();
    let latch = c.count_down_latch(unique("latch-sent-once"));
    assert!(latch.try_set_count(3).await.unwrap());
    let stalled = latch.clone();
    let answered = across_a_stall(&server, async move { stalled.count_down().await }).await;
    assert!(answered.unwrap_err().is_timeout());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left = get(&server, latch.name());
    assert!(matches!(left.as_deref(), Some("2" | "3")), "{left:?}");
}
