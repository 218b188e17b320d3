//! The rewrite of the function body.
//!
//! The signature, attributes, visibility, generics and where-clauses stay
//! as written; only the body changes, to:
//!
//! ```text
//! ::redlease::__private::scoped(async move {
//!     <pin the block's output to the return type>
//!     let key = format!(<template>, &arg, &arg.field);
//!     let acquired = { let client = &<client>; acquire(client, key, <wait>, <lease>).await };
//!     // (`acquire_read` / `acquire_write` with `mode = "read"` / `"write"`)
//!     match acquired {
//!         Ok(guard) => {
//!             let output = async move { <pin> <body> }.await;
//!             release(guard).await;  // release_at_least(guard, <at_least>)
//!             output
//!         }
//!         Err(e) => Err(From::from(e)),
//!     }
//! }).await
//! ```
//!
//! The body runs in an async block of its own so that its `return` and `?`
//! end only that block, and the release after it runs on every exit path
//! but a panic (where the guard's Drop releases instead).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use redlease_grammar::args::{self, Invalid, LockArgs};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Ident, ItemFn, ReturnType, Signature, Type};

/// Expands the attribute; on any mistake, the errors followed by the
/// function unchanged, so that the only errors the user sees are ours and
/// not a cascade from a missing function.
pub(crate) fn distributed_lock(args: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "`#[distributed_lock]` can only be used on an `async fn` with a body",
            );
            return [error.to_compile_error(), item].into_iter().collect();
        }
    };
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let (args, key) = match args::parse(args, Span::call_site()) {
        Ok(args) => (Some(args), None),
        Err(Invalid { error, key }) => {
            push(error);
            (None, key)
        }
    };
    if let Err(e) = check_signature(&function.sig) {
        push(e);
    }
    if let Some(key) = args.as_ref().map(|a| &a.key).or(key.as_ref())
        && let Err(e) = args::check_references(key, &function.sig)
    {
        push(e);
    }
    match (errors, args) {
        (None, Some(args)) => rewrite(function, &args),
        (Some(e), _) => {
            // Unchanged but for the key that no longer reads the
            // arguments: warnings about them would only add noise.
            let function = quote! {
                #[allow(unused_variables)]
                #function
            };
            [e.to_compile_error(), function].into_iter().collect()
        }
        (None, None) => unreachable!("invalid options are an error"),
    }
}

/// The function must be `async` and return a `Result`.
fn check_signature(sig: &Signature) -> syn::Result<()> {
    let mut errors: Vec<syn::Error> = Vec::new();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            "`#[distributed_lock]` can only be used on an `async fn`",
        ));
    }
    let message = "`#[distributed_lock]` functions must return a `Result` whose error type \
                   implements `From<redlease::Error>`, to return when the lock is busy";
    match &sig.output {
        ReturnType::Type(_, ty) if is_result(ty) => {}
        ReturnType::Type(_, ty) => errors.push(syn::Error::new_spanned(ty, message)),
        ReturnType::Default => {
            let span = sig.paren_token.span.close();
            errors.push(syn::Error::new(
                span,
                format!("{message}; this function returns `()`"),
            ));
        }
    }
    let mut errors = errors.into_iter();
    match errors.next() {
        None => Ok(()),
        Some(mut first) => {
            first.extend(errors);
            Err(first)
        }
    }
}

/// Whether the type is spelled as a path ending in `Result`: the expansion
/// cannot see through aliases, and a `Result` spelling covers `io::Result`,
/// `anyhow::Result` and the crate-local aliases of the same name.
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Paren(inner) => is_result(&inner.elem),
        Type::Group(inner) => is_result(&inner.elem),
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == "Result"),
        _ => false,
    }
}

/// Replaces `impl Trait` by `_`: the return type is restated inside the
/// body, where `impl Trait` is not allowed but inference fills the hole.
struct EraseImplTrait;

impl VisitMut for EraseImplTrait {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(it) = ty {
            *ty = Type::Infer(syn::TypeInfer {
                underscore_token: syn::Token![_](it.impl_token.span),
            });
        } else {
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
}

fn rewrite(function: ItemFn, args: &LockArgs) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let (inner_attrs, outer_attrs): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    let ReturnType::Type(_, ret) = &sig.output else {
        unreachable!("checked by check_signature")
    };
    let mut pinned = (**ret).clone();
    EraseImplTrait.visit_type_mut(&mut pinned);

    let site = Span::mixed_site();
    let key_var = Ident::new("__redlease_key", site);
    let client_var = Ident::new("__redlease_client", site);
    let acquired = Ident::new("__redlease_acquired", site);
    let guard = Ident::new("__redlease_guard", site);
    let output = Ident::new("__redlease_output", site);
    let fake = Ident::new("__redlease_return", site);

