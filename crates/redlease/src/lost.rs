//! [`LostReason`], and the signal that carries it from the watchdog to a
//! hold's guards.

use std::fmt;

use tokio::sync::watch;

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

/// One hold's loss signal: set once, by the watchdog, and read by every
/// guard of the hold. Cheap to clone: a clone of the sender shares its
/// channel (no `Arc` around it: one allocation less per acquire, #28).
#[derive(Clone)]
pub(crate) struct LostSignal(watch::Sender<Option<LostReason>>);

impl LostSignal {
    pub(crate) fn new() -> LostSignal {
        LostSignal(watch::channel(None).0)
    }

    /// Records the loss; a later call changes nothing.
    pub(crate) fn set(&self, reason: LostReason) {
        self.0.send_if_modified(|current| {
            let first = current.is_none();
            if first {
                *current = Some(reason);
            }
            first
        });
    }

    /// The loss, if recorded.
    pub(crate) fn get(&self) -> Option<LostReason> {
        *self.0.borrow()
    }

    /// Resolves once the loss is recorded.
    pub(crate) async fn wait(&self) -> LostReason {
        let mut rx = self.0.subscribe();
        // Copy the value out: the borrow must not live across an await. The
        // signal owns a sender, so the channel cannot close while it lives.
        match rx.wait_for(Option::is_some).await.map(|r| *r) {
            Ok(Some(reason)) => reason,
            _ => std::future::pending().await,
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
}
