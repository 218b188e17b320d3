//! The expirable semaphore (Redisson's `RPermitExpirableSemaphore`):
//! Redisson's layout read with raw commands, the limit under load, wake-ups,
//! permits that Redisson's scripts (played with raw `EVAL`) let expire and
//! reclaim, crashed holders, renewal, fixed leases, cancellation and bad
//! input. A real Redisson on the same names: `java/semaphore.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redlease::{ExpirableSemaphore, LostReason, PermitGuard};

use crate::support::{
    RedisServer, across_a_stall, client, client_with_watchdog, evalsha_calls, eventually,
    impatient_client, listen_once, subscribers, unique,
};

const SOON: Duration = Duration::from_secs(2);

/// Redisson's acquire (`tryAcquireAsync(ids, timeoutDate)`), played as a
/// Java client sends it: KEYS name, `{name}:timeout`, channel; ARGV count,
/// expiry date, now (the client's clock), the non-expiring score, the
/// publish command, then the raw ids. Written from the contract in the
/// reference notes.
const JAVA_ACQUIRE: &str = r"
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local value = redis.call('incrby', KEYS[1], #expired)
    if tonumber(value) > 0 then
        redis.call(ARGV[5], KEYS[3], value)
    end
end
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    for i = 6, #ARGV do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[1] ~= nil and first[2] ~= ARGV[4] then
    return ':' .. first[2]
end
return nil
";

/// Redisson's score for a permit acquired without a lease.
const NON_EXPIRING: i64 = 922_337_203_685_477;

fn timeout_key(name: &str) -> String {
    format!("{{{name}}}:timeout")
}

fn channel(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn hex(raw: &[u8]) -> String {
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// A Java client's acquire of one permit with id `raw`, expiring at
/// `expiry` (epoch ms, or [`NON_EXPIRING`]); Redisson's reply.
fn java_acquire(server: &RedisServer, name: &str, raw: &[u8], expiry: i64) -> Option<String> {
    redis::cmd("EVAL")
        .arg(JAVA_ACQUIRE)
        .arg(3)
        .arg(name)
        .arg(timeout_key(name))
        .arg(channel(name))
        .arg(1)
        .arg(expiry)
        .arg(epoch_ms())
        .arg(NON_EXPIRING)
        .arg("PUBLISH")
        .arg(raw)
        .query(&mut server.connection())
        .unwrap()
}

/// The acquired permits as Redis holds them: (raw id, score).
fn acquired_raw(server: &RedisServer, name: &str) -> Vec<(Vec<u8>, f64)> {
    redis::cmd("ZRANGE")
        .arg(timeout_key(name))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut server.connection())
        .unwrap()
}

fn free_raw(server: &RedisServer, name: &str) -> Option<i64> {
    redis::cmd("GET")
        .arg(name)
        .query(&mut server.connection())
        .unwrap()
}

/// The server's clock in epoch ms.
fn server_ms(server: &RedisServer) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
    s * 1000 + us / 1000
}

/// A semaphore with `permits` set, and its handle on `client`.
async fn semaphore(client: &redlease::Client, prefix: &str, permits: i64) -> ExpirableSemaphore {
    let semaphore = client.expirable_semaphore(unique(prefix));
    assert!(semaphore.try_set_total(permits as u64).await.unwrap());
    semaphore
}

/// Spawns `try_acquire_for(wait)` and returns once it is asleep on the
/// channel (`subscribed` subscribers counted there).
async fn spawn_waiter(
    server: &RedisServer,
    semaphore: ExpirableSemaphore,
    wait: Duration,
    subscribed: i64,
) -> tokio::task::JoinHandle<(Result<PermitGuard, redlease::Error>, Instant)> {
    let channel = channel(semaphore.name());
    let task = tokio::spawn(async move {
        let r = semaphore.try_acquire_for(wait).await;
        (r, Instant::now())
    });
    assert!(
        eventually(SOON, || subscribers(server, &channel) >= subscribed)
            .await
            .is_some(),
        "waiter did not subscribe to {channel}"
    );
    task
}

/// What Redis holds is Redisson's layout: the free count as a string, each
/// acquired permit as its raw 16-byte id in `{name}:timeout` scored with
/// its expiry (server clock), and the new free count published on
/// `redisson_sc:{name}` by a release.
#[tokio::test]
async fn layout_is_redissons() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("pes-layout");
    let semaphore = c.expirable_semaphore(&name).lease(Duration::from_secs(20));
    let announced = listen_once(server, channel(&name));
    assert!(semaphore.try_set_total(2).await.unwrap());
    assert_eq!(announced.await.unwrap(), (channel(&name), "2".to_owned()));
    assert!(!semaphore.try_set_total(5).await.unwrap(), "set twice");
    let before = server_ms(server);
    let permit = semaphore.try_acquire().await.unwrap();
    let after = server_ms(server);
    let id = permit.id().to_owned();
    assert_eq!(id.len(), 32);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert_eq!(free_raw(server, &name), Some(1));
    let held = acquired_raw(server, &name);
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].0, unhex(&id), "member is not the raw id");
    let score = held[0].1 as i64;
    assert!(
        (before + 20_000..=after + 20_000).contains(&score),
        "score {score} not server now + lease ({before}..{after} + 20000)"
    );
    let kind: String = redis::cmd("TYPE")
        .arg(timeout_key(&name))
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(kind, "zset");

    let announced = listen_once(server, channel(&name));
    permit.release().await.unwrap();
    assert_eq!(announced.await.unwrap(), (channel(&name), "2".to_owned()));
    assert!(acquired_raw(server, &name).is_empty());
    assert_eq!(free_raw(server, &name), Some(2));

    // `add_permits` publishes the delta, `set_permits` the new total.
    let announced = listen_once(server, channel(&name));
    semaphore.add_permits(3).await.unwrap();
    assert_eq!(announced.await.unwrap().1, "3");
    let announced = listen_once(server, channel(&name));
    semaphore.set_total(4).await.unwrap();
    assert_eq!(announced.await.unwrap().1, "4");
    assert_eq!(free_raw(server, &name), Some(4));
}

