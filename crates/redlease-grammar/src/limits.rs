//! The numbers that the core library enforces and that the attribute and
//! the audit must agree with. No dependencies, so the core can take them
//! from here with `default-features = false`.

use std::time::Duration;

/// The longest lease accepted, from the attribute (a compile error) to the
/// core (an invalid-argument error). `PEXPIRE` takes a signed 64-bit count
/// of milliseconds; a century is far beyond any sensible lease and far
/// below that.
pub const MAX_LEASE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The lease of a watchdog-mode lock when the client configures no other
/// timeout, as in Redisson (`lockWatchdogTimeout`); renewed every third of
/// it. The audit assumes it for locks without a `lease`, since a client's
/// own setting is not visible from the attribute.
pub const DEFAULT_WATCHDOG_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest lock name accepted, in bytes. Redis allows much longer keys,
/// but a name this long is almost always a bug (a whole payload
/// interpolated into the key), and every byte is sent on every acquire and
/// renewal.
pub const MAX_NAME_LEN: usize = 1024;

/// How long a name may be before messages show only its start.
pub const SHOWN_NAME_LEN: usize = 64;

/// A name quoted for a message, bounded: a whole payload interpolated into
/// a key must not flood a log or a terminal. A long one shows its first
/// bytes (cut on a character boundary) and its length:
/// `"aaaa…" (10240 bytes)`. Shared by the core's errors and the command
/// line's, so both read the same.
pub fn quoted(name: &str) -> String {
    if name.len() <= SHOWN_NAME_LEN {
        return format!("{name:?}");
    }
    let mut end = SHOWN_NAME_LEN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "\"{}\u{2026}\" ({} bytes)",
        name[..end].escape_debug(),
        name.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_quoted_by_their_start_and_length() {
        assert_eq!(quoted("orders:1"), "\"orders:1\"");
        let long = "é".repeat(600);
        let shown = quoted(&long);
        assert!(shown.ends_with("\u{2026}\" (1200 bytes)"), "{shown}");
        assert_eq!(shown.chars().filter(|c| *c == 'é').count(), 32);
    }

    #[test]
    fn values_the_core_used_before_they_moved_here() {
        assert_eq!(MAX_LEASE.as_millis(), 3_153_600_000_000);
        assert_eq!(DEFAULT_WATCHDOG_TIMEOUT, Duration::from_secs(30));
        assert_eq!(MAX_NAME_LEN, 1024);
    }
}
