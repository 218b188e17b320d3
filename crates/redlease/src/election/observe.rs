//! The observer behind [`Election::observe`]: reads who leads, gives it
//! when it changed, and sleeps until a message says it may have.
//!
//! Two channels wake it: the lock's own (every release announces itself
//! there, a Redisson `RLock`'s too) and the election's (a redlease leader
//! announces itself there once its record is written). A holder that dies
//! announces nothing; its lock's expiry does, so with a leader the
//! observer sleeps at most until its lock's time to live has passed. A
//! holder that announces nothing when it takes the lock (a Redisson
//! `RLock`) is seen at the next look, [`OBSERVE_IDLE`] at most.
//!
//! The lock's channel is shared with the client's campaigners and lock
//! waiters, which are woken one per message. An observer woken by a
//! release passes the wake-up on (once per message), so that it never
//! takes the turn of a campaigner waiting for that release.

use std::time::Duration;

use futures_util::Stream;

use super::{Election, Leader, OBSERVE_IDLE};
use crate::error::Error;
use crate::layout;
use crate::pubsub::{Baton, Subscription, Wakes};

/// How long the subscriptions may take to be confirmed before the first
/// look; past it, the observer looks anyway and relies on its timeouts.
const SUBSCRIBE_WITHIN: Duration = Duration::from_secs(3);

/// The pause after a failed read, before the next: a Redis that is down
/// does not make the stream spin.
const AFTER_ERROR: Duration = Duration::from_millis(500);

/// Past a leader's time to live, how much later to look: its expiry is
/// Redis's, a moment after ours.
const PAST_EXPIRY: Duration = Duration::from_millis(5);

pub(super) struct Observer {
    election: Election,
    /// The lock's channel: releases.
    releases: Subscription,
    /// The election's channel: new leaders, resignations.
    announcements: Subscription,
    confirmed: bool,
    /// What was given last; `None` before the first item.
    last: Option<Option<Leader>>,
    /// The message count of the last release wake-up passed on.
    passed: u64,
    failed: bool,
}

impl Observer {
    pub(super) fn new(election: Election) -> Observer {
        let shared = election.client();
        let releases = shared.subscribe(layout::channel(election.name()), Wakes::One);
        let announcements = shared.subscribe(layout::leader_channel(election.name()), Wakes::All);
        Observer {
            election,
            releases,
            announcements,
            confirmed: false,
            last: None,
            passed: 0,
            failed: false,
        }
    }

    pub(super) fn into_stream(
        self,
    ) -> impl Stream<Item = Result<Option<Leader>, Error>> + Send + 'static {
        futures_util::stream::unfold(self, |mut observer| async move {
            let item = observer.next().await;
            Some((item, observer))
        })
    }

    /// The next change (the first call: who leads now).
    async fn next(&mut self) -> Result<Option<Leader>, Error> {
        if !self.confirmed {
            // Subscribed before the first look, so that no change after it
            // goes unheard.
            let _ = self.releases.ready(Some(SUBSCRIBE_WITHIN)).await;
            let _ = self.announcements.ready(Some(SUBSCRIBE_WITHIN)).await;
            self.confirmed = true;
        }
        if self.failed {
            tokio::time::sleep(AFTER_ERROR).await;
        }
        loop {
            let seen = (self.releases.seen(), self.announcements.seen());
            let now = match self.election.leader().await {
                Ok(now) => now,
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            };
            self.failed = false;
            let changed = match &self.last {
                None => true,
                Some(last) => !same(last.as_ref(), now.as_ref()),
            };
            if changed {
                if self.last.is_some() {
                    crate::metrics::leader_changed(self.election.name());
                }
                self.last = Some(now.clone());
                return Ok(now);
            }
            let max = match &now {
                // A lock without expiry never expires: only a message ends it.
                Some(leader) => leader.ttl.map(|ttl| ttl + PAST_EXPIRY),
                None => Some(OBSERVE_IDLE),
            };
            tokio::select! {
                baton = self.releases.wait(seen.0, max) => self.pass_on(baton),
                baton = self.announcements.wait(seen.1, max) => {
                    // Every observer was woken: nobody to pass it to.
                    if let Some(baton) = baton {
                        baton.used();
                    }
                }
            }
        }
    }

    /// A release's wake-up goes on to the next local waiter (a campaigner,
    /// a lock waiter, another observer), once per message: given back a
    /// second time, it is kept, or it would go round for ever.
    fn pass_on(&mut self, baton: Option<Baton>) {
        let Some(baton) = baton else { return };
        if baton.messages() != self.passed {
            self.passed = baton.messages();
            drop(baton);
        } else {
            baton.used();
        }
    }
}

fn same(a: Option<&Leader>, b: Option<&Leader>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}