/// Never more than N permits in use across two clients under load, and all
/// of them free again afterwards.
#[tokio::test]
async fn never_more_than_n_permits_in_use() {
    const N: i64 = 3;
    let (a, b) = (client().await, client().await);
    let name = unique("pes-limit");
    assert!(
        a.expirable_semaphore(&name)
            .try_set_total(N as u64)
            .await
            .unwrap()
    );
    let in_use = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + Duration::from_millis(1500);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let semaphore = (if i % 2 == 0 { &a } else { &b }).expirable_semaphore(&name);
        let (in_use, most, done) = (in_use.clone(), most.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let permit = semaphore
                    .try_acquire_for(Duration::from_secs(5))
                    .await
                    .unwrap();
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(3)).await;
                in_use.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(8), t)
            .await
            .expect("a worker is stuck")
            .unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= N as usize, "{most} permits in use at once");
    assert_eq!(
        most, N as usize,
        "the limit was never reached: no contention"
    );
    assert!(done.load(Ordering::SeqCst) > 50, "too few acquisitions");
    let semaphore = a.expirable_semaphore(&name);
    assert_eq!(semaphore.available_permits().await.unwrap(), N);
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 0);
}

/// A waiter on a permit with a 30 s lease wakes as soon as another client
/// releases it, each of 20 hand-offs; the latencies are printed.
#[tokio::test]
async fn waiter_wakes_on_release_from_another_client() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let held = semaphore(&a, "pes-wake", 1).await;
    let waiting = b.expirable_semaphore(held.name());
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let permit = held.try_acquire().await.unwrap();
        let waiter = spawn_waiter(server, waiting.clone(), Duration::from_secs(10), 1).await;
        let released = Instant::now();
        permit.release().await.unwrap();
        let (got, at) = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        latencies.push(at - released);
        got.unwrap().release().await.unwrap();
        // The next waiter must subscribe anew.
        assert!(
            eventually(SOON, || subscribers(server, &channel(held.name())) == 0)
                .await
                .is_some()
        );
    }
    latencies.sort();
    let (p50, max) = (
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1],
    );
    eprintln!(
        "expirable semaphore wake latency (release sent to waiter acquired): p50 {p50:?}, max {max:?}"
    );
    assert!(
        max < Duration::from_millis(100),
        "woke {max:?} after a release"
    );
}

