//! The audit reads `#[distributed_lock]` as the attribute does: over the
//! macro's own compiling examples, and over the grammar's shared table,
//! which the macro and the command line run too (issue #12).

use std::path::Path;

use redlease_audit::{Audit, ProblemKind, audit_path, audit_source};
use redlease_grammar::cases::{ARGS, ArgsShape, DURATIONS, Expect};

/// The macro's trybuild pass cases: each of them compiles.
fn ui_pass() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../redlease-macros/tests/ui/pass")
}

/// Issue #12: `redlease audit` reported the lock on `generic` (key
/// `generic:{id:>08}:{label}`) as malformed, though it compiles. Every
/// attribute in the pass cases, counted from the text alone, must be
/// listed, and none be a problem.
#[test]
fn issue_12_audit_lists_every_ui_pass_case() {
    let audit = audit_path(&ui_pass()).expect("the ui pass cases are readable");
    let mut written = 0;
    for entry in std::fs::read_dir(ui_pass()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            written += std::fs::read_to_string(&path)
                .unwrap()
                .matches("#[distributed_lock(")
                .count();
        }
    }
    assert!(
        written >= 15,
        "only {written} attributes found: wrong directory?"
    );
    assert_eq!(audit.problems, [], "problems in code that compiles");
    assert_eq!(audit.locks.len(), written, "{:#?}", audit.locks);
    let generic = audit
        .locks
        .iter()
        .find(|l| l.function == "generic")
        .expect("the lock of issue #12 is listed");
    assert_eq!(generic.key, "generic:{id:>08}:{label}");
    assert_eq!(generic.prefix.as_deref(), Some("generic"));
}

/// The macro's trybuild fail cases about the argument list: each error the
/// macro prints (its `.stderr`, which the macro's tests keep current) the
/// audit reports too, for the same file.
#[test]
fn audit_reports_what_the_macro_reports_for_ui_fail_cases() {
    let fail = ui_pass().join("../fail");
    for case in [
        "at_least",
        "duration",
        "key_malformed",
        "key_not_argument",
        "options",
    ] {
        let audit = audit_path(&fail.join(format!("{case}.rs"))).unwrap();
        let stderr = std::fs::read_to_string(fail.join(format!("{case}.stderr"))).unwrap();
        let expected: Vec<&str> = stderr
            .lines()
            .filter_map(|line| line.strip_prefix("error: "))
            .collect();
        assert!(!expected.is_empty(), "{case}.stderr has no errors");
        for error in expected {
            assert!(
                audit.problems.iter().any(|p| p.message.contains(error)),
                "{case}: the macro reports {error:?}, the audit {:#?}",
                audit.problems
            );
        }
        assert_eq!(
            audit.locks,
            [],
            "{case}: listed a lock that does not compile"
        );
    }
}

fn audit_one(args: &str, function: &str) -> Audit {
    audit_source(
        "src/lib.rs",
        &format!("#[distributed_lock({args})]\n{function} {{}}\n"),
    )
}

/// What the audit made of one attribute: the lock's shape, or its problem.
fn verdict(audit: &Audit) -> Result<ArgsShape, String> {
    match (audit.locks.as_slice(), audit.problems.as_slice()) {
        ([lock], []) => {
            let ms = |t: &Option<redlease_audit::Timing>| {
                t.as_ref().map(|t| t.duration.as_millis() as u64)
            };
            let leak = |s: &str| &*Box::leak(s.replace(' ', "").into_boxed_str());
            Ok(ArgsShape {
                key: leak(&lock.key),
                mode: match lock.mode {
                    redlease_audit::Mode::Plain => None,
                    mode => Some(mode.as_str()),
                },
                wait_ms: ms(&lock.wait),
                lease_ms: ms(&lock.lease),
                at_least_ms: ms(&lock.at_least),
                client: lock.client.as_deref().map(leak),
            })
        }
        ([], [problem]) => {
            assert_eq!(problem.kind, ProblemKind::MalformedAttribute);
            assert_eq!(problem.line, Some(1), "{}", problem.message);
            Err(problem.message.clone())
        }
        _ => panic!("one lock or one problem expected: {audit:?}"),
    }
}

#[test]
fn every_shared_argument_list() {
    for case in ARGS {
        let got = verdict(&audit_one(case.args, case.function));
        match (case.expect, got) {
            (Expect::Accept(shape), Ok(got)) => assert_eq!(got, shape, "{}", case.args),
            (Expect::Reject(fragment), Err(message)) => {
                assert!(message.contains(fragment), "{}: {message}", case.args)
            }
            (expect, got) => panic!("{}: expected {expect:?}, got {got:?}", case.args),
        }
    }
}

const F: &str = "async fn f(id: u64) -> Result<(), AppError>";

#[test]
fn every_shared_duration_as_a_wait() {
    for case in DURATIONS {
        let audit = audit_one(&format!(r#"key = "a:{{id}}", wait = "{}""#, case.text), F);
        match (case.expect, verdict(&audit)) {
            (Expect::Accept(ms), Ok(shape)) => {
                assert_eq!(shape.wait_ms, Some(ms), "{:?}", case.text);
                // Listed as written.
                assert_eq!(audit.locks[0].wait.as_ref().unwrap().text, case.text);
            }
            (Expect::Reject(fragment), Err(message)) => {
                assert!(message.contains(fragment), "{:?}: {message}", case.text)
            }
            (expect, got) => panic!("{:?}: expected {expect:?}, got {got:?}", case.text),
        }
    }
}

/// The three durations that issue #12 found read differently by the macro,
/// the audit and the command line.
#[test]
fn issue_12_durations_read_as_the_macro_and_the_cli_read_them() {
    let wait = |text: &str| {
        verdict(&audit_one(
            &format!(r#"key = "a:{{id}}", wait = "{text}""#),
            F,
        ))
        .map(|shape| shape.wait_ms)
    };
    assert!(
        wait("30s1m")
            .unwrap_err()
            .contains("units must go from largest to smallest")
    );
    assert_eq!(wait("1h30m"), Ok(Some(5_400_000)));
    assert_eq!(wait("0"), Ok(Some(0)));
    let zero_lease = verdict(&audit_one(r#"key = "a:{id}", lease = "0""#, F));
    assert!(
        zero_lease
            .unwrap_err()
            .contains("a lease must be longer than zero")
    );
}
