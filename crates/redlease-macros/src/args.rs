//! The attribute's options: `key = "..", wait = "..", lease = "..", client = expr`.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

use crate::duration;
use crate::key::{self, Template};

/// The longest lease the library accepts (`redlease::name::MAX_LEASE`):
/// checked here too, so an absurd lease fails the build.
const MAX_LEASE_MS: u64 = 100 * 365 * 24 * 3_600_000;

/// One `name = value`, kept unvalidated so that every mistake in the list
/// can be reported at once.
struct Opt {
    name: Ident,
    value: Expr,
}

impl Parse for Opt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let _: Token![=] = input.parse()?;
        let value: Expr = input.parse()?;
        Ok(Opt { name, value })
    }
}

/// The raw option list, as written.
pub(crate) struct RawArgs(Punctuated<Opt, Token![,]>);

impl Parse for RawArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Punctuated::parse_terminated(input).map(RawArgs)
    }
}

/// The key template with the literal it came from, for error spans.
pub(crate) struct Key {
    pub(crate) template: Template,
    pub(crate) lit: LitStr,
}

/// Validated options.
pub(crate) struct Args {
    pub(crate) key: Key,
    /// `None`: one attempt.
    pub(crate) wait_ms: Option<u64>,
    /// `None`: watchdog mode.
    pub(crate) lease_ms: Option<u64>,
    pub(crate) client: Option<Expr>,
}

/// Invalid options: every mistake, and the key if it alone was valid, so
/// that its references can still be checked and reported with the rest.
pub(crate) struct Invalid {
    pub(crate) error: syn::Error,
    pub(crate) key: Option<Key>,
}

impl RawArgs {
    /// Validates the options, collecting every mistake into one error.
    pub(crate) fn validate(self) -> Result<Args, Invalid> {
        let mut errors: Option<syn::Error> = None;
        let mut push = |e: syn::Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        let (mut key, mut wait, mut lease, mut client) = (None, None, None, None);
        let mut seen: Vec<String> = Vec::new();
        for Opt { name, value } in self.0 {
            let label = name.to_string();
            if seen.contains(&label) {
                push(syn::Error::new(
                    name.span(),
                    format!("duplicate option `{label}`"),
                ));
                continue;
            }
            match label.as_str() {
                "key" => match string_literal(&value, "the key", "\"orders:{order_id}\"") {
                    Ok(lit) => match key::parse(&lit.value()) {
                        Ok(template) => key = Some(Key { template, lit }),
                        Err(message) => push(syn::Error::new(lit.span(), message)),
                    },
                    Err(e) => push(e),
                },
                "wait" => match duration_ms(&value, "wait") {
                    // A zero wait is one attempt, as no `wait` is.
                    Ok(ms) => wait = Some((ms > 0).then_some(ms)),
                    Err(e) => push(e),
                },
                "lease" => match duration_ms(&value, "lease") {
                    Ok(0) => push(syn::Error::new_spanned(
                        &value,
                        "a lease must be longer than zero; omit `lease` for a lock that the watchdog renews",
                    )),
                    Ok(ms) if ms > MAX_LEASE_MS => push(syn::Error::new_spanned(
                        &value,
                        "a lease must be at most 100 years",
                    )),
                    Ok(ms) => lease = Some(ms),
                    Err(e) => push(e),
                },
                "client" => client = Some(value),
                _ => {
                    push(syn::Error::new(
                        name.span(),
                        format!(
                            "unknown option `{label}`; expected `key`, `wait`, `lease` or `client`"
                        ),
                    ));
                    continue;
                }
            }
            seen.push(label);
        }
        if key.is_none() && !seen.iter().any(|s| s == "key") {
            push(syn::Error::new(
                Span::call_site(),
                "missing option `key`, like `key = \"orders:{order_id}\"`",
            ));
        }
        match (errors, key) {
            (Some(error), key) => Err(Invalid { error, key }),
            (None, Some(key)) => Ok(Args {
                key,
                wait_ms: wait.flatten(),
                lease_ms: lease,
                client,
            }),
            (None, None) => unreachable!("a missing or invalid key is an error"),
        }
    }
}

fn string_literal(value: &Expr, what: &str, example: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => Err(syn::Error::new_spanned(
            value,
            format!("{what} must be a string literal, like `{example}`"),
        )),
    }
}

fn duration_ms(value: &Expr, what: &str) -> syn::Result<u64> {
    let lit = string_literal(value, &format!("`{what}`"), "\"15s\"")?;
    duration::parse_millis(&lit.value()).map_err(|message| syn::Error::new(lit.span(), message))
}