/// A Java acquire (Redisson's script with raw id bytes) is counted by
/// `acquired_permits`, released by its hex id through `release_by_id`; a
/// Java permit whose expiry passed is reclaimed by our reads.
#[tokio::test]
async fn java_permits_are_counted_reclaimed_and_released_by_id() {
    let server = RedisServer::shared();
    let c = client().await;
    let semaphore = semaphore(&c, "pes-java-id", 3).await;
    let name = semaphore.name().to_owned();
    let live = uuid::Uuid::new_v4().into_bytes();
    let stale = uuid::Uuid::new_v4().into_bytes();
    let expiry = epoch_ms() + 30_000;
    assert_eq!(
        java_acquire(server, &name, &live, expiry).as_deref(),
        Some("OK")
    );
    assert_eq!(
        java_acquire(server, &name, &stale, epoch_ms() + 150).as_deref(),
        Some("OK")
    );
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 2);
    assert_eq!(semaphore.available_permits().await.unwrap(), 1);
    // Ours is counted by Java's script too: with ours, none is free, and
    // Java is told the nearest expiry (the stale permit's).
    let ours = semaphore.try_acquire().await.unwrap();
    let reply = java_acquire(server, &name, &uuid::Uuid::new_v4().into_bytes(), expiry);
    assert!(
        reply.as_deref().is_some_and(|r| r.starts_with(':')),
        "{reply:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        semaphore.available_permits().await.unwrap(),
        1,
        "stale permit not reclaimed"
    );
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 2);
    semaphore.release_by_id(&hex(&live)).await.unwrap();
    let again = semaphore.release_by_id(&hex(&live)).await.unwrap_err();
    assert!(again.is_not_owner(), "{again}");
    // Uppercase hex is read as Redisson reads it.
    let gone = semaphore.release_by_id(&hex(&stale).to_uppercase()).await;
    assert!(gone.unwrap_err().is_not_owner());
    ours.release().await.unwrap();
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 0);
    assert_eq!(semaphore.available_permits().await.unwrap(), 3);
}

/// A holder whose process dies (its runtime shut down with the guard
/// leaked: no release, no renewal) gives its permit back within one
/// watchdog lease, and a waiter elsewhere gets it then.
#[tokio::test]
async fn crashed_holders_permit_returns_within_one_lease() {
    let server = RedisServer::shared();
    let lease = Duration::from_secs(1);
    let name = unique("pes-crash");
    let url = server.url();
    let crash_name = name.clone();
    let crashed = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let c = redlease::Client::builder(&url)
                .watchdog_timeout(lease)
                .build()
                .await
                .unwrap();
            let semaphore = c.expirable_semaphore(&crash_name);
            assert!(semaphore.try_set_total(1).await.unwrap());
            std::mem::forget(semaphore.try_acquire().await.unwrap());
        });
        // The runtime goes with its tasks and connection, as the process.
        drop(runtime);
        Instant::now()
    })
    .join()
    .unwrap();
    let c = client_with_watchdog(server, lease).await;
    let semaphore = c.expirable_semaphore(&name);
    let waiter = spawn_waiter(server, semaphore, Duration::from_secs(5), 1).await;
    let (got, at) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap();
    let after = at - crashed;
    assert!(
        after < lease + Duration::from_millis(300),
        "came back {after:?} after the crash"
    );
    got.unwrap().release().await.unwrap();
}

