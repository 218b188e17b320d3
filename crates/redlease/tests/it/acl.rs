//! A Redis ACL user created from `redlease::acl::setuser` (what `redlease
//! acl` prints) against a real server: every lock operation works on its
//! prefix, and everything outside it is refused with an `is_auth()` error
//! that names the lock.

use std::time::Duration;

use redlease::acl::{self, Access};
use redlease_testkit::RedisServer;

use crate::support::unique;

/// What the users are granted: `unique("orders:...")` names start with it.
const PREFIX: &str = "test:orders:";

/// Creates `user` with password `pw` and the rules for `prefixes`.
fn create_user(server: &RedisServer, user: &str, prefixes: &[&str], access: Access) {
    let rules = acl::setuser(user, prefixes, access).unwrap();
    let mut conn = server.connection();
    let mut cmd = redis::cmd(&rules.args()[0]);
    for arg in &rules.args()[1..] {
        cmd.arg(arg);
    }
    let () = cmd.query(&mut conn).unwrap();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(user)
        .arg("resetpass")
        .arg(">pw")
        .query(&mut conn)
        .unwrap();
}

async fn client_as(server: &RedisServer, user: &str, watchdog: Duration) -> redlease::Client {
    let url = format!("redis://{user}:pw@127.0.0.1:{}", server.port());
    redlease::Client::builder(&url)
        .watchdog_timeout(watchdog)
        .build()
        .await
        .unwrap()
}

/// The whole lock API on the granted prefix: plain and fair locks, a
/// waiter woken by a release (subscribe, publish), renewal, fencing,
/// re-entry in a scope, `is_held`; a fresh server, so that no script is
/// loaded yet and `SCRIPT LOAD` after `NOSCRIPT` is exercised too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_from_the_acl_rules_can_run_every_lock_operation_on_its_prefix() {
    let server = RedisServer::start();
    create_user(&server, "svc", &[PREFIX], Access::Locks);
    let watchdog = Duration::from_millis(600);
    let (a, b) = (
        client_as(&server, "svc", watchdog).await,
        client_as(&server, "svc", watchdog).await,
    );
    for name in [
        unique("orders:plain"),
        format!("{PREFIX}{{{}}}", unique("tag")),
    ] {
        let held = a.lock(&name).try_lock().await.unwrap();
        let first = held.fencing_token().unwrap();
        assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
        let waiter = tokio::spawn({
            let lock = b.lock(&name);
            async move { lock.try_lock_for(Duration::from_secs(10)).await }
        });
        // Two renewal rounds, then the release wakes the waiter.
        tokio::time::sleep(watchdog).await;
        assert!(!held.is_lost());
        assert!(held.is_held().await.unwrap());
        held.unlock().await.unwrap();
        let next = waiter.await.unwrap().unwrap();
        assert!(next.fencing_token().unwrap() > first);
        next.unlock().await.unwrap();
    }
    // The fair lock: queue, waiter channel, abandon.
    let name = unique("orders:fair");
    let held = a.fair_lock(&name).try_lock().await.unwrap();
    let abandoned = b
        .fair_lock(&name)
        .try_lock_for(Duration::from_millis(100))
        .await;
    assert!(abandoned.unwrap_err().is_busy());
    let waiter = tokio::spawn({
        let lock = b.fair_lock(&name);
        async move { lock.try_lock_for(Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    held.unlock().await.unwrap();
    waiter.await.unwrap().unwrap().unlock().await.unwrap();
    // Re-entry inside a scope.
    let name = unique("orders:scope");
    let lock = a.lock(&name);
    redlease::scope(async {
        let outer = lock.try_lock().await.unwrap();
        let inner = lock.try_lock().await.unwrap();
        inner.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
}

/// Outside its prefix the user is refused, clearly: `is_auth()`, with the
/// lock's name and what to do in the message, whether the refusal comes
/// from the key pattern or from inside the script. Nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_its_prefix_the_user_is_refused_with_an_auth_error_naming_the_lock() {
    let server = RedisServer::start();
    create_user(&server, "svc", &[PREFIX], Access::Locks);
    let c = client_as(&server, "svc", Duration::from_secs(30)).await;
    let name = unique("payments:1");
    let err = c.lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&name), "{message}");
    assert!(message.contains("redlease acl"), "{message}");
    assert_eq!(err.key(), Some(name.as_str()));
    let err = c
        .lock(&name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.is_auth(), "a refusal is not waited out: {err:?}");
    // A user without the operators' rules cannot inspect or force.
    let err = redlease::admin::lock_state(&c, &unique("orders:1"))
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    let err = redlease::admin::scan(&c, "test:orders:*", 0, 100)
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.connection())
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}

/// A denial raised inside a script (Redis 7.0 answers `ERR The user
/// executing the script can't ...`, not `NOPERM`) is an auth error too:
/// here the user may touch the lock key but not publish on its channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_inside_a_script_is_an_auth_error() {
    let server = RedisServer::start();
    create_user(&server, "svc", &[PREFIX], Access::Locks);
    let mut conn = server.connection();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("svc")
        .arg("resetchannels")
        .query(&mut conn)
        .unwrap();
    let c = client_as(&server, "svc", Duration::from_secs(30)).await;
    let name = unique("orders:nochannel");
    let held = c
        .lock(&name)
        .lease(Duration::from_secs(5))
        .try_lock()
        .await
        .unwrap();
    let err = held.unlock().await.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(err.to_string().contains(&name), "{err}");
}

