//! When an acquire's future is dropped (a `select!`, a timeout, a task
//! aborted) after its request may have reached Redis, this takes back what
//! Redis may have granted (a hold, a fair queue place, a re-entry in an
//! owner scope), sent in the background (DESIGN.md, "What does cancelling
//! a future leave behind?").

use std::sync::Arc;

use redis::{FromRedisValue, RedisError};
use tokio::sync::oneshot;

use crate::connection::Connection;
use crate::kind::Kind;
use crate::release;
use crate::scripts::ScriptCall;

/// Runs `call` to completion in a task of its own, for a script whose
/// success must be undone if nobody receives it (it has no owner field a
/// withdrawal could name: a re-entry of a shared field; the semaphore's
/// acquire has had a request id of its own since #36). Whoever last sees
/// a reply for which `took` is true that the caller did not take runs
/// `undo`: the task, if the caller was dropped before the reply came, or
/// the caller's dropped end, if it came first.
/// `None` when the task never answered (the runtime is shutting down).
///
/// # Cancel safety
///
/// That is its purpose: dropping the future never leaves a success behind.
pub(crate) async fn run_or_undo<T, U>(
    conn: &Connection,
    call: ScriptCall,
    took: fn(&T) -> bool,
    undo: U,
) -> Option<Result<T, RedisError>>
where
    T: FromRedisValue + Send + 'static,
    U: Fn() + Clone + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let (task_conn, task_undo) = (conn.clone(), undo.clone());
    drop(tokio::spawn(async move {
        let reply = call.run::<T>(&task_conn).await;
        // The caller's end is gone: nobody will receive this success.
        if let Err(Ok(reply)) = tx.send(reply)
            && took(&reply)
        {
            task_undo();
        }
    }));
    let mut pending = Pending {
        rx,
        took,
        undo: Some(undo),
    };
    let reply = (&mut pending.rx).await;
    // Received: the success is the caller's now, and Drop must not undo it.
    pending.undo = None;
    reply.ok()
}

/// The caller's end of [`run_or_undo`]. Dropped before its reply was taken
/// (the caller was cancelled), it closes the channel, so that from then on
/// the task's send fails and the task undoes a success, and undoes a
/// success that arrived before.
struct Pending<T, U: Fn()> {
    rx: oneshot::Receiver<Result<T, RedisError>>,
    took: fn(&T) -> bool,
    /// `None` once the reply was taken.
    undo: Option<U>,
}

impl<T, U: Fn()> Drop for Pending<T, U> {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            // Closed before the read: a reply sent after this fails to send
            // and the task undoes it; one sent before is read here. So
            // exactly one side undoes a success, whenever it came.
            self.rx.close();
            if let Ok(Ok(reply)) = self.rx.try_recv()
                && (self.took)(&reply)
            {
                undo();
            }
        }
    }
}

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
    /// Whether a withdrawal that goes unanswered is sent again (#29): yes
    /// for a fresh owner field, since an acquisition Redis granted but whose
    /// withdrawal was lost would hold the lock, or a fair queue's head,
    /// until it expired.
    retry: release::Retry,
}

impl Withdrawal {
    /// Armed for an acquire request of `field` about to be sent on `conn`.
    pub(crate) fn pending_acquire(
        conn: &Connection,
        kind: Kind,
        name: &Arc<str>,
        field: &Arc<str>,
        lease_ms: u64,
        retry: release::Retry,
    ) -> Withdrawal {
        Withdrawal {
            conn: Some(conn.clone()),
            kind,
            name: name.clone(),
            field: field.clone(),
            lease_ms,
            retry,
        }
    }

    /// Armed for a fair waiter's place in the queue (and any hold its
    /// attempts may have taken), when `kind` is queued; disarmed otherwise.
    pub(crate) fn queue_place(
        conn: &Connection,
        kind: Kind,
        name: &Arc<str>,
        field: &Arc<str>,
        retry: release::Retry,
    ) -> Withdrawal {
        Withdrawal {
            conn: kind.is_queued().then(|| conn.clone()),
            kind,
            name: name.clone(),
            field: field.clone(),
            // Unused: a fair lock's withdrawal (`abandon`) restores no lease.
            lease_ms: 0,
            retry,
        }
    }

    /// The owner to withdraw is now `field` (an attempt with an unknown
    /// outcome made the waiter start over under a new one), withdrawn as
    /// `retry` says.
    pub(crate) fn set_field(&mut self, field: &Arc<str>, retry: release::Retry) {
        self.field = field.clone();
        self.retry = retry;
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
                // No label: the acquisition may never have been granted, so
                // a refusal is not the unlock of a lock we lost.
                None,
                self.retry.clone(),
            );
        }
    }
}
