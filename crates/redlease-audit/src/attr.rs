//! Recognising `#[distributed_lock(..)]` and reading its arguments the way
//! the attribute does, so a lock the compiler would reject is reported as a
//! problem rather than listed.

use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, Lit, Meta, MetaNameValue, Pat, Signature, Token};

use crate::duration;
use crate::key::{self, KeyTemplate};
use crate::model::Timing;

/// The arguments of one attribute.
#[derive(Debug)]
pub(crate) struct LockArgs {
    pub(crate) key: String,
    pub(crate) template: KeyTemplate,
    pub(crate) wait: Option<Timing>,
    pub(crate) lease: Option<Timing>,
    pub(crate) client: Option<String>,
}

/// `distributed_lock`, `redlease::distributed_lock` or
/// `::redlease::distributed_lock` (and `redlease_macros::`, where the
/// attribute is defined). Matched by path alone: without name resolution a
/// renamed import (`use redlease::distributed_lock as dl`) is not seen.
pub(crate) fn is_lock_attribute(attr: &Attribute) -> bool {
    let segments: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segments.as_slice() {
        [name] => name == "distributed_lock" && attr.path().leading_colon.is_none(),
        [krate, name] => {
            (krate == "redlease" || krate == "redlease_macros") && name == "distributed_lock"
        }
        _ => false,
    }
}

/// Reads the attribute's arguments; `sig` is the function it is on, whose
/// argument names the key's placeholders must use.
pub(crate) fn parse(attr: &Attribute, sig: &Signature) -> syn::Result<LockArgs> {
    let list = match &attr.meta {
        Meta::List(list) => list,
        Meta::Path(path) => {
            return Err(syn::Error::new(
                path.span(),
                "`#[distributed_lock]` needs arguments, at least `key = \"..\"`",
            ));
        }
        Meta::NameValue(nv) => {
            return Err(syn::Error::new(
                nv.eq_token.span,
                "expected `#[distributed_lock(key = \"..\", ..)]`",
            ));
        }
    };
    let args = list.parse_args_with(Punctuated::<MetaNameValue, Token![,]>::parse_terminated)?;

    let mut key: Option<(String, proc_macro2::Span)> = None;
    let mut wait = None;
    let mut lease = None;
    let mut client = None;
    for arg in &args {
        let name = arg
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let duplicate = match name.as_str() {
            "key" => key.is_some(),
            "wait" => wait.is_some(),
            "lease" => lease.is_some(),
            "client" => client.is_some(),
            _ => {
                return Err(syn::Error::new(
                    arg.path.span(),
                    "unknown argument; expected `key`, `wait`, `lease` or `client`",
                ));
            }
        };
        if duplicate {
            return Err(syn::Error::new(
                arg.path.span(),
                format!("`{name}` is given twice"),
            ));
        }
        match name.as_str() {
            "key" => {
                key = Some((
                    string_literal(&arg.value, "key", "\"orders:lock:{id}\"")?,
                    arg.value.span(),
                ))
            }
            "wait" => wait = Some(timing(&arg.value, "wait")?),
            "lease" => {
                let parsed = timing(&arg.value, "lease")?;
                // PEXPIRE 0 deletes the key: a zero lease is never held.
                if parsed.duration.is_zero() {
                    return Err(syn::Error::new(
                        arg.value.span(),
                        "lease must be longer than 0s",
                    ));
                }
                lease = Some(parsed);
            }
            _ => client = Some(source_text(&arg.value)),
        }
    }
    let Some((key, key_span)) = key else {
        return Err(syn::Error::new(list.span(), "missing `key = \"..\"`"));
    };
    let template = key::parse(&key).map_err(|message| syn::Error::new(key_span, message))?;
    if let Some(names) = argument_names(sig)
        && let Some(unknown) = template
            .placeholders
            .iter()
            .find(|p| !names.iter().any(|n| n == key::root(p)))
    {
        return Err(syn::Error::new(
            key_span,
            format!(
                "key placeholder `{{{unknown}}}` names no argument of `{}`",
                sig.ident
            ),
        ));
    }
    Ok(LockArgs {
        key,
        template,
        wait,
        lease,
        client,
    })
}

fn string_literal(value: &Expr, name: &str, example: &str) -> syn::Result<String> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{name}` must be a string literal like {example}"),
        )),
    }
}

fn timing(value: &Expr, name: &str) -> syn::Result<Timing> {
    let text = string_literal(value, name, "\"15s\"")?;
    let duration =
        duration::parse(&text).map_err(|message| syn::Error::new(value.span(), message))?;
    Ok(Timing { text, duration })
}

/// The expression as written in the source (`self.locks`), falling back to
/// the token text (`self . locks`) when the source is not at hand.
fn source_text(expr: &Expr) -> String {
    expr.span()
        .source_text()
        .unwrap_or_else(|| quote::ToTokens::to_token_stream(expr).to_string())
}

/// The names the key may use: each argument's, and `self` for methods.
/// `None` when an argument is a pattern (`(a, b): (u32, u32)`), where the
/// check is skipped rather than risk a false problem.
fn argument_names(sig: &Signature) -> Option<Vec<String>> {
    sig.inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(_) => Some("self".to_owned()),
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) => Some(ident.ident.to_string()),
                _ => None,
            },
        })
        .collect()
}
