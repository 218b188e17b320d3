//! How `lock()`, `try_lock_for`, a semaphore's `acquire` and a latch's
//! `wait` wait for their turn: the one waiting loop every primitive uses.
//!
//! A primitive supplies a [`Contender`]: one attempt (which reads "busy,
//! with this much time to live"), the channel its release is announced on,
//! and what to do when it must start over or give up. The engine does the
//! rest, the same way for every primitive:
//!
//! 1. attempt;
//! 2. busy: join the channel (one shared subscription per channel per
//!    client, see [`crate::pubsub`]) and, once the subscription is
//!    confirmed, attempt once more, so that a release between the first
//!    attempt and the subscription is not missed;
//! 3. sleep until a release message, the holder's remaining time to live
//!    or the caller's deadline, whichever comes first (polling with
//!    [`crate::backoff`] while the subscription is not confirmed), then
//!    attempt again;
//! 4. a lost connection or a time-out is retried with backoff until the
//!    deadline, under a new owner ([`Contender::restart`]); any other
//!    error ends the wait; at the deadline the contender gives up and the
//!    caller gets a busy error (or the last transient error).
//!
//! # Cancel safety
//!
//! The engine holds only local state: its subscription (dropping it leaves
//! the channel) and a wake-up it received but did not use yet (a
//! [`Baton`], passed on to the next local waiter when dropped). What an
//! attempt may have left in Redis is the contender's to take back when it
//! is dropped (see [`crate::cancel`]).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::backoff;
use crate::error::Error;
use crate::pubsub::{Baton, Subscription, Wakes};
use crate::shared::Shared;

/// What one attempt found.
pub(crate) enum Attempt<T> {
    Acquired(T),
    /// Held by someone else, with this much time to live (`None`: unknown,
    /// or no expiry).
    Busy(Option<Duration>),
    /// Not enough for this request, but something is free that a smaller
    /// request would get (a semaphore with fewer permits than asked for):
    /// a wake-up that led here is passed on to the next local waiter, once
    /// per message.
    Short(Option<Duration>),
}

impl<T> Attempt<T> {
    /// The same answer with what was acquired turned into `U`.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Attempt<U> {
        match self {
            Attempt::Acquired(t) => Attempt::Acquired(f(t)),
            Attempt::Busy(ttl) => Attempt::Busy(ttl),
            Attempt::Short(ttl) => Attempt::Short(ttl),
        }
    }
}

/// A primitive's side of waiting.
pub(crate) trait Contender: Send {
    /// What a successful attempt gives (a guard, a permit).
    type Acquired: Send;

    /// The name in busy errors and spans.
    fn name(&self) -> &str;

    /// The error when the wait ends without success: a busy error, whose
    /// message a primitive may word its own way.
    fn busy(&self, waited: Duration) -> Error {
        Error::busy(self.name(), waited)
    }

    /// Makes the only attempt of a call that does not wait
    /// ([`crate::front::Patience::Once`]); by default an ordinary attempt
    /// (a fair waiter's does not join the queue).
    fn attempt_once(
        &mut self,
    ) -> impl Future<Output = Result<Attempt<Self::Acquired>, Error>> + Send {
        self.attempt()
    }

    /// Makes one attempt.
    fn attempt(&mut self) -> impl Future<Output = Result<Attempt<Self::Acquired>, Error>> + Send;

    /// The channel on which this contender is woken.
    fn channel(&self) -> String;

    /// What a message on the channel wakes.
    fn wakes(&self) -> Wakes {
        Wakes::One
    }

    /// Whether the channel may change from one attempt to the next (a
    /// multi-lock waits for whichever member refused it last).
    fn channel_moves(&self) -> bool {
        false
    }

    /// How often the contender must attempt again, whatever it waits for
    /// (a fair waiter refreshes its place in the queue); `None`: only when
    /// woken or when the holder's lease runs out.
    fn refresh(&self) -> Option<Duration>;

    /// An attempt's outcome is unknown (a lost reply): it may have taken
    /// the lock, and its withdrawal is on its way in the background, so the
    /// contender goes on under a new owner that the withdrawal cannot hit.
    fn restart(&mut self);

    /// The wait ran out: leave no trace (a queue place, say).
    fn give_up(&mut self) -> impl Future<Output = ()> + Send;
}

