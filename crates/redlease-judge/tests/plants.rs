//! Bugs planted in redlease itself (#36) make the judge fail, in every
//! phase where docs/JUDGE.md's plant table says they show, with the seed
//! fixed, on redlease's own clients: each test asserts a violation line of
//! the class the bug breaks, in each of those phases.
//!
//! The planted judge is a build with `--cfg redlease_plant`
//! (crates/redlease/src/plant.rs), which `scripts/judge-planted` makes in
//! target/planted (scripts/test runs it first).

mod support;

use std::path::PathBuf;

use support::judge;

/// The planted build of the judge.
fn planted() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/planted/debug/redlease-judge");
    assert!(
        path.exists(),
        "no planted judge at {}: run scripts/judge-planted (scripts/test does)",
        path.display()
    );
    path.display().to_string()
}

/// redlease's own clients, all four.
const REDLEASE: &str = "async-redisson,async-string,blocking-redisson,blocking-string";

/// Runs `plant` for `seconds` per phase (20 per failover phase) over the
/// phases of `expect`, and checks in the run's report.json that each phase
/// has a violation of its class: a line that begins with its words.
fn caught(plant: &str, seconds: u32, expect: &[(&str, &str)]) {
    caught_in(plant, seconds, expect, REDLEASE, None);
}

/// [`caught`] with `clients`, on `workloads` only (all they can do
/// without it).
fn caught_in(
    plant: &str,
    seconds: u32,
    expect: &[(&str, &str)],
    clients: &str,
    workloads: Option<&str>,
) {
    caught_with(plant, seconds, expect, clients, workloads, &[]);
}

/// [`caught_in`] with `extra` arguments of the run.
fn caught_with(
    plant: &str,
    seconds: u32,
    expect: &[(&str, &str)],
    clients: &str,
    workloads: Option<&str>,
    extra: &[&str],
) {
    let phases: Vec<&str> = expect.iter().map(|(phase, _)| *phase).collect();
    let dir = match workloads {
        Some(w) => format!("planted-{plant}-{w}"),
        None => format!("planted-{plant}"),
    };
    let mut narrowed = Vec::new();
    if let Some(w) = workloads {
        narrowed = vec!["--workloads", w];
    }
    let (seconds, phases) = (seconds.to_string(), phases.join(","));
    let mut args = vec![
        "--seed",
        "36",
        "--seconds",
        &seconds,
        "--failover-seconds",
        "20",
        "--clients",
        clients,
        "--phases",
        &phases,
        "--plant",
        plant,
    ];
    args.extend(narrowed);
    args.extend(extra);
    let (code, report) = judge(&planted(), &dir, &args);
    assert_eq!(code, 1, "the judge missed {plant}:\n{report}");
    let json = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(&dir)
            .join("report.json"),
    )
    .expect("the run wrote report.json");
    let run: serde_json::Value = serde_json::from_str(&json).expect("report.json is JSON");
    for (phase, words) in expect {
        let lines: Vec<String> = run["phases"]
            .as_array()
            .expect("phases")
            .iter()
            .filter(|p| p["fault"] == *phase)
            .flat_map(|p| {
                p["check"]["violations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|v| v["line"].as_str().map(str::to_owned))
            .collect();
        assert!(
            lines.iter().any(|l| l.starts_with(words)),
            "{plant}: no `{words}` line in the {phase} phase:\n{report}"
        );
    }
}

#[test]
fn a_release_without_the_owner_check_is_caught() {
    caught(
        "release-without-owner-check",
        20,
        &[
            ("pause", "release of a lost lock succeeded"),
            ("restart", "release of a lost lock succeeded"),
        ],
    );
}

#[test]
fn a_renewal_without_the_owner_check_is_caught() {
    caught(
        "renew-without-owner-check",
        12,
        &[("restart", "holder not told of its loss")],
    );
}

#[test]
fn a_fencing_counter_that_begins_again_at_one_is_caught() {
    caught(
        "fence-not-seeded",
        12,
        &[("restart", "tokens against the hold order")],
    );
}

#[test]
fn failover_errors_handed_to_the_caller_are_caught() {
    caught(
        "failover-errors-not-retried",
        12,
        &[("cluster", "failover error with time left")],
    );
}

#[test]
fn an_acquire_that_takes_a_held_name_is_caught() {
    caught(
        "acquire-takes-held",
        12,
        &[
            ("none", "unexplained overlap"),
            ("pause", "unexplained overlap"),
            ("kill", "unexplained overlap"),
            ("restart", "unexplained overlap"),
            ("partition", "unexplained overlap"),
            ("sentinel", "unexplained overlap"),
            ("cluster", "unexplained overlap"),
        ],
    );
}

/// #40: the election's leaders are judged as holds, their epochs as
/// tokens: two leaders at once, and an epoch that goes back after a
/// restart, are caught on the election alone (campaigned for by the
/// clients of Redisson's layout).
#[test]
fn issue_40_two_leaders_or_an_epoch_going_back_are_caught() {
    let clients = "async-redisson,blocking-redisson";
    caught_in(
        "acquire-takes-held",
        12,
        &[("none", "unexplained overlap")],
        clients,
        Some("elect"),
    );
    caught_in(
        "fence-not-seeded",
        12,
        &[("restart", "tokens against the hold order")],
        clients,
        Some("elect"),
    );
}

/// #40: a collector running beside the workload (`--gc-ms`) that takes
/// what live clients hold is caught: permits still leased given back
/// (more permits held than exist), fair waiters still waiting removed
/// (served out of order).
#[test]
fn issue_40_a_collector_that_takes_live_permits_or_waiters_is_caught() {
    let clients = "async-redisson,blocking-redisson,async-redisson,blocking-redisson";
    caught_with(
        "gc-reclaims-live-permits",
        12,
        &[("none", "more permits held than exist")],
        clients,
        Some("xsem"),
        &["--gc-ms", "300"],
    );
    caught_with(
        "gc-prunes-live-waiters",
        12,
        &[("none", "fair lock out of order")],
        clients,
        Some("fair"),
        &["--gc-ms", "300"],
    );
}
