//! `redlease acl`: the printed line, run through a shell and `redis-cli`,
//! creates a user that can run `redlease run` on its prefix and is refused,
//! clearly, outside it; `inspect` and `unlock --force` say what they lack.

use std::process::Command;
use std::time::Duration;

use crate::support::{RedisServer, output, redis, redlease, stderr, stdout, unique};

const LIMIT: Duration = Duration::from_secs(15);

/// `redlease acl ARGS` (no server needed), its line.
fn acl_line(args: &[&str]) -> String {
    let out = output(redlease("redis://127.0.0.1:1").arg("acl").args(args), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = stdout(&out);
    assert_eq!(line.lines().count(), 1, "{line}");
    line.trim_end().to_owned()
}

/// Feeds `line` to `redis-cli` on its stdin, as README's
/// `redlease acl ... | redis-cli` does.
fn redis_cli_stdin(server: &RedisServer, line: &str) {
    use std::io::Write;
    let mut child = Command::new("redis-cli")
        .args(["-p", &server.port().to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("redis-cli (Debian package redis-tools)");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{line}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim() == "OK",
        "{line}: {text}"
    );
}

/// Runs `redis-cli -p PORT <line>` through `sh -c`, as an operator would
/// paste it after `redis-cli` in a shell.
fn redis_cli(server: &RedisServer, line: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("redis-cli -p {} {line}", server.port()))
        .output()
        .expect("sh and redis-cli (Debian package redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim() == "OK",
        "{line}: {text}"
    );
}

#[test]
fn the_printed_line_creates_a_user_that_runs_on_its_prefix_only() {
    let server = RedisServer::start();
    let prefix = unique("svc");
    let line = acl_line(&["--prefix", &format!("{prefix}:"), "--user", "svc"]);
    for never in ["'~*'", "'&*'", "+@all", "allkeys", "allchannels"] {
        assert!(!line.contains(never), "{never} in {line}");
    }
    redis_cli(&server, &line);
    redis_cli(&server, "ACL SETUSER svc '>pw'");
    let url = format!("redis://svc:pw@127.0.0.1:{}", server.port());

    let key = format!("{prefix}:job");
    let out = output(
        redlease(&url).args(["run", "--key", &key, "--", "true"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let other = unique("other");
    let out = output(
        redlease(&url).args(["run", "--key", &other, "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains(&other) && text.contains("redlease acl"),
        "{text}"
    );
    assert!(!text.contains("pw@"), "the password leaked: {text}");

    // inspect as the service: refused, and told which rules it lacks.
    let out = output(redlease(&url).args(["inspect"]), LIMIT);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("scan") && text.contains("acl --admin"),
        "{text}"
    );
    let out = output(
        redlease(&url).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("acl --admin"), "{}", stderr(&out));
}

#[test]
fn the_admin_line_lets_an_operator_inspect_and_force_unlock() {
    let server = RedisServer::start();
    let prefix = unique("ops");
    let line = acl_line(&[
        "--prefix",
        &format!("{prefix}:"),
        "--user",
        "ops",
        "--admin",
    ]);
    redis_cli_stdin(&server, &line);
    redis_cli(&server, "ACL SETUSER ops '>pw'");
    let key = format!("{prefix}:stuck");
    redis::<i64>(
        &server,
        &["HSET", &key, "8743c9c0-0795-4907-87fd-6c719a6cb586:1", "1"],
    );
    let url = format!("redis://ops:pw@127.0.0.1:{}", server.port());
    let out = output(
        redlease(&url).args(["inspect", "--pattern", &format!("{prefix}:*")]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&key), "{}", stdout(&out));
    let out = output(
        redlease(&url).args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(&server, &["EXISTS", &key]), 0);
}

#[test]
fn a_prefix_an_acl_rule_cannot_carry_is_a_usage_error() {
    for bad in [&["--prefix", "a b"][..], &["--prefix", ""], &[]] {
        let out = output(redlease("redis://127.0.0.1:1").arg("acl").args(bad), LIMIT);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}