    // An async block's output type is inferred from its `return`s and tail,
    // so a body's `return Ok(&self.name)` would not coerce to `&str`, nor a
    // `Box<T>` to `Box<dyn Trait>`. A first, never-taken `return` of the
    // declared type fixes the output type and makes later `return`s (and
    // `?`) coercion sites for it, as in the `async fn` itself.
    let pin = quote! {
        #[allow(unreachable_code, clippy::diverging_sub_expression, clippy::empty_loop, clippy::needless_return)]
        if false {
            let #fake: #pinned = loop {};
            return #fake;
        }
    };

    let lit = &args.key.lit;
    let format = syn::LitStr::new(&args.key.template.format_string(), lit.span());
    let refs = args.key.template.placeholders().map(|placeholder| {
        let (first, rest) = placeholder
            .path()
            .split_first()
            .expect("the grammar gives every path a root");
        let root = ident(first, lit.span());
        // The grammar lets through only tuple indices that fit a u32, and
        // identifiers that `Ident::new` accepts.
        let rest = rest.iter().map(|s| match s.parse::<u32>() {
            Ok(index) => syn::Index {
                index,
                span: lit.span(),
            }
            .into_token_stream(),
            Err(_) => ident(s, lit.span()).into_token_stream(),
        });
        quote! { &#root #(.#rest)* }
    });

    let millis = |ms: Option<u64>| match ms {
        Some(ms) => quote! {
            ::core::option::Option::Some(::core::time::Duration::from_millis(#ms))
        },
        None => quote! { ::core::option::Option::None },
    };
    // Whole milliseconds, the grammar's finest unit, so no rounding; a
    // zero wait is one attempt, as no `wait` is.
    let as_millis = |d: &args::DurationArg| u64::try_from(d.value.as_millis()).unwrap_or(u64::MAX);
    let wait = millis(args.wait.as_ref().map(as_millis).filter(|&ms| ms > 0));
    let lease = millis(args.lease.as_ref().map(as_millis));
    // With `at_least`, its own release entry, so that the common expansion
    // stays as it was.
    let release = match args.at_least.as_ref().map(as_millis) {
        Some(ms) => quote! {
            ::redlease::__private::release_at_least(
                #guard,
                ::core::time::Duration::from_millis(#ms),
            )
            .await;
        },
        None => quote! { ::redlease::__private::release(#guard).await; },
    };
    let (bind_client, client) = match &args.client {
        // The annotation turns `Client`, `&Client` and `Arc<Client>` alike
        // into `&Client` by deref coercion; a temporary (`app.client()`)
        // lives to the end of the enclosing block by temporary lifetime
        // extension.
        Some(expr) => (
            quote_spanned! {expr.span()=>
                let #client_var: &::redlease::Client = &(#expr);
            },
            quote! { ::core::option::Option::Some(#client_var) },
        ),
        None => (quote! {}, quote! { ::core::option::Option::None }),
    };
    // Spanned at the return type, the conversion's argument included, so
    // that a missing `From<redlease::Error>` points there. The binding's
    // scope is one match arm of ours: it cannot meet a name of the user's.
    let error = Ident::new("__redlease_error", ret.span());
    // A function whose error type is `redlease::Error` itself converts to
    // the same type; that is no mistake of the user's, so clippy's
    // `useless_conversion` is kept quiet here.
    let convert = quote_spanned! {ret.span()=>
        {
            #[allow(clippy::useless_conversion)]
            let converted = ::core::convert::From::from(#error);
            converted
        }
    };
    let stmts = &block.stmts;
    // One entry per mode rather than a mode argument, so that the plain
    // lock's expansion (by far the common one) stays as it was.
    let entry = match args.mode.as_ref().map(|m| m.value) {
        None => Ident::new("acquire", Span::call_site()),
        Some(args::Mode::Read) => Ident::new("acquire_read", Span::call_site()),
        Some(args::Mode::Write) => Ident::new("acquire_write", Span::call_site()),
    };

    quote! {
        #(#outer_attrs)*
        #vis #sig {
            #(#inner_attrs)*
            ::redlease::__private::scoped(async move {
                #pin
                let #key_var: ::std::string::String = ::std::format!(#format #(, #refs)*);
                // In a block of its own so that a borrow of `self` or of an
                // argument by the client expression ends before the body
                // moves them.
                let #acquired = {
                    #bind_client
                    let #acquired = ::redlease::__private::#entry(#client, #key_var, #wait, #lease).await;
                    #acquired
                };
                match #acquired {
                    ::core::result::Result::Ok(#guard) => {
                        let #output = async move {
                            #pin
                            #(#stmts)*
                        }
                        .await;
                        #release
                        #output
                    }
                    ::core::result::Result::Err(#error) => ::core::result::Result::Err(#convert),
                }
            })
            .await
        }
    }
}

/// An identifier for a key reference, resolved where the key was written.
fn ident(name: &str, span: Span) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, span),
        None => Ident::new(name, span),
    }
}

#[cfg(test)]
mod tests;
