//! Faults on a real local Redis Cluster: a shard's manual failover, a
//! master killed until its replica is promoted, a key lost in a failover,
//! and a slot migrated while its locks are held and waited on. Each test has
//! a cluster of its own.

use std::time::{Duration, Instant};

use crate::cluster_support::{RedisCluster, cluster_client, evalsha_calls, name_in_new_slot};
use crate::support::{spawn_timed, unique};

/// Waits (at most 5 s) until `channel` has a sharded subscriber in the
/// shard that owns it: on its master or on a replica, which Redis serves
/// alike (a message published on the master reaches every node of the
/// shard). After a failover a subscription made again before the slot map
/// caught up lands on the old master, a replica now (the test failed
/// there once when it asked the master only: #37).
async fn sharded_subscriber(cluster: &RedisCluster, channel: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let master = cluster.master_for_key(channel);
        let mut n = 0;
        for node in std::iter::once(master).chain(cluster.replicas_of(master)) {
            let (_, here): (String, i64) = redis::cmd("PUBSUB")
                .arg("SHARDNUMSUB")
                .arg(channel)
                .query(&mut node.connection())
                .unwrap();
            n += here;
        }
        if n > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no sharded subscriber on {channel}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A manual failover of the shard that holds a lock: the holder keeps it,
/// and a waiter is still woken by the release at once, although the old
/// master dropped its sharded subscription and redis-rs forgot it too
/// (redlease subscribes again where the slot went). Both leases are 30 s,
/// so only a release message can wake the waiter early. The next holder's
/// fencing token is larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_keeps_the_holder_and_wakes_the_waiter() {
    let mut cluster = RedisCluster::start(3, 1);
    let (a, b) = (
        cluster_client(&cluster, Duration::from_secs(30)).await,
        cluster_client(&cluster, Duration::from_secs(30)).await,
    );
    let name = unique("failover");
    let held = a.lock(&name).try_lock().await.unwrap();
    let token = held.fencing_token().unwrap();
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(25));
    sharded_subscriber(&cluster, &redlease::layout::channel(&name)).await;
    let master = cluster.master_for_key(&name).clone();
    let replica = cluster.replica_of(&master).clone();
    cluster.failover(&replica);
    assert!(cluster.master_for_key(&name).id() == replica.id());
    assert!(held.is_held().await.unwrap());
    // The subscription is back in the shard before the release, as a
    // Redisson waiter's would be.
    sharded_subscriber(&cluster, &redlease::layout::channel(&name)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    let woken = at - released;
    assert!(
        woken < Duration::from_secs(2),
        "woken {woken:?} after the release"
    );
    let guard = guard.unwrap();
    assert!(guard.fencing_token().unwrap() > token);
    guard.unlock().await.unwrap();
}

/// A holder whose key did not survive the failover (the promoted replica
/// does not have it; here deleted on the new master right after the
/// switch) is told `lost()` within one renewal period: its renewals follow
/// the slot to the new master and find the key gone. The client requires a
/// replica's acknowledgement of each acquire (`require_replicas`), which on
/// a cluster means the lock's own shard: `WAIT` goes to the lock's node, so
/// a paused replica there refuses the acquire and a dead replica of another
/// shard does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_lost_in_a_failover_is_reported_lost() {
    let mut cluster = RedisCluster::start(3, 1);
    let watchdog = Duration::from_millis(900);
    let c = redlease::Client::builder(&cluster.url())
        .watchdog_timeout(watchdog)
        .require_replicas(1, Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let name = unique("lost-in-failover");
    let master = cluster.master_for_key(&name).clone();
    let replica = cluster.replica_of(&master).clone();
    // `WAIT` must go to the lock's node: with its replica paused, the
    // acquire is not acknowledged; with another shard's replica gone, it
    // is (sent to every master, `WAIT` would count that shard's none).
    cluster.pause(&replica);
    let unacked = c.lock(&name).try_lock().await;
    cluster.resume(&replica);
    assert!(unacked.unwrap_err().is_not_replicated());
    let other = cluster.masters().find(|m| m.id() != master.id()).unwrap();
    let other_replica = cluster.replica_of(other).clone();
    cluster.kill_replica(&other_replica);
    let held = c.lock(&name).try_lock().await.unwrap();
    cluster.failover(&replica);
    assert!(!held.is_lost(), "lost before the key was");
    redis::cmd("DEL")
        .arg(&name)
        .exec(&mut cluster.master_for_key(&name).connection())
        .unwrap();
    let since = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(5), held.lost())
        .await
        .expect("no loss reported");
    assert_eq!(reason, redlease::LostReason::OwnerChanged);
    // One renewal period is 300 ms.
    assert!(
        since.elapsed() < Duration::from_millis(600),
        "{:?}",
        since.elapsed()
    );
    // The lock is free for the next holder, with a larger token.
    let next = c.lock(&name).try_lock().await.unwrap();
    assert!(next.fencing_token().unwrap() > held.fencing_token().unwrap());
    next.unlock().await.unwrap();
}

