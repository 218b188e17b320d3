//! Key templates: literal text with `{arg}` / `{arg.field}` placeholders,
//! `{{` and `}}` for literal braces (Redis Cluster hash tags need them).

/// What the audit needs from a key template.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct KeyTemplate {
    /// The literal text before the first placeholder, braces unescaped: the
    /// part of the key every lock of this declaration shares.
    pub(crate) fixed_start: String,
    /// Each placeholder's path, e.g. `["bill_id", "invoice.id"]`.
    pub(crate) placeholders: Vec<String>,
}

impl KeyTemplate {
    /// The namespace: the fixed start up to its last `:`, or `None` when it
    /// has no `:` (`"{order_id}"`, `"lock"`).
    pub(crate) fn prefix(&self) -> Option<&str> {
        self.fixed_start
            .rfind(':')
            .map(|at| &self.fixed_start[..at])
    }
}

/// Parses a key template, rejecting what would not interpolate: an empty
/// key, `{}`, a `{` never closed, a lone `}`, a placeholder that is not a
/// field path.
pub(crate) fn parse(template: &str) -> Result<KeyTemplate, String> {
    if template.is_empty() {
        return Err("key is empty".to_owned());
    }
    let mut fixed_start = String::new();
    let mut placeholders = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                if placeholders.is_empty() {
                    fixed_start.push('{');
                }
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                if placeholders.is_empty() {
                    fixed_start.push('}');
                }
            }
            '{' => {
                let mut path = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => path.push(c),
                        None => {
                            return Err(format!(
                                "key `{template}` has a `{{` that is never closed; write `{{{{` for a literal brace"
                            ));
                        }
                    }
                }
                if !is_field_path(&path) {
                    return Err(format!(
                        "key `{template}` has placeholder `{{{path}}}`; expected an argument name, optionally with fields (`{{arg.field}}`)"
                    ));
                }
                placeholders.push(path);
            }
            '}' => {
                return Err(format!(
                    "key `{template}` has an unmatched `}}`; write `}}}}` for a literal brace"
                ));
            }
            c => {
                if placeholders.is_empty() {
                    fixed_start.push(c);
                }
            }
        }
    }
    Ok(KeyTemplate {
        fixed_start,
        placeholders,
    })
}

/// `arg`, `arg.field`, `arg.0.name`: an identifier, then identifiers or
/// tuple indices after dots.
fn is_field_path(path: &str) -> bool {
    let mut parts = path.split('.');
    let is_ident = |s: &str| {
        let mut cs = s.chars();
        matches!(cs.next(), Some(c) if c == '_' || c.is_alphabetic())
            && cs.all(|c| c == '_' || c.is_alphanumeric())
    };
    parts.next().is_some_and(is_ident)
        && parts.all(|p| is_ident(p) || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
}

/// The argument a placeholder reads: `invoice` for `invoice.id`.
pub(crate) fn root(placeholder: &str) -> &str {
    placeholder.split('.').next().unwrap_or(placeholder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fixed_start_and_placeholders() {
        let key = parse("sales:receipt:lock:{bill_id}").unwrap();
        assert_eq!(key.fixed_start, "sales:receipt:lock:");
        assert_eq!(key.placeholders, ["bill_id"]);
        assert_eq!(key.prefix(), Some("sales:receipt:lock"));

        let key = parse("billing:{self.tenant}:{invoice.id}").unwrap();
        assert_eq!(key.placeholders, ["self.tenant", "invoice.id"]);
        assert_eq!(key.prefix(), Some("billing"));
        assert_eq!(root("invoice.id"), "invoice");
    }

    #[test]
    fn escaped_braces_are_literal_text() {
        let key = parse("{{orders}}:lock:{id}").unwrap();
        assert_eq!(key.fixed_start, "{orders}:lock:");
        assert_eq!(key.prefix(), Some("{orders}:lock"));
        assert_eq!(key.placeholders, ["id"]);
    }

    #[test]
    fn prefix_needs_a_colon_before_the_first_placeholder() {
        assert_eq!(parse("{order_id}").unwrap().prefix(), None);
        assert_eq!(parse("lock").unwrap().prefix(), None);
        assert_eq!(parse("lock{id}:x").unwrap().prefix(), None);
        assert_eq!(parse("a:b:c").unwrap().prefix(), Some("a:b"));
    }

    #[test]
    fn rejects_broken_templates() {
        assert_eq!(parse("").unwrap_err(), "key is empty");
        assert!(parse("a:{}").unwrap_err().contains("placeholder `{}`"));
        assert!(parse("a:{id").unwrap_err().contains("never closed"));
        assert!(parse("a:id}").unwrap_err().contains("unmatched `}`"));
        assert!(parse("a:{1x}").unwrap_err().contains("placeholder `{1x}`"));
        assert!(parse("a:{x.}").is_err());
        assert!(parse("a:{x y}").is_err());
        assert!(parse("a:{pair.0}").is_ok());
    }
}
