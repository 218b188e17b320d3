//! The string layout (#17): a lock is a string key holding its owner, set
//! with `SET key owner NX PX lease`, as other libraries keep their locks.
//! Each test runs on Redis 7.0 (release and extension by script) and on
//! Valkey 9 (by `DELIFEQ` and `SET ... IFEQ`).

use std::time::{Duration, Instant};

use redlease::layout::Layout;
use redlease::{Client, LostReason};

use crate::support::{RedisServer, exists, pttl, unique, valkey};

/// The shared Redis 7.0, then the shared Valkey 9.
fn servers() -> [&'static RedisServer; 2] {
    [RedisServer::shared(), valkey()]
}

async fn string_client(server: &RedisServer) -> Client {
    string_client_with(server, Duration::from_secs(30)).await
}

async fn string_client_with(server: &RedisServer, watchdog: Duration) -> Client {
    Client::builder(&server.url())
        .layout(Layout::String)
        .watchdog_timeout(watchdog)
        .build()
        .await
        .unwrap()
}

/// `SET` with `args`, straight to the server: another holder, or a key
/// changed behind the lock's back.
fn set(server: &RedisServer, args: &[&str]) {
    let () = redis::cmd("SET")
        .arg(args)
        .query(&mut server.connection())
        .unwrap();
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// How many times the server ran `command` (`INFO commandstats`).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn a_string_lock_is_the_owner_under_the_key_with_the_lease() {
    for server in servers() {
        let (a, b) = (string_client(server).await, string_client(server).await);
        let name = unique("string-basic");
        let guard = a
            .lock(&name)
            .lease(Duration::from_secs(20))
            .try_lock()
            .await
            .unwrap();
        assert_eq!(get(server, &name).as_deref(), Some(guard.owner()));
        let ttl = pttl(server, &name);
        assert!((19_000..=20_000).contains(&ttl), "{ttl}");
        let busy = b.lock(&name).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        assert!(guard.is_held().await.unwrap());
        guard.unlock().await.unwrap();
        assert!(!exists(server, &name));
        b.lock(&name)
            .try_lock()
            .await
            .unwrap()
            .unlock()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn fencing_tokens_increase_across_layouts_on_one_counter() {
    for server in servers() {
        let string = string_client(server).await;
        let hash = Client::connect(&server.url()).await.unwrap();
        let name = unique("string-fence");
        let mut last = 0;
        for client in [&string, &hash, &string, &string] {
            let guard = client.lock(&name).try_lock().await.unwrap();
            assert!(
                guard.fencing_token().unwrap() > last,
                "{} <= {last}",
                guard.fencing_token().unwrap()
            );
            // Started from the clock in microseconds.
            assert!(guard.fencing_token().unwrap() > 1_000_000_000_000_000);
            last = guard.fencing_token().unwrap();
            guard.unlock().await.unwrap();
        }
    }
}

#[tokio::test]
async fn with_redisson_fenced_interop_the_counter_never_expires() {
    for server in servers() {
        let client = Client::builder(&server.url())
            .layout(Layout::String)
            .redisson_fenced_interop(true)
            .build()
            .await
            .unwrap();
        let name = unique("string-interop-counter");
        let counter = redlease::layout::token_key(&name);
        // A counter Redisson's `RFencedLock` left with a time to live.
        set(server, &[&counter, "2000000000000000", "PX", "60000"]);
        let guard = client.lock(&name).try_lock().await.unwrap();
        assert_eq!(guard.fencing_token().unwrap(), 2_000_000_000_000_001);
        assert_eq!(pttl(server, &counter), -1, "persisted in the transaction");
        guard.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_release_never_deletes_another_owners_value() {
    for server in servers() {
        let client = string_client(server).await;
        let name = unique("string-not-owner");
        let guard = client.lock(&name).try_lock().await.unwrap();
        // Taken over behind our back (an operator, or an expiry and a peer).
        set(server, &[&name, "someone-else"]);
        assert!(!guard.is_held().await.unwrap());
        let err = guard.unlock().await.unwrap_err();
        assert!(err.is_not_owner(), "{err}");
        assert_eq!(get(server, &name).as_deref(), Some("someone-else"));
    }
}

#[tokio::test]
async fn layouts_exclude_each_other_on_one_key() {
    for server in servers() {
        let string = string_client(server).await;
        let hash = Client::connect(&server.url()).await.unwrap();
        let name = unique("string-vs-hash");
        let held = hash.lock(&name).try_lock().await.unwrap();
        let busy = string.lock(&name).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        held.unlock().await.unwrap();
        let held = string.lock(&name).try_lock().await.unwrap();
        // Redisson's acquire finds a string where its hash would be: named,
        // and nothing taken.
        let refused = hash.lock(&name).try_lock().await.unwrap_err();
        assert!(refused.is_wrong_type(), "{refused}");
        assert!(held.is_held().await.unwrap());
        held.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn the_watchdog_renews_a_string_lock_and_reports_a_takeover() {
    for server in servers() {
        let client = string_client_with(server, Duration::from_millis(300)).await;
        let name = unique("string-watchdog");
        let guard = client.lock(&name).try_lock().await.unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(guard.is_held().await.unwrap(), "renewed past two leases");
        assert!(!guard.is_lost());
        set(server, &[&name, "thief"]);
        let reason = tokio::time::timeout(Duration::from_secs(2), guard.lost())
            .await
            .expect("the next renewal finds the takeover");
        assert_eq!(reason, LostReason::OwnerChanged);
        // The thief's value keeps its own (absent) expiry: never extended.
        assert_eq!(pttl(server, &name), -1);
        drop(guard);
    }
}

#[tokio::test]
async fn a_fixed_lease_extends_owner_checked_and_expires() {
    for server in servers() {
        let client = string_client(server).await;
        let name = unique("string-extend");
        let guard = client
            .lock(&name)
            .lease(Duration::from_millis(300))
            .try_lock()
            .await
            .unwrap();
        guard.extend(Duration::from_secs(10)).await.unwrap();
        assert!(pttl(server, &name) > 9_000);
        guard.extend(Duration::from_millis(200)).await.unwrap();
        let reason = tokio::time::timeout(Duration::from_secs(2), guard.lost())
            .await
            .unwrap();
        assert_eq!(reason, LostReason::Expired);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!exists(server, &name));
        let err = guard.extend(Duration::from_secs(1)).await.unwrap_err();
        assert!(err.is_not_owner(), "{err}");
    }
}

#[tokio::test]
async fn a_waiter_wakes_on_our_release_and_at_a_silent_holders_expiry() {
    for server in servers() {
        let (a, b) = (string_client(server).await, string_client(server).await);
        let name = unique("string-wake");
        let guard = a.lock(&name).try_lock().await.unwrap();
        let waiter = {
            let lock = b.lock(&name);
            tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(20)).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let released = Instant::now();
        guard.unlock().await.unwrap();
        let taken = waiter.await.unwrap().unwrap();
        // Woken by the release message, not by the 30 s lease.
        assert!(released.elapsed() < Duration::from_secs(2));
        taken.unlock().await.unwrap();

        // A holder that publishes nothing (the hand-written SET NX lock):
        // the waiter sleeps until the key's expiry, not the whole wait.
        set(server, &[&name, "java-uuid", "NX", "PX", "400"]);
        let started = Instant::now();
        let guard = b
            .lock(&name)
            .try_lock_for(Duration::from_secs(20))
            .await
            .unwrap();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        guard.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_refused_attempt_leaves_the_counter_started_from_the_clock_with_its_ttl() {
    for server in servers() {
        let client = string_client(server).await;
        let name = unique("string-refused-counter");
        set(server, &[&name, "peer", "PX", "10000"]);
        let busy = client.lock(&name).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        // The transaction's `INCR` ran on a missing counter: not left at 1
        // for ever, but started as a grant starts it.
        let counter = redlease::layout::token_key(&name);
        let value: u64 = redis::cmd("GET")
            .arg(&counter)
            .query(&mut server.connection())
            .unwrap();
        assert!(value > 1_000_000_000_000_000, "{value}");
        let ttl = pttl(server, &counter);
        assert!(ttl > 0, "{ttl}");
    }
}

#[tokio::test]
async fn a_waiter_polls_a_silent_holder_without_expiry() {
    for server in servers() {
        let client = string_client(server).await;
        let name = unique("string-no-expiry");
        // A peer's lock without a lease, deleted without an announcement.
        set(server, &[&name, "forever"]);
        let waiter = {
            let lock = client.lock(&name);
            tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(20)).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished());
        let deleted = Instant::now();
        let _: () = redis::cmd("DEL")
            .arg(&name)
            .query(&mut server.connection())
            .unwrap();
        let guard = waiter.await.unwrap().unwrap();
        let took = deleted.elapsed();
        assert!(took < Duration::from_secs(1), "{took:?}");
        guard.unlock().await.unwrap();
    }
}

/// On private servers: the shared ones count other tests' calls too, and
/// one landing between the two counts failed a CI run.
#[tokio::test]
async fn reentry_in_a_scope_counts_in_the_client_without_a_round_trip() {
    let valkey = RedisServer::try_start_valkey().unwrap_or_else(|e| panic!("{e}"));
    for server in [&RedisServer::start(), &valkey] {
        let client = string_client(server).await;
        let name = unique("string-reentry");
        redlease::scope(async {
            let outer = client.lock(&name).try_lock().await.unwrap();
            let before = calls(server, "set") + calls(server, "evalsha") + calls(server, "exec");
            let inner = client.lock(&name).try_lock().await.unwrap();
            assert_eq!(inner.owner(), outer.owner());
            assert_eq!(
                inner.fencing_token().unwrap(),
                outer.fencing_token().unwrap()
            );
            inner.unlock().await.unwrap();
            let after = calls(server, "set") + calls(server, "evalsha") + calls(server, "exec");
            assert_eq!(before, after, "re-entry and its release sent nothing");
            assert!(exists(server, &name), "the outer guard still holds it");
            // Dropped re-entries count down too.
            drop(client.lock(&name).try_lock().await.unwrap());
            assert!(outer.is_held().await.unwrap());
            outer.unlock().await.unwrap();
            assert!(!exists(server, &name));
        })
        .await;
    }
}

#[tokio::test]
async fn a_cancelled_acquire_leaves_no_string_lock() {
    for server in servers() {
        let (a, b) = (string_client(server).await, string_client(server).await);
        let name = unique("string-cancel");
        let held = a.lock(&name).try_lock().await.unwrap();
        let waited = tokio::time::timeout(
            Duration::from_millis(100),
            b.lock(&name).try_lock_for(Duration::from_secs(10)),
        )
        .await;
        assert!(waited.is_err());
        held.unlock().await.unwrap();
        // Dropped right after it was sent: released behind it.
        for _ in 0..20 {
            let lock = b.lock(&name);
            let attempt = tokio::spawn(async move { lock.try_lock().await });
            tokio::task::yield_now().await;
            attempt.abort();
            let _ = attempt.await;
        }
        let free =
            crate::support::eventually(Duration::from_secs(2), || !exists(server, &name)).await;
        assert!(free.is_some(), "no lock left behind");
        a.lock(&name)
            .try_lock()
            .await
            .unwrap()
            .unlock()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_multi_lock_takes_string_locks_all_or_none() {
    for server in servers() {
        let (a, b) = (string_client(server).await, string_client(server).await);
        let (x, y) = (unique("string-multi-x"), unique("string-multi-y"));
        let both = a.multi_lock([&x, &y]).try_lock().await.unwrap();
        assert!(get(server, &x).is_some() && get(server, &y).is_some());
        both.unlock().await.unwrap();
        let held = b.lock(&y).try_lock().await.unwrap();
        let busy = a.multi_lock([&x, &y]).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        assert!(!exists(server, &x), "nothing kept of a refused multi-lock");
        held.unlock().await.unwrap();
    }
}

#[tokio::test]
async fn a_counter_that_is_no_integer_is_named_and_leaves_the_lock_free() {
    for server in servers() {
        let client = string_client(server).await;
        let name = unique("string-bad-counter");
        let counter = redlease::layout::token_key(&name);
        set(server, &[&counter, "not-a-number"]);
        let err = client.lock(&name).try_lock().await.unwrap_err();
        assert!(
            err.to_string().contains("does not hold an integer"),
            "{err}"
        );
        assert!(!exists(server, &name), "the lock was released again");
    }
}

#[tokio::test]
async fn valkey_runs_release_and_extension_as_its_own_commands() {
    // Private servers: other tests' scripts would count on shared ones.
    let server = RedisServer::try_start_valkey().unwrap_or_else(|e| panic!("{e}"));
    let client = string_client(&server).await;
    let name = unique("string-native");
    // The first token of a name starts its counter from the clock, in a
    // script: once per counter's life.
    client
        .lock(&name)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    let (delifeq, evalsha) = (calls(&server, "delifeq"), calls(&server, "evalsha"));
    let guard = client
        .lock(&name)
        .lease(Duration::from_secs(5))
        .try_lock()
        .await
        .unwrap();
    guard.extend(Duration::from_secs(6)).await.unwrap();
    assert!(pttl(&server, &name) > 5_000);
    guard.unlock().await.unwrap();
    assert_eq!(calls(&server, "delifeq"), delifeq + 1);
    assert_eq!(
        calls(&server, "evalsha"),
        evalsha,
        "no script on the hot path"
    );
    // Redis 7.0 has no DELIFEQ: a script does it there.
    let redis7 = RedisServer::start();
    let client = string_client(&redis7).await;
    let cycle = || async {
        let lock = client.lock(&name).lease(Duration::from_secs(5));
        let guard = lock.try_lock().await.unwrap();
        guard.extend(Duration::from_secs(6)).await.unwrap();
        guard.unlock().await.unwrap();
    };
    // Loads the scripts (a first `EVALSHA` answered `NOSCRIPT` counts).
    cycle().await;
    let before = calls(&redis7, "evalsha");
    cycle().await;
    let after = calls(&redis7, "evalsha");
    assert_eq!(after, before + 2, "extension and release");
}

/// Issue #37: redis-rs 1.8 panics (in builds with overflow checks, as test
/// builds are) reading a transaction whose `MULTI` the server refused, and
/// the string layout's fenced acquire sent one. Now it reads the replies
/// itself: on a server whose ACL refuses `MULTI`, the `SET` and the `INCR`
/// ran one by one, and the acquire answers what they did.
#[tokio::test]
async fn issue_37_a_refused_multi_neither_panics_nor_leaks_the_lock() {
    let server = RedisServer::start();
    let () = redis::cmd("ACL")
        .arg(
            &[
                "SETUSER", "nomulti", "on", ">pw", "~*", "&*", "+@all", "-multi",
            ][..],
        )
        .query(&mut server.connection())
        .unwrap();
    let url = format!("redis://nomulti:pw@127.0.0.1:{}", server.port());
    let client = Client::builder(&url)
        .layout(Layout::String)
        .build()
        .await
        .unwrap();
    let name = unique("string-no-multi");
    let guard = client.lock(&name).try_lock().await.unwrap();
    let first = guard.fencing_token().unwrap();
    assert!(exists(&server, &name), "the lock is held in Redis");
    let busy = client.lock(&name).try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{busy:?}");
    guard.unlock().await.unwrap();
    assert!(!exists(&server, &name));
    let again = client.lock(&name).try_lock().await.unwrap();
    assert!(again.fencing_token().unwrap() > first);
    again.unlock().await.unwrap();
}