/// A renewed permit outlives several leases while its guard lives (nobody
/// else gets it), and is released normally.
#[tokio::test]
async fn renewal_keeps_a_long_jobs_permit() {
    let server = RedisServer::shared();
    let lease = Duration::from_millis(600);
    let (a, b) = (
        client_with_watchdog(server, lease).await,
        client_with_watchdog(server, lease).await,
    );
    let held = semaphore(&a, "pes-renew", 1).await;
    let permit = held.try_acquire().await.unwrap();
    let other = b.expirable_semaphore(held.name());
    let started = Instant::now();
    while started.elapsed() < lease * 4 {
        // Each read also reclaims expired permits: ours must never be one.
        assert_eq!(other.available_permits().await.unwrap(), 0);
        assert!(other.try_acquire().await.unwrap_err().is_busy());
        assert!(!permit.is_lost());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let score = acquired_raw(server, held.name())[0].1 as i64;
    assert!(score > server_ms(server) + 100, "lease not renewed");
    permit.release().await.unwrap();
    assert_eq!(other.available_permits().await.unwrap(), 1);
}

/// A renewed permit that someone else released (by id) is reported lost
/// at the next renewal.
#[tokio::test]
async fn renewal_reports_a_permit_released_by_id() {
    let server = RedisServer::shared();
    let lease = Duration::from_millis(300);
    let c = client_with_watchdog(server, lease).await;
    let semaphore = semaphore(&c, "pes-renew-lost", 1).await;
    let permit = semaphore.try_acquire().await.unwrap();
    semaphore.release_by_id(permit.id()).await.unwrap();
    let reason = tokio::time::timeout(SOON, permit.lost()).await.unwrap();
    assert_eq!(reason, LostReason::OwnerChanged);
    assert!(permit.is_lost());
    assert!(permit.release().await.unwrap_err().is_not_owner());
    assert_eq!(semaphore.available_permits().await.unwrap(), 1);
}

/// A fixed lease ends: `lost()` says so, the release is refused as not
/// ours, and the permit is back in the pool, whether or not a reclaim ran
/// first.
#[tokio::test]
async fn fixed_lease_expires_and_release_is_not_owner() {
    let c = client().await;
    let lease = Duration::from_millis(200);
    let semaphore = semaphore(&c, "pes-fixed", 2).await.lease(lease);
    let first = semaphore.try_acquire().await.unwrap();
    let second = semaphore.try_acquire().await.unwrap();
    assert!(!first.is_lost());
    // A `lost()` cancelled before the end changes nothing.
    let early = tokio::time::timeout(Duration::from_millis(20), first.lost()).await;
    assert!(early.is_err(), "lost before its lease ended");
    assert_eq!(
        tokio::time::timeout(SOON, first.lost()).await.unwrap(),
        LostReason::Expired
    );
    // Past both leases, on the server's clock too.
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(first.is_lost() && second.is_lost());
    // Expired but not reclaimed yet: the release returns it, and refuses.
    let e = first.release().await.unwrap_err();
    assert!(e.is_not_owner(), "{e}");
    // Reclaimed by a read first.
    assert_eq!(semaphore.available_permits().await.unwrap(), 2);
    assert!(second.release().await.unwrap_err().is_not_owner());
    assert_eq!(semaphore.available_permits().await.unwrap(), 2);
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 0);
}

