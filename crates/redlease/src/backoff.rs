//! How long to sleep before trying again, and for how long to keep trying:
//! for waiters that cannot wait on a release message, and for calls sent
//! again after a lost reply or a failover (`retry_transient`,
//! `retry_not_run`), with how long their request records last (#37).
//!
//! Waiters normally sleep until the lock's release message (see
//! [`crate::wait`] and [`crate::pubsub`]). These jittered exponential steps are for the rest:
//! waiters whose subscription failed, and retries after a lost connection or
//! a time-out. A step is capped by the holder's remaining TTL (so an expired
//! lock is retried as soon as it can be free) and by the caller's remaining
//! wait (so a busy error is never late).

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;

/// First backoff step; doubled per failed attempt up to [`MAX_STEP`].
const FIRST_STEP: Duration = Duration::from_millis(2);
/// Largest backoff step: bounds the hand-off delay once the lock is freed.
const MAX_STEP: Duration = Duration::from_millis(64);

/// Sleeps before acquire attempt number `attempt + 1`.
///
/// `holder_ttl` is the lock's remaining time to live as the last attempt
/// saw it (`None` when the key had no expiry); `remaining` is what is left
/// of the caller's wait (`None` for an unbounded wait).
pub(crate) async fn pause(attempt: u32, holder_ttl: Option<Duration>, remaining: Option<Duration>) {
    tokio::time::sleep(backoff(attempt, holder_ttl, remaining, random_unit())).await;
}

/// Sleeps before retrying after a lost connection or a time-out: the same
/// jittered steps, but up to [`MAX_ERROR_STEP`], so a down server is not
/// hammered.
pub(crate) async fn pause_after_error(attempt: u32, remaining: Option<Duration>) {
    let step = step(attempt, MAX_ERROR_STEP);
    tokio::time::sleep(jittered(step, None, remaining, random_unit())).await;
}

/// Runs `call` again after a time-out or a lost connection, or an answer
/// that it did not run, with the steps of [`pause_after_error`], until it
/// answers otherwise or `retry_for` has passed (zero: one call); returns
/// its last answer. For calls that are safe to repeat: the background
/// withdrawals of fresh acquisitions, writes under a request id.
pub(crate) async fn retry_transient<T, F, Fut>(retry_for: Duration, call: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    retry_while(retry_for, Error::is_transient, call).await
}

/// Runs `call` again, as [`retry_transient`] does, only after an answer
/// that it did not run (a redirection, a cluster or master down, a node
/// loading: [`Error::did_not_run`]): for calls that a repeat could apply
/// twice, such as the string layout's release, which a lost reply leaves
/// to the guard's drop.
pub(crate) async fn retry_not_run<T, F, Fut>(retry_for: Duration, call: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    retry_while(retry_for, Error::did_not_run, call).await
}

/// Runs `call` again, as [`retry_transient`] does, after the errors for
/// which `again` is true: for callers that pick between the two rules
/// above.
pub(crate) async fn retry_while<T, F, Fut>(
    retry_for: Duration,
    again: fn(&Error) -> bool,
    mut call: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let deadline = Instant::now() + retry_for;
    let mut failures = 0;
    loop {
        match call().await {
            Err(e) if again(&e) && Instant::now() < deadline && !unretried_failover(&e) => {
                tracing::debug!(error = %e, "not answered; retrying");
                // Counted by reason (`redlease_retries_total`): a failover
                // ridden out here never reaches the caller, so only the
                // metric shows it (#37).
                crate::metrics::retried(e.retry_reason());
                let remaining = deadline.saturating_duration_since(Instant::now());
                pause_after_error(failures, Some(remaining)).await;
                failures = failures.saturating_add(1);
            }
            answered => return answered,
        }
    }
}

/// A failover's error that the planted bug hands to the caller at once
/// ([`crate::plant`]); false in every build users make.
pub(crate) fn unretried_failover(e: &Error) -> bool {
    use crate::plant::{Plant, on};
    e.did_not_run() && on(Plant::FailoverErrorsNotRetried)
}

/// How long a write made safe to repeat is sent again after a time-out or
/// a lost connection (a change of a count,
/// [`count::run_retried`](crate::count::run_retried); a latched release),
/// unless the client says otherwise
/// ([`ClientBuilder::retry_writes_for`](crate::ClientBuilder::retry_writes_for)):
/// long enough to ride out a failover (a Sentinel's takes a few seconds, a
/// Cluster's about as long) or a stalled server, short enough that a caller
/// whose Redis is gone hears so. After it the caller gets the last error,
/// and an attempt still on its way may yet be applied, once.
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(30);

