//! Checks of lock names and leases before anything is sent. (The keys
//! derived from a name are in [`crate::layout`].)

use std::time::Duration;

use crate::error::{Error, human};

use redlease_grammar::limits::MAX_LEASE;

// A constant of its own rather than a re-export of the grammar's, whose docs
// rustdoc would append to these.
/// The longest lock name accepted, in bytes. Redis allows much longer keys,
/// but a name this long is almost always a bug (a whole payload
/// interpolated into the key), and every byte is sent on every acquire and
/// renewal.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let long = "x".repeat(redlease::MAX_NAME_LEN + 1);
/// let e = client.lock(long).try_lock().await.unwrap_err();
/// assert!(e.is_invalid_argument());
/// # Ok(())
/// # }
/// ```
pub const MAX_NAME_LEN: usize = redlease_grammar::limits::MAX_NAME_LEN;

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
            "{what} must be at least 1ms, but found {}",
            human(lease)
        )));
    }
    if lease > MAX_LEASE {
        return Err(Error::invalid(format!(
            "{what} must be at most 100 years, but found {}",
            human(lease)
        )));
    }
    // Round up so a lease is never shorter on the server than the caller
    // asked for.
    let millis = lease.as_nanos().div_ceil(1_000_000);
    Ok(millis as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Written as people write it, not `0ns`.
        assert_eq!(
            lease_millis("lease", Duration::ZERO)
                .unwrap_err()
                .to_string(),
            "lease must be at least 1ms, but found 0s"
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
