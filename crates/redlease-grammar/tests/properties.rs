//! Properties of the grammar over generated inputs (issue #29): what is
//! accepted is written back to text that reads the same, and no input
//! panics. The coverage-guided fuzzers of the same parsers are in `fuzz/`.

use std::time::Duration;

use proptest::prelude::*;
use redlease_grammar::duration::{format, parse, parse_millis};
use redlease_grammar::key::{Part, Template};

proptest! {
    /// Every whole-millisecond duration is written as text that parses
    /// back to it.
    #[test]
    fn a_written_duration_parses_back(ms in any::<u64>()) {
        prop_assert_eq!(parse_millis(&format(Duration::from_millis(ms))), Ok(ms));
    }

    /// Any duration, finer than milliseconds or past `u64` of them, reads
    /// back as its whole milliseconds, at most `u64::MAX`.
    #[test]
    fn any_duration_reads_back_truncated(secs in any::<u64>(), nanos in 0u32..1_000_000_000) {
        let d = Duration::new(secs, nanos);
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        prop_assert_eq!(parse_millis(&format(d)), Ok(ms));
    }

    /// Text near the grammar (digits and unit letters) parses or is
    /// refused; what parses has one way of being written.
    #[test]
    fn duration_text_parses_or_is_refused(text in "[0-9hms.x -]{0,16}") {
        match parse(&text) {
            Ok(d) => {
                let written = format(d);
                prop_assert_eq!(parse(&written), Ok(d));
                prop_assert_eq!(format(parse(&written).unwrap()), written);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Text near the grammar of key templates parses or is refused; what
    /// parses, written back part by part, parses to the same template.
    #[test]
    fn a_template_written_back_parses_the_same(
        text in r"([a-z:_]|\{|\}|\.|[0-9]|r#|self|:>0?8|\$|x\?){0,12}",
    ) {
        match Template::parse(&text) {
            Ok(template) => {
                let written: String = template
                    .parts()
                    .iter()
                    .map(|part| match part {
                        Part::Text(t) => t.replace('{', "{{").replace('}', "}}"),
                        Part::Placeholder(p) => p.to_string(),
                    })
                    .collect();
                prop_assert_eq!(Template::parse(&written), Ok(template));
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Any text at all is a template or an error, never a panic.
    #[test]
    fn any_text_is_a_template_or_an_error(text in any::<String>()) {
        let _ = Template::parse(&text).map(|t| t.format_string());
        let _ = parse_millis(&text);
    }
}
