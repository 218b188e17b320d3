//! The attribute's grammar (`redlease-grammar`): durations, key templates
//! and the argument list, each with what must hold of what it accepts.

use std::str::FromStr;
use std::time::Duration;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use redlease_grammar::duration::{format, parse_millis};
use redlease_grammar::key::{Part, Template};
use redlease_grammar::{args, duration::parse};

use crate::bytes::Bytes;

/// Parses `data` as a duration. What parses is written back to text that
/// reads the same, and that text is the one way of writing it; any
/// duration (the input's first 12 bytes as seconds and nanoseconds) is
/// written as text that reads back as its whole milliseconds.
pub fn duration(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_millis(&text) {
        Ok(ms) => {
            let written = format(Duration::from_millis(ms));
            assert_eq!(parse_millis(&written), Ok(ms), "{text:?} -> {written:?}");
            let again = format(parse(&written).expect("it parsed just now"));
            assert_eq!(again, written, "{text:?}: written two ways");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let mut bytes = Bytes::new(data);
    let secs = u64::from_le_bytes(bytes.i64().to_le_bytes());
    let nanos = u32::from(bytes.byte()) << 24
        | u32::from(bytes.byte()) << 16
        | u32::from(bytes.byte()) << 8
        | u32::from(bytes.byte());
    let any = Duration::new(secs, nanos % 1_000_000_000);
    let ms = u64::try_from(any.as_millis()).unwrap_or(u64::MAX);
    assert_eq!(parse_millis(&format(any)), Ok(ms), "{any:?}");
}

/// Parses `data` as a key template. What parses is written back as a
/// template that parses to the same parts; its `format!` string has one
/// argument per placeholder; its namespace starts its fixed start; and
/// every path segment becomes a tuple index or an identifier as the
/// attribute makes them (`Ident::new` panics on a name that is none).
pub fn key_template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let template = match Template::parse(&text) {
        Ok(template) => template,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let written: String = template
        .parts()
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.replace('{', "{{").replace('}', "}}"),
            Part::Placeholder(p) => p.to_string(),
        })
        .collect();
    assert_eq!(
        Template::parse(&written).as_ref(),
        Ok(&template),
        "{text:?}"
    );
    let placeholders = template.placeholders().count();
    assert_eq!(
        arguments(&template.format_string()),
        placeholders,
        "{text:?}"
    );
    let start = template.fixed_start();
    if let Some(prefix) = template.prefix() {
        assert!(start.starts_with(&prefix), "{text:?}");
    }
    for placeholder in template.placeholders() {
        let (root, rest) = placeholder.path().split_first().expect("a root");
        let _ = ident(root);
        for segment in rest {
            if segment.parse::<u32>().is_err() {
                let _ = ident(segment);
            }
        }
    }
}

/// The attribute's own way to name a segment (`redlease-macros`'
/// `expand.rs`), which panics on what is not an identifier.
fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(name, Span::call_site()),
    }
}

/// How many arguments a `format!` string takes: its `{` that are not `{{`.
fn arguments(format: &str) -> usize {
    let mut count = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '{' && chars.next_if_eq(&'{').is_none() {
            count += 1;
        }
    }
    count
}

/// The options the structured form writes: the attribute's own, and one
/// it does not have.
const OPTIONS: [&str; 6] = ["key", "mode", "wait", "lease", "client", "ttl"];

/// Values that are not string literals.
const EXPRESSIONS: [&str; 6] = ["client()", "1 + 2", "42", "b\"x\"", "'c'", "{ \"k\" }"];

/// Parses `data` as the attribute's argument list: with a first byte of 0,
/// the rest as token text; otherwise as options, each a name and a value
/// (a string literal or an expression) chosen by the bytes. A valid list's
/// placeholders are then checked against a function's arguments. Every
/// outcome is a value or an error with messages, never a panic.
pub fn lock_args(data: &[u8]) {
    let text = lock_args_text(data);
    let Ok(tokens) = TokenStream::from_str(&text) else {
        return;
    };
    match args::parse(tokens, Span::call_site()) {
        Ok(parsed) => {
            let _ = format!("{parsed:?}");
            let sig = signature();
            if let Err(e) = args::check_references(&parsed.key, &sig) {
                assert!(e.into_iter().all(|e| !e.to_string().is_empty()));
            }
            let names = args::argument_names(&sig);
            assert!(names.iter().any(|n| n == "order"), "{names:?}");
        }
        Err(invalid) => {
            let _ = format!("{invalid:?}");
            assert!(invalid.error.into_iter().all(|e| !e.to_string().is_empty()));
        }
    }
}

/// The argument list that `data` writes (see [`lock_args`]).
fn lock_args_text(data: &[u8]) -> String {
    let mut bytes = Bytes::new(data);
    if bytes.byte() == 0 {
        return String::from_utf8_lossy(bytes.take(data.len())).into_owned();
    }
    let mut text = String::new();
    for _ in 0..bytes.pick(6) + 1 {
        let name = OPTIONS[bytes.pick(OPTIONS.len())];
        let value = match bytes.pick(4) {
            0 => EXPRESSIONS[bytes.pick(EXPRESSIONS.len())].to_owned(),
            _ => {
                let len = usize::from(bytes.byte() % 32);
                let value = String::from_utf8_lossy(bytes.take(len)).into_owned();
                Literal::string(&value).to_string()
            }
        };
        text.push_str(&format!("{name} = {value}, "));
    }
    text
}

/// A function for the placeholders to name: a receiver, a struct, an
/// integer, a tuple and a raw name.
fn signature() -> syn::Signature {
    let item: syn::TraitItemFn =
        syn::parse_str("async fn f(&self, order: Order, id: u64, pair: (u8, u8), r#type: u8);")
            .expect("the signature parses");
    item.sig
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_counts_placeholders_not_escaped_braces() {
        assert_eq!(arguments("a:{{b}}:{}:{:>08}"), 2);
        assert_eq!(arguments("{{}}"), 0);
    }

    #[test]
    fn structured_lock_args_write_options_with_literals() {
        // One option, the first name (`key`), a literal of 12 bytes.
        let mut input = vec![1, 0, 0, 1, 12];
        input.extend_from_slice(b"a:{order.id}");
        let text = lock_args_text(&input);
        assert_eq!(text, "key = \"a:{order.id}\", ");
        let parsed = args::parse(TokenStream::from_str(&text).unwrap(), Span::call_site());
        let key = parsed.unwrap().key;
        assert!(args::check_references(&key, &signature()).is_ok());
        let tokens = TokenStream::from_str("key = \"a:{nobody}\"").unwrap();
        let parsed = args::parse(tokens, Span::call_site()).unwrap();
        assert!(args::check_references(&parsed.key, &signature()).is_err());
    }
}
