use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, acquired_soon_after, acquired_within, client, client_with_watchdog, eventually,
    exists, spawn_timed, take_and_release, unique,
};

/// A Redisson client's owner field.
const JAVA: &str = "5f0c7a43-9b1e-4c55-8f1f-0d6c2e1f9a77:87";

fn queue(name: &str) -> String {
    format!("redisson_lock_queue:{{{name}}}")
}

fn timeouts(name: &str) -> String {
    format!("redisson_lock_timeout:{{{name}}}")
}

/// Queue length and deadline count, read directly.
fn queued(server: &RedisServer, name: &str) -> (i64, i64) {
    let mut conn = server.connection();
    let len: i64 = redis::cmd("LLEN")
        .arg(queue(name))
        .query(&mut conn)
        .unwrap();
    let card: i64 = redis::cmd("ZCARD")
        .arg(timeouts(name))
        .query(&mut conn)
        .unwrap();
    (len, card)
}

/// Waiters on four clients that start waiting 50 ms apart acquire in that
/// order, each woken by its predecessor's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_acquire_in_arrival_order_across_clients() {
    const WAITERS: usize = 8;
    let server = RedisServer::shared();
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client().await);
    }
    let name = unique("fair-order");
    let holder = clients[0].fair_lock(&name).try_lock().await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..WAITERS {
        let (lock, tx) = (clients[i % 4].fair_lock(&name), tx.clone());
        tokio::spawn(async move {
            let g = lock.try_lock_for(Duration::from_secs(20)).await.unwrap();
            tx.send(i).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            g.unlock().await.unwrap();
        });
        let joined = eventually(Duration::from_secs(2), || {
            queued(server, &name).0 == i as i64 + 1
        })
        .await;
        assert!(joined.is_some(), "waiter {i} did not join the queue");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    holder.unlock().await.unwrap();
    let mut order = Vec::new();
    for _ in 0..WAITERS {
        order.push(
            tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(order, (0..WAITERS).collect::<Vec<_>>());
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (0, 0))
            .await
            .is_some()
    );
    assert!(
        eventually(Duration::from_secs(2), || !exists(server, &name))
            .await
            .is_some()
    );
}

/// Queues `field` by hand, as Redisson's `RFairLock` enqueues a waiter:
/// at the tail, with a deadline far ahead (its default wait is 5 min).
/// Nothing wakes it: it acquires only when a test does so by hand.
fn enqueue_raw(server: &RedisServer, name: &str, field: &str) {
    let far: i64 = 4_102_444_800_000; // year 2100, in ms
    redis::pipe()
        .cmd("ZADD")
        .arg(timeouts(name))
        .arg(far)
        .arg(field)
        .cmd("RPUSH")
        .arg(queue(name))
        .arg(field)
        .exec(&mut server.connection())
        .unwrap();
}

/// `try_lock` on a fair lock does not jump the queue, and leaves no trace:
/// not while the lock is held, and not while it is free but another
/// waiter's turn.
#[tokio::test]
async fn try_lock_does_not_jump_the_queue() {
    let server = RedisServer::shared();
    let (a, b, c) = (client().await, client().await, client().await);
    let name = unique("fair-try");
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    let waiter = {
        let lock = b.fair_lock(&name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(10)).await })
    };
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (1, 1))
            .await
            .is_some()
    );
    assert!(c.fair_lock(&name).try_lock().await.unwrap_err().is_busy());
    assert_eq!(queued(server, &name), (1, 1));
    held.unlock().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(queued(server, &name), (0, 0));
    g.unlock().await.unwrap();
    // Free, but a waiter that nothing wakes is at the head: a `try_lock`
    // that took the lock now would jump the queue (#12: with the lock
    // held, as above, the test could not fail).
    enqueue_raw(server, &name, JAVA);
    let err = c.fair_lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_busy(), "{err:?}");
    assert!(!exists(server, &name), "try_lock jumped the queue");
    assert_eq!(queued(server, &name), (1, 1));
    redis::pipe()
        .cmd("LREM")
        .arg(queue(&name))
        .arg(0)
        .arg(JAVA)
        .cmd("ZREM")
        .arg(timeouts(&name))
        .arg(JAVA)
        .exec(&mut server.connection())
        .unwrap();
    take_and_release(c.fair_lock(&name)).await;
}

