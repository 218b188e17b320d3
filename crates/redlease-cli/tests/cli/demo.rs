//! `redlease demo`: the unlocked phase oversells, the locked phase sells
//! exactly the stock, the summary carries the library's metrics, and the
//! demo finds (or starts, or asks for) a Redis, or a Redis Cluster.

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use redlease_testkit::RedisServer;

use crate::support::{cluster, on_master};

/// Small enough for a couple of seconds on two cores. The unlocked phase
/// oversells as long as two of its 16 buyers, started together at a
/// barrier, read the stock within the 1 to 3 ms another one spends between
/// its read and its write; only a scheduler that stalls all but one buyer
/// for the whole phase could prevent it. The slow sale (500 ms) outlives
/// its 450 ms lease, so the watchdog (every 150 ms) must renew it, and
/// buyers waiting 20 ms each are turned away while it runs. The lease
/// leaves room for a 300 ms stall of a loaded machine before a renewal is
/// late and the lock lost.
const SMALL: &[&str] = &[
    "--stock",
    "20",
    "--clients",
    "2",
    "--workers",
    "8",
    "--hold-ms",
    "2",
    "--wait-ms",
    "20",
    "--watchdog-ms",
    "450",
    "--slow-ms",
    "500",
];

/// Runs `redlease demo` with `args`, killing it after 60 s.
fn demo(args: &[&str], configure: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redlease"));
    cmd.arg("demo")
        .args(args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    configure(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // The demo's output is a few hundred bytes, far below a pipe's buffer,
    // so polling cannot deadlock on a full pipe.
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("redlease demo still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "demo panicked: {stderr}");
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The value of the summary line `name`, e.g. `sold` in the locked phase
/// is the second `sold` line.
fn values<'s>(summary: &'s str, name: &str) -> Vec<&'s str> {
    summary
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(name))
        .filter(|rest| rest.starts_with("  "))
        .map(str::trim)
        .collect()
}

/// The first number in `text`.
fn number(text: &str) -> u64 {
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number in {text:?}"))
}

/// The human summary: oversell without the lock, exactly the stock with it,
/// the library's counts, waits and renewals, and no keys left behind.
#[test]
fn summary_shows_oversell_then_exact_sales() {
    let server = RedisServer::start();
    let output = demo(SMALL, |c| {
        c.env("REDIS_URL", server.url());
    });
    let summary = stdout(&output);
    assert!(output.status.success(), "{summary}\n{}", stderr(&output));

    let sold = values(&summary, "sold");
    assert_eq!(sold.len(), 2, "{summary}");
    assert!(
        number(sold[0]) > 20,
        "unlocked phase did not oversell: {summary}"
    );
    assert!(sold[0].contains("oversold by"), "{summary}");
    assert_eq!(sold[1], "20 of 20: exact", "{summary}");
    assert_eq!(values(&summary, "final stock")[1], "0 (expected 0)");
    assert!(
        number(values(&summary, "acquisitions")[0]) >= 20,
        "{summary}"
    );
    assert!(
        number(values(&summary, "busy rejections")[0]) > 0,
        "{summary}"
    );
    assert!(number(values(&summary, "renewals")[0]) > 0, "{summary}");
    for quantile in ["wait p50", "wait p99"] {
        let wait = values(&summary, quantile);
        assert!(wait.len() == 1 && wait[0].ends_with(" ms"), "{summary}");
    }
    assert!(values(&summary, "fencing tokens")[0].starts_with("rose with every sale"));

    // Releases leave Redisson's unlock latches, which expire by themselves
    // (#37): nothing else may stay.
    let mut conn = server.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    let kept: Vec<&String> = keys
        .iter()
        .filter(|key| {
            let ttl: i64 = redis::cmd("PTTL").arg(key).query(&mut conn).unwrap();
            !(redlease::layout::is_redisson_aux(key) && ttl > 0)
        })
        .collect();
    assert!(kept.is_empty(), "demo left keys behind: {kept:?}");
}

/// `--json`: the library's metrics agree with the demo's own count of
/// acquisitions and busy rejections, and the fencing tokens rose.
#[test]
fn json_metrics_match_the_demos_own_counts() {
    let server = RedisServer::start();
    let output = demo(&[SMALL, &["--json"]].concat(), |c| {
        c.args(["--url", &server.url()]);
    });
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    let (unlocked, locked) = (&summary["unlocked"], &summary["locked"]);
    assert!(unlocked["oversold"].as_u64().unwrap() > 0, "{summary:#}");
    assert_eq!(locked["sold"], 20);
    assert_eq!(locked["final_stock"], 0);
    assert_eq!(locked["exact"], true);
    assert_eq!(locked["tokens_increasing"], true);
    assert_eq!(
        locked["acquisitions"], locked["demo_acquisitions"],
        "{summary:#}"
    );
    assert_eq!(
        locked["busy_rejections"], locked["demo_busy_rejections"],
        "{summary:#}"
    );
    // Every buyer's last acquisition finds the stock empty.
    assert_eq!(locked["acquisitions"], 20 + 16, "{summary:#}");
    assert!(locked["renewals"].as_u64().unwrap() > 0, "{summary:#}");
    assert_eq!(locked["lost"], 0, "{summary:#}");
    let p50 = locked["wait_p50_ms"].as_f64().unwrap();
    let p99 = locked["wait_p99_ms"].as_f64().unwrap();
    assert!(0.0 <= p50 && p50 <= p99, "{summary:#}");
}

/// `--private` starts its own server, says so, and stops it at the end.
#[test]
fn private_starts_and_stops_its_own_server() {
    let output = demo(SMALL, |c| {
        c.arg("--private");
    });
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(stdout(&output).contains("20 of 20: exact"));
    let port: u16 = said
        .split("started a private redis-server on 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no private server announced: {said}"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "private server on {port} outlived the demo"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An empty directory to be the demo's PATH: no `redis-server`, no
/// `valkey-server`, no `bash`.
fn empty_path(name: &str) -> std::path::PathBuf {
    let empty = std::env::temp_dir().join(format!("redlease-demo-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    empty
}

/// With no `redis-server` on PATH (and nothing on 6379: `--private`), the
/// demo still ends in its result (#26): on the Valkey server that
/// `scripts/valkey` installed, saying so.
#[test]
fn without_redis_server_the_demo_runs_on_valkey() {
    let valkey = redlease_testkit::valkey_server().expect("scripts/valkey installs Valkey");
    let output = demo(SMALL, |c| {
        c.arg("--private")
            .env("PATH", empty_path("valkey"))
            .env("REDLEASE_VALKEY_SERVER", &valkey);
    });
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(stdout(&output).contains("20 of 20: exact"), "{said}");
    assert!(
        said.contains("no redis-server on PATH; using the Valkey server"),
        "{said}"
    );
    assert!(
        said.contains("started a private valkey-server on 127.0.0.1:"),
        "{said}"
    );
}

/// With neither server to be had (no `redis-server` on PATH, no Valkey,
/// and no `bash` to install one with), the demo says how to install one.
#[test]
fn without_any_server_the_demo_says_how_to_install_one() {
    let output = demo(&["--private"], |c| {
        c.env("PATH", empty_path("nothing"))
            .env("REDLEASE_VALKEY_SERVER", "/nonexistent/valkey-server");
    });
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("no redis-server on PATH"), "{said}");
    assert!(said.contains("and no Valkey either"), "{said}");
    assert!(said.contains("apt-get install redis-server"), "{said}");
    assert!(said.contains("brew install redis"), "{said}");
    assert!(stdout(&output).is_empty());
}

/// An address where nothing listens is a one-line error without the
/// password, not a panic.
#[test]
fn unreachable_redis_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://demo:s3cret@127.0.0.1:{port}");
    let output = demo(&["--url", &url], |_| {});
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    let error = said.lines().last().unwrap();
    assert!(
        error.starts_with("redlease: cannot connect to redis at redis://demo:***@")
            && error.contains("cannot reach redis"),
        "{said}"
    );
    assert!(!said.contains("s3cret"), "{said}");
    assert!(stdout(&output).is_empty());
}

/// `--cluster` without a URL starts a private 3-master cluster, sells
/// exactly on it, says so, and leaves none of its servers running.
#[test]
fn cluster_starts_and_stops_a_private_cluster() {
    let output = demo(&[SMALL, &["--cluster"]].concat(), |_| {});
    let said = stderr(&output);
    let summary = stdout(&output);
    assert!(output.status.success(), "{summary}\n{said}");
    assert!(
        summary.contains("on a redis cluster of 3 masters"),
        "{summary}"
    );
    assert_eq!(values(&summary, "sold")[1], "20 of 20: exact", "{summary}");
    assert!(
        summary.ends_with("ok: the lock kept the stock exact\n"),
        "{summary}"
    );
    let nodes = said
        .split("started a private redis cluster of 3 masters on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no private cluster announced: {said}"));
    let ports: Vec<u16> = nodes
        .split(',')
        .filter_map(|node| node.strip_prefix("127.0.0.1:")?.parse().ok())
        .collect();
    assert_eq!(ports.len(), 3, "{said}");
    // At once, not after a while: the demo stops its servers before it
    // exits, where the servers' watchers would only notice its death later.
    for port in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "cluster node on {port} outlived the demo"
        );
    }
}

