//! A real local Redis Cluster: forming it, failing a shard over, killing a
//! master, and moving a slot with its keys, with the redirections a client
//! sees on the way. Each test prints how long its steps took (`--nocapture`).

use std::time::Instant;

use redlease_testkit::{RedisCluster, Role, SLOTS, key_slot};

/// Runs `step` and prints how long it took.
fn timed<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = step();
    eprintln!("{what}: {} ms", start.elapsed().as_millis());
    value
}

fn get(connection: &mut redis::Connection, key: &str) -> redis::RedisResult<Option<String>> {
    redis::cmd("GET").arg(key).query(connection)
}

fn set(connection: &mut redis::Connection, key: &str, value: &str) {
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .exec(connection)
        .unwrap();
}

fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(|value| value.trim().to_owned())
}

/// Three masters share all 16384 slots, every node says so, and the kit's
/// slot arithmetic matches the server's.
#[test]
fn three_masters_cover_every_slot() {
    let cluster = timed("3 masters up", || RedisCluster::start(3, 0));
    assert_eq!(cluster.nodes().len(), 3);
    assert!(
        cluster
            .nodes()
            .iter()
            .all(|node| node.role() == Role::Master)
    );

    let mut ranges: Vec<_> = cluster
        .nodes()
        .iter()
        .flat_map(|node| node.slots().iter().cloned())
        .collect();
    ranges.sort_by_key(|range| *range.start());
    let mut next = 0;
    for range in &ranges {
        assert_eq!(*range.start(), next, "slots {ranges:?} leave a gap");
        next = range.end() + 1;
    }
    assert_eq!(next, SLOTS, "slots {ranges:?} stop short");

    for node in cluster.nodes() {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut node.connection())
            .unwrap();
        assert_eq!(info_field(&info, "cluster_state").as_deref(), Some("ok"));
        assert_eq!(
            info_field(&info, "cluster_slots_assigned").as_deref(),
            Some("16384")
        );
        assert_eq!(
            info_field(&info, "cluster_known_nodes").as_deref(),
            Some("3")
        );
    }

    let ports: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|node| format!("127.0.0.1:{}", node.port()))
        .collect();
    assert_eq!(
        cluster.url(),
        format!("redis-cluster://{}", ports.join(","))
    );
    assert_eq!(cluster.seed_urls().len(), 3);

    let mut any = cluster.nodes()[0].connection();
    for key in [
        "mylock",
        "{mylock}:uuid:1:rwlock_timeout:1",
        "redisson_lock__channel:{mylock}",
        "a{}b",
        "",
        "ключ",
    ] {
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut any)
            .unwrap();
        assert_eq!(key_slot(key), slot, "slot of {key:?}");
    }
    assert_eq!(
        key_slot("mylock"),
        1711,
        "the slot the reference notes give"
    );

    // The key's owner serves it; another node redirects.
    let owner = cluster.master_for_key("mylock");
    set(&mut cluster.connection_for_key("mylock"), "mylock", "1");
    let other = cluster
        .nodes()
        .iter()
        .find(|n| n.port() != owner.port())
        .unwrap();
    let err = get(&mut other.connection(), "mylock").unwrap_err();
    assert_eq!(err.code(), Some("MOVED"), "{err}");
    assert_eq!(err.redirect_node(), Some((owner.address().as_str(), 1711)));
}

/// With a replica per master, a manual failover swaps the roles in one
/// shard, and a key written before is served by the new master.
#[test]
fn a_failover_swaps_master_and_replica() {
    let mut cluster = timed("3+3 up, replicas synced", || RedisCluster::start(3, 1));
    assert_eq!(cluster.nodes().len(), 6);
    for master in cluster.masters() {
        assert_eq!(cluster.replicas_of(master).len(), 1);
    }

    let key = "failover-key";
    let old_master = cluster.master_for_key(key).clone();
    set(&mut old_master.connection(), key, "before");
    let replica = cluster.replica_of(&old_master).clone();
    assert_eq!(replica.master_id(), Some(old_master.id()));

    timed("manual failover", || cluster.failover(&replica));

    let new_master = cluster.master_for_key(key).clone();
    assert_eq!(new_master.id(), replica.id());
    assert_eq!(new_master.role(), Role::Master);
    assert_eq!(new_master.slots(), old_master.slots());
    let demoted = cluster
        .nodes()
        .iter()
        .find(|n| n.id() == old_master.id())
        .unwrap();
    assert_eq!(demoted.role(), Role::Replica);
    assert_eq!(demoted.master_id(), Some(new_master.id()));
    assert_eq!(cluster.replica_of(&new_master).id(), old_master.id());

    assert_eq!(
        get(&mut cluster.connection_for_key(key), key)
            .unwrap()
            .as_deref(),
        Some("before")
    );
    let err = get(&mut old_master.connection(), key).unwrap_err();
    assert_eq!(err.code(), Some("MOVED"), "{err}");
    assert!(cluster.url().contains(&new_master.address()));
    assert!(!cluster.url().contains(&old_master.address()));
}

