//! Locks on a real local Redis Cluster (3 masters): the same API, keys in
//! the lock key's slot, sharded release messages, and Redisson on the same
//! shard channel.

use std::time::{Duration, Instant};

use redlease::PubSubMode;

use crate::cluster_support::{cluster_client, key_slot, shared_cluster};
use crate::support::{acquired_within, spawn_timed, unique};

/// Every key and channel a lock touches lies in its key's slot, with and
/// without a hash tag of the user's: the scripts never raise CROSSSLOT.
#[tokio::test]
async fn every_key_of_a_lock_is_in_its_slot() {
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    for name in [unique("slot"), format!("{{{}}}:tagged", unique("slot"))] {
        let slot = key_slot(&name);
        for derived in [
            redlease::layout::channel(&name),
            redlease::layout::token_key(&name),
            redlease::layout::queue_key(&name),
            redlease::layout::timeout_key(&name),
            redlease::layout::rwlock_channel(&name),
            redlease::layout::waiter_channel(&name, "u:1"),
        ] {
            assert_eq!(key_slot(&derived), slot, "{derived} of {name}");
        }
        for fair in [false, true] {
            let lock = if fair {
                c.fair_lock(&name)
            } else {
                c.lock(&name)
            };
            let g = lock.try_lock().await.unwrap();
            let busy = lock.try_lock().await.unwrap_err();
            assert!(busy.is_busy(), "{busy}");
            g.unlock().await.unwrap();
        }
        let state = redlease::admin::force_unlock(&c, &name).await.unwrap();
        assert!(!state.removed, "released already");
    }
}

/// The whole API works unchanged: waiting, fixed leases, fair locks,
/// re-entry in a scope, and fencing tokens that increase across masters'
/// names and acquisitions.
#[tokio::test]
async fn the_lock_api_works_on_a_cluster() {
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let mut last = 0;
    for i in 0..6 {
        let name = unique(&format!("api-{i}"));
        let fixed = c.lock(&name).lease(Duration::from_secs(5));
        let g = fixed.try_lock().await.unwrap();
        assert!(g.fencing_token().unwrap() > last);
        last = g.fencing_token().unwrap();
        let again = redlease::scope(async {
            let outer = c.lock(&name).try_lock_for(Duration::from_millis(200)).await;
            assert!(outer.unwrap_err().is_busy());
            g.unlock().await.unwrap();
            let outer = c.lock(&name).try_lock().await.unwrap();
            let inner = c.lock(&name).try_lock().await.unwrap();
            assert_eq!(
                inner.fencing_token().unwrap(),
                outer.fencing_token().unwrap()
            );
            inner.unlock().await.unwrap();
            assert!(outer.is_held().await.unwrap());
            outer.unlock().await.unwrap();
            c.fair_lock(&name).lock().await.unwrap()
        })
        .await;
        assert!(again.fencing_token().unwrap() > last);
        last = again.fencing_token().unwrap();
        again.unlock().await.unwrap();
    }
}

/// By default (`Auto`) a cluster with sharded pub/sub gets it: a waiter
/// subscribes with SSUBSCRIBE on the lock's shard, and a release wakes it
/// at once (not at the holder's lease, 30 s away).
#[tokio::test]
async fn waiters_are_woken_by_sharded_releases() {
    let cluster = shared_cluster();
    let (a, b) = (
        cluster_client(cluster, Duration::from_secs(30)).await,
        cluster_client(cluster, Duration::from_secs(30)).await,
    );
    let name = unique("sharded-wake");
    let held = a.lock(&name).try_lock().await.unwrap();
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(20));
    let channel = redlease::layout::channel(&name);
    let mut shard = cluster.master_for_key(&name).connection();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, n): (String, i64) = redis::cmd("PUBSUB")
            .arg("SHARDNUMSUB")
            .arg(&channel)
            .query(&mut shard)
            .unwrap();
        if n == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no sharded subscriber");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    let woken_after = at - released;
    assert!(woken_after < Duration::from_millis(500), "{woken_after:?}");
    guard.unwrap().unlock().await.unwrap();
}

/// `PubSubMode::Plain` on a cluster: releases go by PUBLISH and waiters
/// listen with SUBSCRIBE, for Redisson clients with sharded subscriptions
/// off; `Sharded` is refused on a single node.
#[tokio::test]
async fn plain_pubsub_on_a_cluster_and_no_sharding_on_one_node() {
    let cluster = shared_cluster();
    let plain = || {
        redlease::Client::builder(&cluster.url())
            .pubsub_mode(PubSubMode::Plain)
            .build()
    };
    let (a, b) = (plain().await.unwrap(), plain().await.unwrap());
    let name = unique("plain-wake");
    let held = a.lock(&name).try_lock().await.unwrap();
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(20));
    let channel = redlease::layout::channel(&name);
    let mut node = cluster.master_for_key(&name).connection();
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(&channel)
        .query::<(String, i64)>(&mut node)
        .unwrap()
        .1
        == 0
    {
        assert!(Instant::now() < deadline, "no plain subscriber");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    assert!(at - released < Duration::from_millis(500));
    guard.unwrap().unlock().await.unwrap();

    let single = crate::support::RedisServer::shared();
    let e = redlease::Client::builder(&single.url())
        .pubsub_mode(PubSubMode::Sharded)
        .build()
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
}

