//! Recognising `#[distributed_lock(..)]` and reading its arguments through
//! `redlease-grammar`, the parser the attribute itself uses, so that a lock
//! the compiler would reject is reported as a problem rather than listed,
//! and a lock it accepts is listed.

use proc_macro2::TokenStream;
use redlease_grammar::args::{self, DurationArg, RawArgs};
use redlease_grammar::key::Template;
use syn::parse::Parse;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Meta, Signature};

use crate::model::{Mode, Timing};

/// The arguments of one attribute.
#[derive(Debug)]
pub(crate) struct LockArgs {
    pub(crate) key: String,
    pub(crate) template: Template,
    pub(crate) mode: Mode,
    pub(crate) wait: Option<Timing>,
    pub(crate) lease: Option<Timing>,
    pub(crate) at_least: Option<Timing>,
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
/// argument names the key's placeholders must use. The error holds every
/// mistake the attribute would report about its arguments.
pub(crate) fn parse(attr: &Attribute, sig: &Signature) -> syn::Result<LockArgs> {
    // Where the attribute's own errors about the whole list point, as the
    // compiler shows them: at the attribute.
    let site = attr.span();
    let raw = match &attr.meta {
        // `#[distributed_lock]`: the attribute gets an empty list.
        Meta::Path(_) => syn::parse2::<RawArgs>(TokenStream::new())?,
        Meta::List(list) => list.parse_args_with(RawArgs::parse)?,
        Meta::NameValue(nv) => {
            return Err(syn::Error::new(
                nv.eq_token.span,
                "expected `#[distributed_lock(key = \"..\", ..)]`",
            ));
        }
    };
    let parsed = raw.validate(site).map_err(|invalid| {
        // The attribute checks the key's placeholders even when another
        // option is wrong; so does the audit, to report what it reports.
        let mut error = invalid.error;
        if let Some(key) = &invalid.key
            && let Err(e) = args::check_references(key, sig)
        {
            error.combine(e);
        }
        error
    })?;
    args::check_references(&parsed.key, sig)?;
    Ok(LockArgs {
        key: parsed.key.lit.value(),
        template: parsed.key.template,
        mode: match parsed.mode.map(|m| m.value) {
            None => Mode::Plain,
            Some(args::Mode::Read) => Mode::Read,
            Some(args::Mode::Write) => Mode::Write,
        },
        wait: parsed.wait.map(timing),
        lease: parsed.lease.map(timing),
        at_least: parsed.at_least.map(timing),
        client: parsed.client.as_ref().map(source_text),
    })
}

fn timing(arg: DurationArg) -> Timing {
    Timing {
        text: arg.lit.value(),
        duration: arg.value,
    }
}

/// The expression as written in the source (`self.locks`), falling back to
/// the token text (`self . locks`) when the source is not at hand.
fn source_text(expr: &Expr) -> String {
    expr.span()
        .source_text()
        .unwrap_or_else(|| quote::ToTokens::to_token_stream(expr).to_string())
}