/// A `redis-cluster://` URL: the demo runs on that cluster, with or
/// without `--cluster` (the URL implies it), the summary names the master
/// that held the stock and the lock, and no key is left.
#[test]
fn cluster_url_runs_on_that_cluster() {
    let cluster = cluster();
    for flags in [&["--cluster", "--json"][..], &["--json"]] {
        let output = demo(&[SMALL, flags].concat(), |c| {
            c.env("REDIS_URL", cluster.url());
        });
        assert!(output.status.success(), "{flags:?}: {}", stderr(&output));
        assert!(stderr(&output).contains("using the redis cluster at redis-cluster://"));
        let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(summary["locked"]["exact"], true, "{summary:#}");
        let sku = summary["sku"].as_str().unwrap();
        let stock_key = format!("demo:inventory:{{{sku}}}");
        assert_eq!(summary["cluster"]["masters"], 3, "{summary:#}");
        assert_eq!(
            summary["cluster"]["node"],
            cluster.master_for_key(&stock_key).address(),
            "{summary:#}"
        );
        let lock = format!("demo:stock:{{{sku}}}");
        assert_eq!(summary["locked"]["lock"], lock.as_str());
        let token = format!("redisson_lock_token:{lock}");
        let left: i64 = on_master(cluster, &stock_key, &["EXISTS", &stock_key, &lock, &token]);
        assert_eq!(left, 0, "the demo left keys behind");
    }
}

/// `--cluster` with a URL that names one node is a usage error, from
/// `--url` or `REDIS_URL`, and the password stays hidden.
#[test]
fn cluster_with_a_single_node_url_is_a_usage_error() {
    let url = "redis://demo:s3cret@127.0.0.1:1";
    let from_flag = demo(&["--cluster", "--url", url], |_| {});
    let from_env = demo(&["--cluster"], |c| {
        c.env("REDIS_URL", url);
    });
    for output in [from_flag, from_env] {
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(
            said.contains("--cluster needs a redis-cluster://"),
            "{said}"
        );
        assert!(said.contains("redis://demo:***@127.0.0.1:1"), "{said}");
        assert!(!said.contains("s3cret"), "{said}");
        assert!(stdout(&output).is_empty());
    }
}
