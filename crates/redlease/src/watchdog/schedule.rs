//! The renewal schedule: every number that says when what a client holds
//! is renewed, retried or given up, in one place. Change the schedule
//! here; the watchdog (locks, read holds, expirable permits) and the fair
//! lock's queue places read it from here.

use std::time::Duration;

/// The lease of a watchdog-mode lock, read hold or renewed permit when the
/// client configures no other timeout, as in Redisson
/// (`lockWatchdogTimeout`); renewed every third of it.
///
/// The number itself is `redlease_grammar::limits::DEFAULT_WATCHDOG_TIMEOUT`,
/// in the crate without dependencies that the `#[distributed_lock]`
/// attribute and the audit share with the core: the audit assumes it for
/// locks without a lease, where a client's own setting cannot be seen.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// assert_eq!(client.watchdog_timeout(), redlease::DEFAULT_WATCHDOG_TIMEOUT);
/// # Ok(())
/// # }
/// ```
pub const DEFAULT_WATCHDOG_TIMEOUT: Duration = redlease_grammar::limits::DEFAULT_WATCHDOG_TIMEOUT;

/// The shortest watchdog timeout a client accepts: renewals run every
/// [`period`] of it, and below this they would flood Redis and race their
/// own round trips.
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_millis(30);

/// How often everything renewed is renewed: a third of the timeout, as
/// Redisson's `LockTask` does, so that two renewals can fail before a
/// lease could run out. Rounds start this far apart, counted from the
/// start of the last one. A fair waiter refreshes its queue place, which
/// lasts one timeout, as often.
pub(crate) fn period(timeout: Duration) -> Duration {
    timeout / 3
}

/// How long after a failed renewal round the next one starts: the period,
/// at most 1 s, so that a short outage is retried many times before the
/// earliest deadline (a lease's worth after the last renewal sent), at
/// which what was held is reported lost.
pub(crate) fn retry_interval(period: Duration) -> Duration {
    period.min(Duration::from_secs(1))
}

/// Entries renewed per script call (Redisson's `lockWatchdogBatchSize`).
pub(crate) const BATCH: usize = 100;

/// Renewal calls of one round outstanding at once: a new one is sent as
/// each reply arrives. One at a time, a round of 100,000 locks (1,000 calls)
/// took 0.5 to 1.3 s on loopback, mostly waiting on round trips; pipelined,
/// Redis runs the calls back to back. Each call is short (100 keys), so
/// other clients' commands still run between them; this client's own
/// acquires and unlocks share the connection and, during a round, queue
/// behind at most this many renewals.
pub(crate) const IN_FLIGHT: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_interval_is_bounded_by_period_and_one_second() {
        assert_eq!(
            retry_interval(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            retry_interval(Duration::from_millis(100)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn the_default_is_renewed_every_ten_seconds() {
        assert_eq!(period(DEFAULT_WATCHDOG_TIMEOUT), Duration::from_secs(10));
    }
}
