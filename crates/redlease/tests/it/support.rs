//! Helpers shared by the integration tests.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub(crate) use redlease_testkit::{Proxy, RedisServer, ServerOptions};

/// A lock name no other test uses, so tests can share one server.
pub(crate) fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "test:{prefix}:{}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One private Valkey 9 server for the tests that need Valkey's own
/// commands, shared by them.
pub(crate) fn valkey() -> &'static RedisServer {
    static VALKEY: std::sync::OnceLock<RedisServer> = std::sync::OnceLock::new();
    VALKEY.get_or_init(|| RedisServer::try_start_valkey().unwrap_or_else(|e| panic!("{e}")))
}

/// A client of the shared server with default settings.
/// A semaphore acquire's answer as a boolean, as the tests were written:
/// true when the permits were taken (they stay taken, for the test to give
/// back by count with `release(n)`), false when busy.
pub(crate) fn taken(
    acquired: Result<redlease::SemaphorePermit, redlease::Error>,
) -> Result<bool, redlease::Error> {
    match acquired {
        Ok(permit) => {
            permit.forget();
            Ok(true)
        }
        Err(e) if e.is_busy() => Ok(false),
        Err(e) => Err(e),
    }
}

pub(crate) async fn client() -> redlease::Client {
    redlease::Client::connect(&RedisServer::shared().url())
        .await
        .unwrap()
}

/// A client of `server` whose requests time out after 200 ms, so that a
/// server paused longer loses the replies of what it then runs (#36, #37).
pub(crate) async fn impatient_client(server: &RedisServer) -> redlease::Client {
    redlease::Client::builder(&server.url())
        .response_timeout(Duration::from_millis(200))
        .build()
        .await
        .unwrap()
}

/// Runs `work` across a stall of `server` longer than an
/// [`impatient_client`]'s response time-out: pauses the server, spawns
/// `work`, lets 900 ms pass (time for its first attempt to time out and for
/// more to be sent into the stalled server), resumes the server and
/// returns what `work` answered, which must come within 10 s.
pub(crate) async fn across_a_stall<T: Send + 'static>(
    server: &RedisServer,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    server.pause();
    let task = tokio::spawn(work);
    tokio::time::sleep(Duration::from_millis(900)).await;
    server.resume();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("answered once the server is back")
        .unwrap()
}

/// A client of `server` whose watchdog renews every `timeout / 3`.
pub(crate) async fn client_with_watchdog(
    server: &RedisServer,
    timeout: Duration,
) -> redlease::Client {
    redlease::Client::builder(&server.url())
        .watchdog_timeout(timeout)
        .build()
        .await
        .unwrap()
}

