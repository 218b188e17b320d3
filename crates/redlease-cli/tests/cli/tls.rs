//! `--tls-ca`, `--tls-cert`, `--tls-key` and their environment variables
//! (#14): `run`, `inspect`, `unlock --force` and `demo` over TLS with a
//! private CA, mutual TLS, and the usage errors. Servers keep a plain port
//! for the tests' own checks; `redlease` is only given the TLS one.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use redlease_testkit::TestCerts;

use crate::support::{RedisServer, output, redis, redlease, stderr, stdout, unique};

const LIMIT: Duration = Duration::from_secs(30);

fn tls_url(server: &RedisServer) -> String {
    format!("rediss://127.0.0.1:{}", server.tls_port().unwrap())
}

/// `redlease --url <url> --tls-ca <ca> <args>`.
fn with_ca(url: &str, ca: &Path, args: &[&str]) -> Command {
    let mut cmd = redlease(url);
    cmd.arg("--tls-ca").arg(ca).args(args);
    cmd
}

/// `run` that prints its fencing token.
const PRINT_TOKEN: &[&str] = &["--", "sh", "-c", "echo $REDLEASE_FENCING_TOKEN"];

fn token(out: &Output) -> u64 {
    stdout(out)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no token: {}{}", stdout(out), stderr(out)))
}

