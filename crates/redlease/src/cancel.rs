//! What a cancelled acquire leaves behind, taken back in the background.

use std::sync::Arc;

use crate::connection::Connection;
use crate::kind::Kind;
use crate::release;

/// An acquisition to take back if it is dropped while armed: an acquire
/// request whose outcome is unknown, or a fair waiter's place in the queue.
/// Dropped armed, it sends the withdrawal ([`release::withdraw`]) in the
/// background on the connection the acquire went out on, so that it reaches
/// Redis after the acquire.
pub(crate) struct Withdrawal {
    /// `None` once disarmed.
    conn: Option<Connection>,
    kind: Kind,
    name: Arc<str>,
    field: Arc<str>,
    lease_ms: u64,
}

impl Withdrawal {
    /// Armed for an acquire request of `field` about to be sent on `conn`.
    pub(crate) fn pending_acquire(
        conn: &Connection,
        kind: Kind,
        name: &Arc<str>,
        field: &Arc<str>,
        lease_ms: u64,
    ) -> Withdrawal {
        Withdrawal {
            conn: Some(conn.clone()),
            kind,
            name: name.clone(),
            field: field.clone(),
            lease_ms,
        }
    }

    /// Armed for a fair waiter's place in the queue (and any hold its
    /// attempts may have taken), when `kind` is queued; disarmed otherwise.
    pub(crate) fn queue_place(
        conn: &Connection,
        kind: Kind,
        name: &Arc<str>,
        field: &Arc<str>,
    ) -> Withdrawal {
        Withdrawal {
            conn: kind.is_queued().then(|| conn.clone()),
            kind,
            name: name.clone(),
            field: field.clone(),
            lease_ms: 0,
        }
    }

    /// The owner to withdraw is now `field` (an attempt with an unknown
    /// outcome made the waiter start over under a new one).
    pub(crate) fn set_field(&mut self, field: &Arc<str>) {
        self.field = field.clone();
    }

    /// Nothing to take back any more.
    pub(crate) fn disarm(&mut self) {
        self.conn = None;
    }
}

impl Drop for Withdrawal {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            release::in_background(
                &conn,
                self.kind,
                &self.name,
                &self.field,
                self.lease_ms,
                None,
            );
        }
    }
}