/// A fixed lease is extended as Redisson's `updateLeaseTime` does (#27:
/// every guard whose kind has a lease can `extend`): the permit outlives
/// its first lease, in Redis and by `lost()`; a renewed permit refuses, and
/// an expired one is not brought back.
#[tokio::test]
async fn a_fixed_lease_permit_is_extended() {
    let c = client().await;
    let lease = Duration::from_millis(200);
    let sem = semaphore(&c, "pes-extend", 1).await;
    let permit = sem.clone().lease(lease).try_acquire().await.unwrap();
    let first_end = permit.expires_at().unwrap();
    permit.extend(Duration::from_secs(5)).await.unwrap();
    assert!(permit.expires_at().unwrap() > first_end + Duration::from_secs(4));
    // Past the first lease: still held, in Redis and here, and lost()
    // follows the new end.
    let early = tokio::time::timeout(lease + Duration::from_millis(200), permit.lost()).await;
    assert!(early.is_err(), "lost() kept the first lease's end");
    assert!(!permit.is_lost());
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    assert!(sem.try_acquire().await.unwrap_err().is_busy());
    permit.release().await.unwrap();

    let renewed = sem.try_acquire().await.unwrap();
    let e = renewed.extend(Duration::from_secs(5)).await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    renewed.release().await.unwrap();

    let short = sem
        .clone()
        .lease(Duration::from_millis(50))
        .try_acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = short.extend(Duration::from_secs(5)).await.unwrap_err();
    assert!(e.is_not_owner(), "{e}");
    assert_eq!(sem.available_permits().await.unwrap(), 1);
}

/// A waiter for a permit with a fixed lease gets it when it expires (the
/// holder sent no message), not later.
#[tokio::test]
async fn waiter_takes_an_expired_permit_without_a_message() {
    let server = RedisServer::shared();
    let c = client().await;
    let lease = Duration::from_millis(400);
    let semaphore = semaphore(&c, "pes-expiry", 1).await;
    let held = semaphore.clone().lease(lease).try_acquire().await.unwrap();
    let acquired = Instant::now();
    let waiter = spawn_waiter(server, semaphore, Duration::from_secs(5), 1).await;
    let (got, at) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap();
    let after = at - acquired;
    assert!(
        after >= lease - Duration::from_millis(20),
        "took a live permit: {after:?}"
    );
    assert!(after < lease + Duration::from_millis(150), "{after:?}");
    got.unwrap().release().await.unwrap();
    // Reclaimed and taken by the waiter: its release finds nothing.
    assert!(held.release().await.unwrap_err().is_not_owner());
}

/// Acquires cancelled after every number of polls, on a free semaphore
/// (some land while the acquire is in Redis) and on a full one: no permit
/// is ever lost, and the count is whole again at once.
#[tokio::test]
async fn cancelled_acquires_conserve_permits() {
    let c = client().await;
    let semaphore = semaphore(&c, "pes-cancel", 1).await;
    let whole = || async {
        let s = semaphore.clone();
        for _ in 0..100 {
            if s.available_permits().await.unwrap() == 1 && s.acquired_permits().await.unwrap() == 0
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    };
    let mut cancelled = 0;
    for polls in 0..30 {
        for wait in [None, Some(Duration::from_secs(5))] {
            let s = semaphore.clone();
            let mut acquire = Box::pin(async move {
                match wait {
                    Some(w) => s.try_acquire_for(w).await,
                    None => s.try_acquire().await,
                }
            });
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
                Some(g) => g.release().await.unwrap(),
                None => cancelled += 1,
            }
            drop(acquire);
            assert!(whole().await, "permit lost after {polls} polls");
        }
    }
    assert!(cancelled > 0, "no acquire was cancelled");

    // Waiters on a full semaphore, cancelled, and a dropped release.
    let held = semaphore.try_acquire().await.unwrap();
    for _ in 0..5 {
        let r = tokio::time::timeout(Duration::from_millis(50), semaphore.acquire()).await;
        assert!(r.is_err(), "acquired a taken permit");
    }
    let releasing = Box::pin(held.release());
    drop(releasing);
    assert!(whole().await, "a dropped release left the permit taken");
    let dropped = semaphore.try_acquire().await.unwrap();
    drop(dropped);
    assert!(whole().await, "a dropped guard left the permit taken");
}

