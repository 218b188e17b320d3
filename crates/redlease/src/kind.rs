//! Which protocol a lock speaks: the plain lock, or the fair lock with its
//! waiting queue. The one place that chooses between their scripts.

use crate::connection::Publish;
use crate::layout;
use crate::scripts::{self, ScriptCall};

/// A lock's protocol. Both use the same lock hash, so a plain and a fair
/// handle on one name exclude each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    Fair,
}

/// What an acquire call carries besides the lock and its owner.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AcquireOptions {
    /// The lease to set, in milliseconds.
    pub(crate) lease_ms: u64,
    /// Time to live of the fencing counter, in milliseconds.
    pub(crate) fencing_ttl_ms: u64,
    /// How long a fair waiter stays queued without calling again, in
    /// milliseconds.
    pub(crate) queue_lease_ms: u64,
    /// How a fair acquire wakes the next waiter.
    pub(crate) publish: Publish,
}

impl Kind {
    /// The acquire call; for a fair lock, `enqueue` makes a failed attempt
    /// join the queue (or refresh its place in it).
    pub(crate) fn acquire(
        self,
        name: &str,
        field: &str,
        options: AcquireOptions,
        enqueue: bool,
    ) -> ScriptCall {
        let AcquireOptions {
            lease_ms,
            fencing_ttl_ms,
            queue_lease_ms,
            publish,
        } = options;
        match self {
            Kind::Plain => scripts::lock::acquire(name, lease_ms, field, fencing_ttl_ms),
            Kind::Fair => scripts::fair::acquire(
                name,
                lease_ms,
                field,
                queue_lease_ms,
                enqueue,
                fencing_ttl_ms,
                publish,
            ),
        }
    }

    /// The owner-checked release call, answered as
    /// [`Released`](scripts::lock::Released).
    pub(crate) fn release(
        self,
        name: &str,
        lease_ms: u64,
        field: &str,
        publish: Publish,
    ) -> ScriptCall {
        match self {
            Kind::Plain => scripts::lock::release_with(name, lease_ms, field, publish),
            Kind::Fair => scripts::fair::release(name, lease_ms, field, publish),
        }
    }

    /// The call that takes back an acquisition that must not stand: the
    /// release of the hold, and for a fair lock also the owner's place in
    /// the queue. Answered as [`Released`](scripts::lock::Released).
    pub(crate) fn withdraw(
        self,
        name: &str,
        lease_ms: u64,
        field: &str,
        publish: Publish,
    ) -> ScriptCall {
        match self {
            Kind::Plain => scripts::lock::release_with(name, lease_ms, field, publish),
            Kind::Fair => scripts::fair::abandon(name, field, publish),
        }
    }

    /// The channel on which owner `field`, waiting for lock `name`, is woken:
    /// every plain waiter shares the lock's channel, while a fair waiter has
    /// its own, woken only when its turn comes.
    pub(crate) fn wake_channel(self, name: &str, field: &str) -> String {
        match self {
            Kind::Plain => layout::channel(name),
            Kind::Fair => layout::waiter_channel(name, field),
        }
    }

    /// Whether waiters hold a place in a queue, which they must refresh and
    /// give up when they stop waiting.
    pub(crate) fn is_queued(self) -> bool {
        self == Kind::Fair
    }
}
