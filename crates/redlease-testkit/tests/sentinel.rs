//! A real local Sentinel group: starting it, failing it over by command,
//! by a killed or paused master, with a Sentinel down or wrong, and
//! stopping every process at the end. Each test prints how long its steps
//! took (`--nocapture`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redlease_testkit::{
    RedisServer, SentinelGroup, SentinelOptions, TestCerts, WrongSentinel, signal,
};

/// Runs `step` and prints how long it took.
fn timed<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = step();
    eprintln!("{what}: {} ms", start.elapsed().as_millis());
    value
}

fn address(server: &RedisServer) -> String {
    format!("127.0.0.1:{}", server.port())
}

fn info_field(server: &RedisServer, section: &str, name: &str) -> String {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query(&mut server.connection())
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(|value| value.trim().to_owned())
        .unwrap_or_else(|| panic!("no {name} in {info}"))
}

/// Writes `key` on the master and waits until `replicas` replicas have it.
fn set_replicated(master: &RedisServer, key: &str, value: &str, replicas: i64) {
    let mut connection = master.connection();
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .exec(&mut connection)
        .unwrap();
    let acked: i64 = redis::cmd("WAIT")
        .arg(replicas)
        .arg(2000)
        .query(&mut connection)
        .unwrap();
    assert_eq!(acked, replicas, "replicas that acknowledged {key}");
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// Whether something accepts connections on `port` of 127.0.0.1.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Polls until nothing listens on any of `ports`, for at most `limit`.
fn all_gone_within(ports: &[u16], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while ports.iter().any(|&port| listening(port)) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A master, a replica and three Sentinels settle within seconds; the
/// URL, the addresses and every Sentinel's answer name them.
#[test]
fn a_group_starts_and_settles_quickly() {
    let start = Instant::now();
    let group = timed("1 replica + 3 sentinels settled", || {
        SentinelGroup::start(1, 3)
    });
    // 2.3 s measured idle; generous for a loaded 2-core machine.
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "took {:?}",
        start.elapsed()
    );

    assert_eq!(group.master_name(), "mymaster");
    assert_eq!(group.sentinels().len(), 3);
    let replicas = group.replicas();
    assert_eq!(replicas.len(), 1);
    assert_eq!(info_field(group.master(), "replication", "role"), "master");
    assert_eq!(info_field(replicas[0], "replication", "role"), "slave");
    assert_eq!(
        info_field(replicas[0], "replication", "master_port"),
        group.master().port().to_string()
    );

    let addresses: Vec<String> = group.sentinels().into_iter().map(address).collect();
    assert_eq!(group.sentinel_addresses(), addresses);
    assert_eq!(
        group.url(),
        format!("redis-sentinel://{}#mymaster", addresses.join(","))
    );
    for (i, sentinel) in group.sentinels().into_iter().enumerate() {
        assert_eq!(
            group.master_addr_by_sentinel(i),
            Some(address(group.master()))
        );
        assert_eq!(info_field(sentinel, "server", "redis_mode"), "sentinel");
        let master: Vec<String> = redis::cmd("SENTINEL")
            .arg("MASTER")
            .arg("mymaster")
            .query(&mut sentinel.connection())
            .unwrap();
        let value = |key: &str| {
            let at = master.iter().position(|k| k == key).unwrap();
            master[at + 1].clone()
        };
        assert_eq!(value("quorum"), "2");
        // At rest; 1000 only while the kit kills or pauses the master.
        assert_eq!(value("down-after-milliseconds"), "5000");
        assert_eq!(value("num-other-sentinels"), "2");
        assert_eq!(value("num-slaves"), "1");
    }
}

/// `SENTINEL FAILOVER` makes every Sentinel name the replica, which has
/// the master's data and takes writes, while the old master, not yet
/// turned into a replica, still takes writes too.
#[test]
fn a_failover_switches_every_sentinel_and_the_new_master_takes_writes() {
    let mut group = SentinelGroup::start(1, 3);
    let old = address(group.master());
    let replica = address(group.replicas()[0]);
    set_replicated(group.master(), "before", "1", 1);

    let new = timed("failover, every sentinel switched", || group.failover());
    assert_eq!(new, replica);
    assert_eq!(address(group.master()), new);
    for i in 0..3 {
        assert_eq!(group.master_addr_by_sentinel(i), Some(new.clone()));
    }
    assert_eq!(get(group.master(), "before").as_deref(), Some("1"));
    redis::cmd("SET")
        .arg("after")
        .arg("2")
        .exec(&mut group.master().connection())
        .unwrap();
    assert_eq!(get(group.master(), "after").as_deref(), Some("2"));

    // The hazard a client must not fall into: the old master is still a
    // master for about 10 s.
    let old_master = group
        .replicas()
        .into_iter()
        .find(|node| address(node) == old)
        .expect("the old master is listed among the replicas");
    assert_eq!(info_field(old_master, "replication", "role"), "master");
}

/// Three failovers in a row, each from a group settled after the last:
/// the master moves back and forth with its data, and the old master ends
/// up replicating the new one each time.
#[test]
fn chained_failovers_move_the_master_back_and_forth() {
    let mut group = SentinelGroup::start(1, 3);
    let first = address(group.master());
    let second = address(group.replicas()[0]);
    for (round, expected) in [&second, &first].into_iter().enumerate() {
        set_replicated(group.master(), &format!("k{round}"), "v", 1);
        let new = timed(&format!("failover {round}, old master reconverted"), || {
            group.failover_and_reconvert()
        });
        assert_eq!(&new, expected);
        let old = group.replicas()[0];
        assert_eq!(info_field(old, "replication", "role"), "slave");
        assert_eq!(
            info_field(old, "replication", "master_port"),
            group.master().port().to_string()
        );
        assert_eq!(info_field(old, "replication", "master_link_status"), "up");
        assert_eq!(
            get(group.master(), &format!("k{round}")).as_deref(),
            Some("v")
        );
    }
    let third = timed("failover 2", || group.failover());
    assert_eq!(third, second);
    for i in 0..3 {
        assert_eq!(group.master_addr_by_sentinel(i), Some(second.clone()));
    }
    assert_eq!(get(group.master(), "k1").as_deref(), Some("v"));
}

/// A killed master is replaced by its replica after the down-after time,
/// and comes back, empty, as a replica of the new master.
#[test]
fn a_killed_master_is_replaced_by_its_replica() {
    let mut group = SentinelGroup::start(1, 3);
    let old = group.master().port();
    let replica = address(group.replicas()[0]);
    set_replicated(group.master(), "k", "v", 1);

    let new = timed("kill master, replica promoted", || group.kill_master());
    assert_eq!(new, replica);
    assert!(
        group.replicas().is_empty(),
        "the killed master is not running"
    );
    assert_eq!(get(group.master(), "k").as_deref(), Some("v"));

    timed("killed master back as a replica", || {
        group.restart_node(old)
    });
    let back = group.replicas()[0];
    assert_eq!(back.port(), old);
    assert_eq!(
        info_field(back, "replication", "master_port"),
        group.master().port().to_string()
    );
    assert_eq!(
        get(back, "k").as_deref(),
        Some("v"),
        "synced from the new master"
    );
}

/// With one of three Sentinels killed the two others still agree the
/// master is down, elect a leader and promote the replica; the killed
/// Sentinel, restarted, learns the new master from them.
#[test]
fn two_of_three_sentinels_fail_over_a_killed_master() {
    let mut group = SentinelGroup::start(1, 3);
    let replica = address(group.replicas()[0]);
    group.kill_sentinel(2);
    assert!(!listening(group.sentinel(2).port()));

    let new = timed("kill master with a sentinel down", || group.kill_master());
    assert_eq!(new, replica);
    assert_eq!(group.master_addr_by_sentinel(0), Some(new.clone()));
    assert_eq!(group.master_addr_by_sentinel(1), Some(new.clone()));

    timed("killed sentinel back", || group.restart_sentinel(2));
    assert_eq!(group.master_addr_by_sentinel(2), Some(new));
}

/// A wrong Sentinel names a master of its own, or none, at its usual
/// address, while the two others answer right and still fail over.
#[test]
fn a_wrong_sentinel_answers_wrong_while_the_others_fail_over() {
    let mut group = SentinelGroup::start(1, 3);
    let master = address(group.master());

    assert_eq!(group.make_sentinel_wrong(2, WrongSentinel::NoMaster), None);
    assert_eq!(group.master_addr_by_sentinel(2), None);
    timed("wrong sentinel right again", || {
        group.make_sentinel_right(2)
    });
    assert_eq!(group.master_addr_by_sentinel(2), Some(master.clone()));

    let decoy = timed("sentinel made wrong, the others reset", || {
        group.make_sentinel_wrong(0, WrongSentinel::OtherMaster)
    })
    .expect("a decoy's address");
    assert_ne!(decoy, master);
    assert_eq!(group.master_addr_by_sentinel(0), Some(decoy.clone()));
    assert_eq!(group.master_addr_by_sentinel(1), Some(master));
    assert!(group.url().contains(&group.sentinel_addresses()[0]));

    let new = timed("failover with a wrong sentinel", || group.failover());
    assert_eq!(group.master_addr_by_sentinel(1), Some(new.clone()));
    assert_eq!(group.master_addr_by_sentinel(2), Some(new));
    assert_eq!(group.master_addr_by_sentinel(0), Some(decoy.clone()));

    let decoy_port: u16 = decoy.rsplit(':').next().unwrap().parse().unwrap();
    let decoy_pid = process_id(decoy_port);
    drop(group);
    assert!(!listening(decoy_port), "the decoy outlived the group");
    assert!(!std::path::Path::new(&format!("/proc/{decoy_pid}")).exists());
}

/// A paused master (a partition) is replaced like a killed one; resumed,
/// it still believes it is the master until a Sentinel corrects it.
#[test]
fn a_paused_master_is_replaced_and_comes_back_believing_it_is_master() {
    let mut group = SentinelGroup::start(1, 3);
    let old = group.master().port();
    let replica = address(group.replicas()[0]);

    let new = timed("pause master, replica promoted", || group.pause_master());
    assert_eq!(new, replica);
    assert!(group.replicas().is_empty(), "the paused master is left out");

    group.resume_node(old);
    let back = group.replicas()[0];
    assert_eq!(back.port(), old);
    assert_eq!(info_field(back, "replication", "role"), "master");
}

/// Passwords on the data nodes (given to the Sentinels as `auth-pass`) and
/// on the Sentinels: the group settles, fails over, and refuses
/// connections that do not authenticate.
#[test]
fn a_group_with_passwords_fails_over() {
    let mut group = timed("group with passwords settled", || {
        SentinelGroup::start_with(
            1,
            3,
            SentinelOptions {
                password: Some("data-secret".to_owned()),
                sentinel_password: Some("sentinel-secret".to_owned()),
                ..SentinelOptions::default()
            },
        )
    });
    assert!(
        group
            .url()
            .starts_with("redis-sentinel://:data-secret@127.0.0.1:"),
        "{}",
        group.url()
    );
    let replica = address(group.replicas()[0]);
    assert_eq!(
        timed("failover with passwords", || group.failover()),
        replica
    );

    for port in [group.master().port(), group.sentinel(0).port()] {
        let mut bare = redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .unwrap()
            .get_connection()
            .unwrap();
        let err = redis::cmd("PING").exec(&mut bare).unwrap_err();
        assert_eq!(err.code(), Some("NOAUTH"), "{err}");
    }
}

/// A TLS group: every process serves TLS, the replica replicates the
/// master's TLS port, and the Sentinels name TLS ports before and after a
/// failover; `tls_url` lists the Sentinels' TLS ports.
#[test]
fn a_tls_group_names_tls_ports_before_and_after_a_failover() {
    let certs = TestCerts::generate();
    let mut group = timed("TLS group settled", || {
        SentinelGroup::start_with(
            1,
            3,
            SentinelOptions {
                tls: Some(certs.server.clone()),
                tls_ca: Some(certs.ca.clone()),
                ..SentinelOptions::default()
            },
        )
    });
    let tls = |server: &RedisServer| {
        let port = server.tls_port().expect("a TLS group serves TLS");
        assert_ne!(port, server.port());
        format!("127.0.0.1:{port}")
    };
    let sentinels: Vec<String> = group.sentinels().into_iter().map(tls).collect();
    assert_eq!(
        group.tls_url(),
        format!("rediss-sentinel://{}#mymaster", sentinels.join(","))
    );
    let master = tls(group.master());
    for i in 0..3 {
        assert_eq!(group.master_addr_by_sentinel(i), Some(master.clone()));
    }
    let replica = tls(group.replicas()[0]);
    assert_eq!(
        info_field(group.replicas()[0], "replication", "master_port"),
        group.master().tls_port().unwrap().to_string()
    );
    assert_eq!(timed("TLS failover", || group.failover()), replica);
    for i in 0..3 {
        assert_eq!(group.master_addr_by_sentinel(i), Some(replica.clone()));
    }
}

/// Dropping the group stops every process it started, whatever state it
/// is in: a killed, a paused and a wrong Sentinel. (A wrong Sentinel's
/// decoy is checked where one is made, which takes longer.)
#[test]
fn dropping_the_group_stops_every_process() {
    let mut group = SentinelGroup::start(1, 3);
    assert_eq!(group.make_sentinel_wrong(0, WrongSentinel::NoMaster), None);
    let ports: Vec<u16> = [group.master(), group.replicas()[0]]
        .into_iter()
        .chain(group.sentinels())
        .map(RedisServer::port)
        .collect();
    let pids: Vec<String> = ports.iter().map(|&port| process_id(port)).collect();
    group.pause_sentinel(1);
    group.kill_sentinel(2);
    assert!(!listening(group.sentinel(2).port()));

    let start = Instant::now();
    drop(group);
    eprintln!("drop: {} ms", start.elapsed().as_millis());
    for port in ports {
        assert!(!listening(port), "something still listens on {port}");
    }
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived the group"
        );
    }
}

