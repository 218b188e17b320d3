//! Durations on the command line: `250ms`, `5s`, `2m`, `1h`, or `0`.

use std::time::Duration;

/// Parses a whole number followed by `ms`, `s`, `m` or `h`; `0` alone is
/// zero. For clap's `value_parser`: the error is the message clap prints.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let expected = || format!("expected a duration like 250ms, 5s, 2m or 1h, but found {text:?}");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(expected)?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(expected());
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("duration {text:?} is too large"))?;
    let millis_per = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(expected()),
    };
    n.checked_mul(millis_per)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("duration {text:?} is too large"))
}

/// Writes a duration the way [`parse`] reads it, at most two units, for
/// tables: `250ms`, `4.2s`, `3m12s`, `2h05m`.
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

    #[test]
    fn units_parse() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn bad_durations_say_what_was_expected() {
        for bad in ["", "5", "s", "5x", "-1s", "1.5s", " 5s", "5 s"] {
            let err = parse(bad).unwrap_err();
            assert!(err.starts_with("expected a duration"), "{bad:?}: {err}");
        }
        assert!(
            parse("99999999999999999999s")
                .unwrap_err()
                .contains("too large")
        );
        assert!(
            parse("18446744073709551615h")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn human_uses_two_units_at_most() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_millis(4_240)), "4.2s");
        assert_eq!(human(Duration::from_secs(192)), "3m12s");
        assert_eq!(human(Duration::from_secs(7_500)), "2h05m");
    }
}
