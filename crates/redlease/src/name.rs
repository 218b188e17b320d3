//! Lock names, the keys derived from them, and lease validation.
//!
//! Derived keys follow Redisson's `prefixName` rule so that both libraries
//! compute the same names and, in a cluster, the derived keys land in the
//! lock key's hash slot: `prefix:{name}`, or `prefix:name` when the name
//! already contains `{` (the user chose the hash tag).

use std::time::Duration;

use crate::Error;

/// The longest lock name accepted, in bytes. Redis allows much longer keys,
/// but a name this long is almost always a bug (a whole payload interpolated
/// into the key), and every byte is sent on every acquire and renewal.
pub const MAX_NAME_LEN: usize = 1024;

/// The longest lease accepted. `PEXPIRE` takes a signed 64-bit count of
/// milliseconds; a century is far beyond any sensible lease and far below that.
const MAX_LEASE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Checks a lock name before anything is sent.
pub(crate) fn validate(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "lock name is {} bytes long, but at most {MAX_NAME_LEN} are allowed",
            name.len()
        )));
    }
    Ok(())
}

/// Converts a lease to whole milliseconds, rejecting leases Redis cannot
/// represent or that would expire before the acquire reply arrives.
pub(crate) fn lease_millis(what: &str, lease: Duration) -> Result<u64, Error> {
    if lease < Duration::from_millis(1) {
        return Err(Error::invalid(format!(
            "{what} must be at least 1ms, but found {lease:?}"
        )));
    }
    if lease > MAX_LEASE {
        return Err(Error::invalid(format!(
            "{what} must be at most 100 years, but found {lease:?}"
        )));
    }
    // Round up so a lease is never shorter on the server than the caller
    // asked for.
    let millis = lease.as_nanos().div_ceil(1_000_000);
    Ok(millis as u64)
}

/// The channel on which a release of `name` is announced.
pub(crate) fn channel(name: &str) -> String {
    prefixed("redisson_lock__channel", name)
}

/// The fair lock's waiting queue (a list of owner fields), as Redisson's
/// `RFairLock`.
pub(crate) fn queue_key(name: &str) -> String {
    prefixed("redisson_lock_queue", name)
}

/// The fair lock's waiter deadlines (a zset of owner fields), as Redisson's
/// `RFairLock`.
pub(crate) fn timeout_key(name: &str) -> String {
    prefixed("redisson_lock_timeout", name)
}

/// The counter behind a lock's fencing tokens, under the name Redisson's
/// `RFencedLock` uses, so that both issue tokens from one sequence.
pub(crate) fn token_key(name: &str) -> String {
    prefixed("redisson_lock_token", name)
}

/// The channel on which the fair lock wakes one waiter, `owner`.
pub(crate) fn waiter_channel(name: &str, owner: &str) -> String {
    format!("{}:{owner}", channel(name))
}

fn prefixed(prefix: &str, name: &str) -> String {
    // Pushed rather than `format!`ted: this runs on every acquire and
    // release, and the formatting machinery costs several times the copy
    // (callgrind, docs/BENCHMARKS.md).
    let braced = !name.contains('{');
    let mut key = String::with_capacity(prefix.len() + name.len() + 3);
    key.push_str(prefix);
    key.push(':');
    if braced {
        key.push('{');
    }
    key.push_str(name);
    if braced {
        key.push('}');
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_adds_braces_unless_present() {
        assert_eq!(channel("orders:1"), "redisson_lock__channel:{orders:1}");
        assert_eq!(
            channel("lock:{sku}:7"),
            "redisson_lock__channel:lock:{sku}:7"
        );
    }

    #[test]
    fn fair_keys_follow_redisson() {
        assert_eq!(queue_key("a"), "redisson_lock_queue:{a}");
        assert_eq!(timeout_key("{a}:b"), "redisson_lock_timeout:{a}:b");
        assert_eq!(waiter_channel("a", "u:1"), "redisson_lock__channel:{a}:u:1");
    }

    #[test]
    fn names_are_checked() {
        assert!(validate("").unwrap_err().is_invalid_argument());
        assert!(
            validate(&"x".repeat(MAX_NAME_LEN + 1))
                .unwrap_err()
                .is_invalid_argument()
        );
        assert!(validate(&"x".repeat(MAX_NAME_LEN)).is_ok());
    }

    #[test]
    fn leases_round_up_and_reject_zero() {
        assert!(
            lease_millis("lease", Duration::ZERO)
                .unwrap_err()
                .is_invalid_argument()
        );
        assert!(lease_millis("lease", Duration::from_micros(999)).is_err());
        assert_eq!(
            lease_millis("lease", Duration::from_micros(1500)).unwrap(),
            2
        );
        assert_eq!(
            lease_millis("lease", Duration::from_secs(30)).unwrap(),
            30_000
        );
        assert!(lease_millis("lease", Duration::MAX).is_err());
    }
}