/// A waiter woken by a release and cancelled while its acquire sits in a
/// frozen server: when the server resumes, that acquire runs and the
/// release sent behind it gives the permit back.
#[tokio::test]
async fn acquire_cancelled_in_a_frozen_server_is_released() {
    let server = RedisServer::start();
    let (a, b) = (
        redlease::Client::connect(&server.url()).await.unwrap(),
        redlease::Client::connect(&server.url()).await.unwrap(),
    );
    let name = unique("pes-frozen");
    let held_by_a = a.expirable_semaphore(&name);
    assert!(held_by_a.try_set_total(1).await.unwrap());
    let held = held_by_a.try_acquire().await.unwrap();
    let calls = evalsha_calls(&server);
    let waiting_on = b.expirable_semaphore(&name);
    let mut waiting = Box::pin(waiting_on.acquire());
    // Asleep on the channel, after its attempt and its retry.
    tokio::select! {
        _ = &mut waiting => panic!("acquired a taken permit"),
        _ = async {
            while subscribers(&server, &channel(&name)) == 0 || evalsha_calls(&server) < calls + 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } => {}
    }
    held.release().await.unwrap();
    // The message is on its way; this task has not yielded since, so the
    // woken attempt reaches a frozen server.
    let before = evalsha_calls(&server);
    server.pause();
    let r = tokio::time::timeout(Duration::from_millis(100), &mut waiting).await;
    assert!(r.is_err(), "acquired from a frozen server");
    drop(waiting);
    server.resume();
    assert!(
        eventually(SOON, || evalsha_calls(&server) >= before + 2)
            .await
            .is_some(),
        "the acquire and its release did not both run"
    );
    assert_eq!(held_by_a.acquired_permits().await.unwrap(), 0);
    assert_eq!(held_by_a.available_permits().await.unwrap(), 1);
}

/// Guards dropped on a thread without a runtime neither panic nor block;
/// a renewed permit's renewal stops all the same, so both permits (one
/// with a fixed lease, one renewed) come back when their leases end.
#[tokio::test]
async fn guards_dropped_without_a_runtime_expire() {
    let server = RedisServer::shared();
    let lease = Duration::from_millis(300);
    let c = client_with_watchdog(server, lease).await;
    let semaphore = semaphore(&c, "pes-no-runtime", 2).await;
    let fixed = semaphore.clone().lease(lease).try_acquire().await.unwrap();
    let renewed = semaphore.try_acquire().await.unwrap();
    let dropped = Instant::now();
    std::thread::spawn(move || drop((fixed, renewed)))
        .join()
        .unwrap();
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 2);
    // A renewal at a third of the lease would have pushed it to two
    // thirds past this point.
    tokio::time::sleep_until((dropped + lease + Duration::from_millis(50)).into()).await;
    assert_eq!(semaphore.available_permits().await.unwrap(), 2);
}

