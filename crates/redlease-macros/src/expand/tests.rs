//! The expansion against the grammar's shared table: what the audit lists
//! and the command line takes, the attribute must expand (issue #12).

use proc_macro2::TokenStream;
use redlease_grammar::cases::{ARGS, DURATIONS, Expect};
use redlease_grammar::limits::MAX_LEASE;

use super::distributed_lock;

/// The messages of the `compile_error!`s in an expansion, in order; none
/// when it expanded.
fn errors(args: &str, function: &str) -> Vec<String> {
    let args: TokenStream = args.parse().expect("the case tokenizes");
    let item: TokenStream = format!("{function} {{ Ok(()) }}")
        .parse()
        .expect("the case tokenizes");
    let file: syn::File =
        syn::parse2(distributed_lock(args, item)).expect("the expansion is items");
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "compile_error") =>
            {
                Some(m.mac.parse_body::<syn::LitStr>().ok()?.value())
            }
            _ => None,
        })
        .collect()
}

const F: &str = "async fn f(id: u64) -> Result<(), AppError>";

#[test]
fn every_shared_argument_list() {
    for case in ARGS {
        let errors = errors(case.args, case.function);
        match case.expect {
            Expect::Accept(_) => assert_eq!(errors, Vec::<String>::new(), "{}", case.args),
            Expect::Reject(fragment) => assert!(
                errors.first().is_some_and(|e| e.contains(fragment)),
                "{}: {errors:?}",
                case.args
            ),
        }
    }
}

#[test]
fn every_shared_duration_as_wait_and_as_lease() {
    for case in DURATIONS {
        let wait = errors(&format!(r#"key = "a:{{id}}", wait = "{}""#, case.text), F);
        let lease = errors(&format!(r#"key = "a:{{id}}", lease = "{}""#, case.text), F);
        match case.expect {
            Expect::Accept(ms) => {
                assert_eq!(wait, Vec::<String>::new(), "wait {:?}", case.text);
                let lease_ok = ms > 0 && u128::from(ms) <= MAX_LEASE.as_millis();
                assert_eq!(
                    lease.is_empty(),
                    lease_ok,
                    "lease {:?}: {lease:?}",
                    case.text
                );
            }
            Expect::Reject(fragment) => {
                for errors in [wait, lease] {
                    assert!(
                        errors.first().is_some_and(|e| e.contains(fragment)),
                        "{:?}: {errors:?}",
                        case.text
                    );
                }
            }
        }
    }
}

/// The three durations that issue #12 found read differently by the macro,
/// the audit and the command line.
#[test]
fn issue_12_durations_read_as_the_audit_and_the_cli_read_them() {
    let wait = |text: &str| errors(&format!(r#"key = "a:{{id}}", wait = "{text}""#), F);
    assert!(wait("30s1m")[0].contains("units must go from largest to smallest"));
    assert_eq!(wait("1h30m"), Vec::<String>::new());
    assert_eq!(wait("0"), Vec::<String>::new());
}

#[test]
fn durations_expand_to_milliseconds_and_a_zero_wait_to_one_attempt() {
    let expand = |args: &str| {
        let args: TokenStream = args.parse().unwrap();
        let item: TokenStream = format!("{F} {{ Ok(()) }}").parse().unwrap();
        distributed_lock(args, item).to_string().replace(' ', "")
    };
    let both = expand(r#"key = "a:{id}", wait = "1h30m", lease = "1m30s""#);
    assert!(both.contains("acquire(::core::option::Option::None,__redlease_key,::core::option::Option::Some(::core::time::Duration::from_millis(5400000u64)),::core::option::Option::Some(::core::time::Duration::from_millis(90000u64)))"), "{both}");
    let zero = expand(r#"key = "a:{id}", wait = "0""#);
    assert!(zero.contains("acquire(::core::option::Option::None,__redlease_key,::core::option::Option::None,::core::option::Option::None)"), "{zero}");
}

#[test]
fn at_least_releases_through_its_own_entry_and_only_then() {
    let expand = |args: &str| {
        let args: TokenStream = args.parse().unwrap();
        let item: TokenStream = format!("{F} {{ Ok(()) }}").parse().unwrap();
        distributed_lock(args, item).to_string().replace(' ', "")
    };
    let kept = expand(r#"key = "jobs:report", at_least = "50s""#);
    assert!(
        kept.contains(
            "release_at_least(__redlease_guard,::core::time::Duration::from_millis(50000u64),)"
        ),
        "{kept}"
    );
    let plain = expand(r#"key = "jobs:report""#);
    assert!(!plain.contains("release_at_least"), "{plain}");
    assert!(
        plain.contains("::redlease::__private::release(__redlease_guard)"),
        "{plain}"
    );
}
