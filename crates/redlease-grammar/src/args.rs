//! The attribute's argument list, as the macro expands it and the audit
//! lists it: `key = "..", mode = "..", wait = "..", lease = "..",
//! at_least = "..", client = expr`, in any order, each at most once, `key`
//! required, a trailing comma allowed.
//!
//! * `key`: a string literal holding a [key template](crate::key).
//! * `mode`: `"read"` or `"write"`, the side of the read-write lock named
//!   by the key; without it, the plain (exclusive) lock.
//! * `wait`: a string literal holding a [duration](crate::duration::parse);
//!   zero is one attempt, as no `wait` is.
//! * `lease`: a duration over zero and at most [`MAX_LEASE`]; without it
//!   the lock is in watchdog mode.
//! * `at_least`: a duration over zero and at most [`MAX_LEASE`]: the lock
//!   is released no earlier than that after it was taken, for a job that
//!   must run once per tick on replicas whose clocks differ (ShedLock's
//!   `lockAtLeastFor`); not with `mode = "read"`, a shared hold.
//! * `client`: any expression, evaluated inside the function.
//!
//! Every mistake in the list is reported, each spanned at what is wrong,
//! so that one build (or one audit) shows them all. The placeholders must
//! then name arguments of the function: [`check_references`].

mod refs;

use std::fmt;
use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

use crate::duration;
use crate::key::Template;
use crate::limits::MAX_LEASE;

pub use refs::{argument_names, check_references};

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

/// The list as written: `name = value` pairs, not yet checked. Parse it
/// with `syn` (`syn::parse2`, `Attribute::parse_args_with`), then
/// [`validate`](RawArgs::validate) it.
pub struct RawArgs(Punctuated<Opt, Token![,]>);

impl Parse for RawArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Punctuated::parse_terminated(input).map(RawArgs)
    }
}

impl fmt::Debug for RawArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(|opt| opt.name.to_string()).collect();
        f.debug_tuple("RawArgs").field(&names).finish()
    }
}

/// A valid argument list.
pub struct LockArgs {
    /// The key.
    pub key: Key,
    /// `mode`, if given; without it the plain lock.
    pub mode: Option<ModeArg>,
    /// `wait`, if given.
    pub wait: Option<DurationArg>,
    /// `lease`, if given.
    pub lease: Option<DurationArg>,
    /// `at_least`, if given: the least time the lock is held.
    pub at_least: Option<DurationArg>,
    /// The `client` expression, if given.
    pub client: Option<Expr>,
}

/// The key template with the literal it came from, for error spans.
pub struct Key {
    /// The parsed template.
    pub template: Template,
    /// The literal, as written.
    pub lit: LitStr,
}

/// Which side of a read-write lock a `mode` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The read side: shared with other readers.
    Read,
    /// The write side: alone.
    Write,
}

impl Mode {
    /// The value as written in the attribute: `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }
}

/// The `mode` option with the literal it came from.
pub struct ModeArg {
    /// The literal, as written.
    pub lit: LitStr,
    /// Its value.
    pub value: Mode,
}

/// A duration option with the literal it came from.
pub struct DurationArg {
    /// The literal, as written.
    pub lit: LitStr,
    /// Its value, in whole milliseconds.
    pub value: Duration,
}

/// An invalid argument list: every mistake in one error, and the key if
/// it alone was valid, so that its placeholders can still be checked and
/// reported with the rest.
pub struct Invalid {
    /// The mistakes; iterate it for each one's message and span.
    pub error: syn::Error,
    /// The key, when it was given and valid.
    pub key: Option<Key>,
}

/// Parses and validates an argument list. `site` is where an error about
/// the list as a whole (a missing `key`) points: the attribute.
pub fn parse(tokens: TokenStream, site: Span) -> Result<LockArgs, Invalid> {
    match syn::parse2::<RawArgs>(tokens) {
        Ok(raw) => raw.validate(site),
        Err(error) => Err(Invalid { error, key: None }),
    }
}

