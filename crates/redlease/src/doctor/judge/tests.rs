//! The judges' thresholds, each shown on both sides.

use super::*;

const MASTER: &str = "# Server\r\nredis_version:7.0.15\r\nrun_id:x\r\n# Memory\r\n\
    used_memory:1048576\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\
    # Persistence\r\naof_enabled:0\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";

fn with(field: &str, value: &str) -> String {
    MASTER
        .lines()
        .map(|l| match l.split_once(':') {
            Some((f, _)) if f == field => format!("{field}:{value}\r"),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_policy_but_noeviction_is_a_danger_naming_it() {
    assert_eq!(eviction(&Info::parse(MASTER)).severity, Severity::Ok);
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let text = with("maxmemory_policy", policy);
        let v = eviction(&Info::parse(&text));
        assert_eq!(v.severity, Severity::Danger, "{policy}");
        assert!(v.found.starts_with(policy), "{}", v.found);
        assert!(v.advice.unwrap().contains("noeviction"));
    }
    let missing = MASTER.replace("maxmemory_policy", "other");
    assert_eq!(eviction(&Info::parse(&missing)).severity, Severity::Warning);
}

#[test]
fn memory_near_its_limit_warns() {
    assert_eq!(memory(&Info::parse(MASTER)), None, "no limit, no row");
    let text = with("maxmemory", "1100000");
    assert_eq!(
        memory(&Info::parse(&text)).unwrap().severity,
        Severity::Warning
    );
    let text = with("maxmemory", "2000000");
    assert_eq!(memory(&Info::parse(&text)).unwrap().severity, Severity::Ok);
}

#[test]
fn persistence_needs_the_append_only_file_synced() {
    let none = Ok(Some(String::new()));
    let aof = with("aof_enabled", "1");
    let aof = Info::parse(&aof);
    let fsync = |p: &str| Ok(Some(p.to_owned()));
    assert_eq!(
        persistence(&aof, &fsync("everysec"), &none).severity,
        Severity::Ok
    );
    assert_eq!(
        persistence(&aof, &fsync("always"), &none).severity,
        Severity::Ok
    );
    assert_eq!(
        persistence(&aof, &fsync("no"), &none).severity,
        Severity::Warning
    );
    let refused = Err("NOPERM".to_owned());
    assert_eq!(
        persistence(&aof, &refused, &none).severity,
        Severity::Warning
    );
    let plain = Info::parse(MASTER);
    let v = persistence(&plain, &fsync("everysec"), &none);
    assert_eq!(
        (v.severity, v.found.as_str()),
        (Severity::Warning, "appendonly no, no snapshots")
    );
    assert!(v.advice.unwrap().contains("empties"));
    let v = persistence(&plain, &fsync("everysec"), &fsync("3600 1"));
    assert!(v.advice.unwrap().contains("since the last snapshot"));
}

#[test]
fn a_writable_replica_is_a_danger_and_a_read_only_one_a_warning() {
    let text = with("role", "slave") + "\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n";
    let info = Info::parse(&text);
    let v = role(&info, &Ok(Some("no".to_owned())));
    assert_eq!(v.severity, Severity::Danger);
    assert!(v.found.contains("replica of 10.0.0.1:6379"), "{}", v.found);
    assert_eq!(
        role(&info, &Ok(Some("yes".to_owned()))).severity,
        Severity::Warning
    );
    assert_eq!(role(&info, &Err("x".into())).severity, Severity::Warning);
    assert_eq!(
        role(&Info::parse(MASTER), &Err("x".into())).severity,
        Severity::Ok
    );
    assert_eq!(
        replicas(&info, None),
        None,
        "a replica has no replicas to count"
    );
}

#[test]
fn required_replicas_beyond_the_connected_warn() {
    let info = Info::parse(MASTER);
    assert_eq!(replicas(&info, None).unwrap().severity, Severity::Ok);
    assert_eq!(
        replicas(&info, Some(1)).unwrap().severity,
        Severity::Warning
    );
    let two = with("connected_slaves", "2");
    assert_eq!(
        replicas(&Info::parse(&two), Some(2)).unwrap().severity,
        Severity::Ok
    );
}

#[test]
fn versions_and_native_releases() {
    let valkey = MASTER.to_owned() + "server_name:valkey\r\nvalkey_version:9.0.1\r\n";
    let info = Info::parse(&valkey);
    assert_eq!(info.server(), ("valkey", Some((9, 0, 1))));
    assert!(native_release(&info).found.starts_with("DELIFEQ"));
    let redis84 = with("redis_version", "8.4.0");
    assert!(
        native_release(&Info::parse(&redis84))
            .found
            .starts_with("DELEX")
    );
    assert!(
        native_release(&Info::parse(MASTER))
            .found
            .starts_with("none")
    );
    assert_eq!(version(&Info::parse(MASTER)).found, "redis 7.0.15");
    let old = with("redis_version", "5.0.7");
    assert_eq!(version(&Info::parse(&old)).severity, Severity::Warning);
}

#[test]
fn scripting_wait_and_waitaof() {
    assert_eq!(scripting(&Ok(1)).severity, Severity::Ok);
    assert_eq!(scripting(&Err("NOPERM".into())).severity, Severity::Warning);
    assert_eq!(wait(&Ok(0), None).severity, Severity::Ok);
    assert_eq!(
        wait(&Err("ERR unknown command".into()), None).severity,
        Severity::Warning
    );
    let unknown = waitaof(&Err("ERR unknown command 'WAITAOF'".into()));
    assert_eq!(
        (unknown.severity, unknown.found.starts_with("not on")),
        (Severity::Ok, true)
    );
}

#[test]
fn sharded_pubsub_needs_redis_7_on_every_node() {
    let server = |v: Version| ("redis".to_owned(), Some(v));
    let seven = [server((7, 0, 0)), server((7, 2, 0))];
    let six = [server((7, 0, 0)), server((6, 2, 0))];
    assert_eq!(sharded_pubsub(&seven, true).severity, Severity::Ok);
    assert_eq!(sharded_pubsub(&six, true).severity, Severity::Warning);
    assert_eq!(sharded_pubsub(&six, false).severity, Severity::Ok);
}

#[test]
fn cluster_slots_all_served() {
    let good = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_fail:0\r\n";
    assert_eq!(cluster_slots(good).severity, Severity::Ok);
    let down = "cluster_state:fail\r\ncluster_slots_assigned:10923\r\ncluster_slots_fail:0\r\n";
    assert_eq!(cluster_slots(down).severity, Severity::Warning);
}

#[test]
fn sentinels_need_a_quorum_three_of_them_and_a_replica() {
    let fields = |others: &str, slaves: &str, flags: &str| {
        HashMap::from([
            ("quorum".to_owned(), "2".to_owned()),
            ("num-other-sentinels".to_owned(), others.to_owned()),
            ("num-slaves".to_owned(), slaves.to_owned()),
            ("flags".to_owned(), flags.to_owned()),
        ])
    };
    let three = fields("2", "1", "master");
    fn said<'a>(f: &'a HashMap<String, String>, ck: Result<&'a str, String>) -> Vec<Sentinel<'a>> {
        vec![Sentinel {
            address: "s:1",
            fields: Ok(f),
            quorum: ck,
        }]
    }
    let healthy = said(&three, Ok("OK 3 usable Sentinels"));
    assert_eq!(sentinel_quorum(&healthy).severity, Severity::Ok);
    assert_eq!(sentinel_replicas(&healthy).unwrap().severity, Severity::Ok);
    let two = fields("1", "1", "master");
    assert_eq!(
        sentinel_quorum(&said(&two, Ok("OK 2 usable"))).severity,
        Severity::Warning
    );
    let v = sentinel_quorum(&said(&three, Err("NOQUORUM 1 usable".into())));
    assert!(v.found.contains("NOQUORUM"), "{}", v.found);
    let lonely = fields("2", "0", "master");
    assert_eq!(
        sentinel_replicas(&said(&lonely, Ok("OK")))
            .unwrap()
            .severity,
        Severity::Warning
    );
    let down = fields("2", "1", "master,o_down");
    assert_eq!(
        sentinel_replicas(&said(&down, Ok("OK"))).unwrap().severity,
        Severity::Warning
    );
}

#[test]
fn clock_and_round_trip_thresholds() {
    assert_eq!(clock(999).severity, Severity::Ok);
    assert_eq!(clock(-1001).severity, Severity::Warning);
    assert!(clock(-1001).found.contains("behind"));
    assert_eq!(clock(0).found, "0 ms (within a millisecond of ours)");
    assert_eq!(round_trip(Duration::from_micros(150)).found, "0.15 ms");
    assert_eq!(
        round_trip(Duration::from_millis(101)).severity,
        Severity::Warning
    );
}