/// A waiter that times out or is cancelled leaves the queue at once, and
/// the next waiter behind it is not held up: the release goes to it, and a
/// head that gives up while the lock is free wakes it.
#[tokio::test]
async fn waiters_that_give_up_leave_the_queue() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("fair-give-up");
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    let err = b
        .fair_lock(&name)
        .try_lock_for(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(err.is_busy(), "{err:?}");
    assert_eq!(
        queued(server, &name),
        (0, 0),
        "timed-out waiter left in the queue"
    );
    let cancelled =
        tokio::time::timeout(Duration::from_millis(200), b.fair_lock(&name).lock()).await;
    assert!(cancelled.is_err());
    let left = eventually(Duration::from_secs(2), || queued(server, &name) == (0, 0)).await;
    assert!(left.is_some(), "cancelled waiter left in the queue");
    // A waiter queued behind one that times out is the next to be woken
    // when the lock frees.
    let quitter = {
        let lock = b.fair_lock(&name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_millis(300)).await })
    };
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 1)
            .await
            .is_some()
    );
    let next = spawn_timed(b.fair_lock(&name), Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 2)
            .await
            .is_some()
    );
    // The lock stays held for the quitter's whole wait (#12: released
    // earlier, the quitter took it, and nobody gave up).
    let err = quitter.await.unwrap().unwrap_err();
    assert!(err.is_busy(), "{err:?}");
    assert_eq!(queued(server, &name), (1, 1), "the quitter is still queued");
    let released = Instant::now();
    held.unlock().await.unwrap();
    acquired_soon_after(next, released)
        .await
        .unlock()
        .await
        .unwrap();
    assert_eq!(queued(server, &name), (0, 0));

    // A head cancelled while the lock is free and nothing woke it (the
    // holder's key vanished without a release message): its withdrawal
    // wakes the waiter behind it, which would otherwise sleep until its
    // next refresh, a third of the 30 s watchdog timeout later.
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    let quitter = {
        let lock = b.fair_lock(&name);
        tokio::spawn(async move { lock.lock().await })
    };
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 1)
            .await
            .is_some()
    );
    let next = spawn_timed(b.fair_lock(&name), Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 2)
            .await
            .is_some()
    );
    redis::cmd("DEL")
        .arg(&name)
        .exec(&mut server.connection())
        .unwrap();
    let gave_up = Instant::now();
    quitter.abort();
    acquired_within(next, gave_up, Duration::from_secs(1))
        .await
        .unlock()
        .await
        .unwrap();
    assert!(held.unlock().await.unwrap_err().is_not_owner());
    assert_eq!(queued(server, &name), (0, 0));
}

/// A waiter that dies in the queue (it stops refreshing its deadline, as a
/// killed process would) is dropped within one watchdog timeout, and the
/// waiter behind it then acquires.
#[tokio::test]
async fn dead_waiter_does_not_block_the_queue() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(600);
    let holder = client_with_watchdog(server, timeout).await;
    let dead = client_with_watchdog(server, timeout).await;
    let live = client_with_watchdog(server, timeout).await;
    let name = unique("fair-dead");
    let held = holder.fair_lock(&name).try_lock().await.unwrap();
    die_in_the_queue(server, &dead, &name, 1).await;
    let behind = {
        let lock = live.fair_lock(&name);
        spawn_timed(lock, Duration::from_secs(10))
    };
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 2)
            .await
            .is_some()
    );
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (g, at) = tokio::time::timeout(Duration::from_secs(5), behind)
        .await
        .unwrap()
        .unwrap();
    let blocked = at - released;
    assert!(
        blocked <= timeout + timeout / 3 + Duration::from_millis(200),
        "blocked for {blocked:?}"
    );
    g.unwrap().unlock().await.unwrap();
    assert_eq!(queued(server, &name), (0, 0));
}

