//! A `--url` that is none of the forms redlease reads is a usage error
//! (exit 2, clap's format) that names the forms, before anything connects;
//! a database that is no number, or out of Redis's range, says so in plain
//! words; and one the server does not have says that too (issue #27).

use std::time::{Duration, Instant};

use crate::support::{RedisServer, output, redlease, stderr};

const LIMIT: Duration = Duration::from_secs(15);

/// `redlease --url URL SUBCOMMAND...`: exit 2 at once, with clap's usage
/// error naming `url` (its password hidden) and saying `why`.
fn refused(url: &str, subcommand: &[&str], why: &str) -> String {
    let started = Instant::now();
    let out = output(redlease(url).args(subcommand), LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{url}: {err}");
    assert!(err.starts_with("error: invalid redis url "), "{url}: {err}");
    assert!(err.contains(why), "{url}: {err}");
    assert!(
        err.contains(&format!("Usage: redlease {}", subcommand[0])),
        "{err}"
    );
    for wording in ["cannot connect", "InvalidClientConfig", "did not parse"] {
        assert!(!err.contains(wording), "{url}: {err}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    err
}

#[test]
fn an_unknown_scheme_names_the_forms_read() {
    for subcommand in [
        &["run", "--key", "k", "--", "true"][..],
        &["inspect"],
        &["unlock", "--force", "k", "--yes"],
        &["demo"],
    ] {
        let err = refused(
            "http://x",
            subcommand,
            "the scheme http:// is not one redlease reads",
        );
        for form in [
            "redis://",
            "rediss://",
            "redis-cluster://",
            "rediss-cluster://",
            "redis-sentinel://",
            "rediss-sentinel://",
        ] {
            assert!(err.contains(form), "{form}: {err}");
        }
    }
    refused("127.0.0.1:6379", &["inspect"], "it has no scheme");
}

#[test]
fn the_password_of_a_bad_url_is_not_shown() {
    let err = refused("http://app:s3cret@x", &["inspect"], "the forms are");
    assert!(!err.contains("s3cret"), "{err}");
    assert!(err.contains("app:***@x"), "{err}");
}

#[test]
fn a_database_that_is_no_number_or_out_of_range_says_so() {
    for url in [
        "redis://127.0.0.1:1/first",
        "redis://127.0.0.1:1/-1",
        "redis://127.0.0.1:1/2147483648",
    ] {
        refused(
            url,
            &["run", "--key", "k", "--", "true"],
            "the database (after the host's `/`) is a number from 0 to 2147483647",
        );
    }
}

#[test]
fn a_port_out_of_range_is_a_usage_error() {
    refused("redis://127.0.0.1:99999", &["inspect"], "it is not a URL");
}

#[test]
fn a_database_the_server_lacks_says_so() {
    let server = RedisServer::start();
    let url = format!("{}/99999", server.url().trim_end_matches('/'));
    let out = output(
        redlease(&url).args(["run", "--key", "k", "--", "true"]),
        LIMIT,
    );
    let err = stderr(&out);
    // The server decides (its `databases` setting): not a usage error.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the server has no database of the url's number"),
        "{err}"
    );
}
