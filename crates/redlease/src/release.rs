//! How a lock is given back to Redis: `unlock()`, a guard's Drop and a
//! cancelled acquire all send their owner-checked release through here
//! (the calls come from [`Kind`]), as does the withdrawal of an acquisition
//! that must not stand, in the foreground or in the background.

use std::sync::Arc;
use std::time::Duration;

use crate::backoff;
use crate::metrics::Label;
use crate::scripts::Latch;

use crate::connection::Connection;
use crate::error::Error;
use crate::kind::Kind;
use crate::metrics;
use crate::scripts::Call;
use crate::scripts::lock::Released;

/// Takes back an acquisition that must not stand (cancelled, or not
/// acknowledged by replicas): releases the hold of `field`, and for a fair
/// lock also removes it from the queue. `conn` must be the connection the
/// acquire went out on, so that the withdrawal reaches Redis after it.
pub(crate) async fn withdraw(
    conn: &Connection,
    kind: Kind,
    name: &str,
    field: &str,
    lease_ms: u64,
) -> Result<(), Error> {
    // Published as this connection's waiters subscribe (`SPUBLISH` for
    // sharded subscribers on a cluster): sent the other way, the release
    // message would wake nobody.
    let call = kind.withdraw(name, lease_ms, field, conn.publish());
    run(conn, &call, name).await
}

/// A guard's release of the hold of `field` under the unlock latch of
/// `request` (#37): safe to send again, since a repeat finds the latch and
/// answers as the first did.
async fn release_latched(
    conn: &Connection,
    kind: Kind,
    name: &str,
    field: &str,
    lease_ms: u64,
    request: &str,
    ttl_ms: u64,
) -> Result<(), Error> {
    let latch = Latch { request, ttl_ms };
    let call = kind.release(name, lease_ms, field, conn.publish(), Some(latch));
    run(conn, &call, name).await
}

/// Runs a release or withdrawal call of lock `name` once.
///
/// # Errors
///
/// An error for which `is_not_owner` is true when the hold was not there
/// (expired, released, taken over, or the key now holds another type, which
/// is left untouched); connection and server errors as they come.
pub(crate) async fn run(conn: &Connection, call: &Call<'_>, name: &str) -> Result<(), Error> {
    let reply = call
        .run::<Released>(conn)
        .await
        .map_err(|e| Error::from(e).with_key(name))?;
    tracing::debug!(key = name, ?reply, "release");
    match reply {
        Released::Released => Ok(()),
        Released::NotOwner => Err(Error::not_owner(name)),
    }
}

/// Runs [`withdraw`] until it is answered, retrying a time-out or a lost
/// connection with backoff for at most `retry_for`; after that, whatever
/// it was to take back has expired in Redis anyway.
///
/// Only for an owner field no other hold shares (a fresh acquisition's): a
/// release that ran but whose answer was lost is then harmless to repeat,
/// since the field is gone and the repeat answers "not ours". A re-entered
/// field's release is not repeated: it would take back another hold.
pub(crate) async fn withdraw_until_answered(
    conn: &Connection,
    kind: Kind,
    name: &str,
    field: &str,
    lease_ms: u64,
    retry_for: Duration,
) -> Result<(), Error> {
    backoff::retry_transient(retry_for, || withdraw(conn, kind, name, field, lease_ms)).await
}

/// How a release sent in the background treats a failure.
#[derive(Clone, Debug)]
pub(crate) enum Retry {
    /// Sent again only after an answer that it did not run (a failover or
    /// a migration under way), for at most this long: a release a repeat
    /// could apply twice (a string-layout guard's, which takes no latch;
    /// the withdrawal of one re-entry of a shared field).
    NotRun(Duration),
    /// Retried while transient, for at most this long: the withdrawal of a
    /// fresh acquisition ([`withdraw_until_answered`]).
    For(Duration),
    /// A guard's release under the unlock latch of `request`, which lasts
    /// `ttl_ms`, retried while transient for at most `retry_for` (#37).
    Latched {
        request: Arc<str>,
        retry_for: Duration,
        ttl_ms: u64,
    },
}

/// Sends [`withdraw`] on the current runtime without waiting for it; does
/// nothing without a runtime. Used by Drop and by cancelled acquires. A
/// guard's release passes its metrics label in `guard_label`, so that a
/// refusal is counted as an unlock of a lock no longer ours; an acquire's
/// withdrawal passes `None` (its hold may never have existed).
pub(crate) fn in_background(
    conn: &Connection,
    kind: Kind,
    name: &Arc<str>,
    field: &Arc<str>,
    lease_ms: u64,
    guard_label: Option<Label>,
    retry: Retry,
) {
    // Drop cannot await, and a guard may be dropped on a plain thread: then
    // only the lease frees the lock (DESIGN.md, "`unlock().await` or Drop?").
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::debug!(key = %name, "no runtime to release in; the lock will expire after its lease");
        return;
    };
    let (conn, name, field) = (conn.clone(), name.clone(), field.clone());
    // A runtime that is shutting down drops the task unpolled; the lease
    // then frees the lock.
    drop(handle.spawn(async move {
        let answered = match retry {
            Retry::NotRun(retry_for) => {
                backoff::retry_not_run(retry_for, || {
                    withdraw(&conn, kind, &name, &field, lease_ms)
                })
                .await
            }
            Retry::For(retry_for) => {
                withdraw_until_answered(&conn, kind, &name, &field, lease_ms, retry_for).await
            }
            Retry::Latched {
                request,
                retry_for,
                ttl_ms,
            } => {
                backoff::retry_transient(retry_for, || {
                    release_latched(&conn, kind, &name, &field, lease_ms, &request, ttl_ms)
                })
                .await
            }
        };
        match answered {
            Ok(()) => tracing::debug!(key = %name, "released in the background"),
            // Not ours any more: a guard's lock expired or was taken over
            // (counted), or an acquisition that never stood (not counted).
            Err(e) if e.is_not_owner() => {
                if let Some(label) = guard_label {
                    metrics::unlock_not_owner(&label);
                }
            }
            Err(e) => tracing::warn!(key = %name, error = %e, "background release failed; the lock will expire after its lease"),
        }
    }));
}