/// A waiter of `client` joins the queue of fair lock `name` (as its `n`th
/// waiter), then its future is leaked: no more refreshes, no clean-up,
/// exactly as if its process had been killed.
async fn die_in_the_queue(server: &RedisServer, client: &redlease::Client, name: &str, n: i64) {
    let lock = client.fair_lock(name);
    let mut doomed = Box::pin(lock.try_lock_for(Duration::from_secs(60)));
    let joined = async {
        tokio::select! {
            _ = &mut doomed => panic!("acquired a held lock"),
            _ = async { while queued(server, name).0 < n { tokio::time::sleep(Duration::from_millis(5)).await } } => {}
        }
    };
    tokio::time::timeout(Duration::from_secs(2), joined)
        .await
        .unwrap();
    std::mem::forget(doomed);
}

/// A fair and a plain handle on one name exclude each other (same hash).
#[tokio::test]
async fn fair_and_plain_exclude_each_other() {
    let (a, b) = (client().await, client().await);
    let name = unique("fair-plain");
    let fair = a.fair_lock(&name).try_lock().await.unwrap();
    assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
    fair.unlock().await.unwrap();
    let plain = b.lock(&name).try_lock().await.unwrap();
    assert!(a.fair_lock(&name).try_lock().await.unwrap_err().is_busy());
    plain.unlock().await.unwrap();
}

/// A cancelled fair waiter leaves no queue entry, no subscription to its
/// own channel, and no lock.
#[tokio::test]
async fn cancelled_fair_waiter_leaves_nothing() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("fair-cancel");
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    for _ in 0..3 {
        let r = tokio::time::timeout(Duration::from_millis(100), b.fair_lock(&name).lock()).await;
        assert!(r.is_err());
    }
    let pattern = format!("redisson_lock__channel:{{{name}}}:*");
    let clean = eventually(Duration::from_secs(2), || {
        let channels: Vec<String> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .arg(&pattern)
            .query(&mut server.connection())
            .unwrap();
        channels.is_empty() && queued(server, &name) == (0, 0)
    })
    .await;
    assert!(
        clean.is_some(),
        "queue entries or subscriptions left behind"
    );
    held.unlock().await.unwrap();
    assert!(!exists(server, &name));
}

/// Redisson's `RFairLock` acquire as its script does it (reference:
/// `redisson.md` §2), for owner ARGV[2] with `threadWaitTime` ARGV[3]:
/// drop dead heads; when the lock is free and the caller is first, pop it
/// and subtract its wait from every remaining deadline, then take the
/// hash; else join the queue with a deadline after the last waiter's.
const REDISSON_FAIR_ACQUIRE: &str = "
local now = tonumber(ARGV[4])
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then break end
    local t = tonumber(redis.call('zscore', KEYS[3], head))
    if t > now then break end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (head == false or head == ARGV[2]) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    local keys = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #keys, 1 do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
    ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
";

/// Redisson's `RFairLock` unlock for owner ARGV[1]: drop dead heads, then
/// delete the hash and publish on the head waiter's own channel.
const REDISSON_FAIR_UNLOCK: &str = "
local now = tonumber(ARGV[2])
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then break end
    local t = tonumber(redis.call('zscore', KEYS[3], head))
    if t > now then break end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call('publish', KEYS[4] .. ':' .. head, 0)
end
return 1
";

/// The server clock in milliseconds, as a Redisson client passes `now`.
fn now_ms(server: &RedisServer) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
    s * 1000 + us / 1000
}

/// #15: a Java `lock()` neighbour does not drop a redlease fair waiter.
/// Redisson's acquire subtracts the acquirer's wait (5 minutes for
/// `lock()`) from every queued deadline; a redlease waiter whose deadline
/// were only its own liveness lease would then look dead, be dropped by
/// Redisson's unlock without a wake-up, and get the lock only at its next
/// refresh, seconds later. Here: a Java waiter queued before a redlease
/// one takes the lock with Redisson's script, releases with Redisson's
/// unlock, and the redlease waiter is still queued and woken at once.
#[tokio::test]
async fn a_redisson_lock_neighbour_does_not_drop_a_redlease_fair_waiter() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("fair-java-neighbour");
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    // Java's lock(): queued first, with Redisson's 5-minute wait.
    redisson_acquire(server, &name, JAVA, 300_000);
    let waiter = spawn_timed(b.fair_lock(&name), Duration::from_secs(20));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (2, 2))
            .await
            .is_some()
    );
    held.unlock().await.unwrap();
    // Java's turn: its acquire pops it and subtracts 5 minutes from the
    // redlease waiter's deadline.
    let took = redisson_acquire(server, &name, JAVA, 300_000);
    assert_eq!(took, redis::Value::Nil, "the java waiter did not acquire");
    let released = Instant::now();
    assert_eq!(redisson_unlock(server, &name, JAVA), redis::Value::Int(1));
    let g = acquired_soon_after(waiter, released).await;
    g.unlock().await.unwrap();
    assert_eq!(queued(server, &name), (0, 0));
}