/// A killed master is replaced by its replica within a few seconds, and
/// the killed node comes back as a replica of the new master.
#[test]
fn a_killed_master_is_replaced_by_its_replica() {
    let mut cluster = RedisCluster::start(3, 1);
    let key = "kill-key";
    let master = cluster.master_for_key(key).clone();
    let replica = cluster.replica_of(&master).clone();
    set(&mut master.connection(), key, "v");
    // Acknowledged by the replica before the master dies.
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query(&mut master.connection())
        .unwrap();
    assert_eq!(acked, 1);

    let promoted = timed("kill master, replica promoted", || {
        cluster.kill_master_and_wait_for_promotion(&master)
    });
    assert_eq!(promoted.id(), replica.id());
    assert_eq!(cluster.master_for_key(key).id(), replica.id());
    assert_eq!(cluster.nodes().len(), 5);
    assert!(cluster.nodes().iter().all(|n| n.id() != master.id()));
    // Seen once in CI (#38's session): the promoted replica answered nil
    // though it had acknowledged the write. Its log and the killed
    // master's say what it synced from, should it happen again.
    let value = get(&mut cluster.connection_for_key(key), key).unwrap();
    assert_eq!(
        value.as_deref(),
        Some("v"),
        "the promoted replica lost the key\n--- promoted :{} ---\n{}\n--- killed :{} ---\n{}",
        replica.port(),
        cluster.log_tail(&replica, 40),
        master.port(),
        cluster.log_tail(&master, 20),
    );

    let back = timed("killed master back as replica", || {
        cluster.restart_node(&master)
    });
    assert_eq!(back.id(), master.id(), "it rejoins as the same node");
    assert_eq!(back.role(), Role::Replica);
    assert_eq!(back.master_id(), Some(promoted.id()));
    assert_eq!(cluster.nodes().len(), 6);
}

/// Moving a slot moves its keys; the old owner then answers MOVED. Held
/// half-way, the source answers ASK for a key already moved and still
/// serves one that is not.
#[test]
fn a_slot_moves_with_its_keys() {
    let mut cluster = RedisCluster::start(3, 0);

    let key = "{moved}:a";
    let slot = key_slot(key);
    let from = cluster.master_for_slot(slot).clone();
    let to = cluster
        .masters()
        .find(|n| n.port() != from.port())
        .unwrap()
        .clone();
    set(&mut from.connection(), key, "1");

    let moved = timed("migrate one slot", || {
        cluster.migrate_slot(slot, &from, &to)
    });
    assert_eq!(moved, 1);
    assert_eq!(cluster.master_for_slot(slot).id(), to.id());
    assert!(
        !cluster
            .nodes()
            .iter()
            .find(|n| n.id() == from.id())
            .unwrap()
            .owns(slot)
    );
    assert_eq!(
        get(&mut to.connection(), key).unwrap().as_deref(),
        Some("1")
    );
    let err = get(&mut from.connection(), key).unwrap_err();
    assert_eq!(err.code(), Some("MOVED"), "{err}");
    assert_eq!(err.redirect_node(), Some((to.address().as_str(), slot)));

    // Back again, this time stopping half-way with one of two keys moved.
    let (from, to) = (to, from);
    let kept = "{moved}:b";
    set(&mut from.connection(), kept, "2");
    cluster.begin_migration(slot, &from, &to);
    cluster.migrate_key(key, &from, &to);

    let mut source = from.connection();
    let err = get(&mut source, key).unwrap_err();
    assert_eq!(err.code(), Some("ASK"), "{err}");
    assert_eq!(err.redirect_node(), Some((to.address().as_str(), slot)));
    assert_eq!(get(&mut source, kept).unwrap().as_deref(), Some("2"));
    let err = redis::cmd("SET")
        .arg("{moved}:new")
        .arg("3")
        .exec(&mut source)
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some("ASK"),
        "a new key goes to the target: {err}"
    );
    let err = redis::cmd("MGET")
        .arg(key)
        .arg(kept)
        .exec(&mut source)
        .unwrap_err();
    assert_eq!(err.code(), Some("TRYAGAIN"), "{err}");
    // The target serves the slot only to a client that was sent there.
    let mut target = to.connection();
    assert_eq!(get(&mut target, key).unwrap_err().code(), Some("MOVED"));
    redis::cmd("ASKING").exec(&mut target).unwrap();
    assert_eq!(get(&mut target, key).unwrap().as_deref(), Some("1"));
    assert_eq!(
        cluster.master_for_slot(slot).id(),
        from.id(),
        "the source still owns it"
    );

    assert_eq!(cluster.migrate_keys(slot, &from, &to), 1, "the kept key");
    cluster.finish_migration(slot, &from, &to);
    assert_eq!(cluster.master_for_slot(slot).id(), to.id());
    assert_eq!(
        get(&mut to.connection(), kept).unwrap().as_deref(),
        Some("2")
    );
    assert_eq!(
        get(&mut to.connection(), key).unwrap().as_deref(),
        Some("1")
    );
}