/// A declared lock (`#[distributed_lock]` with a cluster client) excludes a
/// second call, and the layout reader finds it on the master that holds it
/// when scanning every master.
#[tokio::test]
async fn declared_locks_and_the_scan_work_on_a_cluster() {
    #[redlease::distributed_lock(key = "{prefix}:declared:{id}", client = c)]
    async fn held_for(
        c: &redlease::Client,
        prefix: &str,
        id: u32,
        inside: tokio::sync::oneshot::Sender<()>,
        until: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<(), redlease::Error> {
        let _ = inside.send(());
        let _ = until.await;
        Ok(())
    }
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let prefix = unique("scan");
    let mut releases = Vec::new();
    let mut tasks = Vec::new();
    for id in 0..6 {
        let (inside_tx, inside_rx) = tokio::sync::oneshot::channel();
        let (until_tx, until_rx) = tokio::sync::oneshot::channel();
        let (c2, p2) = (c.clone(), prefix.clone());
        tasks.push(tokio::spawn(async move {
            held_for(&c2, &p2, id, inside_tx, until_rx).await
        }));
        inside_rx.await.unwrap();
        releases.push(until_tx);
    }
    let (never_tx, _never) = tokio::sync::oneshot::channel();
    let (_, until_rx) = tokio::sync::oneshot::channel();
    let busy = held_for(&c, &prefix, 0, never_tx, until_rx)
        .await
        .unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    let scan = redlease::admin::scan(&c, &format!("{prefix}:*"), 0, 100_000)
        .await
        .unwrap();
    assert_eq!(scan.cursor, 0);
    assert_eq!(scan.locks.len(), 6);
    for state in &scan.locks {
        let holder = cluster.master_for_key(&state.name);
        assert_eq!(state.node.as_deref(), Some(holder.address().as_str()));
        assert_eq!(state.owners().len(), 1);
    }
    for release in releases {
        let _ = release.send(());
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
}

/// Credentials the cluster refuses are an auth error, as on one node (the
/// cluster client reports them inside a connection error).
#[tokio::test]
async fn wrong_credentials_on_a_cluster_are_an_auth_error() {
    let cluster = shared_cluster();
    for node in cluster.masters() {
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("app")
            .arg("on")
            .arg(">right")
            .arg("~*")
            .arg("&*")
            .arg("+@all")
            .exec(&mut node.connection())
            .unwrap();
    }
    let url = cluster
        .url()
        .replace("redis-cluster://", "redis-cluster://app:not-the-pw-7f3@");
    let e = redlease::Client::connect(&url).await.unwrap_err();
    assert!(e.is_auth(), "{e:?}");
    // The password is never shown.
    assert!(!e.to_string().contains("not-the-pw-7f3"), "{e}");
    let url = cluster
        .url()
        .replace("redis-cluster://", "redis-cluster://app:right@");
    let c = redlease::Client::connect(&url).await.unwrap();
    c.lock(unique("acl"))
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

/// Redisson's lock family on a cluster, with and without a hash tag of the
/// user's: every key and channel in the name's slot (a latch's only for
/// names without braces), waiters of each woken across clients by sharded
/// messages, and read holds renewed per slot with their timeout keys.
#[tokio::test]
async fn the_lock_family_works_on_a_cluster() {
    let cluster = shared_cluster();
    let watchdog = Duration::from_millis(900);
    let (a, b) = (
        cluster_client(cluster, watchdog).await,
        cluster_client(cluster, watchdog).await,
    );
    for name in [unique("family"), format!("{{{}}}:tagged", unique("family"))] {
        let slot = key_slot(&name);
        for derived in [
            redlease::layout::rwlock_channel(&name),
            redlease::layout::read_timeout_prefix(&name, "u:1"),
            redlease::layout::semaphore_channel(&name),
            redlease::layout::permits_key(&name),
        ] {
            assert_eq!(key_slot(&derived), slot, "{derived} of {name}");
        }
        // A read hold outlives several watchdog rounds (its timeout keys
        // renewed), a writer waits for it and is woken by its release.
        let read = a.read_write_lock(&name).read().try_lock().await.unwrap();
        let writer = {
            let write = b.read_write_lock(&name).write();
            tokio::spawn(async move {
                let g = write.try_lock_for(Duration::from_secs(10)).await;
                (g, Instant::now())
            })
        };
        tokio::time::sleep(watchdog * 2).await;
        assert!(!read.is_lost());
        let released = Instant::now();
        read.unlock().await.unwrap();
        let (g, at) = writer.await.unwrap();
        assert!(
            at - released < Duration::from_secs(1),
            "{:?}",
            at - released
        );
        g.unwrap().unlock().await.unwrap();

        let sem_name = format!("{name}:sem");
        let sem = a.semaphore(&sem_name);
        assert!(sem.try_set_available(1).await.unwrap());
        sem.try_acquire(1).await.unwrap().forget();
        let waiter = {
            let sem = b.semaphore(&sem_name);
            tokio::spawn(async move { sem.try_acquire_for(1, Duration::from_secs(10)).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        sem.release(1).await.unwrap();
        waiter.await.unwrap().unwrap().forget();

        let permits = a.expirable_semaphore(format!("{name}:permits"));
        assert!(permits.try_set_total(1).await.unwrap());
        let held = permits.try_acquire().await.unwrap();
        tokio::time::sleep(watchdog * 2).await;
        assert!(!held.is_lost());
        held.release().await.unwrap();
    }
    // A latch, whose channel always adds braces: fine without a tag.
    let name = unique("family-latch");
    let latch = a.count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = {
        let latch = b.count_down_latch(&name);
        tokio::spawn(async move { latch.wait_for(Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    latch.count_down().await.unwrap();
    waiter.await.unwrap().unwrap();
}

/// A multi-lock across hash slots (members on different masters): all or
/// none, and a waiter woken by the member that refused it.
#[tokio::test]
async fn a_multi_lock_spans_slots() {
    let cluster = shared_cluster();
    let (a, b) = (
        cluster_client(cluster, Duration::from_secs(30)).await,
        cluster_client(cluster, Duration::from_secs(30)).await,
    );
    let names: Vec<String> = (0..4).map(|i| unique(&format!("multi-slot-{i}"))).collect();
    let mut slots: Vec<u16> = names.iter().map(key_slot).collect();
    slots.sort();
    slots.dedup();
    assert!(slots.len() > 1, "all in one slot: {names:?}");
    let held = a.lock(&names[2]).try_lock().await.unwrap();
    let multi = b.multi_lock(names.clone());
    assert!(multi.try_lock().await.unwrap_err().is_busy());
    for (i, name) in names.iter().enumerate() {
        if i != 2 {
            let free = a.lock(name).try_lock().await.unwrap();
            free.unlock().await.unwrap();
        }
    }
    let waiter = tokio::spawn(async move {
        let g = multi.try_lock_for(Duration::from_secs(10)).await;
        (g, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (g, at) = waiter.await.unwrap();
    assert!(
        at - released < Duration::from_secs(1),
        "{:?}",
        at - released
    );
    let g = g.unwrap();
    assert_eq!(g.guards().len(), 4);
    g.unlock().await.unwrap();
}

/// Members that share a hash slot go in one script call on their master,
/// beside members of other slots: all or none, and a busy member of the
/// shared slot is named and leaves its slot-mates free.
#[tokio::test]
async fn a_multi_lock_takes_slot_mates_together() {
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let tag = unique("multi-mates");
    let mates: Vec<String> = (0..3).map(|i| format!("{{{tag}}}:{i}")).collect();
    let other = unique("multi-mates-other");
    assert_eq!(key_slot(&mates[0]), key_slot(&mates[2]));
    let mut names = mates.clone();
    names.push(other.clone());
    let g = c.multi_lock(names.clone()).try_lock().await.unwrap();
    assert_eq!(g.guards().len(), 4);
    g.unlock().await.unwrap();
    let held = c.lock(&mates[1]).try_lock().await.unwrap();
    let e = c.multi_lock(names.clone()).try_lock().await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.key(), Some(mates[1].as_str()));
    for name in [&mates[0], &mates[2], &other] {
        let free = c.lock(name).try_lock().await.unwrap();
        free.unlock().await.unwrap();
    }
    held.unlock().await.unwrap();
}

/// The string layout (#17) on a cluster: the acquire's transaction goes to
/// the key's master (the key and its fencing counter share a slot), the
/// watchdog renews string holds in its per-master batches, and a release
/// wakes a waiter through the sharded channel.
#[tokio::test]
async fn the_string_layout_works_on_a_cluster() {
    let cluster = shared_cluster();
    let string_client = || async {
        redlease::Client::builder(&cluster.url())
            .layout(redlease::layout::Layout::String)
            .watchdog_timeout(Duration::from_millis(600))
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (string_client().await, string_client().await);
    let mut guards = Vec::new();
    let mut last = 0;
    for i in 0..6 {
        let name = unique(&format!("string-{i}"));
        let guard = a.lock(&name).try_lock().await.unwrap();
        assert!(guard.fencing_token().unwrap() > last);
        last = guard.fencing_token().unwrap();
        let busy = b.lock(&name).try_lock().await.unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        let mut conn = cluster.master_for_slot(key_slot(&name)).connection();
        let value: String = redis::cmd("GET").arg(&name).query(&mut conn).unwrap();
        assert_eq!(value, guard.owner());
        guards.push(guard);
    }
    // Renewed past two leases, on every master.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for guard in &guards {
        assert!(guard.is_held().await.unwrap(), "{}", guard.name());
        assert!(!guard.is_lost());
    }
    let name = guards[0].name().to_owned();
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(20));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut guards = guards.into_iter();
    let first = guards.next().unwrap();
    let released = Instant::now();
    first.unlock().await.unwrap();
    let guard = acquired_within(waiter, released, Duration::from_millis(500)).await;
    guard.unlock().await.unwrap();
    for guard in guards {
        guard.unlock().await.unwrap();
    }
}
