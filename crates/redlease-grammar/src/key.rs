//! Key templates: `"sales:receipt:lock:{bill_id}"`.
//!
//! ```text
//! template    := (text | "{{" | "}}" | placeholder)+
//! placeholder := "{" path (":" spec)? "}"
//! path        := root ("." field)*
//! root        := identifier | "r#" identifier | "self"
//! field       := identifier | "r#" identifier | tuple index ("0", "1", ..)
//! ```
//!
//! `{{` and `}}` are literal braces, as Redis hash tags need
//! (`"{{tenant:{tenant}}}:orders"`). A placeholder names an argument of the
//! function, or a field of one (`{order.customer.id}`, `{pair.0}`,
//! `{self.id}`); keywords are not identifiers (`{r#type}` is). The spec is
//! a `format!` spec, checked as `format!` checks it: `{id:>08}`, `{n:x}`,
//! `{amount:.2}`, `{id:>width$}` (a named width is looked up where the
//! function is written, as `format!` looks it up). A spec cannot take a
//! positional width or precision (`{id:1$}`, `{x:.*}`): the macro passes
//! references to the placeholders, which `format!` refuses as counts.
//!
//! The attribute turns a template into a `format!` string with positional
//! `{}` and the paths that fill them ([`Template::format_string`],
//! [`Placeholder::path`]); the audit reads its fixed start and namespace
//! ([`Template::fixed_start`], [`Template::prefix`]).

mod ident;
mod spec;

use std::fmt;

/// A parsed key template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// One piece of a template, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text, braces unescaped (`{{` is kept as `{`).
    Text(String),
    /// A `{path}` or `{path:spec}`.
    Placeholder(Placeholder),
}

/// A `{path}` or `{path:spec}` in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    path: Vec<String>,
    spec: Option<String>,
}

impl Placeholder {
    /// The path's segments: `["order", "id"]` for `{order.id}`, raw
    /// identifiers with their `r#`.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The argument the placeholder reads: `order` for `{order.id}`.
    pub fn root(&self) -> &str {
        // A path has at least one segment: parse_path rejects an empty one.
        self.path.first().map_or("", String::as_str)
    }

    /// The path as written: `order.id`.
    pub fn path_text(&self) -> String {
        self.path.join(".")
    }

    /// The format spec after the `:`, if any: `>08` for `{id:>08}`.
    pub fn spec(&self) -> Option<&str> {
        self.spec.as_deref()
    }
}

impl fmt::Display for Placeholder {
    /// As written: `{order.id}`, `{id:>08}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.spec {
            Some(spec) => write!(f, "{{{}:{spec}}}", self.path_text()),
            None => write!(f, "{{{}}}", self.path_text()),
        }
    }
}

impl Template {
    /// Parses a template; see the [module docs](self) for the grammar.
    pub fn parse(template: &str) -> Result<Template, KeyError> {
        parse(template)
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.parts.iter().filter_map(|part| match part {
            Part::Placeholder(p) => Some(p),
            Part::Text(_) => None,
        })
    }

    /// The `format!` string: the text with its braces escaped again, and
    /// each placeholder as a positional `{}` or `{:spec}`, to be filled by
    /// the placeholders' paths in order.
    pub fn format_string(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(&text.replace('{', "{{").replace('}', "}}")),
                Part::Placeholder(p) => match &p.spec {
                    Some(spec) => {
                        out.push_str("{:");
                        out.push_str(spec);
                        out.push('}');
                    }
                    None => out.push_str("{}"),
                },
            }
        }
        out
    }

    /// The literal text before the first placeholder, braces unescaped:
    /// the part of the key that every lock of the declaration shares.
    pub fn fixed_start(&self) -> String {
        self.parts
            .iter()
            .map_while(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                Part::Placeholder(_) => None,
            })
            .collect()
    }

    /// The namespace: the fixed start up to its last `:`
    /// (`sales:receipt:lock` for `sales:receipt:lock:{bill_id}`), or `None`
    /// when it has no `:` (`{order_id}`, `lock`).
    pub fn prefix(&self) -> Option<String> {
        let start = self.fixed_start();
        start.rfind(':').map(|at| start[..at].to_owned())
    }
}

impl std::str::FromStr for Template {
    type Err = KeyError;

    fn from_str(template: &str) -> Result<Self, Self::Err> {
        parse(template)
    }
}

/// A string that is not a key template; its message is lowercase and
/// says where and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    message: String,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeyError {}