/// Bad input and foreign values give typed errors, never a panic, and
/// leave the keys as they were.
#[tokio::test]
async fn bad_input_is_typed() {
    let server = RedisServer::shared();
    let c = client().await;
    let semaphore = semaphore(&c, "pes-bad", 1).await;
    let name = semaphore.name().to_owned();
    for e in [
        semaphore.set_total(u64::MAX).await.unwrap_err(),
        semaphore
            .try_set_total(u64::from(u32::MAX))
            .await
            .unwrap_err(),
        semaphore
            .add_permits(i64::from(i32::MAX))
            .await
            .unwrap_err(),
        semaphore.add_permits(i64::MIN).await.unwrap_err(),
        semaphore.release_by_id("not hex").await.unwrap_err(),
        semaphore.release_by_id("abc").await.unwrap_err(),
        semaphore.release_by_id("").await.unwrap_err(),
        semaphore
            .clone()
            .lease(Duration::ZERO)
            .try_acquire()
            .await
            .unwrap_err(),
        c.expirable_semaphore("").try_acquire().await.unwrap_err(),
    ] {
        assert!(e.is_invalid_argument(), "{e}");
    }
    assert_eq!(
        free_raw(server, &name),
        Some(1),
        "bad input changed the count"
    );

    let text = unique("pes-text");
    redis::cmd("SET")
        .arg(&text)
        .arg("many")
        .exec(&mut server.connection())
        .unwrap();
    let hash = unique("pes-hash");
    redis::cmd("HSET")
        .arg(&hash)
        .arg("f")
        .arg(1)
        .exec(&mut server.connection())
        .unwrap();
    let zset_text = unique("pes-zset");
    redis::cmd("SET")
        .arg(&zset_text)
        .arg(1)
        .exec(&mut server.connection())
        .unwrap();
    redis::cmd("SET")
        .arg(timeout_key(&zset_text))
        .arg("x")
        .exec(&mut server.connection())
        .unwrap();
    for key in [&text, &hash, &zset_text] {
        let s = c.expirable_semaphore(key.as_str());
        let e = s.try_acquire().await.unwrap_err();
        assert!(e.is_wrong_type(), "{key}: {e}");
        assert!(e.to_string().contains("semaphore"), "{e}");
        // The hash says what it holds (#27); the strings are the right
        // type, so the message names the permits key instead.
        if key == &hash {
            assert!(e.to_string().contains("holds a hash, not a string"), "{e}");
        } else {
            assert!(e.to_string().contains("is not a zset"), "{e}");
        }
        assert!(
            s.available_permits().await.unwrap_err().is_wrong_type(),
            "{key}"
        );
        assert!(
            s.try_acquire_for(Duration::from_millis(50))
                .await
                .unwrap_err()
                .is_wrong_type()
        );
    }
    for key in [&text, &hash] {
        let s = c.expirable_semaphore(key.as_str());
        assert!(s.add_permits(1).await.unwrap_err().is_wrong_type(), "{key}");
        assert!(s.set_total(1).await.unwrap_err().is_wrong_type(), "{key}");
        assert!(
            s.try_set_total(1).await.unwrap_err().is_wrong_type(),
            "{key}"
        );
        let id = "00112233445566778899aabbccddeeff";
        assert!(
            s.release_by_id(id).await.unwrap_err().is_wrong_type(),
            "{key}"
        );
    }
    let value: String = redis::cmd("GET")
        .arg(&text)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(value, "many", "a foreign value was changed");
}

/// #29: a permit Redis granted but whose reply came too late is given back
/// even when the release's own reply is late too (its script not cached yet
/// on a fresh server: a late `NOSCRIPT` left redis-rs no time to fall back
/// to `EVAL`, and the permit stayed taken for its whole lease).
#[tokio::test]
async fn issue_29_a_late_permit_is_released_when_its_release_is_late_too() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    // A refused try loads the acquire script, and only that one.
    let none = c.expirable_semaphore(unique("late-permit-none"));
    none.set_total(0).await.unwrap();
    assert!(none.try_acquire().await.unwrap_err().is_busy());

    let sem = c.expirable_semaphore(unique("late-permit"));
    sem.set_total(1).await.unwrap();
    server.pause();
    let err = sem.try_acquire().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // The release times out as well while the server stays frozen.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.resume();
    let available = || -> Option<i64> {
        redis::cmd("GET")
            .arg(sem.name())
            .query(&mut server.connection())
            .unwrap()
    };
    let back = eventually(Duration::from_secs(3), || available() == Some(1)).await;
    assert!(
        back.is_some(),
        "the late permit is still taken: {} available",
        sem.available_permits().await.unwrap()
    );
}

