//! [`Leadership`]: a won election, held as a lock guard is.

use std::fmt;
use std::time::Instant;

use crate::error::Error;
use crate::guard::LockGuard;
use crate::lost::LostReason;
use crate::scripts::election as scripts;
use crate::shared::Shared;

/// A leadership won by [`Election::campaign`](crate::Election::campaign):
/// the guard of the election's lock, with the same contract as a
/// [`LockGuard`] (renewed by the watchdog, [`lost`](Leadership::lost) when
/// it can no longer be, released by [`resign`](Leadership::resign) or, in
/// the background, by Drop), and an [`epoch`](Leadership::epoch): the
/// lock's fencing token, greater for every later leadership of the name.
/// Pass the epoch with every write a leader makes, so that a store can
/// refuse a leader that lost its lock and does not know it yet.
#[must_use = "dropping the leadership resigns it at once; hold it while leading and call `resign()`"]
pub struct Leadership {
    /// `None` only while `resign` runs: taken to release it.
    guard: Option<LockGuard>,
    client: Shared,
    value: String,
    /// The election's name, kept for the metrics after `resign` took the
    /// guard.
    name: String,
}

impl Leadership {
    pub(crate) fn new(guard: LockGuard, value: String, client: Shared) -> Leadership {
        Leadership {
            name: guard.name().to_owned(),
            guard: Some(guard),
            client,
            value,
        }
    }

    fn guard(&self) -> &LockGuard {
        self.guard
            .as_ref()
            .expect("only resign takes the guard, and it consumes the leadership")
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What this leadership campaigned with.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The owner field this leadership holds the lock with.
    pub fn owner(&self) -> &str {
        self.guard().owner()
    }

    /// The leadership's epoch: its fencing token, greater than every epoch
    /// (and every fencing token) issued before for this name; `None` when
    /// the client's fencing is off.
    pub fn epoch(&self) -> Option<u64> {
        self.guard().fencing_token()
    }

    /// The same as [`epoch`](Leadership::epoch), under the name every guard
    /// answers it by.
    pub fn fencing_token(&self) -> Option<u64> {
        self.epoch()
    }

    /// `None`: a leadership is kept by the watchdog, with no end of its own.
    pub fn expires_at(&self) -> Option<Instant> {
        self.guard().expires_at()
    }

    /// Resolves when the leadership is, or must be assumed, lost: stop
    /// acting as leader then, and campaign again if wanted.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn lost(&self) -> LostReason {
        self.guard().lost().await
    }

    /// Whether [`lost`](Leadership::lost) would resolve now: check it
    /// before each step a leader takes.
    pub fn is_lost(&self) -> bool {
        self.guard().is_lost()
    }

    /// Asks Redis whether this process still leads.
    ///
    /// # Errors
    ///
    /// Connection and server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn is_leading(&self) -> Result<bool, Error> {
        self.guard().is_held().await
    }

    /// Gives the leadership up: releases the lock (which wakes the next
    /// campaigner and every observer), then removes this leader's record.
    ///
    /// # Errors
    ///
    /// As [`LockGuard::unlock`]: [`is_not_owner`](Error::is_not_owner) when
    /// the leadership was lost already. The record's removal is best
    /// effort: one left behind is never shown for another leader.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the leadership, which releases in the
    /// background, as for any dropped guard.
    pub async fn resign(mut self) -> Result<(), Error> {
        let guard = self
            .guard
            .take()
            .expect("only resign takes the guard, and it consumes the leadership");
        let owner = guard.owner().to_owned();
        let released = guard.unlock().await;
        let name = &self.name;
        let conn = self.client.conn();
        let retired = scripts::retire(name, &owner, conn.publish().command())
            .run::<i64>(conn)
            .await;
        if let Err(e) = retired {
            tracing::debug!(key = %name, error = %e, "removing a resigned leader's record failed");
        }
        released
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        crate::metrics::leadership_ended(&self.name);
    }
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("guard", &self.guard)
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}
