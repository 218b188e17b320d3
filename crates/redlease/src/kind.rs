//! Which Redis calls a lock sends (acquire, release, extend, re-entry,
//! withdrawal) and which channel wakes its waiters, by the protocol it
//! speaks: the plain lock, the fair lock with its waiting queue, one side
//! of a read-write lock, or the plain lock in the string layout. The one
//! place that chooses between their calls.

use std::sync::Arc;

use crate::connection::Publish;
use crate::layout;
use crate::pubsub::Wakes;
use crate::scripts::{self, Call, Fencing, Latch, ScriptCall};

/// A lock's protocol. All but `Str` use the same lock hash, so handles of
/// different kinds on one name exclude each other; a `Str` lock's string
/// key excludes them too (their acquires find the key taken).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    /// The plain lock in the string layout
    /// ([`Layout::String`](crate::layout::Layout::String)): a string key
    /// holding the owner, as other libraries' locks keep it.
    Str,
    /// With the wait each Redisson waiter ahead in the queue takes off a
    /// waiter's deadline when it takes the lock, in milliseconds
    /// ([`ClientBuilder::redisson_fair_wait`](crate::ClientBuilder::redisson_fair_wait)).
    Fair {
        redisson_wait_ms: u64,
    },
    /// The read side of a read-write lock: shared with other readers.
    Read,
    /// The write side of a read-write lock: alone.
    Write,
}

/// Which hold of a name an owner scope re-enters: the plain and the fair
/// lock share one owner field, while the two sides of a read-write lock
/// are two holds (the write side's field ends in `:write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Side {
    Exclusive,
    Read,
    Write,
}

/// What an acquire call carries besides the lock and its owner.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AcquireOptions {
    /// The lease to set, in milliseconds.
    pub(crate) lease_ms: u64,
    /// Whether a fencing token is issued, and its counter's time to live.
    pub(crate) fencing: Fencing,
    /// How long a fair waiter stays queued without calling again, in
    /// milliseconds.
    pub(crate) queue_lease_ms: u64,
    /// How a fair acquire wakes the next waiter.
    pub(crate) publish: Publish,
}

impl Kind {
    /// The kind of a plain lock of a client that keeps its locks as
    /// `layout` says.
    pub(crate) fn plain(layout: layout::Layout) -> Kind {
        match layout {
            layout::Layout::Redisson => Kind::Plain,
            layout::Layout::String => Kind::Str,
        }
    }