/// Attempts until `contender` acquires or `wait` passes (`None`: no limit).
///
/// # Errors
///
/// Busy at the deadline, the last transient error if the last attempt
/// failed with one, or the first other error.
pub(crate) async fn wait<C: Contender>(
    client: &Shared,
    contender: &mut C,
    wait: Option<Duration>,
) -> Result<C::Acquired, Error> {
    let started = Instant::now();
    // A wait too long to represent as an instant is no wait limit.
    let deadline = wait.and_then(|w| started.checked_add(w));
    let mut waiting = Waiting {
        client,
        refresh: contender.refresh(),
        joined: None,
        baton: None,
        passed: None,
        backoff: 0,
    };
    loop {
        // A lock's release wakes one waiter, and a waiter busy attempting
        // when it came finds the permit stored: counting messages would
        // only add attempts. Messages that wake several waiters store one
        // permit for all of them: those count.
        let seen = waiting
            .joined
            .as_ref()
            .filter(|_| contender.wakes() != Wakes::One)
            .map(|j| j.sub.seen());
        let outcome = contender.attempt().await;
        // The wake-up that led here is used once the attempt ran; after an
        // error it may not have, and dropping the baton hands the wake-up
        // to the next local waiter. So does a request too large for what is
        // free, once per message, so that a smaller one behind it is not
        // left asleep (and the hand-on ends when it comes back round).
        if let (Some(baton), Ok(attempt)) = (waiting.baton.take(), &outcome) {
            let short = matches!(attempt, Attempt::Short(_));
            if short && waiting.passed != Some(baton.messages()) {
                waiting.passed = Some(baton.messages());
                drop(baton);
            } else {
                baton.used();
            }
        }
        if contender.channel_moves()
            && waiting
                .joined
                .as_ref()
                .is_some_and(|j| j.channel != contender.channel())
        {
            // Another member refused it this time: wait on its channel.
            waiting.joined = None;
        }
        let holder_ttl = match outcome {
            Ok(Attempt::Acquired(acquired)) => return Ok(acquired),
            Ok(Attempt::Busy(ttl) | Attempt::Short(ttl)) => Ok(ttl),
            Err(e) if e.is_transient() && !backoff::unretried_failover(&e) => {
                crate::metrics::retried(e.retry_reason());
                contender.restart();
                // A fair waiter's channel is named after its owner field,
                // which `restart` just replaced: wait on the new one.
                if waiting
                    .joined
                    .as_ref()
                    .is_some_and(|j| j.channel != contender.channel())
                {
                    waiting.joined = None;
                }
                Err(e)
            }
            Err(e) => return Err(e),
        };
        let remaining = match deadline {
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    // Leave no queue place behind: a fair waiter that gave up
                    // must not hold up the queue until its deadline.
                    contender.give_up().await;
                    return Err(holder_ttl
                        .err()
                        .unwrap_or_else(|| contender.busy(now - started)));
                }
                Some(deadline - now)
            }
            None => None,
        };
        match holder_ttl {
            Ok(ttl) => waiting.until_woken(contender, seen, ttl, remaining).await,
            Err(_) => {
                backoff::pause_after_error(waiting.backoff, remaining).await;
                waiting.backoff = waiting.backoff.saturating_add(1);
            }
        }
    }
}

/// The engine's state between attempts.
struct Waiting<'a> {
    client: &'a Shared,
    refresh: Option<Duration>,
    joined: Option<Joined>,
    /// The wake-up that ended the last sleep, until an attempt used it.
    baton: Option<Baton>,
    /// The channel's message count at the last wake-up this waiter passed
    /// on ([`Attempt::Short`]).
    passed: Option<u64>,
    /// Polling and error retries made so far, for the backoff's step.
    backoff: u32,
}

/// This waiter's membership of its channel.
struct Joined {
    sub: Subscription,
    channel: String,
    /// Confirmed by the server: from then on every release is heard.
    ready: bool,
}

impl Waiting<'_> {
    /// Waits for the next reason to attempt again: returns at once when a
    /// new subscription was just confirmed (retry once), or when messages
    /// arrived since the count `seen` read before the last attempt; else
    /// sleeps until a message, the holder's `holder_ttl`, the `remaining`
    /// wait or the refresh period.
    async fn until_woken<C: Contender>(
        &mut self,
        contender: &C,
        seen: Option<u64>,
        holder_ttl: Option<Duration>,
        remaining: Option<Duration>,
    ) {
        match &mut self.joined {
            // A subscription that failed has since been retried and works:
            // retry once, then wait on it.
            Some(joined) if !joined.ready && joined.sub.is_ready() => {
                joined.ready = true;
                return;
            }
            // The subscription may be gone (a disconnection, a slot that
            // moved): poll until it is made again.
            Some(joined) if joined.ready && !joined.sub.is_ready() => joined.ready = false,
            Some(_) => {}
            None => {
                let channel = contender.channel();
                let wakes = contender.wakes();
                let sub = self.client.subscribe(channel.clone(), wakes);
                // Already subscribed for other local waiters: a lock's
                // release since our attempt has woken one of them or left a
                // stored wake-up for us, so no retry is needed. A message
                // that wakes several waiters stores one wake-up only, which
                // a second newcomer would miss: they retry.
                let already = sub.is_ready() && wakes == Wakes::One;
                // Capped by the refresh period too: a contender that must
                // attempt that often (a fair waiter keeping its queue place)
                // does so while the subscription is pending (#3).
                let ready = already || sub.ready(cap(remaining, self.refresh)).await;
                self.joined = Some(Joined {
                    sub,
                    channel,
                    ready,
                });
                // Subscribe, then retry once: a release between the last
                // attempt and the subscription went unheard (Redisson's
                // #1763).
                if ready && !already {
                    return;
                }
            }
        }
        let Some(joined) = &self.joined else { return };
        // Just joined: messages before it went unheard, and the retry or
        // the stored wake-up covers them.
        let seen = seen.unwrap_or_else(|| joined.sub.seen());
        // One millisecond more: `PTTL` rounds down, and waking a moment after
        // the expiry beats waking a moment before it.
        let holder_expiry = holder_ttl.map(|t| t + Duration::from_millis(1));
        let sleep = cap(cap(holder_expiry, remaining), self.refresh);
        let span =
            tracing::debug_span!("wait", key = %contender.name(), woken = tracing::field::Empty);
        if joined.ready {
            self.baton = joined.sub.wait(seen, sleep).instrument(span.clone()).await;
            span.record("woken", self.baton.is_some());
        } else {
            backoff::pause(self.backoff, holder_ttl, sleep)
                .instrument(span)
                .await;
            self.backoff = self.backoff.saturating_add(1);
        }
    }
}

/// The smaller of two optional limits (`None`: no limit).
fn cap(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_takes_the_smaller_limit() {
        let ms = Duration::from_millis;
        assert_eq!(cap(Some(ms(3)), Some(ms(2))), Some(ms(2)));
        assert_eq!(cap(None, Some(ms(2))), Some(ms(2)));
        assert_eq!(cap(Some(ms(3)), None), Some(ms(3)));
        assert_eq!(cap(None, None), None);
    }
}
