//! Durations, as the attribute, the audit and the `redlease` command line
//! all read them: `"250ms"`, `"15s"`, `"1m30s"`, `"1h30m"`, `"0"`.
//!
//! The grammar is strict on purpose, since a duration that reads one way
//! to a person and another to the parser is a lock held for the wrong
//! time:
//!
//! ```text
//! duration := "0" | part+
//! part     := digit+ unit
//! unit     := "h" | "m" | "s" | "ms"
//! ```
//!
//! * Parts go from the largest unit to the smallest, each unit at most
//!   once: `"1h30m"` and `"1m30s"`, but not `"30s1m"` nor `"1s1s"`, which
//!   are more likely typos than intent.
//! * Every number has a unit, except a lone `"0"`, which is zero in any
//!   unit. What zero means is up to the option: no wait is one attempt, a
//!   zero lease is refused.
//! * No spaces, signs, fractions, upper case or other units (`"15 s"`,
//!   `"-1s"`, `"1.5s"`, `"15S"`, `"15sec"`, `"1d"`).
//! * The total, in whole milliseconds, must fit in a `u64`.
//!
//! [`format()`] writes a duration back the same way, so that a computed
//! value (a median, a default) reads like the source.

use std::fmt;
use std::time::Duration;

/// The grammar in one sentence, for help texts and docs.
pub const GRAMMAR: &str = "whole numbers each with a unit (ms, s, m or h), largest unit first, \
                           each unit at most once: 250ms, 15s, 1m30s, 1h30m; 0 alone is zero";

/// The units, largest first, with their length in milliseconds.
const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// Parses a duration; see the [module docs](self) for the grammar.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    parse_millis(text).map(Duration::from_millis)
}

/// Parses a duration into whole milliseconds, its finest unit.
pub fn parse_millis(text: &str) -> Result<u64, DurationError> {
    let error = |kind| DurationError {
        text: text.to_owned(),
        kind,
    };
    if text.is_empty() {
        return Err(error(ErrorKind::Empty));
    }
    if text == "0" {
        return Ok(0);
    }
    let mut rest = text;
    let mut total: u64 = 0;
    // Index into UNITS of the last unit used: each part's must be larger.
    let mut last: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let letters = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        if digits == 0 || letters == 0 {
            return Err(error(ErrorKind::Malformed));
        }
        let (number, unit) = (&rest[..digits], &rest[digits..digits + letters]);
        let Some(index) = UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(error(ErrorKind::UnknownUnit(unit.to_owned())));
        };
        if last.is_some_and(|last| index <= last) {
            return Err(error(ErrorKind::OutOfOrder));
        }
        last = Some(index);
        // Only digits, so the parse fails on overflow alone.
        let value: u64 = number.parse().map_err(|_| error(ErrorKind::TooLong))?;
        total = value
            .checked_mul(UNITS[index].1)
            .and_then(|part| total.checked_add(part))
            .ok_or_else(|| error(ErrorKind::TooLong))?;
        rest = &rest[digits + letters..];
    }
    Ok(total)
}

/// Writes a duration in the grammar, each unit once from the largest:
/// `1m30s`, `500ms`, `1h250ms`; `0s` for zero. Whole milliseconds: a finer
/// remainder is dropped, as the grammar cannot say it.
pub fn format(duration: Duration) -> String {
    let mut ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    for (unit, unit_ms) in UNITS {
        if ms >= unit_ms {
            out.push_str(&(ms / unit_ms).to_string());
            out.push_str(unit);
            ms %= unit_ms;
        }
    }
    out
}

/// A string that is not a duration. Its message is lowercase and names the
/// input, for a compile error, an audit problem or a command-line error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    Empty,
    Malformed,
    UnknownUnit(String),
    OutOfOrder,
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.text;
        match &self.kind {
            ErrorKind::Empty => {
                write!(
                    f,
                    "empty duration: expected an integer and a unit, like \"15s\""
                )
            }
            ErrorKind::Malformed => write!(
                f,
                "invalid duration {text:?}: expected integers each followed by a unit \
                 (`ms`, `s`, `m` or `h`), like \"15s\" or \"1m30s\""
            ),
            ErrorKind::UnknownUnit(unit) => write!(
                f,
                "unknown unit `{unit}` in duration {text:?}: expected `ms`, `s`, `m` or `h`"
            ),
            ErrorKind::OutOfOrder => write!(
                f,
                "invalid duration {text:?}: units must go from largest to smallest, each at most once"
            ),
            ErrorKind::TooLong => write!(f, "duration {text:?} is too long"),
        }
    }
}

impl std::error::Error for DurationError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{DURATIONS, Expect};

    #[test]
    fn every_shared_case() {
        for case in DURATIONS {
            match (case.expect, parse_millis(case.text)) {
                (Expect::Accept(ms), Ok(parsed)) => assert_eq!(parsed, ms, "{:?}", case.text),
                (Expect::Reject(fragment), Err(e)) => {
                    let message = e.to_string();
                    assert!(message.contains(fragment), "{:?}: {message}", case.text);
                }
                (expect, got) => panic!("{:?}: expected {expect:?}, got {got:?}", case.text),
            }
        }
    }

    #[test]
    fn format_writes_what_parse_reads() {
        for case in DURATIONS {
            if let Expect::Accept(ms) = case.expect {
                let written = format(Duration::from_millis(ms));
                assert_eq!(
                    parse_millis(&written),
                    Ok(ms),
                    "{:?} -> {written}",
                    case.text
                );
            }
        }
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_millis(3_600_250)), "1h250ms");
        assert_eq!(format(Duration::from_micros(1_500)), "1ms");
        assert_eq!(format(Duration::ZERO), "0s");
        // Past u64 milliseconds, the largest that the grammar can write.
        assert_eq!(parse_millis(&format(Duration::MAX)), Ok(u64::MAX));
    }
}
