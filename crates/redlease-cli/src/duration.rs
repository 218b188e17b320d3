//! Durations on the command line, in the grammar of `#[distributed_lock]`
//! (`redlease-grammar`): `250ms`, `5s`, `1m30s`, `1h30m`, or `0`.

use std::time::Duration;

/// Parses a duration for clap's `value_parser`; the error is the message
/// clap prints after the option's name.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    redlease_grammar::duration::parse(text).map_err(|e| e.to_string())
}

/// Writes a duration for tables, at most two units, rounded: `250ms`,
/// `4.2s`, `3m12s`, `2h05m`. Short rather than exact, so not always in the
/// grammar [`parse`] reads (`4.2s`).
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", d.as_secs_f64()),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1_000),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redlease_grammar::cases::{DURATIONS, Expect};

    /// The table the attribute and the audit run too (issue #12).
    #[test]
    fn every_shared_case() {
        for case in DURATIONS {
            match (case.expect, parse(case.text)) {
                (Expect::Accept(ms), Ok(d)) => {
                    assert_eq!(d, Duration::from_millis(ms), "{:?}", case.text)
                }
                (Expect::Reject(fragment), Err(message)) => {
                    assert!(message.contains(fragment), "{:?}: {message}", case.text)
                }
                (expect, got) => panic!("{:?}: expected {expect:?}, got {got:?}", case.text),
            }
        }
    }

    /// The three durations that issue #12 found read differently by the
    /// macro, the audit and the command line.
    #[test]
    fn issue_12_durations_read_as_the_macro_and_the_audit_read_them() {
        assert!(
            parse("30s1m")
                .unwrap_err()
                .contains("units must go from largest")
        );
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn human_uses_two_units_at_most() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_millis(4_240)), "4.2s");
        assert_eq!(human(Duration::from_secs(192)), "3m12s");
        assert_eq!(human(Duration::from_secs(7_500)), "2h05m");
    }
}
