//! Key templates: `"sales:receipt:lock:{bill_id}"`.
//!
//! A template is split here into a `format!` string with positional
//! placeholders and the argument paths that fill them, so the expansion
//! formats references to the arguments and never moves them.

/// A parsed key template.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Template {
    /// The `format!` string: literal text with `{{`/`}}` kept escaped and
    /// each reference replaced by `{}` or `{:spec}`.
    pub(crate) format: String,
    /// The references, in order: each a path such as `["order", "id"]`.
    pub(crate) refs: Vec<Vec<String>>,
}

/// Parses a key template; the error is a message for the template literal.
pub(crate) fn parse(template: &str) -> Result<Template, String> {
    if template.is_empty() {
        return Err("the key is empty".to_owned());
    }
    let mut format = String::with_capacity(template.len());
    let mut refs = Vec::new();
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.next_if(|&(_, c)| c == '{').is_some() => format.push_str("{{"),
            '}' if chars.next_if(|&(_, c)| c == '}').is_some() => format.push_str("}}"),
            '{' => {
                let inner_start = at + 1;
                // A `{` before the closing brace (`"{tenant:{id}"`) means
                // this one was never closed; nested format arguments
                // (`{id:{width}}`) have nothing to refer to here anyway.
                let Some(close) = template[inner_start..]
                    .find(['{', '}'])
                    .filter(|&i| template[inner_start + i..].starts_with('}'))
                else {
                    return Err(format!(
                        "unclosed `{{` in the key at byte {at}; write `{{{{` for a literal brace"
                    ));
                };
                let inner = &template[inner_start..inner_start + close];
                let (path, spec) = match inner.split_once(':') {
                    Some((path, spec)) => (path, Some(spec)),
                    None => (inner, None),
                };
                refs.push(parse_path(path)?);
                match spec {
                    Some(spec) => {
                        format.push_str("{:");
                        format.push_str(spec);
                        format.push('}');
                    }
                    None => format.push_str("{}"),
                }
                // Skip the reference and its closing brace.
                while chars.next_if(|&(i, _)| i <= inner_start + close).is_some() {}
            }
            '}' => {
                return Err(format!(
                    "unmatched `}}` in the key at byte {at}; write `}}}}` for a literal brace"
                ));
            }
            c => format.push(c),
        }
    }
    Ok(Template { format, refs })
}

/// Parses `order.id` (an argument, then fields or tuple indices).
fn parse_path(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Err(
            "empty `{}` in the key: name an argument, like `{bill_id}`, or write `{{}}` for literal braces"
                .to_owned(),
        );
    }
    let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
    for (i, segment) in segments.iter().enumerate() {
        let ok = if i > 0 && !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            // Tuple fields: `{pair.0}`; `{pair.01}` is not a field name.
            segment == "0" || !segment.starts_with('0')
        } else {
            is_identifier(segment.strip_prefix("r#").unwrap_or(segment))
        };
        if !ok {
            return Err(format!(
                "`{{{path}}}` in the key is not an argument or a field path: \
                 expected something like `{{bill_id}}` or `{{order.id}}`"
            ));
        }
    }
    Ok(segments)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c == '_' || c.is_alphabetic() => {}
        _ => return false,
    }
    s != "_" && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::{Template, parse};

    fn refs(paths: &[&str]) -> Vec<Vec<String>> {
        paths
            .iter()
            .map(|p| p.split('.').map(str::to_owned).collect())
            .collect()
    }

    #[test]
    fn splits_references_and_keeps_escapes() {
        assert_eq!(
            parse("sales:receipt:lock:{bill_id}"),
            Ok(Template {
                format: "sales:receipt:lock:{}".to_owned(),
                refs: refs(&["bill_id"]),
            })
        );
        assert_eq!(
            parse("{{tenant:{order.customer.tenant}}}:order:{order.id}:{pair.0:>4}"),
            Ok(Template {
                format: "{{tenant:{}}}:order:{}:{:>4}".to_owned(),
                refs: refs(&["order.customer.tenant", "order.id", "pair.0"]),
            })
        );
        assert_eq!(parse("plain").map(|t| t.format), Ok("plain".to_owned()));
        assert_eq!(parse("{self.id}").map(|t| t.refs), Ok(refs(&["self.id"])));
        assert_eq!(parse("{r#type}").map(|t| t.refs), Ok(refs(&["r#type"])));
        assert_eq!(parse("é{ü}").map(|t| t.format), Ok("é{}".to_owned()));
    }

    #[test]
    fn rejects_bad_templates() {
        for bad in [
            "", "a{", "a{b", "a}", "{}", "{a.}", "{.a}", "{a..b}", "{1}", "{a-b}", "{ a }", "{_}",
            "{a.01}", "{{}", "{:x}", "{a:{b}", "{a{b}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
