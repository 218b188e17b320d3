//! The key's placeholders against the function's arguments.

use syn::{FnArg, Pat, Signature};

use super::Key;

/// The names that the function's arguments bind, `self` included, in
/// order: patterns (`(a, b): (u32, u32)`, `Customer { tenant }: Customer`)
/// bind each of their names.
pub fn argument_names(sig: &Signature) -> Vec<String> {
    fn collect(pat: &Pat, out: &mut Vec<String>) {
        match pat {
            Pat::Ident(p) => {
                out.push(p.ident.to_string());
                if let Some((_, sub)) = &p.subpat {
                    collect(sub, out);
                }
            }
            Pat::Tuple(p) => p.elems.iter().for_each(|p| collect(p, out)),
            Pat::TupleStruct(p) => p.elems.iter().for_each(|p| collect(p, out)),
            Pat::Struct(p) => p.fields.iter().for_each(|f| collect(&f.pat, out)),
            Pat::Slice(p) => p.elems.iter().for_each(|p| collect(p, out)),
            Pat::Reference(p) => collect(&p.pat, out),
            Pat::Paren(p) => collect(&p.pat, out),
            Pat::Type(p) => collect(&p.pat, out),
            _ => {}
        }
    }
    let mut names = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(_) => names.push("self".to_owned()),
            FnArg::Typed(typed) => collect(&typed.pat, &mut names),
        }
    }
    names
}

/// Every placeholder must start with an argument of `sig`: one error for
/// each unknown name, on the key literal (a string literal has no finer
/// spans on stable Rust).
pub fn check_references(key: &Key, sig: &Signature) -> syn::Result<()> {
    let names = argument_names(sig);
    let known = match names.as_slice() {
        [] => "it takes no arguments".to_owned(),
        [one] => format!("its only argument is `{one}`"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|n| format!("`{n}`")).collect();
            format!("its arguments are {} and `{last}`", init.join(", "))
        }
    };
    let mut reported: Vec<&str> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for placeholder in key.template.placeholders() {
        // `r#foo` and `foo` are one name; `r#type` and `type` too, but the
        // grammar already refused `{type}`.
        let root = placeholder.root();
        let unraw = |name: &str| name.strip_prefix("r#").unwrap_or(name).to_owned();
        if names.iter().any(|n| unraw(n) == unraw(root)) || reported.contains(&root) {
            continue;
        }
        reported.push(root);
        let subject = if placeholder.path().len() == 1 {
            format!(
                "`{{{root}}}` in the key is not an argument of `{}`",
                sig.ident
            )
        } else {
            format!(
                "`{{{}}}` in the key does not start with an argument of `{}`",
                placeholder.path_text(),
                sig.ident
            )
        };
        let e = syn::Error::new(key.lit.span(), format!("{subject}; {known}"));
        match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        }
    }
    errors.map_or(Ok(()), Err)
}