/// `run`, `inspect` and `unlock --force` over TLS, verified against the
/// test's CA given with `--tls-ca`; without it, the system's CAs refuse
/// the server with an error that says why.
#[test]
fn run_inspect_and_unlock_over_tls_with_tls_ca() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_with(certs.server_options(false));
    let url = tls_url(&server);
    let key = unique("tls:run");

    let out = output(
        &mut with_ca(
            &url,
            &certs.ca,
            &[&["run", "--key", &key], PRINT_TOKEN].concat(),
        ),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    token(&out);
    // The lock went over TLS to this server: its fencing counter is here.
    let counter = format!("redisson_lock_token:{{{key}}}");
    assert!(redis::<Option<String>>(&server, &["GET", &counter]).is_some());

    // A lock held by someone else, seen and removed over TLS.
    let held = unique("tls:held");
    redis::<i64>(&server, &["HSET", &held, "8743c9c0:7", "1"]);
    redis::<i64>(&server, &["PEXPIRE", &held, "60000"]);
    let out = output(
        &mut with_ca(&url, &certs.ca, &["inspect", "--pattern", &held, "--json"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("8743c9c0:7"), "{}", stdout(&out));
    let out = output(
        &mut with_ca(&url, &certs.ca, &["unlock", "--force", "--yes", &held]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(redis::<i64>(&server, &["EXISTS", &held]), 0);

    // The wrong CA: exit 1, and the message says which certificate and why.
    let out = output(
        &mut with_ca(
            &url,
            &certs.other_ca,
            &[&["run", "--key", &key], PRINT_TOKEN].concat(),
        ),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("tls certificate rejected: the server's certificate is not signed by a ca this client trusts"),
        "{}",
        stderr(&out)
    );
}

/// Mutual TLS: the client certificate from the options, or from the
/// environment (`REDLEASE_TLS_*`); without it the server refuses, and the
/// message says a client certificate is required.
#[test]
fn mutual_tls_from_options_and_from_the_environment() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_with(certs.server_options(true));
    let url = tls_url(&server);
    let key = unique("tls:mutual");
    let run = [&["run", "--key", key.as_str()], PRINT_TOKEN].concat();

    let mut cmd = with_ca(&url, &certs.ca, &[]);
    cmd.arg("--tls-cert")
        .arg(&certs.client.cert)
        .arg("--tls-key")
        .arg(&certs.client.key)
        .args(&run);
    let first = output(&mut cmd, LIMIT);
    assert!(first.status.success(), "{}", stderr(&first));

    let mut cmd = redlease(&url);
    cmd.env("REDLEASE_TLS_CA", &certs.ca)
        .env("REDLEASE_TLS_CERT", &certs.client.cert)
        .env("REDLEASE_TLS_KEY", &certs.client.key)
        .args(&run);
    let second = output(&mut cmd, LIMIT);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(token(&second) > token(&first));

    let refused = output(&mut with_ca(&url, &certs.ca, &run), LIMIT);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("the server requires a client certificate"),
        "{}",
        stderr(&refused)
    );
}

/// The demo over TLS: its locks and its own plain connections (the
/// stock) take the same options.
#[test]
fn demo_over_tls() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_with(certs.server_options(true));
    let mut cmd = with_ca(&tls_url(&server), &certs.ca, &[]);
    cmd.arg("--tls-cert")
        .arg(&certs.client.cert)
        .arg("--tls-key")
        .arg(&certs.client.key)
        .args(["demo", "--stock", "10", "--clients", "2", "--workers", "4"])
        .args(["--watchdog-ms", "450", "--slow-ms", "0", "--json"]);
    let out = output(&mut cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["locked"]["sold"], 10, "{summary:#}");
    assert_eq!(summary["locked"]["exact"], true, "{summary:#}");
    // The demo's stock lived on this server, and was removed from it.
    let keys: Vec<String> = redis(&server, &["KEYS", "demo:*"]);
    assert!(keys.is_empty(), "{keys:?}");
}

/// One usage error: the options, the environment, and what stderr says.
struct Case {
    options: Vec<String>,
    env: Vec<(String, String)>,
    says: String,
}

/// Usage errors (exit 2), before anything connects: an unreadable file
/// (named), a certificate without its key and the other way round, and
/// TLS files with a plain URL (never a silent plaintext connection). The
/// URLs point at a port where nothing listens: a connection attempt would
/// be exit 1.
#[test]
fn tls_usage_errors() {
    let certs = TestCerts::generate();
    let nowhere = "rediss://127.0.0.1:1";
    let missing = certs.ca.with_file_name("missing.pem");
    let missing_shown = missing.display().to_string();
    let ca = certs.ca.display().to_string();
    let cert = certs.client.cert.display().to_string();
    let key = certs.client.key.display().to_string();
    let run = ["run", "--key", "k", "--", "true"];
    let case = |options: &[&str], env: &[(&str, &str)], says: String| Case {
        options: options.iter().map(|o| (*o).to_owned()).collect(),
        env: env
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
        says,
    };
    let cases = [
        case(
            &["--tls-ca", &missing_shown],
            &[],
            format!("cannot read --tls-ca {missing_shown}"),
        ),
        case(
            &[],
            &[("REDLEASE_TLS_CA", &missing_shown)],
            format!("cannot read --tls-ca {missing_shown}"),
        ),
        case(
            &["--tls-cert", &cert, "--tls-key", &missing_shown],
            &[],
            format!("cannot read --tls-key {missing_shown}"),
        ),
        case(&["--tls-cert", &cert], &[], "--tls-key".to_owned()),
        case(&["--tls-key", &key], &[], "--tls-cert".to_owned()),
        case(&[], &[("REDLEASE_TLS_CERT", &cert)], "--tls-key".to_owned()),
    ];
    for Case { options, env, says } in &cases {
        for command in [&run[..], &["inspect"], &["unlock", "--force", "--yes", "k"]] {
            let mut cmd = redlease(nowhere);
            cmd.args(options).args(command).envs(env.iter().cloned());
            let out = output(&mut cmd, LIMIT);
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{options:?} {env:?} {command:?}: {err}"
            );
            assert!(err.contains(says.as_str()), "{options:?} {env:?}: {err}");
        }
    }

    // A plain URL with TLS files, for each command that connects.
    for command in [
        &run[..],
        &["inspect"],
        &["unlock", "--force", "--yes", "k"],
        &["demo"],
    ] {
        let out = output(
            redlease("redis://127.0.0.1:1")
                .args(["--tls-ca", &ca])
                .args(command),
            LIMIT,
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {err}");
        assert!(
            err.contains("need a rediss://, rediss-cluster:// or rediss-sentinel:// url"),
            "{err}"
        );
    }
}
