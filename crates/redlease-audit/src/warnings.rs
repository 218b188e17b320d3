//! The checks a reviewer wants, with their thresholds.

use std::collections::BTreeMap;
use std::time::Duration;

use redlease_grammar::key::Template;

use crate::duration::format;
use crate::model::{Declared, Warning, WarningKind};

/// The lease of a watchdog-mode lock: redlease's default watchdog timeout,
/// from `redlease-grammar`'s limits, where the core takes it from too
/// (depending on `redlease` would pull Redis and Tokio into a tool that only
/// reads source). A client configured with another timeout is not visible
/// from the attribute, so the default is what the audit assumes.
pub const WATCHDOG_LEASE: Duration = redlease_grammar::limits::DEFAULT_WATCHDOG_TIMEOUT;

/// A wait of at least `lease / WAIT_LEASE_DIVISOR` is "not much shorter than
/// the lease". Past half the lease a waiter can still be queued when the
/// holder's lease runs out, so waiting longer buys nothing the lease does
/// not already give, and a caller facing a busy lock learns it only after
/// most of a lease; a wait is meant to ride out a short critical section,
/// not a whole lease.
pub const WAIT_LEASE_DIVISOR: u32 = 2;

/// A fixed lease of at least `LEASE_OUTLIER_FACTOR` × the median of the
/// other fixed leases under the same key prefix is flagged. Locks under one
/// prefix guard similar work, so an order of magnitude apart is more often a
/// unit slip (`"120m"` for `"120s"`) than a real need, and a crashed holder
/// of such a lock blocks its key that long. The median of the *others* keeps
/// the outlier itself from dragging the baseline up.
pub const LEASE_OUTLIER_FACTOR: u32 = 10;

/// A fixed lease under `MIN_FIXED_LEASE` is flagged: one Redis round trip
/// plus a GC pause or a slow query already eats a good part of it, so the
/// lock likely expires while the work still runs, and such a value is
/// usually `ms` written for `s`.
pub const MIN_FIXED_LEASE: Duration = Duration::from_secs(1);

/// Every warning about `locks`, in the locks' order, per lock in the order
/// of [`WarningKind`].
pub(crate) fn check(locks: &[Declared]) -> Vec<Warning> {
    let fixed_by_prefix = fixed_leases_by_prefix(locks);
    let mut warnings = Vec::new();
    for (index, lock) in locks.iter().enumerate() {
        let mut warn = |kind, message: String| {
            warnings.push(Warning {
                file: lock.file.clone(),
                line: lock.line,
                function: lock.function.clone(),
                key: lock.key.clone(),
                kind,
                message,
            });
        };
        if let Some(message) = wait_near_lease(lock) {
            warn(WarningKind::WaitNearLease, message);
        }
        if lock.prefix.is_none() {
            warn(
                WarningKind::KeyWithoutPrefix,
                format!(
                    "key `{}` has no `prefix:` namespace{}: locks of unrelated code (and \
                     other data in the same redis) can collide with it, and it cannot be \
                     grouped or scanned by prefix",
                    lock.key,
                    if has_placeholders(&lock.key) {
                        " before its first placeholder"
                    } else {
                        ""
                    },
                ),
            );
        }
        if let (Some(prefix), Some(lease)) = (&lock.prefix, &lock.lease) {
            let others: Vec<Duration> = fixed_by_prefix[prefix.as_str()]
                .iter()
                .filter(|(i, _)| *i != index)
                .map(|(_, d)| *d)
                .collect();
            if let Some(median) = median(&others) {
                let outlier = median
                    .checked_mul(LEASE_OUTLIER_FACTOR)
                    .is_some_and(|limit| !limit.is_zero() && lease.duration >= limit);
                if outlier {
                    warn(
                        WarningKind::LeaseOutlier,
                        format!(
                            "lease {} is {}x the median lease ({}) of the {} other fixed-lease \
                             lock{} under `{prefix}`: a crashed holder keeps the key locked that \
                             long; check the unit",
                            lease.text,
                            lease.duration.as_millis() / median.as_millis().max(1),
                            format(median),
                            others.len(),
                            if others.len() == 1 { "" } else { "s" },
                        ),
                    );
                }
            }
        }
        if let Some(lease) = lock.lease.as_ref().filter(|l| l.duration < MIN_FIXED_LEASE) {
            warn(
                WarningKind::ShortLease,
                format!(
                    "lease {} is under {}, likely a unit mistake: the lock expires while \
                     the work still runs and another holder can enter",
                    lease.text,
                    format(MIN_FIXED_LEASE)
                ),
            );
        }
        if let (Some(at_least), Some(lease)) = (&lock.at_least, &lock.lease)
            && at_least.duration >= lease.duration
        {
            warn(
                WarningKind::AtLeastOverLease,
                format!(
                    "at_least {} is not shorter than the lease {}: the lease bounds a holder                      that dies, at_least one that finishes early, so the lease should be the                      longer (as ShedLock's lockAtMostFor is); a job that outlives its lease                      runs unguarded",
                    at_least.text, lease.text
                ),
            );
        }
    }
    warnings
}