/// Every deadline in the queue, in queue order: `(field, ms from now)`,
/// by the server's clock.
fn deadlines(server: &RedisServer, name: &str) -> Vec<(String, i64)> {
    let mut conn = server.connection();
    let fields: Vec<String> = redis::cmd("LRANGE")
        .arg(queue(name))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    let now = now_ms(server) as i64;
    fields
        .into_iter()
        .map(|field| {
            let score: f64 = redis::cmd("ZSCORE")
                .arg(timeouts(name))
                .arg(&field)
                .query(&mut conn)
                .unwrap();
            (field, score as i64 - now)
        })
        .collect()
}

/// #15 and #36: `redisson_fair_wait` is what a redlease waiter's deadline
/// counts for each Redisson waiter ahead of it (each takes its wait off
/// when it takes the lock); a redlease waiter ahead counts for nothing,
/// since it takes nothing off. Both redlease waiters still get the lock in
/// turn.
#[tokio::test]
async fn the_redisson_fair_wait_is_counted_per_redisson_waiter_ahead() {
    let server = RedisServer::shared();
    let wait = Duration::from_secs(10);
    let timeout = Duration::from_secs(3);
    let configured = || async {
        redlease::Client::builder(&server.url())
            .redisson_fair_wait(wait)
            .watchdog_timeout(timeout)
            .build()
            .await
            .unwrap()
    };
    let (holder, first, second) = (client().await, configured().await, configured().await);
    let name = unique("fair-wait-option");
    let held = holder.fair_lock(&name).try_lock().await.unwrap();
    // A Java `tryLock(10 s)` first in line (the Java side's longest wait is
    // the configured one), then two redlease waiters.
    redisson_acquire(server, &name, JAVA, 10_000);
    let one = spawn_timed(first.fair_lock(&name), Duration::from_secs(20));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (2, 2))
            .await
            .is_some()
    );
    let two = spawn_timed(second.fair_lock(&name), Duration::from_secs(20));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (3, 3))
            .await
            .is_some()
    );
    let ahead = deadlines(server, &name);
    // Each: its liveness lease (3 s), plus 10 s for the Java waiter only.
    for (field, ms) in &ahead[1..] {
        assert!(
            (11_000..13_100).contains(ms),
            "{field} scored {ms} ms ahead: {ahead:?}"
        );
    }
    // The Java waiter takes the lock with Redisson's script, taking its
    // 10 s off every deadline; the redlease waiters are still alive for
    // their liveness lease, so the release wakes the first of them.
    held.unlock().await.unwrap();
    assert_eq!(
        redisson_acquire(server, &name, JAVA, 10_000),
        redis::Value::Nil,
        "the java waiter did not acquire"
    );
    let released = Instant::now();
    assert_eq!(redisson_unlock(server, &name, JAVA), redis::Value::Int(1));
    acquired_within(one, released, Duration::from_millis(500))
        .await
        .unlock()
        .await
        .unwrap();
    acquired_within(two, Instant::now(), Duration::from_millis(500))
        .await
        .unlock()
        .await
        .unwrap();
    assert_eq!(queued(server, &name), (0, 0));
    let refused = redlease::Client::builder(&server.url())
        .redisson_fair_wait(Duration::ZERO)
        .build()
        .await
        .unwrap_err();
    assert!(refused.is_invalid_argument(), "{refused}");
}

/// Redisson's fair acquire for owner `field` with wait `wait_ms` (its
/// `tryLock` wait, or `fairLockWaitTimeout` for `lock()`), with a 30 s
/// lease.
fn redisson_acquire(server: &RedisServer, name: &str, field: &str, wait_ms: u64) -> redis::Value {
    redis::cmd("EVAL")
        .arg(REDISSON_FAIR_ACQUIRE)
        .arg(3)
        .arg(name)
        .arg(queue(name))
        .arg(timeouts(name))
        .arg(30_000)
        .arg(field)
        .arg(wait_ms)
        .arg(now_ms(server))
        .query(&mut server.connection())
        .unwrap()
}

