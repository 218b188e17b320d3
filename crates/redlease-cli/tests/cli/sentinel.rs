//! The CLI under Redis Sentinel (#14): `run`, `inspect`, `unlock --force`
//! and `demo` with a `redis-sentinel://` URL, on the master the sentinels
//! name, before and after a failover.

use std::time::Duration;

use redlease_testkit::{SentinelGroup, SentinelOptions, TestCerts};

use crate::support::{output, redis, redlease, stderr, stdout, unique};

const LIMIT: Duration = Duration::from_secs(30);

/// `redlease run --key KEY` through `url`: the fencing token it was given.
fn run_for_token(url: &str, key: &str) -> u64 {
    let out = output(
        redlease(url).args([
            "run",
            "--key",
            key,
            "--",
            "sh",
            "-c",
            "echo $REDLEASE_FENCING_TOKEN",
        ]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().parse().unwrap()
}

#[test]
fn run_inspect_unlock_and_demo_through_the_sentinels() {
    let mut group = SentinelGroup::start(1, 3);
    let url = group.url();
    let key = unique("sentinel:run");
    let first = run_for_token(&url, &key);
    let counter = format!("redisson_lock_token:{{{key}}}");
    assert!(redis::<Option<String>>(group.master(), &["GET", &counter]).is_some());

    // After a failover: on the new master, with a larger token.
    group.failover();
    let second = run_for_token(&url, &key);
    assert!(second > first, "{second} after {first}");

    // A stuck lock on the new master: inspect finds it, unlock removes it.
    let stuck = unique("sentinel:stuck");
    redis::<i64>(
        group.master(),
        &[
            "HSET",
            &stuck,
            "8743c9c0-0795-4907-87fd-6c719a6cb586:1",
            "1",
        ],
    );
    let out = output(redlease(&url).args(["inspect", "--pattern", &stuck]), LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&stuck), "{}", stdout(&out));
    let out = output(
        redlease(&url).args(["unlock", "--force", "--yes", &stuck]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(group.master(), &["EXISTS", &stuck]), 0);

    let out = output(
        redlease(&url)
            .args(["demo", "--stock", "10", "--clients", "2", "--workers", "4"])
            .args(["--watchdog-ms", "450", "--slow-ms", "0", "--json"]),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["locked"]["sold"], 10, "{summary:#}");
    assert_eq!(summary["locked"]["exact"], true, "{summary:#}");
}

#[test]
fn an_unknown_master_name_says_so() {
    let group = SentinelGroup::start(0, 1);
    let url = group
        .url()
        .replace(&format!("#{}", group.master_name()), "#nosuch");
    let out = output(
        redlease(&url).args(["run", "--key", "k", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("nosuch"), "{}", stderr(&out));
}

/// Sentinels with a password of their own: `--sentinel-password` (or
/// `REDLEASE_SENTINEL_PASSWORD`) reaches them for `run` (the library) and
/// `unlock --force` (the tool's own look-up of the master), the URL's
/// password the master; without it the tool fails naming the sentinels,
/// and neither password is ever printed. The option with a URL that is not
/// a sentinel one is a usage error.
#[test]
fn the_sentinels_password_comes_from_sentinel_password() {
    let group = SentinelGroup::start_with(
        0,
        1,
        SentinelOptions {
            password: Some("data-secret".to_owned()),
            sentinel_password: Some("sentinel-secret".to_owned()),
            ..SentinelOptions::default()
        },
    );
    let url = group.url();
    let key = unique("sentinel:password");
    let out = output(
        redlease(&url)
            .args(["--sentinel-password", "sentinel-secret"])
            .args(["run", "--key", &key, "--", "true"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    redis::<i64>(
        group.master(),
        &["HSET", &key, "0b6f3e1e-0000-4000-8000-000000000000:1", "1"],
    );
    let out = output(
        redlease(&url)
            .env("REDLEASE_SENTINEL_PASSWORD", "sentinel-secret")
            .args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(group.master(), &["EXISTS", &key]), 0);

    for wrong in [None, Some("wrong-pass")] {
        for command in [
            &["run", "--key", "k", "--", "true"][..],
            &["unlock", "--force", "--yes", "k"],
        ] {
            let mut cmd = redlease(&url);
            if let Some(wrong) = wrong {
                cmd.args(["--sentinel-password", wrong]);
            }
            let out = output(cmd.args(command), LIMIT);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{command:?}: {err}");
            assert!(err.contains(&group.sentinel_addresses()[0]), "{err}");
            assert!(err.contains("sentinel"), "{err}");
            assert!(
                !err.contains("secret") && !err.contains("wrong-pass"),
                "{err}"
            );
        }
    }

    let out = output(
        redlease(&group.master().url())
            .args(["--sentinel-password", "sentinel-secret"])
            .args(["run", "--key", "k", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--sentinel-password needs"),
        "{}",
        stderr(&out)
    );
}

/// `rediss-sentinel://` with `--tls-ca`: `run` (the library) and `unlock
/// --force` (the tool's own look-up of the master, with the CA) reach the
/// master over TLS.
#[test]
fn run_and_unlock_over_rediss_sentinel_with_tls_ca() {
    let certs = TestCerts::generate();
    let group = SentinelGroup::start_with(
        0,
        1,
        SentinelOptions {
            tls: Some(certs.server.clone()),
            tls_ca: Some(certs.ca.clone()),
            ..SentinelOptions::default()
        },
    );
    let url = group.tls_url();
    let ca = certs.ca.display().to_string();
    let key = unique("sentinel:tls");
    let out = output(
        redlease(&url)
            .args(["--tls-ca", &ca])
            .args(["run", "--key", &key, "--", "true"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let counter = format!("redisson_lock_token:{{{key}}}");
    assert!(redis::<Option<String>>(group.master(), &["GET", &counter]).is_some());
    redis::<i64>(
        group.master(),
        &["HSET", &key, "0b6f3e1e-0000-4000-8000-000000000000:1", "1"],
    );
    let out = output(
        redlease(&url)
            .args(["--tls-ca", &ca])
            .args(["unlock", "--force", "--yes", &key]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(group.master(), &["EXISTS", &key]), 0);
}
