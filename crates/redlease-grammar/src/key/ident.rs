//! Which names a key path may hold: the ones the macro can turn into
//! `&root.field` without `Ident::new` panicking or the expansion failing to
//! parse.

/// Why a path segment was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Invalid {
    /// A keyword, which `r#` would make a name.
    Keyword,
    /// Anything else.
    NotAName,
}

/// Keywords of Rust 2018 and later, reserved ones included, less `self`
/// (the receiver, allowed as a root). `gen`, reserved only from 2024, is
/// left out: a 2021 crate can name an argument `gen`, and a 2024 crate
/// cannot, so `{gen}` there already fails the argument check.
const KEYWORDS: [&str; 50] = [
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv",
    "typeof", "unsized", "virtual", "yield", "try",
];

/// Names that `r#` cannot make raw.
const NOT_RAW: [&str; 4] = ["self", "Self", "super", "crate"];

/// Checks one segment of a path: the root (an argument, `self` included)
/// or a later one (a field or a tuple index).
pub(super) fn check_segment(segment: &str, root: bool) -> Result<(), Invalid> {
    if let Some(raw) = segment.strip_prefix("r#") {
        return match is_identifier(raw) && !NOT_RAW.contains(&raw) {
            true => Ok(()),
            false => Err(Invalid::NotAName),
        };
    }
    if !root && is_tuple_index(segment) {
        return Ok(());
    }
    if root && segment == "self" {
        return Ok(());
    }
    if !is_identifier(segment) {
        return Err(Invalid::NotAName);
    }
    match segment == "self" || KEYWORDS.contains(&segment) {
        // `self`, `Self`, `super` and `crate` cannot be made raw either.
        true if NOT_RAW.contains(&segment) => Err(Invalid::NotAName),
        true => Err(Invalid::Keyword),
        false => Ok(()),
    }
}

/// An identifier as the lexer reads one (XID rules, as proc-macro2 checks
/// them), other than `_`, keywords not excluded.
pub(super) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c == '_' || unicode_ident::is_xid_start(c) => {}
        _ => return false,
    }
    s != "_" && chars.all(unicode_ident::is_xid_continue)
}

/// `0`, `1`, `12`: not `01`, and small enough for `syn::Index`.
fn is_tuple_index(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'))
        && s.parse::<u32>().is_ok()
}

/// Whether `s` is a keyword, for a `name$` count in a spec.
pub(super) fn is_keyword(s: &str) -> bool {
    s == "self" || KEYWORDS.contains(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_fields_and_raw_names() {
        for (segment, root, ok) in [
            ("id", true, true),
            ("self", true, true),
            ("self", false, false),
            ("r#type", true, true),
            ("r#self", true, false),
            ("r#_", true, false),
            ("0", false, true),
            ("0", true, false),
            ("01", false, false),
            ("4294967295", false, true),
            ("4294967296", false, false),
            ("ü", true, true),
            ("_x", true, true),
            ("_", true, false),
            ("gen", true, true),
            ("union", true, true),
            ("a-b", true, false),
        ] {
            assert_eq!(
                check_segment(segment, root).is_ok(),
                ok,
                "{segment:?} root={root}"
            );
        }
        assert_eq!(check_segment("type", true), Err(Invalid::Keyword));
        assert_eq!(check_segment("crate", true), Err(Invalid::NotAName));
    }
}