/// A master killed with SIGKILL until its replica is promoted: a holder
/// whose key was replicated keeps the lock through the outage (renewals
/// fail, then reach the new master before the lease could end), and a
/// waiter is subscribed again on the new master and woken by the release
/// at once (its sleep is otherwise bounded only by the 9 s lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_replaced_without_losing_held_locks() {
    let mut cluster = RedisCluster::start(3, 1);
    // Longer than the promotion (node timeout 2 s, then an election: 4 to
    // 5 s here), with a renewal every 3 s.
    let watchdog = Duration::from_secs(9);
    let (a, b) = (
        cluster_client(&cluster, watchdog).await,
        cluster_client(&cluster, watchdog).await,
    );
    let name = unique("killed");
    let held = a.lock(&name).try_lock().await.unwrap();
    let master = cluster.master_for_key(&name).clone();
    // Replicated before the kill.
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut master.connection())
        .unwrap();
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(40));
    sharded_subscriber(&cluster, &redlease::layout::channel(&name)).await;
    let promoted = cluster.kill_master_and_wait_for_promotion(&master);
    assert_eq!(cluster.master_for_key(&name).id(), promoted.id());
    // A renewal round on the new master keeps it ours.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!held.is_lost());
    assert!(held.is_held().await.unwrap());
    sharded_subscriber(&cluster, &redlease::layout::channel(&name)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    assert!(
        at - released < Duration::from_secs(2),
        "{:?}",
        at - released
    );
    let guard = guard.unwrap();
    assert!(guard.fencing_token().unwrap() > 0);
    guard.unlock().await.unwrap();
}

/// A slot migrated (MOVED) and migrating (ASK, TRYAGAIN) while its locks
/// are held and waited on: renewals follow the key to its new node, a new
/// acquire in the migrating slot succeeds within its wait, and the waiter
/// is woken by the release on the new node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_migration_keeps_locks_and_waiters() {
    let mut cluster = RedisCluster::start(3, 0);
    let watchdog = Duration::from_millis(900);
    let (a, b) = (
        cluster_client(&cluster, watchdog).await,
        cluster_client(&cluster, Duration::from_secs(30)).await,
    );
    let tag = unique("migrate");
    let (held_name, new_name) = (format!("{{{tag}}}:held"), format!("{{{tag}}}:new"));
    let slot = redlease_testkit::key_slot(&held_name);
    let held = a.lock(&held_name).try_lock().await.unwrap();
    let waiter = spawn_timed(b.lock(&held_name), Duration::from_secs(30));
    sharded_subscriber(&cluster, &redlease::layout::channel(&held_name)).await;
    let from = cluster.master_for_key(&held_name).clone();
    let to = cluster
        .masters()
        .find(|m| m.id() != from.id())
        .unwrap()
        .clone();
    // Migrating: the held lock's key moves first, its fencing counter
    // stays; an acquire of another lock in the slot meets ASK or TRYAGAIN.
    cluster.begin_migration(slot, &from, &to);
    cluster.migrate_key(&held_name, &from, &to);
    let during = tokio::spawn({
        let lock = b.lock(&new_name);
        async move { lock.try_lock_for(Duration::from_secs(10)).await }
    });
    // A script over two keys of a migrating slot, one of them moved, gets
    // TRYAGAIN until the migration ends: the acquire keeps retrying.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !during.is_finished(),
        "no TRYAGAIN to retry: {:?}",
        during.await
    );
    cluster.migrate_keys(slot, &from, &to);
    cluster.finish_migration(slot, &from, &to);
    let during = tokio::time::timeout(Duration::from_secs(10), during)
        .await
        .expect("still retrying after the migration ended")
        .unwrap()
        .unwrap();
    assert!(cluster.master_for_key(&held_name).id() == to.id());
    // Renewed on the new node for three periods: still ours.
    tokio::time::sleep(watchdog).await;
    assert!(!held.is_lost());
    assert!(held.is_held().await.unwrap());
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    assert!(
        at - released < Duration::from_secs(2),
        "{:?}",
        at - released
    );
    guard.unwrap().unlock().await.unwrap();
    during.unlock().await.unwrap();
}