impl RawArgs {
    /// Validates the options, collecting every mistake into one error.
    /// `site` is where an error about the list as a whole (a missing `key`)
    /// points: the attribute.
    pub fn validate(self, site: Span) -> Result<LockArgs, Invalid> {
        let mut errors: Option<syn::Error> = None;
        let mut push = |e: syn::Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        let (mut key, mut mode, mut wait, mut lease, mut client) = (None, None, None, None, None);
        let mut at_least: Option<DurationArg> = None;
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
                "key" => match string_literal(value, "the key", "\"orders:{order_id}\"") {
                    Ok(lit) => match Template::parse(&lit.value()) {
                        Ok(template) => key = Some(Key { template, lit }),
                        Err(e) => push(syn::Error::new(lit.span(), e)),
                    },
                    Err(e) => push(e),
                },
                "mode" => match mode_arg(value) {
                    Ok(arg) => mode = Some(arg),
                    Err(e) => push(e),
                },
                "wait" => match duration_arg(value, "wait") {
                    Ok(arg) => wait = Some(arg),
                    Err(e) => push(e),
                },
                "lease" => match duration_arg(value, "lease") {
                    // PEXPIRE 0 deletes the key: a zero lease is never held.
                    Ok(arg) if arg.value.is_zero() => push(syn::Error::new(
                        arg.lit.span(),
                        "a lease must be longer than zero; omit `lease` for a lock that the watchdog renews",
                    )),
                    Ok(arg) if arg.value > MAX_LEASE => push(syn::Error::new(
                        arg.lit.span(),
                        "a lease must be at most 100 years",
                    )),
                    Ok(arg) => lease = Some(arg),
                    Err(e) => push(e),
                },
                "at_least" => match duration_arg(value, "at_least") {
                    Ok(arg) if arg.value.is_zero() => push(syn::Error::new(
                        arg.lit.span(),
                        "`at_least` must be longer than zero; omit it to release when the function returns",
                    )),
                    Ok(arg) if arg.value > MAX_LEASE => push(syn::Error::new(
                        arg.lit.span(),
                        "`at_least` must be at most 100 years",
                    )),
                    Ok(arg) => at_least = Some(arg),
                    Err(e) => push(e),
                },
                "client" => client = Some(value),
                _ => {
                    push(syn::Error::new(
                        name.span(),
                        format!(
                            "unknown option `{label}`; expected `key`, `mode`, `wait`, `lease`, `at_least` or `client`"
                        ),
                    ));
                    continue;
                }
            }
            seen.push(label);
        }
        if let (Some(at_least), Some(mode)) = (&at_least, &mode)
            && mode.value == Mode::Read
        {
            push(syn::Error::new(
                at_least.lit.span(),
                "`at_least` keeps an exclusive lock held; a read hold is shared with other readers, \
                 so there is nothing to keep: omit it, or use `mode = \"write\"`",
            ));
        }
        if !seen.iter().any(|s| s == "key") {
            push(syn::Error::new(
                site,
                "missing option `key`, like `key = \"orders:{order_id}\"`",
            ));
        }
        match (errors, key) {
            (None, Some(key)) => Ok(LockArgs {
                key,
                mode,
                wait,
                lease,
                at_least,
                client,
            }),
            (Some(error), key) => Err(Invalid { error, key }),
            // A key that was seen but not stored pushed its error.
            (None, None) => Err(Invalid {
                error: syn::Error::new(site, "missing option `key`"),
                key: None,
            }),
        }
    }
}

fn string_literal(value: Expr, what: &str, example: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        other => Err(syn::Error::new_spanned(
            other,
            format!("{what} must be a string literal, like `{example}`"),
        )),
    }
}

fn mode_arg(value: Expr) -> syn::Result<ModeArg> {
    let lit = string_literal(value, "`mode`", "\"read\"")?;
    let value = match lit.value().as_str() {
        "read" => Mode::Read,
        "write" => Mode::Write,
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "unknown mode {other:?}: expected \"read\" or \"write\" (omit `mode` for the plain lock)"
                ),
            ));
        }
    };
    Ok(ModeArg { lit, value })
}

fn duration_arg(value: Expr, what: &str) -> syn::Result<DurationArg> {
    let lit = string_literal(value, &format!("`{what}`"), "\"15s\"")?;
    match duration::parse(&lit.value()) {
        Ok(value) => Ok(DurationArg { lit, value }),
        Err(e) => Err(syn::Error::new(lit.span(), e)),
    }
}

impl fmt::Debug for LockArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let client = self
            .client
            .as_ref()
            .map(|expr| expr.to_token_stream().to_string());
        f.debug_struct("LockArgs")
            .field("key", &self.key)
            .field("mode", &self.mode.as_ref().map(|m| m.value))
            .field("wait", &self.wait)
            .field("lease", &self.lease)
            .field("at_least", &self.at_least)
            .field("client", &client)
            .finish()
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("template", &self.template)
            .field("lit", &self.lit.value())
            .finish()
    }
}

impl fmt::Debug for ModeArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModeArg")
            .field("lit", &self.lit.value())
            .field("value", &self.value)
            .finish()
    }
}

impl fmt::Debug for DurationArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurationArg")
            .field("lit", &self.lit.value())
            .field("value", &self.value)
            .finish()
    }
}

impl fmt::Debug for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let messages: Vec<String> = self
            .error
            .clone()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        f.debug_struct("Invalid")
            .field("error", &messages)
            .field("key", &self.key)
            .finish()
    }
}

#[cfg(test)]
mod tests;
