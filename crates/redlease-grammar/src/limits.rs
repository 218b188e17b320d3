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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_the_core_used_before_they_moved_here() {
        assert_eq!(MAX_LEASE.as_millis(), 3_153_600_000_000);
        assert_eq!(DEFAULT_WATCHDOG_TIMEOUT, Duration::from_secs(30));
        assert_eq!(MAX_NAME_LEN, 1024);
    }
}