fn has_placeholders(key: &str) -> bool {
    Template::parse(key).is_ok_and(|template| template.placeholders().next().is_some())
}

fn wait_near_lease(lock: &Declared) -> Option<String> {
    let wait = lock.wait.as_ref()?;
    let lease = lock.effective_lease();
    if wait.duration < lease / WAIT_LEASE_DIVISOR {
        return None;
    }
    Some(match &lock.lease {
        Some(fixed) => format!(
            "wait {} is not much shorter than the lease {} (at least half): a waiter can \
             outwait the holder's lease, and callers learn the lock is busy only after {}",
            wait.text, fixed.text, wait.text
        ),
        None => format!(
            "wait {} is not much shorter than the watchdog lease ({}, at least half): a \
             waiter can outwait a crashed holder's lease, and callers learn the lock is busy \
             only after {}",
            wait.text,
            format(WATCHDOG_LEASE),
            wait.text
        ),
    })
}

/// For each prefix, the (index, lease) of its fixed-lease locks.
fn fixed_leases_by_prefix(locks: &[Declared]) -> BTreeMap<&str, Vec<(usize, Duration)>> {
    let mut groups: BTreeMap<&str, Vec<(usize, Duration)>> = BTreeMap::new();
    for (index, lock) in locks.iter().enumerate() {
        if let (Some(prefix), Some(lease)) = (&lock.prefix, &lock.lease) {
            groups
                .entry(prefix.as_str())
                .or_default()
                .push((index, lease.duration));
        }
    }
    groups
}

