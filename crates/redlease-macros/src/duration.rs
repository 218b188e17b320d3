//! Durations written as `"15s"` or `"1m30s"`.
//!
//! They are checked when the attribute expands, so a typo fails the build
//! instead of the first call, and the expansion carries plain milliseconds.

/// Parses `text` as one or more `<integer><unit>` parts, units from largest
/// to smallest, each used at most once; returns whole milliseconds.
pub(crate) fn parse_millis(text: &str) -> Result<u64, String> {
    const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];
    if text.is_empty() {
        return Err("empty duration: expected an integer and a unit, like \"15s\"".to_owned());
    }
    let malformed = || {
        format!(
            "invalid duration {text:?}: expected integers each followed by a unit \
             (`ms`, `s`, `m` or `h`), like \"15s\" or \"1m30s\""
        )
    };
    let mut rest = text;
    let mut total: u64 = 0;
    // Index into UNITS of the last unit used: later parts must be smaller,
    // which rejects "30s1m" and "1s1s", both more likely typos than intent.
    let mut last: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let letters = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        if digits == 0 || letters == 0 {
            return Err(malformed());
        }
        let (number, unit) = (&rest[..digits], &rest[digits..digits + letters]);
        let Some(index) = UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(format!(
                "unknown unit `{unit}` in duration {text:?}: expected `ms`, `s`, `m` or `h`"
            ));
        };
        if last.is_some_and(|last| index <= last) {
            return Err(format!(
                "invalid duration {text:?}: units must go from largest to smallest, each at most once"
            ));
        }
        last = Some(index);
        let too_long = || format!("duration {text:?} is too long");
        let value: u64 = number.parse().map_err(|_| too_long())?;
        total = value
            .checked_mul(UNITS[index].1)
            .and_then(|part| total.checked_add(part))
            .ok_or_else(too_long)?;
        rest = &rest[digits + letters..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_millis;

    #[test]
    fn accepts_units_and_concatenations() {
        assert_eq!(parse_millis("500ms"), Ok(500));
        assert_eq!(parse_millis("15s"), Ok(15_000));
        assert_eq!(parse_millis("2m"), Ok(120_000));
        assert_eq!(parse_millis("1h"), Ok(3_600_000));
        assert_eq!(parse_millis("1m30s"), Ok(90_000));
        assert_eq!(parse_millis("1h2m3s4ms"), Ok(3_723_004));
        assert_eq!(parse_millis("0s"), Ok(0));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "", "15", "s", "15 s", " 15s", "15S", "1.5s", "15sec", "-1s", "30s1m", "1s1s", "15s ",
            "ms", "1m1m",
        ] {
            assert!(parse_millis(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_millis("99999999999999999999s").is_err());
        assert!(parse_millis("18446744073709551615h").is_err());
    }
}
