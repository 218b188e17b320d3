//! Every input kept in `fuzz/corpus/<target>/` (the fuzzers' coverage
//! corpora, and the crashes fixed since) through its harness, on stable:
//! what `scripts/fuzz` found once is checked on every run of the tests,
//! without a nightly toolchain (issue #29).

use std::panic;
use std::path::{Path, PathBuf};

use redlease_fuzz::panics;

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// Runs every input of `target`'s corpus; fails naming each one that
/// panicked, on the harness's thread or in a task it started (the tests
/// run at once: a panic during another target's input is counted here too,
/// and its message printed above names it).
fn replay(target: &str) {
    let harness = redlease_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, harness)| *harness)
        .expect("a harness of that name");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(corpus(target))
        .unwrap_or_else(|e| panic!("{}: {e}", corpus(target).display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{target}: an empty corpus");
    let mut failed = Vec::new();
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        let before = panics();
        let outcome = panic::catch_unwind(|| harness(&data));
        if outcome.is_err() || panics() != before {
            failed.push(input.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: inputs that panicked: {failed:#?}"
    );
}

#[test]
fn duration() {
    replay("duration");
}

#[test]
fn key_template() {
    replay("key_template");
}

#[test]
fn lock_args() {
    replay("lock_args");
}

#[test]
fn url() {
    replay("url");
}

#[test]
fn replies() {
    replay("replies");
}

/// Every harness has a corpus, and every corpus a harness.
#[test]
fn every_target_has_a_corpus() {
    let mut found: Vec<String> = std::fs::read_dir(corpus(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut targets: Vec<&str> = redlease_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    targets.sort();
    assert_eq!(found, targets);
}
