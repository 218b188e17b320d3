//! `redlease doctor` (#40) against real servers configured each way: the
//! setting that loses locks (exit 2, named), warnings (exit 1), a clean
//! server (exit 0), a writable and a read-only replica, a user without the
//! rights, a cluster and a sentinel group.

use std::time::Duration;

use redlease_testkit::{SentinelGroup, ServerOptions};
use serde_json::Value;

use crate::support::{RedisServer, cluster, on_master, output, redis, redlease, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(30);

/// `redlease doctor --json` against `url`: the exit code and the report.
fn doctor(url: &str, args: &[&str]) -> (Option<i32>, Value) {
    let out = output(redlease(url).arg("doctor").arg("--json").args(args), LIMIT);
    let text = stdout(&out);
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}; stderr: {}", stderr(&out)));
    (out.status.code(), json)
}

/// The findings of `check`, as (status, node, found).
fn findings(report: &Value, check: &str) -> Vec<(String, Option<String>, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .map(|f| {
            (
                f["status"].as_str().unwrap().to_owned(),
                f["node"].as_str().map(str::to_owned),
                f["found"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The one status of `check` on a one-node deployment.
fn status(report: &Value, check: &str) -> String {
    let found = findings(report, check);
    assert_eq!(found.len(), 1, "{check}: {found:?} in {report:#}");
    found[0].0.clone()
}

fn config_set(server: &RedisServer, name: &str, value: &str) {
    redis::<String>(server, &["CONFIG", "SET", name, value]);
}

/// Persistence a doctor is content with: the append-only file, synced
/// every second.
fn persistent(server: &RedisServer) {
    config_set(server, "appendonly", "yes");
    config_set(server, "appendfsync", "everysec");
}

#[test]
fn issue_40_allkeys_lru_exits_2_naming_the_setting() {
    let server = RedisServer::start();
    persistent(&server);
    config_set(&server, "maxmemory-policy", "allkeys-lru");
    let out = output(redlease(&server.url()).arg("doctor"), LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.contains("maxmemory-policy"))
        .unwrap_or_else(|| panic!("no maxmemory-policy row: {text}"));
    assert!(
        row.starts_with("DANGER") && row.contains("allkeys-lru"),
        "{row}"
    );
    assert!(
        text.contains("set maxmemory-policy noeviction"),
        "no advice: {text}"
    );

    // Every evicting policy, as JSON: the same verdict.
    for policy in ["volatile-ttl", "allkeys-lfu"] {
        config_set(&server, "maxmemory-policy", policy);
        let (code, report) = doctor(&server.url(), &[]);
        assert_eq!(code, Some(2), "{policy}: {report:#}");
        assert_eq!(report["status"], "danger");
        assert_eq!(status(&report, "maxmemory-policy"), "danger");
    }

    // Fixed: nothing left to change.
    config_set(&server, "maxmemory-policy", "noeviction");
    let (code, report) = doctor(&server.url(), &[]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["exit_code"], 0);
    for check in [
        "role",
        "maxmemory-policy",
        "persistence",
        "replicas",
        "wait",
        "waitaof",
        "scripting",
        "version",
        "native-release",
        "clock",
        "round-trip",
        "rights",
        "subscribe",
    ] {
        assert_eq!(status(&report, check), "ok", "{check}: {report:#}");
    }
}

#[test]
fn issue_40_no_persistence_and_a_full_server_warn_with_exit_1() {
    let server = RedisServer::start();
    config_set(&server, "save", "");
    let (code, report) = doctor(&server.url(), &[]);
    assert_eq!(code, Some(1), "{report:#}");
    let found = findings(&report, "persistence");
    assert_eq!(found[0].0, "warning");
    assert_eq!(found[0].2, "appendonly no, no snapshots");

    // appendfsync no: the system writes when it likes.
    persistent(&server);
    config_set(&server, "appendfsync", "no");
    let (code, report) = doctor(&server.url(), &[]);
    assert_eq!(
        (code, status(&report, "persistence")),
        (Some(1), "warning".to_owned())
    );

    // A limit just above what is used: nearly full, and the probe's
    // acquire refused (OOM), each a warning, not a danger.
    config_set(&server, "appendfsync", "everysec");
    let info: String = redis(&server, &["INFO", "memory"]);
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    config_set(&server, "maxmemory", &(used + 1024).to_string());
    let (code, report) = doctor(&server.url(), &[]);
    config_set(&server, "maxmemory", "0");
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(status(&report, "memory"), "warning", "{report:#}");
    assert_eq!(status(&report, "maxmemory-policy"), "ok");
}

#[test]
fn issue_40_a_writable_replica_is_a_danger_and_a_read_only_one_a_warning() {
    let master = RedisServer::start();
    let replica = RedisServer::start_with(ServerOptions {
        replica_of: Some(master.port()),
        ..ServerOptions::default()
    });
    persistent(&replica);
    let (code, report) = doctor(&replica.url(), &[]);
    assert_eq!(code, Some(1), "{report:#}");
    let role = &findings(&report, "role")[0];
    assert_eq!(role.0, "warning");
    assert!(
        role.2
            .contains(&format!("replica of 127.0.0.1:{}", master.port())),
        "{role:?}"
    );
    // The probe is refused too, and says why.
    let rights = &findings(&report, "rights")[0];
    assert!(
        rights.0 == "warning" && rights.2.contains("read-only replica"),
        "{rights:?}"
    );

    config_set(&replica, "replica-read-only", "no");
    let (code, report) = doctor(&replica.url(), &[]);
    assert_eq!(code, Some(2), "{report:#}");
    assert_eq!(status(&report, "role"), "danger");

    // The master counts its replica.
    let (_, report) = doctor(&master.url(), &[]);
    assert_eq!(findings(&report, "replicas")[0].2, "1 connected");
}

#[test]
fn issue_40_a_user_without_the_rights_is_told_which() {
    let server = RedisServer::start();
    persistent(&server);
    // Everything but scripts.
    redis::<String>(
        &server,
        &[
            "ACL", "SETUSER", "noscript", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha",
        ],
    );
    let url = format!("redis://noscript:pw@127.0.0.1:{}", server.port());
    let (code, report) = doctor(&url, &[]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(status(&report, "scripting"), "warning");
    let rights = &findings(&report, "rights")[0];
    assert!(
        rights.0 == "warning" && rights.2.starts_with("cannot take redlease:doctor"),
        "{rights:?}"
    );
    assert!(!report.to_string().contains("pw@"), "the password leaked");

    // The rules `redlease acl` prints for a prefix, and a probe under it.
    let line = output(
        redlease(&server.url()).args(["acl", "--prefix", "app:", "--user", "svc"]),
        LIMIT,
    );
    let line = stdout(&line);
    let words = shell_words(line.trim());
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    redis::<String>(&server, &args);
    redis::<String>(&server, &["ACL", "SETUSER", "svc", ">pw"]);
    let url = format!("redis://svc:pw@127.0.0.1:{}", server.port());
    let (_, report) = doctor(&url, &["--name", "app:doctor"]);
    assert_eq!(status(&report, "rights"), "ok", "{report:#}");
    assert_eq!(status(&report, "subscribe"), "ok", "{report:#}");
    // Outside the prefix: refused, and pointed at `redlease acl`.
    let (_, report) = doctor(&url, &["--name", "other:doctor"]);
    let text = report.to_string();
    assert_eq!(status(&report, "rights"), "warning", "{report:#}");
    assert!(text.contains("redlease acl --prefix"), "{text}");
}

/// Splits the one-line `ACL SETUSER ...` that `redlease acl` prints into
/// words, undoing its single quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

#[test]
fn issue_40_every_master_of_a_cluster_and_its_slots() {
    let cluster = cluster();
    let (_, report) = doctor(&cluster.url(), &[]);
    let policies = findings(&report, "maxmemory-policy");
    assert_eq!(policies.len(), 3, "one per master: {policies:?}");
    assert!(policies.iter().all(|p| p.0 == "ok" && p.1.is_some()));
    assert_eq!(status(&report, "cluster-slots"), "ok", "{report:#}");
    assert_eq!(status(&report, "sharded-pubsub"), "ok", "{report:#}");
    assert_eq!(status(&report, "rights"), "ok", "{report:#}");

    // One master evicting: exit 2, that master named. The shared cluster
    // has no maxmemory, so nothing is evicted meanwhile.
    let key = "doctor:planted";
    on_master::<String>(
        cluster,
        key,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-lru"],
    );
    let (code, report) = doctor(&cluster.url(), &[]);
    on_master::<String>(
        cluster,
        key,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    assert_eq!(code, Some(2), "{report:#}");
    let master = cluster.master_for_key(key);
    let evicting: Vec<_> = findings(&report, "maxmemory-policy")
        .into_iter()
        .filter(|p| p.0 == "danger")
        .collect();
    assert_eq!(evicting.len(), 1, "{evicting:?}");
    assert_eq!(
        evicting[0].1.as_deref(),
        Some(format!("127.0.0.1:{}", master.port()).as_str())
    );
}

#[test]
fn issue_40_sentinels_with_a_quorum_and_without() {
    let group = SentinelGroup::start(1, 3);
    let (_, report) = doctor(&group.url(), &[]);
    assert_eq!(status(&report, "sentinel-quorum"), "ok", "{report:#}");
    assert_eq!(status(&report, "sentinel-replicas"), "ok", "{report:#}");
    let role = &findings(&report, "role")[0];
    assert_eq!(
        role.1.as_deref(),
        Some(format!("127.0.0.1:{}", group.master().port()).as_str()),
        "the master the sentinels name: {role:?}"
    );

    // A quorum the three cannot reach: no failover can be authorized.
    for i in 0..3 {
        redis::<String>(
            group.sentinel(i),
            &["SENTINEL", "SET", group.master_name(), "quorum", "4"],
        );
    }
    let (code, report) = doctor(&group.url(), &[]);
    assert_eq!(code, Some(1), "{report:#}");
    let quorum = &findings(&report, "sentinel-quorum")[0];
    assert!(
        quorum.0 == "warning" && quorum.2.contains("NOQUORUM"),
        "{quorum:?}"
    );
}
