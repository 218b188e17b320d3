//! `redlease leader` (#40): who leads, as text and JSON; a command run only
//! while leading, with its epoch, resigning when it exits; stopped and run
//! again after a lost leadership; and the changes followed with --watch.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::{
    RedisServer, eventually, output, redis, redlease, stderr, stdout, temp_dir, unique, wait,
};

const LIMIT: Duration = Duration::from_secs(20);

fn leader_json(server: &RedisServer, name: &str) -> Value {
    let out = output(
        redlease(&server.url()).args(["leader", name, "--json"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn shows_nobody_a_redlease_leader_and_a_redisson_holder() {
    let server = RedisServer::start();
    let name = unique("leader:show");
    let out = output(redlease(&server.url()).args(["leader", &name]), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("nobody leads"), "{}", stdout(&out));
    assert_eq!(leader_json(&server, &name)["leader"], Value::Null);

    // A Java service's RLock on the name: it leads, with no value.
    redis::<i64>(&server, &["HSET", &name, "8743c9c0-0795:1", "1"]);
    redis::<i64>(&server, &["PEXPIRE", &name, "30000"]);
    let out = output(redlease(&server.url()).args(["leader", &name]), LIMIT);
    let text = stdout(&out);
    assert!(
        text.contains("no value") && text.contains("8743c9c0-0795:1"),
        "{text}"
    );
    let json = leader_json(&server, &name);
    assert_eq!(json["leader"]["owner"], "8743c9c0-0795:1");
    assert_eq!(json["leader"]["value"], Value::Null);
}

#[test]
fn runs_the_command_while_leading_with_its_epoch_then_resigns() {
    let server = RedisServer::start();
    let name = unique("leader:run");
    let dir = temp_dir("leader-run");
    let env = dir.join("env");
    let script = format!(
        "echo \"$REDLEASE_EPOCH $REDLEASE_LEADER $REDLEASE_KEY\" > {}; exit 3",
        env.display()
    );
    let out = output(
        redlease(&server.url()).args([
            "leader",
            &name,
            "--campaign",
            "node-a",
            "--",
            "sh",
            "-c",
            &script,
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let seen = std::fs::read_to_string(&env).unwrap();
    let parts: Vec<&str> = seen.split_whitespace().collect();
    assert!(parts[0].parse::<u64>().is_ok(), "{seen}");
    assert_eq!(&parts[1..], ["node-a", name.as_str()]);
    assert_eq!(
        leader_json(&server, &name)["leader"],
        Value::Null,
        "resigned"
    );
    // A command that cannot run: 127, and no leadership left behind.
    let out = output(
        redlease(&server.url()).args(["leader", &name, "--campaign", "x", "--", "/no/such/cmd"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert_eq!(leader_json(&server, &name)["leader"], Value::Null);
    // --campaign needs CMD, CMD needs --campaign: usage errors.
    let out = output(
        redlease(&server.url()).args(["leader", &name, "--campaign", "x"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = output(
        redlease(&server.url()).args(["leader", &name, "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The leader's lock deleted behind it: CMD is stopped, redlease
/// campaigns again and runs CMD again with a greater epoch; a SIGTERM then
/// ends both, with no new campaign.
#[test]
fn a_lost_leadership_stops_the_command_and_campaigns_again() {
    let server = RedisServer::start();
    let name = unique("leader:lost");
    let dir = temp_dir("leader-lost");
    let runs = dir.join("runs");
    let script = format!("echo $REDLEASE_EPOCH >> {}; exec sleep 30", runs.display());
    let mut child = redlease(&server.url())
        .args([
            "leader",
            &name,
            "--campaign",
            "a",
            "--watchdog-timeout",
            "600ms",
            "--grace",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = || {
        std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse::<u64>().unwrap())
            .collect::<Vec<_>>()
    };
    eventually(LIMIT, "the first run", || lines().len() == 1);
    redis::<i64>(&server, &["DEL", &name]);
    eventually(LIMIT, "the second run", || lines().len() == 2);
    let epochs = lines();
    assert!(epochs[1] > epochs[0], "{epochs:?}");
    redlease_testkit::signal("TERM", child.id());
    let status = wait(&mut child, LIMIT);
    assert_eq!(status.code(), Some(128 + 15), "CMD's status after SIGTERM");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
    assert!(text.contains("campaigning again"), "{text}");
    assert_eq!(lines().len(), 2, "not run again after the signal");
    assert_eq!(leader_json(&server, &name)["leader"], Value::Null);
}

#[test]
fn watch_prints_each_change() {
    let server = RedisServer::start();
    let name = unique("leader:watch");
    let mut watcher = redlease(&server.url())
        .args(["leader", &name, "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = BufReader::new(watcher.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || -> Value { serde_json::from_str(&rx.recv_timeout(LIMIT).unwrap()).unwrap() };
    assert_eq!(next()["leader"], Value::Null);
    let out = output(
        redlease(&server.url()).args(["leader", &name, "--campaign", "b", "--", "sleep", "0.3"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(next()["leader"]["value"], "b");
    assert_eq!(next()["leader"], Value::Null);
    redlease_testkit::signal("INT", watcher.id());
    let status = wait(&mut watcher, LIMIT);
    assert_eq!(status.code(), Some(128 + 2));
}

/// On a cluster (#40): a command run while leading sees itself as the
/// leader from another `redlease leader`, with its value and epoch, and
/// nobody leads once it exits.
#[test]
fn issue_40_leads_on_a_cluster() {
    let url = crate::support::cluster().url();
    let name = unique("leader:cluster");
    let seen = temp_dir("leader-cluster").join("seen.json");
    let script = format!(
        "{} --url '{url}' leader '{name}' --json > '{}'",
        env!("CARGO_BIN_EXE_redlease"),
        seen.display()
    );
    let out = output(
        redlease(&url).args([
            "leader",
            &name,
            "--campaign",
            "node-c",
            "--",
            "sh",
            "-c",
            &script,
        ]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(json["leader"]["value"], "node-c", "{json}");
    assert!(json["leader"]["epoch"].as_u64().is_some(), "{json}");
    let out = output(redlease(&url).args(["leader", &name, "--json"]), LIMIT);
    let after: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(after["leader"], Value::Null, "resigned");
}
