//! [`LostReason`], and the signal that carries it from the watchdog to a
//! hold's guards.

use std::fmt;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

/// Why a guard's lock is no longer (or may no longer be) ours; returned by
/// [`LockGuard::lost`](crate::LockGuard::lost).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
///
/// use redlease::LostReason;
///
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:lost:reason").lease(Duration::from_millis(50));
/// let guard = lock.try_lock().await?;
/// match guard.lost().await {
///     LostReason::Expired => println!("the lease ran out: stop writing"),
///     LostReason::OwnerChanged => println!("someone else has the lock"),
///     reason => println!("no longer ours: {reason}"),
/// }
/// assert_eq!(guard.lost().await.to_string(), "the fixed lease expired");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LostReason {
    /// The fixed lease ran out by our clock.
    Expired,
    /// A renewal found the key gone or held by another owner (deleted,
    /// force-unlocked, or expired and re-acquired).
    OwnerChanged,
    /// Renewals failed (Redis unreachable or silent) until the lease could
    /// have expired by our clock.
    RenewalFailed,
}

impl LostReason {
    /// How many reasons there are (one metrics series each).
    pub(crate) const COUNT: usize = 3;

    /// The reason's name in metrics labels.
    pub(crate) fn as_label(self) -> &'static str {
        match self {
            LostReason::Expired => "expired",
            LostReason::OwnerChanged => "owner_changed",
            LostReason::RenewalFailed => "renewal_failed",
        }
    }
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LostReason::Expired => "the fixed lease expired",
            LostReason::OwnerChanged => "the lock was deleted or taken by another owner",
            LostReason::RenewalFailed => "renewals failed until the lease could have expired",
        })
    }
}

/// One hold's loss signal: set once, by the watchdog (or a renewal that
/// found the key gone), and read by every guard of the hold. Cheap to
/// clone: clones share one small block, the reason and the waiters'
/// [`Notify`]. A `watch` channel did the same in 344 bytes a hold (#28:
/// a third of a held lock's memory at a million).
#[derive(Clone)]
pub(crate) struct LostSignal(Arc<Signal>);

struct Signal {
    /// 0 until lost, then [`LostReason::code`], never changed again.
    reason: AtomicU8,
    /// Wakes every `wait` when the reason is set.
    set: Notify,
}

impl LostReason {
    fn code(self) -> u8 {
        match self {
            LostReason::Expired => 1,
            LostReason::OwnerChanged => 2,
            LostReason::RenewalFailed => 3,
        }
    }

    fn from_code(code: u8) -> Option<LostReason> {
        match code {
            1 => Some(LostReason::Expired),
            2 => Some(LostReason::OwnerChanged),
            3 => Some(LostReason::RenewalFailed),
            _ => None,
        }
    }
}

impl LostSignal {
    pub(crate) fn new() -> LostSignal {
        LostSignal(Arc::new(Signal {
            reason: AtomicU8::new(0),
            set: Notify::new(),
        }))
    }

    /// Records `reason` unless a loss was recorded before (the first one
    /// wins), and wakes the waiters.
    pub(crate) fn set(&self, reason: LostReason) {
        let first = self
            .0
            .reason
            .compare_exchange(0, reason.code(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            self.0.set.notify_waiters();
        }
    }

    pub(crate) fn get(&self) -> Option<LostReason> {
        LostReason::from_code(self.0.reason.load(Ordering::Acquire))
    }

    /// Resolves once a loss is recorded (at once if it was before).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub(crate) async fn wait(&self) -> LostReason {
        loop {
            // Registered before the reason is read: a `set` between the
            // read and the `await` still wakes this wait.
            let notified = self.0.set.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            if let Some(reason) = self.get() {
                return reason;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_loss_wins_and_wakes_waiters() {
        let signal = LostSignal::new();
        assert_eq!(signal.get(), None);
        let waiter = tokio::spawn({
            let signal = signal.clone();
            async move { signal.wait().await }
        });
        signal.set(LostReason::OwnerChanged);
        signal.set(LostReason::RenewalFailed);
        assert_eq!(waiter.await.unwrap(), LostReason::OwnerChanged);
        assert_eq!(signal.get(), Some(LostReason::OwnerChanged));
    }

    /// Waiters already asleep when the loss is set all wake, and a wait
    /// begun after it resolves at once.
    #[tokio::test(flavor = "current_thread")]
    async fn waiters_asleep_before_the_loss_all_wake() {
        let signal = LostSignal::new();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let signal = signal.clone();
                tokio::spawn(async move { signal.wait().await })
            })
            .collect();
        // On one thread: each waiter runs to its `await` before the set.
        tokio::task::yield_now().await;
        assert!(waiters.iter().all(|w| !w.is_finished()));
        signal.set(LostReason::RenewalFailed);
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), LostReason::RenewalFailed);
        }
        assert_eq!(signal.wait().await, LostReason::RenewalFailed);
    }
}