/// The watchdog renews in one script call per master and 100 locks (#13):
/// 150 locks in two slots, then 40 more in 40 other slots, cost
/// ceil(locks on the master / 100) calls per master a round, not one per
/// slot, and none is lost (a batch declaring keys of two slots would fail
/// with CROSSSLOT).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_are_batched_by_master() {
    let cluster = RedisCluster::start(3, 0);
    let watchdog = Duration::from_millis(1500);
    let c = cluster_client(&cluster, watchdog).await;
    let tag = unique("batch");
    let mut guards = Vec::new();
    for i in 0..150 {
        let name = match i % 2 {
            0 => format!("{{{tag}-a}}:{i}"),
            _ => format!("{{{tag}-b}}:{i}"),
        };
        guards.push(c.lock(name).try_lock().await.unwrap());
    }
    let cluster = &cluster;
    let calls_in = |period: Duration| async move {
        let before = evalsha_calls(cluster);
        tokio::time::sleep(period).await;
        evalsha_calls(cluster) - before
    };
    // The calls a round needs: ceil(n / 100) for the n locks on each
    // master.
    let per_round = |guards: &[redlease::LockGuard]| -> u64 {
        let mut on_master = std::collections::HashMap::<String, u64>::new();
        for g in guards {
            *on_master
                .entry(cluster.master_for_key(g.name()).id().to_owned())
                .or_default() += 1;
        }
        on_master.values().map(|n| n.div_ceil(100)).sum()
    };
    // Three periods: three rounds (one more or less at the edges).
    let expected = per_round(&guards);
    assert_eq!(expected, 2, "150 locks on one master or two");
    let calls = calls_in(Duration::from_millis(1500)).await;
    assert!(
        (2 * expected..=4 * expected).contains(&calls),
        "{expected} calls a round, {calls} in 3 rounds"
    );
    let mut slots = vec![
        redlease_testkit::key_slot(format!("{{{tag}-a}}")),
        redlease_testkit::key_slot(format!("{{{tag}-b}}")),
    ];
    for _ in 0..40 {
        let name = name_in_new_slot(&unique("spread"), &mut slots);
        guards.push(c.lock(name).try_lock().await.unwrap());
    }
    let expected = per_round(&guards);
    assert!(expected <= 5, "190 locks on 3 masters: {expected} calls");
    let calls = calls_in(Duration::from_millis(1500)).await;
    assert!(
        (2 * expected..=4 * expected).contains(&calls),
        "{expected} calls a round, not one per slot (42): {calls} in 3 rounds"
    );
    assert!(guards.iter().all(|g| !g.is_lost()));
    assert_eq!(c.renewing(), 190);
    for g in guards {
        g.unlock().await.unwrap();
    }
}

