//! A placeholder's format spec, checked the way `format!` parses one, so
//! that what the grammar accepts compiles and what it refuses does not:
//!
//! ```text
//! spec      := [[fill] align] [sign] ["#"] ["0"] [width] ["." precision] [type] whitespace*
//! align     := "<" | "^" | ">"
//! sign      := "+" | "-"
//! width     := integer | identifier "$"
//! precision := integer | identifier "$"
//! type      := "" | "?" | "x?" | "X?" | "x" | "X" | "o" | "b" | "e" | "E" | "p"
//! ```
//!
//! Integers are at most 65535, as `format!` takes them. A positional count
//! (`1$`, `.*`) is refused: the key's values are references, which
//! `format!` does not take as a count. The trait a type needs (`Display`,
//! `LowerHex`, ..) is left to the compiler.

use super::ident;

/// Checks `spec`, the text after a placeholder's `:`; the error says what
/// is wrong, to follow "has an invalid format spec: ".
pub(super) fn check(spec: &str) -> Result<(), String> {
    let mut rest = spec;
    // A fill is any character, but only in front of an alignment.
    let mut ahead = rest.chars();
    if let (Some(fill), Some('<' | '^' | '>')) = (ahead.next(), ahead.next()) {
        rest = &rest[fill.len_utf8()..];
    }
    eat_any(&mut rest, &['<', '^', '>']);
    eat_any(&mut rest, &['+', '-']);
    eat_any(&mut rest, &['#']);
    // `0$` is a width from argument 0, not the `0` flag: refused by count().
    if rest.starts_with('0') && !rest[1..].starts_with('$') {
        rest = &rest[1..];
    }
    count(&mut rest, "width")?;
    if eat_any(&mut rest, &['.']) {
        if rest.starts_with('*') {
            return Err(
                "`.*` takes the precision from a positional argument, which a key cannot pass; \
                 write a number, or `name$` for a variable"
                    .to_owned(),
            );
        }
        count(&mut rest, "precision")?;
    }
    if eat_any(&mut rest, &['x', 'X']) {
        eat_any(&mut rest, &['?']);
    } else if !eat_any(&mut rest, &['?']) {
        let name = word(rest);
        if !matches!(name, "" | "o" | "b" | "e" | "E" | "p") {
            return Err(format!("unknown format trait `{name}`"));
        }
        rest = &rest[name.len()..];
    }
    match rest.trim_start() {
        "" => Ok(()),
        left => Err(format!("unexpected `{left}` at its end")),
    }
}

/// Consumes one of `chars` at the start of `rest`, if there.
fn eat_any(rest: &mut &str, chars: &[char]) -> bool {
    match rest.strip_prefix(chars) {
        Some(after) => {
            *rest = after;
            true
        }
        None => false,
    }
}

/// A width or precision, if there: an integer, or a variable's `name$`.
/// Anything else is left for the type.
fn count(rest: &mut &str, what: &str) -> Result<(), String> {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let number = &rest[..digits];
        if rest[digits..].starts_with('$') {
            return Err(format!(
                "`{number}$` takes the {what} from a positional argument, which a key cannot \
                 pass; write a number, or `name$` for a variable"
            ));
        }
        if number.parse::<u16>().is_err() {
            return Err(format!("{what} `{number}` is over 65535"));
        }
        *rest = &rest[digits..];
        return Ok(());
    }
    let name = word(rest);
    if !name.is_empty() && rest[name.len()..].starts_with('$') {
        if !ident::is_identifier(name) || ident::is_keyword(name) {
            return Err(format!("`{name}$` does not name a variable"));
        }
        *rest = &rest[name.len() + 1..];
    }
    Ok(())
}

/// The identifier-like word at the start of `rest` (possibly `_` or a
/// keyword, for the caller to judge).
fn word(rest: &str) -> &str {
    let mut end = 0;
    for (i, c) in rest.char_indices() {
        let ok = match i {
            0 => c == '_' || unicode_ident::is_xid_start(c),
            _ => unicode_ident::is_xid_continue(c),
        };
        if !ok {
            break;
        }
        end = i + c.len_utf8();
    }
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::check;

    /// Each checked against rustc by hand (`format!("{:SPEC}", &1u32)`, with
    /// `width` and `ü` in scope as `usize`).
    #[test]
    fn accepts_what_format_accepts() {
        for spec in [
            "",
            ">08",
            ":>8 ",
            " >8",
            "8 ",
            "65535",
            ">width$",
            "x?",
            "#?",
            "#x",
            "+.3e",
            "00",
            "-^+#010.3?",
            "é^5",
            "<",
            "X?",
            "p",
            "e",
            "E",
            "o",
            "b",
            "08.2",
            "+",
            "#",
            "0",
            "5.",
            ".x",
            ">>5",
            "ü$",
            "0x",
            ".width$",
        ] {
            assert_eq!(check(spec), Ok(()), "{spec:?}");
        }
    }

    #[test]
    fn refuses_what_format_refuses() {
        for (spec, why) in [
            ("70000", "width `70000` is over 65535"),
            (".70000", "precision `70000` is over 65535"),
            (">1$", "`1$` takes the width from a positional argument"),
            ("0$", "`0$` takes the width"),
            (".*", "`.*` takes the precision"),
            ("y", "unknown format trait `y`"),
            ("r#type$", "unknown format trait `r`"),
            ("self$", "`self$` does not name a variable"),
            ("_$", "`_$` does not name a variable"),
            ("xy", "unexpected `y` at its end"),
            ("?x", "unexpected `x` at its end"),
            ("8 x", "unexpected `x` at its end"),
        ] {
            let err = check(spec).expect_err(spec);
            assert!(err.contains(why), "{spec:?}: {err}");
        }
    }
}
