//! Usage errors that need no server are usage errors (exit 2, clap's
//! format) before anything connects, even with a URL where nothing
//! listens (issue #18); and the usage line names what the user must give,
//! not what came from REDIS_URL; and the subcommands that connect to
//! nothing do not offer the connection options.

use std::time::{Duration, Instant};

use crate::support::{output, redlease, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(15);

/// A URL where nothing listens: a connection attempt would fail, and
/// its message would hide the usage error.
const NOWHERE: &str = "redis://127.0.0.1:1";

/// `run ARGS -- true` against nothing: exit 2 at once, with `message`.
fn refused_before_connecting(args: &[&str], message: &str) {
    let started = Instant::now();
    let out = output(
        redlease(NOWHERE).arg("run").args(args).args(["--", "true"]),
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("error: {message}\n")), "{err}");
    assert!(err.contains("Usage: redlease run"), "{err}");
    assert!(!err.contains("cannot connect"), "{err}");
    // Well under a connection attempt's timeout.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_empty_key_is_a_usage_error() {
    refused_before_connecting(&["--key", ""], "--key must not be empty");
    refused_before_connecting(
        &["--semaphore", "", "--permits", "2"],
        "--semaphore must not be empty",
    );
}

#[test]
fn a_zero_lease_is_a_usage_error_written_as_0s() {
    for zero in ["0s", "0", "0ms"] {
        refused_before_connecting(
            &["--key", "k", "--lease", zero],
            "--lease must be at least 1ms, but found 0s",
        );
    }
}

#[test]
fn a_key_over_the_limit_is_a_usage_error_shown_by_its_start() {
    let key = "a".repeat(10_240);
    let shown = format!("\"{}\u{2026}\" (10240 bytes)", "a".repeat(64));
    refused_before_connecting(
        &["--key", &key],
        &format!("--key {shown} is too long: at most 1024 bytes are allowed"),
    );
    let out = output(
        redlease(NOWHERE).args(["run", "--key", &key, "--", "true"]),
        LIMIT,
    );
    // Not the 10 KB key echoed whole.
    assert!(stderr(&out).len() < 1_000, "{}", stderr(&out).len());
}

/// The binary with `REDIS_URL` set instead of `--url`, as from a shell
/// profile, and nothing else from the environment.
fn with_redis_url(url: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redlease"));
    cmd.env("REDIS_URL", url)
        .env_remove("REDLEASE_TLS_CA")
        .env_remove("REDLEASE_TLS_CERT")
        .env_remove("REDLEASE_TLS_KEY")
        .env_remove("REDLEASE_SENTINEL_PASSWORD")
        .stdin(std::process::Stdio::null());
    cmd
}

#[test]
fn redis_url_is_not_shown_as_a_missing_argument() {
    let out = output(with_redis_url(NOWHERE).args(["run", "--key", "k"]), LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Usage: redlease run --key <KEY> <CMD>..."),
        "{err}"
    );
    assert!(!err.contains("--url"), "{err}");
}

#[test]
fn redis_url_is_still_the_default_url() {
    let out = output(
        with_redis_url(NOWHERE).args(["run", "--key", "k", "--", "true"]),
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot connect to redis at {NOWHERE}")),
        "{err}"
    );
}

#[test]
fn audit_and_acl_do_not_offer_connection_options() {
    for subcommand in ["audit", "acl"] {
        let out = output(redlease(NOWHERE).args([subcommand, "--help"]), LIMIT);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = stdout(&out);
        for option in ["--url", "--tls-ca", "--sentinel-password"] {
            assert!(!help.contains(option), "{subcommand}: {option} in\n{help}");
        }
    }
    // The ones that connect still do.
    let out = output(redlease(NOWHERE).args(["inspect", "--help"]), LIMIT);
    assert!(stdout(&out).contains("--url <URL>"), "{}", stdout(&out));
}