/// Redisson's fair unlock for owner `field`.
fn redisson_unlock(server: &RedisServer, name: &str, field: &str) -> redis::Value {
    redis::cmd("EVAL")
        .arg(REDISSON_FAIR_UNLOCK)
        .arg(4)
        .arg(name)
        .arg(queue(name))
        .arg(timeouts(name))
        .arg(format!("redisson_lock__channel:{{{name}}}"))
        .arg(field)
        .arg(now_ms(server))
        .query(&mut server.connection())
        .unwrap()
}

/// #36: a Java waiter queued behind a redlease waiter keeps its whole wait
/// when the redlease waiter takes the lock, and is handed the lock by its
/// release. Before the fix, the redlease acquire took Redisson's 5 minutes
/// off a deadline that held 20 s (`tryLock(20 s)`), and the release then
/// dropped the Java waiter as dead and woke nobody.
#[tokio::test]
async fn issue_36_a_java_waiter_behind_a_redlease_waiter_keeps_its_wait() {
    let server = RedisServer::shared();
    let (holder, waiter) = (client().await, client().await);
    let name = unique("fair-java-behind");
    let held = holder.fair_lock(&name).try_lock().await.unwrap();
    let first = spawn_timed(waiter.fair_lock(&name), Duration::from_secs(20));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name) == (1, 1))
            .await
            .is_some()
    );
    let java_field = "5f0c7a43-9b1e-4c55-8f1f-0d6c2e1f9a77:88";
    assert_ne!(
        redisson_acquire(server, &name, java_field, 20_000),
        redis::Value::Nil
    );
    let before = deadlines(server, &name)[1].1;
    held.unlock().await.unwrap();
    let guard = acquired_within(first, Instant::now(), Duration::from_millis(500)).await;
    let after = deadlines(server, &name);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].0, java_field);
    assert!(
        after[0].1 > before - 1_000 && after[0].1 > 20_000,
        "the java waiter's deadline went from {before} to {} ms",
        after[0].1
    );
    let mut pubsub = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut pubsub = pubsub.as_pubsub();
    pubsub
        .subscribe(format!("redisson_lock__channel:{{{name}}}:{java_field}"))
        .unwrap();
    guard.unlock().await.unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let woken = pubsub.get_message().expect("the java waiter was woken");
    assert_eq!(woken.get_payload::<i64>().unwrap(), 0);
    assert_eq!(
        redisson_acquire(server, &name, java_field, 20_000),
        redis::Value::Nil,
        "the java waiter took its turn"
    );
    assert_eq!(
        redisson_unlock(server, &name, java_field),
        redis::Value::Int(1)
    );
    assert_eq!(queued(server, &name), (0, 0));
}

/// #36: with no wait of their own in their deadlines, redlease waiters that
/// die one behind the other are each dropped within one watchdog timeout
/// of their last refresh (before #36 the second kept Redisson's 5 minutes
/// for the first), and a live waiter behind them then acquires.
#[tokio::test]
async fn two_dead_waiters_in_a_row_do_not_block_the_queue() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(600);
    let holder = client_with_watchdog(server, timeout).await;
    let dead = client_with_watchdog(server, timeout).await;
    let live = client_with_watchdog(server, timeout).await;
    let name = unique("fair-two-dead");
    let held = holder.fair_lock(&name).try_lock().await.unwrap();
    for n in 1..=2 {
        die_in_the_queue(server, &dead, &name, n).await;
    }
    let died = Instant::now();
    let behind = spawn_timed(live.fair_lock(&name), Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(2), || queued(server, &name).0 == 3)
            .await
            .is_some()
    );
    held.unlock().await.unwrap();
    let (g, at) = tokio::time::timeout(Duration::from_secs(5), behind)
        .await
        .unwrap()
        .unwrap();
    let blocked = at - died;
    assert!(
        blocked <= timeout + timeout / 3 + Duration::from_millis(300),
        "blocked for {blocked:?}"
    );
    g.unwrap().unlock().await.unwrap();
    assert_eq!(queued(server, &name), (0, 0));
}