/// The operators' rules add what inspecting and forcing need, still only
/// on the prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_rules_let_an_operator_inspect_force_unlock_and_collect() {
    let server = RedisServer::start();
    create_user(&server, "svc", &[PREFIX], Access::Locks);
    create_user(&server, "ops", &[PREFIX], Access::Admin);
    let svc = client_as(&server, "svc", Duration::from_secs(30)).await;
    let ops = client_as(&server, "ops", Duration::from_secs(30)).await;
    let name = unique("orders:stuck");
    let held = svc.lock(&name).try_lock().await.unwrap();
    let scan = redlease::admin::scan(&ops, "test:orders:*", 0, 100)
        .await
        .unwrap();
    assert_eq!(scan.locks.len(), 1, "{scan:?}");
    let state = redlease::admin::force_unlock(&ops, &name).await.unwrap();
    assert_eq!(state.owners().len(), 1);
    assert!(!held.is_held().await.unwrap());
    let err = redlease::admin::force_unlock(&ops, &unique("payments:1"))
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    // #40: the operator sees what locks leave behind, with its size, and
    // collects a dead leader's record.
    let leader = svc.election(&name).try_campaign("a").await.unwrap();
    redlease::admin::force_unlock(&ops, &name).await.unwrap();
    let pattern = format!("*{name}*");
    let left = redlease::admin::gc(&ops, &pattern, 0, 1_000).await.unwrap();
    let kinds: Vec<_> = left.leftovers.iter().map(|l| (l.kind, l.removed)).collect();
    assert!(
        kinds.contains(&(redlease::admin::LeftoverKind::LeaderRecord, 1)),
        "{left:?}"
    );
    assert!(left.leftovers.iter().all(|l| l.bytes.is_some()), "{left:?}");
    drop(leader);
}

