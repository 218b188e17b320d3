//! The attribute's duration strings: an integer then a unit (`ms`, `s`, `m`,
//! `h`), several concatenated (`"1m30s"`). Parsed here rather than with a
//! crate so the audit accepts exactly what the attribute accepts.

use std::time::Duration;

/// Parses `"15s"`, `"10m"`, `"1m30s"`, `"250ms"`. Strict on purpose: no
/// spaces, no bare numbers, no other units, since the attribute rejects them
/// too and the audit should not list a lock that does not compile.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("empty duration; write e.g. `15s`".to_owned());
    }
    let mut total_ms: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "duration `{text}`: expected a number at `{rest}` (units: ms, s, m, h)"
            ));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("duration `{text}` is too large"))?;
        rest = &rest[digits..];
        // `ms` before `m`: otherwise "5ms" would read as 5 minutes then "s".
        let (unit_ms, unit_len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('s') {
            (1_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.is_empty() {
            return Err(format!(
                "duration `{text}` lacks a unit after `{number}` (ms, s, m, h)"
            ));
        } else {
            return Err(format!(
                "duration `{text}` has an unknown unit at `{rest}` (units: ms, s, m, h)"
            ));
        };
        rest = &rest[unit_len..];
        total_ms = number
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or_else(|| format!("duration `{text}` is too large"))?;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Formats a duration the way the attribute spells one (`1m30s`, `500ms`),
/// so messages about computed values (a median) read like the source.
pub(crate) fn format(duration: Duration) -> String {
    let mut ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    for (unit, unit_ms) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        if ms >= unit_ms {
            out.push_str(&format!("{}{unit}", ms / unit_ms));
            ms %= unit_ms;
        }
    }
    out
}

/// Serializes a duration as whole milliseconds: one number is easier for
/// tools than serde's default `{secs, nanos}` pair, and the attribute's
/// smallest unit is the millisecond anyway.
pub(crate) fn serialize_ms<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_unit_and_concatenations() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7_200)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h1m1s1ms"), Ok(Duration::from_millis(3_661_001)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_what_the_attribute_rejects() {
        for bad in ["", "15", "s", "15 s", "15sec", "1d", "1.5s", "-1s", "m5"] {
            let err = parse(bad).expect_err(bad);
            assert!(
                err.starts_with("duration") || err.starts_with("empty"),
                "{err}"
            );
        }
        assert!(
            parse("99999999999999999999s")
                .unwrap_err()
                .contains("too large")
        );
        assert!(
            parse("9999999999999999h")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn formats_like_the_source() {
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_secs(30)), "30s");
        assert_eq!(format(Duration::from_millis(3_600_250)), "1h250ms");
        assert_eq!(format(Duration::ZERO), "0s");
    }
}
