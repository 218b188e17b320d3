//! What every lock handle, semaphore, latch and guard holds of its
//! `Client`, instead of the `Client` itself: the client's connection, owner
//! ids, watchdog and subscriptions behind narrow methods ([`Shared`]), and
//! each handle's client, name and metrics label ([`Handle`]). No protocol
//! code: that is in the primitives' modules.
//!
//! [`Client`](crate::Client) (in `client.rs`, with every public method) wraps
//! one [`Shared`]; the handles and guards it makes hold a `Shared`, not a
//! `Client`, so that they do not import the module that makes them.

use std::fmt;
use std::io::{self, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::metrics::Label;
use tokio::sync::oneshot;

use crate::connection::Connection;
use crate::layout::Layout;
use crate::pubsub::{Subscription, Subscriptions, Wakes};
use crate::replicas::Replicas;
use crate::scripts::Fencing;
use crate::watchdog::Watchdog;

/// A client's parts, cheap to clone: clones share them.
#[derive(Clone)]
pub(crate) struct Shared {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Renewals, releases, re-entries and subscriptions go out here.
    pub(crate) conn: Connection,
    /// Random per client, like Redisson's client UUID: owner fields are
    /// `<id>:<n>`, so two processes never mistake each other's holds.
    pub(crate) id: String,
    /// Metrics labels by value, shared by this client's handles.
    pub(crate) labels: crate::metrics::Labels,
    /// A new `n` for every acquisition: re-entry is opt-in (an owner scope),
    /// so by default two acquisitions in one process exclude each other
    /// exactly as two processes do.
    pub(crate) next_owner: AtomicU64,
    pub(crate) watchdog_timeout: Duration,
    /// How long a write made safe to repeat is sent again after lost
    /// replies ([`ClientBuilder::retry_writes_for`](crate::ClientBuilder::retry_writes_for)).
    pub(crate) retry_writes_for: Duration,
    /// How [`Client::lock`](crate::Client::lock) keeps its locks.
    pub(crate) layout: Layout,
    /// Whether acquires issue fencing tokens, and how long their counters
    /// live from their start (from the clock).
    pub(crate) fencing: Fencing,
    /// Redisson's wait per place in a fair lock's queue, which fair
    /// waiters' deadlines count in (see `ClientBuilder::redisson_fair_wait`).
    pub(crate) redisson_fair_wait_ms: u64,
    pub(crate) watchdog: Watchdog,
    /// Set by [`ClientBuilder::require_replicas`](crate::ClientBuilder::require_replicas).
    pub(crate) replicas: Option<Replicas>,
    /// Release-channel subscriptions shared by this client's waiters.
    pub(crate) subscriptions: Subscriptions,
    /// Dropped with the last clone of the client, which stops the watchdog
    /// task at once instead of at its next tick.
    pub(crate) _stop_watchdog: oneshot::Sender<()>,
}

impl Shared {
    /// The connection for everything but acquires.
    pub(crate) fn conn(&self) -> &Connection {
        &self.inner.conn
    }

    /// The connection acquires go out on, and with them everything that must
    /// reach Redis after an acquire: the withdrawal of a cancelled one.
    pub(crate) fn acquire_conn(&self) -> &Connection {
        // With replicas required, an acquire waits behind its `WAIT` on
        // their connection: a withdrawal sent on the main one could overtake
        // it and leave a lock nobody holds (#4).
        self.inner
            .replicas
            .as_ref()
            .map_or(&self.inner.conn, Replicas::conn)
    }

    /// The replicas every acquire must reach, if the client requires some.
    pub(crate) fn replicas(&self) -> Option<&Replicas> {
        self.inner.replicas.as_ref()
    }

    /// A new owner field, `<client-id>:<n>`, unique to one acquisition.
    pub(crate) fn new_owner_field(&self) -> Arc<str> {
        // Relaxed: only uniqueness matters, which `fetch_add` gives under any
        // ordering; nothing else is published through this counter.
        let n = self.inner.next_owner.fetch_add(1, Ordering::Relaxed);
        let id = &self.inner.id;
        // Written on the stack and copied once into the `Arc`: a `String`
        // first would cost an allocation more per acquire (#28). A UUID and
        // `n` fit in 64 bytes; anything longer takes the `String`.
        let mut buf = [0u8; 64];
        let mut cursor = io::Cursor::new(&mut buf[..]);
        if write!(cursor, "{id}:{n}").is_ok() {
            let end = cursor.position() as usize;
            if let Ok(field) = std::str::from_utf8(&buf[..end]) {
                return Arc::from(field);
            }
        }
        Arc::from(format!("{id}:{n}"))
    }

    /// How the client's plain locks are kept.
    pub(crate) fn layout(&self) -> Layout {
        self.inner.layout
    }

    /// Whether acquires issue fencing tokens, and how long their counters
    /// live.
    pub(crate) fn fencing(&self) -> Fencing {
        self.inner.fencing
    }

    /// How long a write made safe to repeat is sent again after lost
    /// replies.
    pub(crate) fn retry_writes_for(&self) -> Duration {
        self.inner.retry_writes_for
    }

    /// How long the record of such a write's answer lasts, in ms.
    pub(crate) fn answer_ttl_ms(&self) -> u64 {
        crate::backoff::answer_ttl_ms(self.inner.retry_writes_for)
    }

    /// Redisson's wait per place in a fair lock's queue, in milliseconds.
    pub(crate) fn redisson_fair_wait_ms(&self) -> u64 {
        self.inner.redisson_fair_wait_ms
    }

    /// The client's renewal task.
    pub(crate) fn watchdog(&self) -> &Watchdog {
        &self.inner.watchdog
    }

    /// Changes each time the client's connection drops.
    pub(crate) fn disconnections(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.subscriptions.disconnections()
    }

    /// Joins `channel` as a waiter woken as `wakes` says, sharing the
    /// subscription with the client's other waiters on it.
    pub(crate) fn subscribe(&self, channel: String, wakes: Wakes) -> Subscription {
        self.inner.subscriptions.join(channel, wakes)
    }
}

impl Shared {
    /// The parts of a client just built.
    pub(crate) fn new(inner: Inner) -> Shared {
        Shared {
            inner: Arc::new(inner),
        }
    }

    /// A reference that does not keep the client alive, for its own
    /// background tasks.
    pub(crate) fn downgrade(&self) -> WeakShared {
        WeakShared(Arc::downgrade(&self.inner))
    }

    /// The client's random id, the first part of its owner fields.
    pub(crate) fn id(&self) -> &str {
        &self.inner.id
    }

    /// The lease of watchdog-mode holds.
    pub(crate) fn watchdog_timeout(&self) -> Duration {
        self.inner.watchdog_timeout
    }
}

/// A client's parts, if the client is still there.
pub(crate) struct WeakShared(std::sync::Weak<Inner>);

impl WeakShared {
    pub(crate) fn upgrade(&self) -> Option<Shared> {
        self.0.upgrade().map(|inner| Shared { inner })
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.id)
            .field("watchdog_timeout", &self.inner.watchdog_timeout)
            .finish_non_exhaustive()
    }
}

/// What every primitive's handle holds, made once when the client makes
/// the handle: the client's parts, the name (the Redis key) and the name's
/// metrics label (shared by the client's handles of that label, see
/// [`Labels`](crate::metrics::Labels)). The front reads a
/// primitive's through [`Primitive::handle`](crate::front::Primitive::handle).
#[derive(Clone, Debug)]
pub(crate) struct Handle {
    pub(crate) client: Shared,
    pub(crate) name: Arc<str>,
    pub(crate) label: Label,
}

impl Handle {
    /// A handle of `client`'s on `name`.
    pub(crate) fn new(client: Shared, name: Arc<str>) -> Handle {
        Handle {
            // Looked up once per handle, not per acquire: the client's
            // handles of one label share its series keys (#28).
            label: client.inner.labels.of(&name),
            client,
            name,
        }
    }
}