/// Issue #37: a permit's `release()` whose reply was lost (the server
/// stalled past the response time-out) failed with a time-out though the
/// permit went back, or was about to, and a repeat would have answered
/// "not ours". Now it is sent again under one request id, whose record
/// makes a repeat answer as the first did: the caller is told it worked,
/// and the permit went back once. Also for a permit dropped in the stall.
#[tokio::test]
async fn issue_37_a_release_whose_reply_is_lost_is_answered_and_counts_once() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    for how in ["release", "drop"] {
        let sem = semaphore(&c, "expirable-lost-reply", 2).await;
        let permit = sem.try_acquire().await.unwrap();
        assert_eq!(free_raw(&server, sem.name()), Some(1));
        let answered = across_a_stall(&server, async move {
            match how {
                "release" => permit.release().await,
                _ => {
                    drop(permit);
                    Ok(())
                }
            }
        })
        .await;
        let back = eventually(Duration::from_secs(5), || {
            free_raw(&server, sem.name()) == Some(2)
        })
        .await;
        assert!(
            back.is_some(),
            "{how}: {:?} free",
            free_raw(&server, sem.name())
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            free_raw(&server, sem.name()),
            Some(2),
            "{how}: counted twice"
        );
        assert!(acquired_raw(&server, sem.name()).is_empty(), "{how}");
        assert!(answered.is_ok(), "{how}: {answered:?}");
    }
}

/// Thousands of renewed permits are renewed by the client's one watchdog
/// task, in batches, as held locks are: holding them starts no task, and
/// every one outlives several leases (#38). Before, each permit's guard ran
/// a renewal task of its own: 2,000 permits, 2,000 tasks.
#[tokio::test]
async fn issue_38_thousands_of_renewed_permits_share_the_clients_one_renewal_task() {
    const PERMITS: usize = 2_000;
    let server = RedisServer::shared();
    let lease = Duration::from_millis(900);
    let c = client_with_watchdog(server, lease).await;
    let semaphore = semaphore(&c, "pes-issue-38-tasks", PERMITS as i64).await;
    let runtime = tokio::runtime::Handle::current().metrics();
    let before = runtime.num_alive_tasks();
    let mut permits = Vec::with_capacity(PERMITS);
    for _ in 0..PERMITS {
        permits.push(semaphore.try_acquire().await.unwrap());
    }
    let tasks = runtime.num_alive_tasks();
    assert!(
        tasks <= before + 1,
        "{PERMITS} permits held with {tasks} tasks alive, {before} before"
    );
    assert_eq!(c.renewing(), PERMITS);
    // Three leases: every permit is renewed again and again.
    tokio::time::sleep(lease * 3).await;
    assert_eq!(semaphore.available_permits().await.unwrap(), 0);
    let now = server_ms(server);
    let scores = acquired_raw(server, semaphore.name());
    assert_eq!(scores.len(), PERMITS);
    assert!(scores.iter().all(|(_, score)| *score as i64 > now));
    assert!(permits.iter().all(|p| !p.is_lost()));
    assert_eq!(c.renewing(), PERMITS);
    for permit in permits {
        permit.release().await.unwrap();
    }
    assert_eq!(c.renewing(), 0);
    assert_eq!(semaphore.available_permits().await.unwrap(), PERMITS as i64);
}

/// A semaphore whose keys were overwritten with another type loses its
/// renewed permits, and only those: the permits of another semaphore in
/// the same renewal batch are still renewed (#38).
#[tokio::test]
async fn issue_38_a_wrong_type_loses_only_its_own_semaphores_permits() {
    let server = RedisServer::shared();
    let lease = Duration::from_millis(300);
    let c = client_with_watchdog(server, lease).await;
    let broken = semaphore(&c, "pes-issue-38-broken", 1).await;
    let kept = semaphore(&c, "pes-issue-38-kept", 1).await;
    let lost = broken.try_acquire().await.unwrap();
    let held = kept.try_acquire().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg(timeout_key(broken.name()))
        .arg("not a zset")
        .query(&mut server.connection())
        .unwrap();
    let reason = tokio::time::timeout(SOON, lost.lost()).await.unwrap();
    assert_eq!(reason, LostReason::OwnerChanged);
    tokio::time::sleep(lease * 2).await;
    assert!(!held.is_lost());
    assert_eq!(c.renewing(), 1);
    held.release().await.unwrap();
    drop(lost);
    let _: () = redis::cmd("DEL")
        .arg(timeout_key(broken.name()))
        .query(&mut server.connection())
        .unwrap();
}