/// The rest of Redisson's family on the granted prefix: read-write locks
/// (their timeout keys, renewal and channel), semaphores, expirable
/// semaphores (their permit zset) and latches (whose channel is braced
/// whatever the name), each woken across clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_from_the_acl_rules_can_use_the_whole_lock_family_on_its_prefix() {
    let server = RedisServer::start();
    create_user(&server, "svc", &[PREFIX], Access::Locks);
    let watchdog = Duration::from_millis(600);
    let (a, b) = (
        client_as(&server, "svc", watchdog).await,
        client_as(&server, "svc", watchdog).await,
    );
    for name in [
        unique("orders:rw"),
        format!("{PREFIX}{{{}}}", unique("rwtag")),
    ] {
        let read = a.read_write_lock(&name).read().try_lock().await.unwrap();
        let writer = tokio::spawn({
            let write = b.read_write_lock(&name).write();
            async move { write.try_lock_for(Duration::from_secs(10)).await }
        });
        // Renewal rounds of the read hold and its timeout keys.
        tokio::time::sleep(watchdog).await;
        assert!(!read.is_lost());
        read.unlock().await.unwrap();
        writer.await.unwrap().unwrap().unlock().await.unwrap();
    }

    let name = unique("orders:sem");
    let sem = a.semaphore(&name);
    assert!(sem.try_set_available(1).await.unwrap());
    sem.try_acquire(1).await.unwrap().forget();
    let waiter = tokio::spawn({
        let sem = b.semaphore(&name);
        async move { sem.try_acquire_for(1, Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    sem.release(1).await.unwrap();
    waiter.await.unwrap().unwrap().forget();
    assert_eq!(sem.available_permits().await.unwrap(), 0);

    let name = unique("orders:permits");
    let permits = a.expirable_semaphore(&name);
    assert!(permits.try_set_total(1).await.unwrap());
    let held = permits.try_acquire().await.unwrap();
    let waiter = tokio::spawn({
        let permits = b.expirable_semaphore(&name);
        async move { permits.try_acquire_for(Duration::from_secs(10)).await }
    });
    tokio::time::sleep(watchdog).await;
    assert!(!held.is_lost());
    held.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();

    let name = unique("orders:latch");
    let latch = a.count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = tokio::spawn({
        let latch = b.count_down_latch(&name);
        async move { latch.wait_for(Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    latch.count_down().await.unwrap();
    waiter.await.unwrap().unwrap();

    // An election (#40): its record, its channel, an observer, a
    // resignation, and a lock kept for its minimum.
    use futures_util::StreamExt;
    let name = unique("orders:leader");
    let mut changes = Box::pin(b.election(&name).observe());
    assert_eq!(changes.next().await.unwrap().unwrap(), None);
    let leadership = a.election(&name).campaign("a").await.unwrap();
    let seen = changes.next().await.unwrap().unwrap().unwrap();
    assert_eq!(seen.value.as_deref(), Some("a"));
    leadership.resign().await.unwrap();
    assert_eq!(changes.next().await.unwrap().unwrap(), None);
    let kept = a.lock(unique("orders:tick")).try_lock().await.unwrap();
    kept.unlock_at_least(Duration::from_millis(200))
        .await
        .unwrap();
}

/// The string layout (#17) under the same rules, on Redis 7.0 (scripts)
/// and on Valkey 9, whose `DELIFEQ` the rules do not grant (Redis 7.0
/// would refuse to grant a command it does not know): the release falls
/// back to the script, and the lock works.
#[tokio::test]
async fn a_user_from_the_acl_rules_can_run_string_layout_locks() {
    let valkey = RedisServer::try_start_valkey().unwrap_or_else(|e| panic!("{e}"));
    for server in [&RedisServer::start(), &valkey] {
        create_user(server, "svc", &[PREFIX], Access::Locks);
        let url = format!("redis://svc:pw@127.0.0.1:{}", server.port());
        let client = || async {
            redlease::Client::builder(&url)
                .layout(redlease::layout::Layout::String)
                .watchdog_timeout(Duration::from_millis(600))
                .build()
                .await
                .unwrap()
        };
        let (a, b) = (client().await, client().await);
        let name = unique("orders:string");
        let held = a
            .lock(&name)
            .lease(Duration::from_secs(5))
            .try_lock()
            .await
            .unwrap();
        assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
        held.extend(Duration::from_secs(6)).await.unwrap();
        assert!(held.is_held().await.unwrap());
        let waiter = tokio::spawn({
            let lock = b.lock(&name);
            async move { lock.try_lock_for(Duration::from_secs(10)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        held.unlock().await.unwrap();
        let next = waiter.await.unwrap().unwrap();
        // Renewed by the watchdog past a lease.
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(next.is_held().await.unwrap());
        next.unlock().await.unwrap();
        let outside = a.lock("elsewhere:1").try_lock().await.unwrap_err();
        assert!(outside.is_auth(), "{outside}");
    }
}