/// The pid of the server on `port`, from its `INFO`.
fn process_id(port: u16) -> String {
    let info: String = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .and_then(|mut connection| redis::cmd("INFO").arg("server").query(&mut connection))
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .map(|pid| pid.trim().to_owned())
        .unwrap_or_else(|| panic!("no process_id in {info}"))
}

/// Set in the child run of [`the_watchers_stop_the_group_of_a_killed_owner`].
const OWNER: &str = "REDLEASE_TESTKIT_SENTINEL_OWNER";

/// The test runs itself again as the owner of a group, then kills that
/// process with SIGKILL: no destructor runs, only the watchers can stop
/// the group's processes.
#[test]
fn the_watchers_stop_the_group_of_a_killed_owner() {
    if std::env::var_os(OWNER).is_some() {
        let group = SentinelGroup::start(1, 3);
        let ports: Vec<String> = [group.master(), group.replicas()[0]]
            .into_iter()
            .chain(group.sentinels())
            .map(|server| server.port().to_string())
            .collect();
        println!("ports {}", ports.join(" "));
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let mut owner = Command::new(std::env::current_exe().unwrap())
        .args([
            "the_watchers_stop_the_group_of_a_killed_owner",
            "--exact",
            "--nocapture",
        ])
        .env(OWNER, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ports: Vec<u16> = BufReader::new(owner.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("ports ")
                .map(|ports| ports.split(' ').map(|p| p.parse().unwrap()).collect())
        })
        .expect("the owner prints its group's ports");
    assert_eq!(ports.len(), 5);
    assert!(ports.iter().all(|&port| listening(port)));
    signal("KILL", owner.id());
    let _ = owner.wait();
    assert!(
        all_gone_within(&ports, Duration::from_secs(5)),
        "a process of the group on {ports:?} outlived its owner"
    );
    // Its owner could not remove them.
    for port in ports {
        let _ =
            std::fs::remove_dir_all(std::env::temp_dir().join(format!("redlease-redis-{port}")));
    }
}

/// What a failover checker does: twenty failovers in a row, each waiting
/// for the old master to be reconverted. Takes about 4 minutes; run it
/// with `--ignored` after changing the kit's waits.
#[test]
#[ignore = "about 4 minutes"]
fn twenty_chained_failovers() {
    let mut group = SentinelGroup::start(1, 3);
    let nodes = [address(group.master()), address(group.replicas()[0])];
    let start = Instant::now();
    for round in 0..20 {
        let key = format!("k{round}");
        set_replicated(group.master(), &key, "v", 1);
        let new = timed(&format!("failover {round}, old master reconverted"), || {
            group.failover_and_reconvert()
        });
        assert_eq!(new, nodes[(round + 1) % 2]);
        assert_eq!(get(group.master(), &key).as_deref(), Some("v"));
    }
    eprintln!("20 failovers: {} s", start.elapsed().as_secs());
}
