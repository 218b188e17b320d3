//! `inspect` where nothing matches: an empty server, a pattern that
//! matches no key, a cluster whose masters hold none. Nothing found is a
//! normal answer (issue #18): said in words, exit 0, in text and JSON.

use std::time::Duration;

use serde_json::Value;

use crate::support::{RedisServer, cluster, output, redis, redlease, stderr, stdout, unique};

const LIMIT: Duration = Duration::from_secs(15);

/// `inspect ARGS` against `url`: it must succeed; its stdout.
fn inspect(url: &str, args: &[&str]) -> String {
    let out = output(redlease(url).arg("inspect").args(args), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    stdout(&out)
}

/// The JSON of an empty answer: complete, no keys, no locks.
fn assert_empty_json(text: &str) {
    let report: Value = serde_json::from_str(text).expect("json");
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(report["keys_seen"], 0, "{report}");
    assert_eq!(
        report["locks"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
}

#[test]
fn an_empty_server_is_a_normal_answer() {
    let server = RedisServer::start();
    assert_eq!(inspect(&server.url(), &[]), "no key matches \"*\"\n");
    assert_empty_json(&inspect(&server.url(), &["--json"]));
}

#[test]
fn a_pattern_that_matches_nothing_is_a_normal_answer() {
    let server = RedisServer::start();
    // Keys that are not the pattern's: the scan looks at them and skips.
    let _: () = redis(&server, &["SET", "app:data", "x"]);
    let _: i64 = redis(&server, &["HSET", "app:lock", "owner:1", "1"]);
    let text = inspect(&server.url(), &["--pattern", "nothing:*"]);
    assert_eq!(text, "no key matches \"nothing:*\"\n");
    assert_empty_json(&inspect(
        &server.url(),
        &["--pattern", "nothing:*", "--json"],
    ));
}

#[test]
fn a_cluster_where_no_master_has_a_match_is_a_normal_answer() {
    let cluster = cluster();
    let pattern = format!("{}:*", unique("nothing-here"));
    let text = inspect(&cluster.url(), &["--pattern", &pattern]);
    assert_eq!(text, format!("no key matches {pattern:?}\n"));
    assert_empty_json(&inspect(&cluster.url(), &["--pattern", &pattern, "--json"]));
}