/// How long a semaphore acquire request's record
/// ([`layout::request_key`](crate::layout::request_key)) lasts: longer
/// than a waiter goes between attempts (30 s) and than its withdrawal is
/// retried (half of this), so that an attempt whose reply was lost is found
/// by the next one or withdrawn. One record per acquire.
pub(crate) const REQUEST_TTL: Duration = Duration::from_secs(120);

/// [`REQUEST_TTL`] in ms, for the scripts.
pub(crate) const REQUEST_TTL_MS: u64 = REQUEST_TTL.as_millis() as u64;

/// How long the record of a write's answer lasts (a semaphore release's or
/// change's, a count-down's, a lock release's unlock latch, an expirable
/// permit release's) when its attempts are sent for `retry_for`: that and
/// 10 s more, for an attempt a stalled server runs after the last was
/// sent. Every one of these writes leaves a record, so it is kept about as
/// short as Redisson keeps its unlock latches (its retries' total, about
/// 18 s by default): 40 s by default, some 400,000 keys of about 100 bytes
/// at 10,000 releases a second. In milliseconds, for the scripts.
pub(crate) fn answer_ttl_ms(retry_for: Duration) -> u64 {
    let ttl = retry_for.saturating_add(Duration::from_secs(10));
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// Largest step between retries after errors.
const MAX_ERROR_STEP: Duration = Duration::from_millis(256);

fn step(attempt: u32, max: Duration) -> Duration {
    // At most 16 doublings: a shift of 32 would overflow, and 2 ms << 16 is
    // past either cap already.
    FIRST_STEP.saturating_mul(1u32 << attempt.min(16)).min(max)
}

/// The pure part of [`pause`]: `unit` is a random number in `[0, 1)`.
fn backoff(
    attempt: u32,
    holder_ttl: Option<Duration>,
    remaining: Option<Duration>,
    unit: f64,
) -> Duration {
    jittered(step(attempt, MAX_STEP), holder_ttl, remaining, unit)
}

fn jittered(
    step: Duration,
    holder_ttl: Option<Duration>,
    remaining: Option<Duration>,
    unit: f64,
) -> Duration {
    // "Equal jitter": at least half a step, so waiters neither spin nor all
    // wake at once.
    let mut sleep = step / 2 + step.mul_f64(unit.clamp(0.0, 1.0) / 2.0);
    if let Some(ttl) = holder_ttl {
        // One extra millisecond: PTTL rounds down, and waking a moment after
        // expiry beats waking a moment before it.
        sleep = sleep.min(ttl + Duration::from_millis(1));
    }
    if let Some(remaining) = remaining {
        sleep = sleep.min(remaining);
    }
    sleep
}

/// A random number in `[0, 1)`; std's per-process random hasher keys are
/// enough for jitter and save a dependency.
fn random_unit() -> f64 {
    // The top 53 bits, as many as an `f64` holds exactly: the quotient is
    // then below 1.
    let bits = RandomState::new().build_hasher().finish() >> 11;
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn steps_grow_then_cap() {
        assert_eq!(backoff(0, None, None, 0.0), ms(1));
        assert_eq!(backoff(0, None, None, 1.0), ms(2));
        assert_eq!(backoff(3, None, None, 0.0), ms(8));
        assert_eq!(backoff(30, None, None, 1.0), MAX_STEP);
    }

    #[test]
    fn capped_by_holder_ttl_and_remaining_wait() {
        assert_eq!(backoff(10, Some(ms(5)), None, 1.0), ms(6));
        assert_eq!(backoff(10, Some(ms(50)), Some(ms(3)), 1.0), ms(3));
        assert_eq!(backoff(10, None, Some(Duration::ZERO), 1.0), Duration::ZERO);
    }

    #[test]
    fn random_unit_is_in_range_and_varies() {
        let samples: Vec<f64> = (0..64).map(|_| random_unit()).collect();
        assert!(samples.iter().all(|u| (0.0..1.0).contains(u)));
        assert!(samples.windows(2).any(|w| w[0] != w[1]));
    }
}