fn error(message: String) -> KeyError {
    KeyError { message }
}

fn parse(template: &str) -> Result<Template, KeyError> {
    if template.is_empty() {
        return Err(error("the key is empty".to_owned()));
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.next_if(|&(_, c)| c == '{').is_some() => text.push('{'),
            '}' if chars.next_if(|&(_, c)| c == '}').is_some() => text.push('}'),
            '{' => {
                let inner_start = at + 1;
                // A `{` before the closing brace (`"{tenant:{id}"`) means
                // this one was never closed; nested format arguments
                // (`{id:{width}}`) have nothing to refer to here anyway.
                let Some(close) = template[inner_start..]
                    .find(['{', '}'])
                    .filter(|&i| template[inner_start + i..].starts_with('}'))
                else {
                    return Err(error(format!(
                        "unclosed `{{` in the key at byte {at}; write `{{{{` for a literal brace"
                    )));
                };
                let inner = &template[inner_start..inner_start + close];
                let placeholder = parse_placeholder(inner)?;
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                parts.push(Part::Placeholder(placeholder));
                // Skip the placeholder and its closing brace.
                while chars.next_if(|&(i, _)| i <= inner_start + close).is_some() {}
            }
            '}' => {
                return Err(error(format!(
                    "unmatched `}}` in the key at byte {at}; write `}}}}` for a literal brace"
                )));
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(Template { parts })
}

/// `order.id` or `id:>08`: what is between the braces.
fn parse_placeholder(inner: &str) -> Result<Placeholder, KeyError> {
    let (path, spec) = match inner.split_once(':') {
        Some((path, spec)) => (path, Some(spec)),
        None => (inner, None),
    };
    if path.is_empty() {
        return Err(error(
            "empty `{}` in the key: name an argument, like `{bill_id}`, or write `{{}}` for literal braces"
                .to_owned(),
        ));
    }
    let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
    for (i, segment) in segments.iter().enumerate() {
        if let Err(why) = ident::check_segment(segment, i == 0) {
            return Err(error(match why {
                ident::Invalid::Keyword => format!(
                    "`{{{path}}}` in the key uses the keyword `{segment}` as a name: \
                     write `r#{segment}` for an argument or field of that name"
                ),
                ident::Invalid::NotAName => format!(
                    "`{{{path}}}` in the key is not an argument or a field path: \
                     expected something like `{{bill_id}}` or `{{order.id}}`"
                ),
            }));
        }
    }
    if let Some(spec) = spec
        && let Err(why) = spec::check(spec)
    {
        return Err(error(format!(
            "`{{{inner}}}` in the key has an invalid format spec: {why}"
        )));
    }
    Ok(Placeholder {
        path: segments,
        spec: spec.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{Expect, KEYS};

    #[test]
    fn every_shared_case() {
        for case in KEYS {
            match (case.expect, Template::parse(case.template)) {
                (Expect::Accept(shape), Ok(template)) => {
                    assert_eq!(
                        template.format_string(),
                        shape.format,
                        "{:?}",
                        case.template
                    );
                    let paths: Vec<String> = template
                        .placeholders()
                        .map(Placeholder::path_text)
                        .collect();
                    assert_eq!(paths, shape.placeholders, "{:?}", case.template);
                    assert_eq!(
                        template.prefix().as_deref(),
                        shape.prefix,
                        "{:?}",
                        case.template
                    );
                }
                (Expect::Reject(fragment), Err(e)) => {
                    let message = e.to_string();
                    assert!(message.contains(fragment), "{:?}: {message}", case.template);
                }
                (expect, got) => panic!("{:?}: expected {expect:?}, got {got:?}", case.template),
            }
        }
    }

    #[test]
    fn parts_keep_text_unescaped_and_placeholders_as_written() {
        let template = Template::parse("{{t}}:{order.id:>08}:x").unwrap();
        assert_eq!(template.fixed_start(), "{t}:");
        let [Part::Text(first), Part::Placeholder(p), Part::Text(last)] = template.parts() else {
            panic!("{template:?}")
        };
        assert_eq!((first.as_str(), last.as_str()), ("{t}:", ":x"));
        assert_eq!(p.path(), ["order", "id"]);
        assert_eq!(p.root(), "order");
        assert_eq!(p.spec(), Some(">08"));
        assert_eq!(p.to_string(), "{order.id:>08}");
        assert_eq!("a:{b}".parse::<Template>(), Template::parse("a:{b}"));
    }
}
