//! Shared helpers: the built binary, unique names, bounded waits.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub(crate) use redlease_testkit::{RedisCluster, RedisServer};

/// The `redlease` binary against `url`, with no `REDIS_URL` or TLS files
/// (`REDLEASE_TLS_*`) from the environment and no stdin.
pub(crate) fn redlease(url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redlease"));
    cmd.env_remove("REDIS_URL")
        .env_remove("REDLEASE_TLS_CA")
        .env_remove("REDLEASE_TLS_CERT")
        .env_remove("REDLEASE_TLS_KEY")
        .env_remove("REDLEASE_SENTINEL_PASSWORD")
        .arg("--url")
        .arg(url)
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd` to completion, killing it and failing after `limit`.
pub(crate) fn output(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redlease");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for redlease"),
        Err(_) => {
            redlease_testkit::signal("KILL", pid);
            panic!("redlease did not finish within {limit:?}");
        }
    }
}

/// Waits for `child` for at most `limit`, killing it and failing after.
pub(crate) fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `cond` every 10 ms for at most `limit`.
pub(crate) fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A name no other test uses.
pub(crate) fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}:{}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh empty directory under the system temp dir.
pub(crate) fn temp_dir(prefix: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(unique(&format!("redlease-cli-{prefix}")).replace(':', "-"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a Redis command on `server` and returns its reply.
pub(crate) fn redis<T: redis::FromRedisValue>(server: &RedisServer, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(&mut server.connection()).expect("redis command")
}

/// The shared 3-master cluster for tests that only read and write their
/// own keys and change nothing about the cluster. Started on first use;
/// its nodes' watchers stop them when the test process exits.
pub(crate) fn cluster() -> &'static RedisCluster {
    static SHARED: OnceLock<RedisCluster> = OnceLock::new();
    SHARED.get_or_init(|| RedisCluster::start(3, 0))
}

/// Runs a Redis command on the master of `key`'s slot and returns its
/// reply.
pub(crate) fn on_master<T: redis::FromRedisValue>(
    cluster: &RedisCluster,
    key: &str,
    args: &[&str],
) -> T {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(&mut cluster.connection_for_key(key))
        .expect("redis command")
}

/// How many clients listen on `channel`: with SSUBSCRIBE on the master of
/// its slot (the library's default on Redis 7), or with SUBSCRIBE on any
/// master. A `redlease run --wait` that found its lock busy is one.
pub(crate) fn listeners(cluster: &RedisCluster, channel: &str) -> i64 {
    let count = |conn: &mut redis::Connection, kind: &str| -> i64 {
        let (_, n): (String, i64) = redis::cmd("PUBSUB")
            .arg(kind)
            .arg(channel)
            .query(conn)
            .expect("PUBSUB");
        n
    };
    let sharded = count(&mut cluster.connection_for_key(channel), "SHARDNUMSUB");
    let plain: i64 = cluster
        .masters()
        .map(|node| count(&mut node.connection(), "NUMSUB"))
        .sum();
    sharded + plain
}
