//! A password refused or missing reads the same in `run`, `inspect` and
//! the demo, and says what to fix (issue #18): not the server's long
//! text, not redis-rs's `AuthenticationFailed`; and the demo does not
//! first warn about keys it could not have written.

use std::time::Duration;

use redlease_testkit::ServerOptions;

use crate::support::{RedisServer, output, redlease, stderr};

const LIMIT: Duration = Duration::from_secs(30);

/// The password the server requires; not a word any message uses, so
/// that the URL's password being scrubbed does not change the message.
const PASSWORD: &str = "pw-7f3a";

fn protected() -> RedisServer {
    RedisServer::start_with(ServerOptions {
        password: Some(PASSWORD.to_owned()),
        ..ServerOptions::default()
    })
}

/// `SUBCOMMAND ARGS` against `url`: exit 1, and its one line of stderr.
fn refused(url: &str, args: &[&str]) -> String {
    let out = output(redlease(url).args(args), LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn a_missing_password_reads_the_same_in_run_and_inspect() {
    let server = protected();
    let url = format!("redis://127.0.0.1:{}", server.port());
    let expected = format!(
        "redlease: cannot connect to redis at {url}: authentication required: the server \
         needs a password (check the URL or REDIS_URL)\n"
    );
    assert_eq!(
        refused(&url, &["run", "--key", "k", "--", "true"]),
        expected
    );
    assert_eq!(refused(&url, &["inspect"]), expected);
}

#[test]
fn a_wrong_password_reads_the_same_in_run_and_inspect() {
    let server = protected();
    for (url, shown) in [
        (
            format!("redis://:not-it@127.0.0.1:{}", server.port()),
            format!("redis://:***@127.0.0.1:{}", server.port()),
        ),
        // A user that does not exist: the same answer, as the server
        // gives no more.
        (
            format!("redis://nobody:not-it@127.0.0.1:{}", server.port()),
            format!("redis://nobody:***@127.0.0.1:{}", server.port()),
        ),
    ] {
        let expected = format!(
            "redlease: cannot connect to redis at {shown}: authentication failed: wrong \
             username or password (check the URL or REDIS_URL)\n"
        );
        assert_eq!(
            refused(&url, &["run", "--key", "k", "--", "true"]),
            expected
        );
        assert_eq!(refused(&url, &["inspect"]), expected);
    }
}

#[test]
fn the_demo_shows_only_the_real_error() {
    let server = protected();
    let url = format!("redis://127.0.0.1:{}", server.port());
    let out = output(redlease(&url).args(["demo", "--json"]), LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("warning"), "{err}");
    assert!(!err.contains("could not remove"), "{err}");
    assert!(
        err.contains("authentication required: the server needs a password"),
        "{err}"
    );
}
