use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

use super::*;
use crate::cases::{ARGS, ArgsShape, Expect};

/// The list's verdict on one case: its shape, or every error message.
fn verdict(args: &str, function: &str) -> Result<ArgsShape, Vec<String>> {
    let tokens: TokenStream = args.parse().expect("the case tokenizes");
    let item: syn::ItemFn = syn::parse_str(&format!("{function} {{}}")).expect("the case parses");
    let messages = |e: syn::Error| e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>();
    let parsed = parse(tokens, Span::call_site()).map_err(|invalid| messages(invalid.error))?;
    check_references(&parsed.key, &item.sig).map_err(messages)?;
    let millis = |d: &Option<DurationArg>| d.as_ref().map(|d| d.value.as_millis() as u64);
    // Leaked: the shape holds `&'static str`, and a test leaks little.
    let leak = |s: String| &*Box::leak(s.into_boxed_str());
    Ok(ArgsShape {
        key: leak(parsed.key.lit.value()),
        mode: parsed.mode.as_ref().map(|m| m.value.as_str()),
        wait_ms: millis(&parsed.wait),
        lease_ms: millis(&parsed.lease),
        at_least_ms: millis(&parsed.at_least),
        client: parsed
            .client
            .map(|c| leak(c.to_token_stream().to_string().replace(' ', ""))),
    })
}

#[test]
fn every_shared_case() {
    for case in ARGS {
        match (case.expect, verdict(case.args, case.function)) {
            (Expect::Accept(shape), Ok(got)) => assert_eq!(got, shape, "{}", case.args),
            (Expect::Reject(fragment), Err(messages)) => assert!(
                messages[0].contains(fragment),
                "{}: {messages:?}",
                case.args
            ),
            (expect, got) => panic!("{}: expected {expect:?}, got {got:?}", case.args),
        }
    }
}

#[test]
fn reports_every_mistake_in_order_and_keeps_a_valid_key() {
    let tokens: TokenStream = r#"key = "d:{nope}", wait = "soon", retries = 3, lease = "0""#
        .parse()
        .unwrap();
    let invalid = parse(tokens, Span::call_site()).unwrap_err();
    let messages: Vec<String> = invalid.error.into_iter().map(|e| e.to_string()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(
        messages[0].starts_with("invalid duration \"soon\""),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("unknown option `retries`"),
        "{messages:?}"
    );
    assert!(
        messages[2].starts_with("a lease must be longer than zero"),
        "{messages:?}"
    );
    let key = invalid.key.expect("the key alone was valid");
    assert_eq!(key.lit.value(), "d:{nope}");
}

#[test]
fn names_bound_by_patterns_and_receivers() {
    let item: syn::ItemFn = syn::parse_str(
        "async fn f(&self, (a, [b, ..]): (u8, [u8; 2]), S { c, d: ref e @ _ }: S, r#type: u8) {}",
    )
    .unwrap();
    assert_eq!(
        argument_names(&item.sig),
        ["self", "a", "b", "c", "e", "r#type"]
    );
}

#[test]
fn mode_is_read_or_write_and_spanned_when_not() {
    let parse_str = |s: &str| parse(s.parse().unwrap(), Span::call_site());
    let read = parse_str(r#"key = "a", mode = "read""#).unwrap();
    assert_eq!(read.mode.map(|m| m.value), Some(Mode::Read));
    let write = parse_str(r#"mode = "write", key = "a""#).unwrap();
    assert_eq!(write.mode.map(|m| m.value), Some(Mode::Write));
    assert!(parse_str(r#"key = "a""#).unwrap().mode.is_none());
    let invalid = parse_str(r#"key = "a", mode = "shared""#).unwrap_err();
    assert_eq!(
        invalid.error.to_string(),
        r#"unknown mode "shared": expected "read" or "write" (omit `mode` for the plain lock)"#
    );
    assert!(invalid.key.is_some(), "the key alone was valid");
}
