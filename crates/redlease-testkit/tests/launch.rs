//! The launcher itself: a server that answers, is reaped and leaves nothing
//! behind, a failure that says why, and the watcher that stops the server
//! of an owner killed without destructors.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redlease_testkit::{
    ClusterNodeOptions, RedisServer, ServerOptions, StartError, TlsFiles, signal,
};

/// Whether something accepts connections on `port` of 127.0.0.1.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Polls until nothing listens on `port`, for at most `limit`.
fn gone_within(port: u16, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while listening(port) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn a_server_answers_restarts_empty_and_stops_on_drop() {
    let mut server = RedisServer::start();
    let port = server.port();
    let pong: String = redis::cmd("PING").query(&mut server.connection()).unwrap();
    assert_eq!(pong, "PONG");
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .exec(&mut server.connection())
        .unwrap();

    server.restart();
    assert_eq!(server.port(), port);
    let value: Option<String> = redis::cmd("GET")
        .arg("k")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(value, None, "a restarted server is empty");

    let dir = std::env::temp_dir().join(format!("redlease-redis-{port}"));
    assert!(dir.is_dir());
    drop(server);
    assert!(!listening(port), "dropped, the server is gone at once");
    assert!(!dir.exists(), "the scratch directory is removed");
}

#[test]
fn a_server_that_cannot_start_says_why() {
    let missing = PathBuf::from("/nonexistent/redlease-testkit.pem");
    let options = ServerOptions {
        tls: Some(TlsFiles {
            cert: missing.clone(),
            key: missing,
        }),
        ..ServerOptions::default()
    };
    match RedisServer::try_start_with(options) {
        Err(StartError::Failed(message)) => {
            assert!(message.contains("exited at once"), "{message}");
            // Redis's own words, from its log.
            assert!(message.contains("redlease-testkit.pem"), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn a_cluster_node_listens_on_its_own_bus_port() {
    let node = RedisServer::start_with(ServerOptions {
        cluster: Some(ClusterNodeOptions::default()),
        ..ServerOptions::default()
    });
    let info: String = redis::cmd("INFO")
        .arg("cluster")
        .query(&mut node.connection())
        .unwrap();
    assert!(info.contains("cluster_enabled:1"), "{info}");
    let bus_port = node
        .cluster_bus_port()
        .expect("a cluster node has a bus port");
    assert_ne!(bus_port, node.port());
    assert!(listening(bus_port));
    let timeout: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("cluster-node-timeout")
        .query(&mut node.connection())
        .unwrap();
    assert_eq!(timeout[1], "2000");
}

/// Set in the child run of [`the_watcher_stops_the_server_of_a_killed_owner`].
const OWNER: &str = "REDLEASE_TESTKIT_OWNER";

/// The test runs itself again as the owner of a server, then kills that
/// process with SIGKILL: no destructor runs, only the watcher can stop the
/// server.
#[test]
fn the_watcher_stops_the_server_of_a_killed_owner() {
    if std::env::var_os(OWNER).is_some() {
        let server = RedisServer::start();
        println!("port {}", server.port());
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let mut owner = Command::new(std::env::current_exe().unwrap())
        .args([
            "the_watcher_stops_the_server_of_a_killed_owner",
            "--exact",
            "--nocapture",
        ])
        .env(OWNER, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let port: u16 = BufReader::new(owner.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("port ").and_then(|p| p.parse().ok()))
        .expect("the owner prints its server's port");
    assert!(listening(port));
    signal("KILL", owner.id());
    let _ = owner.wait();
    assert!(
        gone_within(port, Duration::from_secs(5)),
        "the server on {port} outlived its owner"
    );
    // Its owner could not remove it.
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("redlease-redis-{port}")));
}

/// A server started as a Sentinel runs in Sentinel mode from a
/// configuration file of its own, and a restart brings back the same
/// Sentinel (its id, saved in that file).
#[test]
fn a_sentinel_comes_back_as_itself() {
    let mut sentinel = RedisServer::start_with(ServerOptions {
        sentinel: true,
        ..ServerOptions::default()
    });
    let info = |server: &RedisServer| -> String {
        redis::cmd("INFO")
            .arg("server")
            .query(&mut server.connection())
            .unwrap()
    };
    assert!(info(&sentinel).contains("redis_mode:sentinel"));
    let id: String = redis::cmd("SENTINEL")
        .arg("MYID")
        .query(&mut sentinel.connection())
        .unwrap();
    sentinel.restart();
    assert!(info(&sentinel).contains("redis_mode:sentinel"));
    let again: String = redis::cmd("SENTINEL")
        .arg("MYID")
        .query(&mut sentinel.connection())
        .unwrap();
    assert_eq!(again, id);
}