/// A lock whose key moved to another master mid-migration, while the slot
/// map still names its old master, is renewed where it went (#13): the
/// per-master renewal call reports it as not served there and the watchdog
/// renews it by slot, following the redirection, instead of declaring it
/// lost. Its neighbours on the old master are renewed as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_moved_mid_migration_is_renewed_where_it_went() {
    let mut cluster = RedisCluster::start(3, 0);
    let watchdog = Duration::from_millis(900);
    let c = cluster_client(&cluster, watchdog).await;
    let from = cluster.masters().next().unwrap().clone();
    let to = cluster
        .masters()
        .find(|m| m.id() != from.id())
        .unwrap()
        .clone();
    // Eight locks in eight slots of one master: one renewal call a round.
    let (prefix, mut slots, mut names) = (unique("moved"), Vec::new(), Vec::new());
    while names.len() < 8 {
        let name = name_in_new_slot(&prefix, &mut slots);
        if cluster.master_for_key(&name).id() == from.id() {
            names.push(name);
        }
    }
    let mut guards = Vec::new();
    for name in &names {
        guards.push(c.lock(name).try_lock().await.unwrap());
    }
    let moved = &names[3];
    let slot = redlease_testkit::key_slot(moved);
    cluster.begin_migration(slot, &from, &to);
    cluster.migrate_key(moved, &from, &to);
    // Four periods in that state: every round meets the moved key on the
    // old master, which answers ASK for it inside the script.
    tokio::time::sleep(watchdog * 4 / 3).await;
    assert!(guards.iter().all(|g| !g.is_lost()), "a lock was lost");
    let mut on_to = to.connection();
    let (_, pttl): ((), i64) = redis::pipe()
        .cmd("ASKING")
        .cmd("PTTL")
        .arg(moved)
        .query(&mut on_to)
        .unwrap();
    assert!(
        pttl > 900 * 2 / 3 - 100,
        "the moved key was not renewed on its new master: PTTL {pttl} ms"
    );
    cluster.migrate_keys(slot, &from, &to);
    cluster.finish_migration(slot, &from, &to);
    for g in guards {
        g.unlock().await.unwrap();
    }
}

/// Found by the judge's Cluster phase (#36), left for #37: a master killed
/// while a lock on **another** shard is held with a 1.5 s lease. The lock
/// on the healthy shard is lost (2 runs of 3 here, at 4.3 and 4.6 s), its
/// holder told by its own clock: redis-rs 1.8.1's cluster connection stops
/// every request while it refreshes its slot map after the dead node's
/// errors (`poll_flush` polls the recovery future before any request), so
/// the watchdog's renewals to the healthy master wait seconds behind it.
/// Safe (the holder is told, its release refused), but a failover should
/// not cost locks on other shards; ignored until #37 routes renewals
/// around the stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "fails until #37: a failover elsewhere stalls renewals"]
async fn issue_36_a_failover_of_another_shard_keeps_its_locks() {
    let mut cluster = RedisCluster::start(3, 1);
    let watchdog = Duration::from_millis(1500);
    let a = cluster_client(&cluster, watchdog).await;
    // A name on another master than `victim`'s.
    let victim_name = unique("victim");
    let victim = cluster.master_for_key(&victim_name).clone();
    let name = (0..100)
        .map(|i| format!("{}-{i}", unique("healthy")))
        .find(|n| cluster.master_for_key(n).id() != victim.id())
        .unwrap();
    let healthy = cluster.master_for_key(&name).clone();
    let victim_held = a.lock(&victim_name).try_lock().await.unwrap();
    let held = a.lock(&name).try_lock().await.unwrap();
    let started = Instant::now();
    let killer = std::thread::spawn(move || {
        let promoted = cluster.kill_master_and_wait_for_promotion(&victim);
        (cluster, promoted)
    });
    let mut lost_at = None;
    let mut conn = healthy.connection();
    let mut last = 0i64;
    let mut renewed = Vec::new();
    while started.elapsed() < Duration::from_secs(12) {
        if lost_at.is_none() && held.is_lost() {
            lost_at = Some(started.elapsed());
        }
        let pttl: i64 = redis::cmd("PTTL").arg(&name).query(&mut conn).unwrap_or(-3);
        if pttl > last + 50 {
            renewed.push(started.elapsed().as_millis());
        }
        last = pttl;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("the healthy key's renewals, ms: {renewed:?}");
    let (_cluster, _promoted) = killer.join().unwrap();
    drop(victim_held);
    assert_eq!(lost_at, None, "the healthy shard's lock was lost");
}