    /// The acquire call; for a fair lock, `enqueue` makes a failed attempt
    /// join the queue (or refresh its place in it).
    pub(crate) fn acquire<'a>(
        self,
        name: &'a str,
        field: &'a str,
        options: AcquireOptions,
        enqueue: bool,
    ) -> Call<'a> {
        let AcquireOptions {
            lease_ms,
            fencing,
            queue_lease_ms,
            publish,
        } = options;
        let call = match self {
            // Not a script call, so not in the match: the connection picks
            // the server's own commands or a script for it, as the server
            // supports them (#17).
            Kind::Str => {
                return scripts::string::acquire(name, lease_ms, field, fencing).into();
            }
            Kind::Plain => scripts::lock::acquire_with(name, lease_ms, field, fencing),
            Kind::Read => scripts::rwlock::read_acquire(name, lease_ms, field, fencing),
            Kind::Write => scripts::rwlock::write_acquire(name, lease_ms, field, fencing),
            Kind::Fair { redisson_wait_ms } => scripts::fair::acquire(
                name,
                lease_ms,
                field,
                queue_lease_ms,
                enqueue,
                fencing,
                publish,
                redisson_wait_ms,
            ),
        };
        call.into()
    }

    /// The owner-checked release call, answered as
    /// [`Released`](scripts::lock::Released); under `latch`, safe to send
    /// again (#37), except in the string layout, whose key has no room for
    /// a hold count and whose release is sent once.
    pub(crate) fn release<'a>(
        self,
        name: &'a str,
        lease_ms: u64,
        field: &'a str,
        publish: Publish,
        latch: Option<Latch<'_>>,
    ) -> Call<'a> {
        let call = match self {
            Kind::Str => return scripts::string::release(name, field, publish).into(),
            Kind::Plain => scripts::lock::release_with(name, lease_ms, field, publish, latch),
            Kind::Fair { .. } => scripts::fair::release(name, lease_ms, field, publish, latch),
            // No lease to restore: the hash then lives as long as the
            // longest read hold left, by that hold's timeout key.
            Kind::Read => scripts::rwlock::read_release(name, field, publish, latch),
            Kind::Write => scripts::rwlock::write_release(name, lease_ms, field, publish, latch),
        };
        call.into()
    }

    /// Whether [`release`](Kind::release) under a latch is safe to send
    /// again: every kind but the string layout's.
    pub(crate) fn latches(self) -> bool {
        !matches!(self, Kind::Str)
    }

    /// The owner-checked extension of a fixed-lease hold to `lease_ms` from
    /// now, answered as [`Renewed`](scripts::lock::Renewed) for one lock:
    /// the watchdog's renewal of this one hold (for a read hold, with its
    /// timeout keys).
    pub(crate) fn extend<'a>(self, name: &'a str, lease_ms: u64, field: &'a str) -> Call<'a> {
        match self {
            Kind::Str => scripts::string::extend(name, lease_ms, field).into(),
            // The reader's timeout keys too, not only the hash: another
            // reader's release deletes the hash unless some read hold's
            // timeout key lives (DESIGN.md, "How the read-write lock plugs
            // in").
            Kind::Read => scripts::rwlock::renew_reads(lease_ms, [(name, field)]).into(),
            Kind::Plain | Kind::Fair { .. } | Kind::Write => {
                scripts::lock::renew(lease_ms, [(name, field)]).into()
            }
        }
    }

    /// The re-entry of a hold an owner scope has, answered as a `bool`:
    /// whether the hold was still there (and now counts one more). `None`
    /// where the hold count lives in the client (the string layout, whose
    /// key has no count): re-entry then costs no round trip.
    pub(crate) fn reenter(self, name: &str, lease_ms: u64, field: &str) -> Option<ScriptCall> {
        match self {
            Kind::Str => None,
            Kind::Read => Some(scripts::rwlock::read_reenter(name, lease_ms, field)),
            Kind::Plain | Kind::Fair { .. } | Kind::Write => {
                Some(scripts::lock::reenter(name, lease_ms, field))
            }
        }
    }

    /// The call that takes back an acquisition that must not stand: the
    /// release of the hold, and for a fair lock also the owner's place in
    /// the queue. Answered as [`Released`](scripts::lock::Released).
    pub(crate) fn withdraw<'a>(
        self,
        name: &'a str,
        lease_ms: u64,
        field: &'a str,
        publish: Publish,
    ) -> Call<'a> {
        match self {
            // Also leaves the queue, and wakes the new head if the lock is
            // free: a waiter gone from the queue's head would otherwise
            // hold it up until its deadline passed.
            Kind::Fair { .. } => scripts::fair::abandon(name, field, publish).into(),
            // A fresh field: a repeat finds nothing of its own, no latch
            // needed.
            Kind::Plain | Kind::Str | Kind::Read | Kind::Write => {
                self.release(name, lease_ms, field, publish, None)
            }
        }
    }

    /// The channel on which owner `field`, waiting for lock `name`, is woken:
    /// every plain waiter shares the lock's channel, while a fair waiter has
    /// its own, woken only when its turn comes.
    pub(crate) fn wake_channel(self, name: &str, field: &str) -> String {
        match self {
            Kind::Plain | Kind::Str => layout::channel(name),
            // A fair release publishes to the head waiter's channel only, so
            // one waiter in the whole system wakes; plain and fair waiters
            // of one name therefore do not wake each other (DESIGN.md).
            Kind::Fair { .. } => layout::waiter_channel(name, field),
            Kind::Read | Kind::Write => layout::rwlock_channel(name),
        }
    }

    /// What a message on the wake channel wakes: a write release (`1`)
    /// may let every waiting reader in, but only one writer.
    pub(crate) fn wakes(self) -> Wakes {
        match self {
            Kind::Plain | Kind::Str | Kind::Fair { .. } | Kind::Write => Wakes::One,
            Kind::Read => Wakes::Reader,
        }
    }

    /// A new owner's field in the lock hash, from a fresh
    /// `<client-id>:<n>`: a writer's ends in `:write`, as in Redisson.
    pub(crate) fn owner_field(self, fresh: Arc<str>) -> Arc<str> {
        match self {
            Kind::Write => {
                let mut field = String::with_capacity(fresh.len() + 6);
                field.push_str(&fresh);
                field.push_str(":write");
                field.into()
            }
            Kind::Plain | Kind::Str | Kind::Fair { .. } | Kind::Read => fresh,
        }
    }

    /// The hold of a name an owner scope re-enters for this kind.
    pub(crate) fn side(self) -> Side {
        match self {
            Kind::Plain | Kind::Str | Kind::Fair { .. } => Side::Exclusive,
            Kind::Read => Side::Read,
            Kind::Write => Side::Write,
        }
    }

    /// Whether the watchdog must also renew the hold's per-hold timeout
    /// keys (a read hold).
    pub(crate) fn renews_timeouts(self) -> bool {
        self == Kind::Read
    }

    /// Whether the lock is a string key, not a hash: a hold is checked
    /// with `GET` rather than `HEXISTS`, and the hold count of an owner
    /// scope's re-entries lives in the client (only the scope's last guard
    /// releases the key).
    pub(crate) fn is_string(self) -> bool {
        self == Kind::Str
    }

    /// Whether waiters hold a place in a queue, which they must refresh and
    /// give up when they stop waiting.
    pub(crate) fn is_queued(self) -> bool {
        matches!(self, Kind::Fair { .. })
    }
}