/// The median; the mean of the middle two for an even count.
fn median(values: &[Duration]) -> Option<Duration> {
    let mut sorted = values.to_vec();
    sorted.sort();
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timing;

    fn timing(text: &str) -> Timing {
        Timing {
            text: text.to_owned(),
            duration: redlease_grammar::duration::parse(text).unwrap(),
        }
    }

    fn lock(key: &str, wait: Option<&str>, lease: Option<&str>) -> Declared {
        let template = Template::parse(key).unwrap();
        Declared {
            file: "src/lib.rs".to_owned(),
            line: 1,
            function: "f".to_owned(),
            key: key.to_owned(),
            mode: crate::Mode::Plain,
            prefix: template.prefix(),
            wait: wait.map(timing),
            lease: lease.map(timing),
            at_least: None,
            client: None,
        }
    }

    fn kinds(locks: &[Declared]) -> Vec<WarningKind> {
        check(locks).into_iter().map(|w| w.kind).collect()
    }

    #[test]
    fn wait_at_half_the_lease_warns() {
        use WarningKind::WaitNearLease;
        assert_eq!(kinds(&[lock("a:{x}", Some("15s"), Some("120s"))]), []);
        assert_eq!(kinds(&[lock("a:{x}", Some("59s"), Some("2m"))]), []);
        assert_eq!(
            kinds(&[lock("a:{x}", Some("1m"), Some("2m"))]),
            [WaitNearLease]
        );
        assert_eq!(
            kinds(&[lock("a:{x}", Some("5m"), Some("2m"))]),
            [WaitNearLease]
        );
        // Watchdog mode compares against the watchdog's 30 s lease.
        assert_eq!(kinds(&[lock("a:{x}", Some("14s"), None)]), []);
        assert_eq!(kinds(&[lock("a:{x}", Some("15s"), None)]), [WaitNearLease]);
        // No wait is one attempt: nothing to compare.
        assert_eq!(kinds(&[lock("a:{x}", None, Some("1s"))]), []);
    }

    #[test]
    fn wait_messages_say_why() {
        let fixed = check(&[lock("a:{x}", Some("10s"), Some("20s"))]);
        assert_eq!(
            fixed[0].message,
            "wait 10s is not much shorter than the lease 20s (at least half): a waiter can \
             outwait the holder's lease, and callers learn the lock is busy only after 10s"
        );
        let watchdog = check(&[lock("a:{x}", Some("20s"), None)]);
        assert!(
            watchdog[0].message.contains("watchdog lease (30s"),
            "{}",
            watchdog[0].message
        );
    }

    #[test]
    fn key_without_namespace_warns() {
        use WarningKind::KeyWithoutPrefix;
        assert_eq!(kinds(&[lock("{order_id}", None, None)]), [KeyWithoutPrefix]);
        assert_eq!(kinds(&[lock("lock", None, None)]), [KeyWithoutPrefix]);
        assert_eq!(kinds(&[lock("lock{id}:x", None, None)]), [KeyWithoutPrefix]);
        assert_eq!(kinds(&[lock("orders:{id}", None, None)]), []);
        assert_eq!(kinds(&[lock("{{orders}}:{id}", None, None)]), []);
        let no_placeholder = check(&[lock("{{lock}}", None, None)]);
        assert!(
            no_placeholder[0]
                .message
                .starts_with("key `{{lock}}` has no `prefix:` namespace: "),
            "{}",
            no_placeholder[0].message
        );
    }

    #[test]
    fn lease_far_above_its_prefix_warns() {
        let locks = [
            lock("inv:sku:{a}", None, Some("30s")),
            lock("inv:sku:{b}", None, Some("45s")),
            lock("inv:sku:{c}", None, Some("30s")),
            lock("inv:sku:{d}", None, Some("5m")),
            lock("inv:sku:{e}", None, None),
            lock("other:{f}", None, Some("1h")),
        ];
        let warnings = check(&locks);
        let [warning] = warnings.as_slice() else {
            panic!("{warnings:?}")
        };
        assert_eq!(warning.kind, WarningKind::LeaseOutlier);
        assert_eq!(warning.key, "inv:sku:{d}");
        assert_eq!(
            warning.message,
            "lease 5m is 10x the median lease (30s) of the 3 other fixed-lease locks under \
             `inv:sku`: a crashed holder keeps the key locked that long; check the unit"
        );
        // Just under the factor: no warning.
        let locks = [
            lock("p:{a}", None, Some("30s")),
            lock("p:{b}", None, Some("299s")),
        ];
        assert_eq!(kinds(&locks), []);
        // A lone lock has nothing to be compared with.
        assert_eq!(kinds(&[lock("p:{a}", None, Some("10h"))]), []);
    }

    #[test]
    fn sub_second_lease_warns() {
        assert_eq!(
            kinds(&[lock("a:{x}", None, Some("500ms"))]),
            [WarningKind::ShortLease]
        );
        assert_eq!(kinds(&[lock("a:{x}", None, Some("1s"))]), []);
    }

    #[test]
    fn at_least_not_under_the_lease_warns() {
        use WarningKind::AtLeastOverLease;
        let with = |lease: Option<&str>, at_least: &str| Declared {
            at_least: Some(timing(at_least)),
            ..lock("jobs:report", None, lease)
        };
        assert_eq!(kinds(&[with(Some("10m"), "50s")]), []);
        assert_eq!(kinds(&[with(None, "50s")]), [], "the watchdog has no end");
        assert_eq!(kinds(&[with(Some("50s"), "50s")]), [AtLeastOverLease]);
        let warning = &check(&[with(Some("30s"), "1m")])[0];
        assert!(
            warning.message.contains("at_least 1m"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        let s = Duration::from_secs;
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[s(3), s(1), s(2)]), Some(s(2)));
        assert_eq!(
            median(&[s(4), s(1), s(2), s(3)]),
            Some(Duration::from_millis(2_500))
        );
    }
}