/// Polls `check` every 5 ms until it is true or `limit` passes; returns how
/// long it took, or `None` on time-out.
pub(crate) async fn eventually(
    limit: Duration,
    mut check: impl FnMut() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// Whether the key exists, read directly from Redis.
pub(crate) fn exists(server: &RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query::<bool>(&mut server.connection())
        .unwrap()
}

/// The key's remaining time to live in ms (-2: no key, -1: no expiry).
pub(crate) fn pttl(server: &RedisServer, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// How many EVALSHA calls the server has run (`INFO commandstats`).
pub(crate) fn evalsha_calls(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// #28: a hold of `off` (a client with fencing off) still refuses
/// `other`, on a name of its own made from `prefix`: a fencing client's
/// refused string-layout acquire counts its counter up all the same, which
/// would spoil a check for no counter on a shared name.
pub(crate) async fn assert_fencing_off_excludes(
    off: &redlease::Client,
    other: &redlease::Client,
    prefix: &str,
) {
    let name = unique(prefix);
    let held = off.lock(&name).try_lock().await.unwrap();
    let refused = other.lock(&name).try_lock().await.unwrap_err();
    assert!(refused.is_busy(), "{name}: {refused}");
    held.unlock().await.unwrap();
}

/// Takes and releases `lock` once, panicking on failure.
pub(crate) async fn take_and_release(lock: redlease::Lock) {
    lock.try_lock().await.unwrap().unlock().await.unwrap();
}

/// A client of `server` with the given watchdog and response timeouts.
pub(crate) async fn client_with(
    server: &RedisServer,
    watchdog_timeout: Duration,
    response_timeout: Duration,
) -> redlease::Client {
    redlease::Client::builder(&server.url())
        .watchdog_timeout(watchdog_timeout)
        .response_timeout(response_timeout)
        .build()
        .await
        .unwrap()
}

/// After a frozen server resumes: waits until it has run two more EVALSHAs
/// than `calls_before` (an acquire and the release sent behind it), then
/// checks that the lock is free.
pub(crate) async fn assert_acquire_was_released(
    server: &RedisServer,
    name: &str,
    calls_before: u64,
) {
    let ran = eventually(Duration::from_secs(2), || {
        evalsha_calls(server) >= calls_before + 2
    })
    .await;
    assert!(
        ran.is_some(),
        "the acquire and its release did not both run"
    );
    assert!(
        !exists(server, name),
        "lock left behind with pttl {}",
        pttl(server, name)
    );
}

/// How many subscribers the server counts on `channel` (`PUBSUB NUMSUB`).
pub(crate) fn subscribers(server: &RedisServer, channel: &str) -> i64 {
    let reply: (String, i64) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query(&mut server.connection())
        .unwrap();
    reply.1
}

/// Redisson's release channel for `name`.
pub(crate) fn channel_of(name: &str) -> String {
    if name.contains('{') {
        format!("redisson_lock__channel:{name}")
    } else {
        format!("redisson_lock__channel:{{{name}}}")
    }
}

/// Subscribes to `channel` on `server` (on a thread, with the synchronous
/// client) and returns the first message's channel and payload; subscribed
/// by the time it returns.
pub(crate) fn listen_once(
    server: &RedisServer,
    channel: String,
) -> tokio::task::JoinHandle<(String, String)> {
    let mut conn = server.connection();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = tokio::task::spawn_blocking(move || {
        let mut pubsub = conn.as_pubsub();
        pubsub.subscribe(&channel).unwrap();
        pubsub
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let msg = pubsub.get_message().unwrap();
        (
            msg.get_channel_name().to_owned(),
            msg.get_payload::<String>().unwrap(),
        )
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    handle
}

/// What a timed waiter returns: its acquire result and when it came.
pub(crate) type Timed = (Result<redlease::LockGuard, redlease::Error>, Instant);

/// Spawns `lock.try_lock_for(wait)`, recording when it returns.
pub(crate) fn spawn_timed(lock: redlease::Lock, wait: Duration) -> tokio::task::JoinHandle<Timed> {
    tokio::spawn(async move {
        let r = lock.try_lock_for(wait).await;
        (r, Instant::now())
    })
}

/// Waits for a timed waiter, checks that it acquired within 100 ms of
/// `since` (it was woken, not left to poll or time out), and returns its
/// guard.
pub(crate) async fn acquired_soon_after(
    waiter: tokio::task::JoinHandle<Timed>,
    since: Instant,
) -> redlease::LockGuard {
    acquired_within(waiter, since, Duration::from_millis(100)).await
}

/// Waits (at most 15 s) for a timed waiter, checks that it acquired less
/// than `bound` after `since`, and returns its guard.
pub(crate) async fn acquired_within(
    waiter: tokio::task::JoinHandle<Timed>,
    since: Instant,
    bound: Duration,
) -> redlease::LockGuard {
    let (guard, at) = tokio::time::timeout(Duration::from_secs(15), waiter)
        .await
        .expect("waiter still waiting after 15 s")
        .expect("waiter task");
    let after = at - since;
    assert!(after < bound, "acquired {after:?} later");
    guard.unwrap()
}

/// A TCP proxy to `port` on 127.0.0.1 that holds back, once, the first
/// client write containing `SUBSCRIBE` by `delay` after the returned flag is
/// set. Returns the flag and the proxy's port.
pub(crate) async fn subscribe_delaying_proxy(
    port: u16,
    delay: Duration,
) -> (std::sync::Arc<std::sync::atomic::AtomicBool>, u16) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let arm = std::sync::Arc::new(AtomicBool::new(false));
    let armed = arm.clone();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let arm = armed;
        while let Ok((mut down, _)) = listener.accept().await {
            let Ok(up) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                continue;
            };
            let arm = arm.clone();
            tokio::spawn(async move {
                let (mut down_read, mut down_write) = down.split();
                let (mut up_read, mut up_write) = up.into_split();
                let to_server = async {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n @ 1..) = down_read.read(&mut buf).await {
                        let chunk = &buf[..n];
                        if chunk.windows(9).any(|w| w == b"SUBSCRIBE")
                            && arm.swap(false, Ordering::SeqCst)
                        {
                            tokio::time::sleep(delay).await;
                        }
                        if up_write.write_all(chunk).await.is_err() {
                            break;
                        }
                    }
                };
                let to_client = async {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n @ 1..) = up_read.read(&mut buf).await {
                        if down_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                tokio::join!(to_server, to_client);
            });
        }
    });
    (arm, local)
}

/// The PostgreSQL database for tests that need one: `DATABASE_URL`, or the
/// local server that `scripts/test` makes sure is running.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A pool of at most `size` connections to [`database_url`].
pub(crate) async fn pg_pool(size: u32) -> sqlx::PgPool {
    let url = database_url();
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(Duration::from_secs(10))
        .connect(&url)
        .await
        .unwrap_or_else(|e| {
            panic!("PostgreSQL is not reachable at {url} ({e}); start it, or run scripts/test, which does")
        })
}

/// A ledger in a table of its own (dropped by [`drop_ledger`]), with one
/// account at balance 0; returns it with the table's name.
pub(crate) async fn fresh_ledger(prefix: &str, account: &str) -> (crate::ledger::Ledger, String) {
    let table = unique(prefix).replace([':', '-'], "_");
    let ledger = crate::ledger::Ledger::create(pg_pool(4).await, &table)
        .await
        .unwrap();
    ledger.open(account, 0).await.unwrap();
    (ledger, table)
}

/// Drops a table made by [`fresh_ledger`].
pub(crate) async fn drop_ledger(table: &str) {
    sqlx::query(&format!("DROP TABLE IF EXISTS {table}"))
        .execute(&pg_pool(1).await)
        .await
        .unwrap();
}

/// Subscribes to `channel` on `server` (on a thread, with the synchronous
/// client) and collects every payload until one equals `end` (published by
/// the test when it is done), at most 5 s; subscribed by the time it
/// returns.
pub(crate) fn listen_until(
    server: &RedisServer,
    channel: String,
    end: &'static str,
) -> tokio::task::JoinHandle<Vec<String>> {
    let mut conn = server.connection();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = tokio::task::spawn_blocking(move || {
        let mut pubsub = conn.as_pubsub();
        pubsub.subscribe(&channel).unwrap();
        pubsub
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut payloads = Vec::new();
        loop {
            let payload: String = pubsub.get_message().unwrap().get_payload().unwrap();
            if payload == end {
                return payloads;
            }
            payloads.push(payload);
        }
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    handle
}

/// Publishes `payload` on `channel` with a raw command.
pub(crate) fn publish(server: &RedisServer, channel: &str, payload: &str) {
    redis::cmd("PUBLISH")
        .arg(channel)
        .arg(payload)
        .exec(&mut server.connection())
        .unwrap();
}

/// The median of `samples` (sorted in place).
pub(crate) fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Waits until the server counts at least `n` subscribers on `channel`
/// (at most 2 s), failing the test otherwise.
pub(crate) async fn until_subscribed(server: &RedisServer, channel: &str, n: i64) {
    let subscribed = eventually(Duration::from_secs(2), || subscribers(server, channel) >= n).await;
    assert!(subscribed.is_some(), "no {n} subscribers on {channel}");
}
