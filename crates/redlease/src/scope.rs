//! `redlease::scope(fut)` and re-entrant locking: inside a scope, taking a
//! lock the scope already holds re-enters it instead of waiting for itself.
//!
//! Async tasks move between threads, so a thread cannot be the owner, as it
//! is in Redisson. A scope is an explicit owner instead: a task-local map
//! from (client, lock name) to the hold that the scope's first acquisition
//! made. A later acquisition in the scope finds it and re-enters: it raises
//! the hold count of the same owner field in Redis (one script call, no
//! wait) and shares the first guard's watchdog registration, fencing token
//! and loss signal.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};

use crate::cancel;
use crate::connection::Connection;
use crate::error::Error;
use crate::guard::LockGuard;
use crate::hold::{Held, Hold, LeaseMode, Registration};
use crate::kind::{Kind, Side};
use crate::lost::LostSignal;
use crate::release;
use crate::shared::Shared;

tokio::task_local! {
    static SCOPE: RefCell<Holds>;
}

/// Holds of one scope by (client id, lock name, side). An entry outlives
/// its hold (the registration is weak) and is replaced by the next
/// acquisition.
type Holds = HashMap<(String, String, Side), Entry>;

struct Entry {
    field: Arc<str>,
    lease_ms: u64,
    mode: LeaseMode,
    lost: LostSignal,
    /// Alive while any guard of the hold is.
    registration: Weak<Registration>,
    token: Option<u64>,
}

/// Runs `fut` as one lock owner: a lock that `fut` holds and takes again
/// through the same [`Client`](crate::Client) re-enters it. The hold count
/// in the lock hash goes up, and down again on each release, and the key is
/// deleted at the last one; the re-entry costs one script call, with no wait
/// and no renewal of its own, and its guard carries the first acquisition's
/// [fencing token](LockGuard::fencing_token) and lease mode (the owner is the
/// same, so its writes are one holder's writes).
///
/// Outside a scope every acquisition is an owner of its own, and two
/// acquisitions of one lock exclude each other, in one task or not. The
/// scope belongs to the task that awaits `fut`: tasks spawned inside it are
/// not part of it. A scope inside a scope is the outer scope.
/// `#[distributed_lock]` functions run in a scope.
///
/// If the scope's hold was lost (it expired or was taken over, or the
/// library must assume so, as [`LockGuard::is_lost`] says), a later
/// acquisition in the scope does not re-enter: it acquires anew, waiting as
/// usual.
///
/// The owner is the scope, not a call stack: branches that run
/// concurrently inside one scope (`join!`, `select!`) are one owner, and an
/// acquisition in one branch re-enters a hold taken in another. Give each
/// branch that must exclude the others a task (or a scope) of its own.
/// Re-entering a fixed-lease hold, and releasing a re-entered guard, set the
/// key's expiry to the full lease again (the last one
/// [`extend`](LockGuard::extend) asked for, if any); the guards keep
/// reporting the expiry of the acquisition or the last extension, so they
/// never claim more time than they have.
///
/// # Cancel safety
///
/// `scope` is as cancel safe as `fut`: dropping it drops `fut`, and the
/// guards `fut` held release as dropped guards do.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:scope:reenter");
/// redlease::scope(async {
///     let outer = lock.try_lock().await?;
///     // ... a helper that takes the same lock: re-entered, not busy ...
///     let inner = lock.try_lock().await?;
///     assert_eq!(inner.fencing_token(), outer.fencing_token());
///     inner.unlock().await?;
///     outer.unlock().await
/// })
/// .await?;
///
/// // Outside a scope, every acquisition is an owner of its own.
/// let guard = lock.try_lock().await?;
/// assert!(lock.try_lock().await.unwrap_err().is_busy());
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
pub async fn scope<F: Future>(fut: F) -> F::Output {
    // Inside a scope already: a fresh map would hide the outer scope's
    // holds, and taking one of them again would wait for itself.
    if SCOPE.try_with(|_| ()).is_ok() {
        fut.await
    } else {
        SCOPE.scope(RefCell::new(Holds::new()), fut).await
    }
}

/// The hold that the current scope has on `name`'s `side` through client
/// `client_id`, if the scope has one that is still held.
fn lookup(client_id: &str, name: &str, side: Side) -> Option<Held> {
    SCOPE
        .try_with(|holds| {
            let mut holds = holds.borrow_mut();
            let key = (client_id.to_owned(), name.to_owned(), side);
            let entry = holds.get(&key)?;
            match entry.registration.upgrade() {
                Some(registration) => Some(Held {
                    field: entry.field.clone(),
                    lease_ms: entry.lease_ms,
                    mode: entry.mode.clone(),
                    lost: entry.lost.clone(),
                    registration,
                    token: entry.token,
                }),
                None => {
                    holds.remove(&key);
                    None
                }
            }
        })
        .ok()
        .flatten()
}

/// Records a new hold of `kind` in the current scope, if there is one.
pub(crate) fn remember(client_id: &str, kind: Kind, guard: &LockGuard) {
    let Some(held) = guard.held() else { return };
    let _ = SCOPE.try_with(|holds| {
        holds.borrow_mut().insert(
            (client_id.to_owned(), guard.name().to_owned(), kind.side()),
            Entry {
                field: held.field,
                lease_ms: held.lease_ms,
                mode: held.mode,
                lost: held.lost,
                registration: Arc::downgrade(&held.registration),
                token: held.token,
            },
        );
    });
}

/// What an acquisition in an owner scope does instead of waiting.
pub(crate) enum Reentry {
    /// The scope held the lock: here is one more guard of its hold.
    Reentered(LockGuard),
    /// Nothing to re-enter: acquire anew, under a new owner.
    Acquire,
    /// The scope holds the write side of this read-write lock: acquire the
    /// read side as the same owner (this reader field), which the write
    /// hold lets in at once (a downgrade, as in Redisson).
    Downgrade(Arc<str>),
}

/// In an owner scope that holds lock `name` through `client`: re-enters the
/// hold. [`Reentry::Acquire`] outside a scope, or when the scope's hold was
/// lost, so the caller acquires anew.
///
/// # Errors
///
/// [`is_invalid_argument`](Error::is_invalid_argument) for the write side
/// of a read-write lock whose read side the scope holds: an upgrade would
/// wait for the scope's own read hold for ever (Redisson's does).
///
/// # Cancel safety
///
/// The owner field is shared with the scope's other guards, so a cancelled
/// caller must neither leave the count raised nor release blindly (if the
/// script never ran, that would take away a hold of another guard). The
/// script runs to completion in a task of its own, and a successful reply
/// that nobody took is undone ([`cancel::run_or_undo`]).
pub(crate) async fn reenter(
    client: &Shared,
    kind: Kind,
    name: &Arc<str>,
) -> Result<Reentry, Error> {
    let live = |side| lookup(client.id(), name, side).filter(|held| !held.is_lost(client));
    // Lost by our own reckoning, a hold may still be in Redis for a moment
    // (renewed too late, or a fixed lease by our clock): re-entering would
    // hand out a guard that nothing renews.
    let Some(held) = live(kind.side()) else {
        return match kind {
            Kind::Write if live(Side::Read).is_some() => Err(Error::invalid(format!(
                "cannot take the write lock while this scope holds the read lock of {name}: \
                 release the read lock first (an upgrade would wait for itself)"
            ))
            .with_key(name)),
            // The writer's field less `:write` is the same owner's reader
            // field, which the read acquire lets in under that write hold.
            Kind::Read => Ok(live(Side::Write)
                .and_then(|writer| writer.field.strip_suffix(":write").map(Arc::from))
                .map_or(Reentry::Acquire, Reentry::Downgrade)),
            _ => Ok(Reentry::Acquire),
        };
    };
    // A fixed lease's current length: `extend` may have changed it.
    let lease_ms = held.mode.lease_ms(held.lease_ms);
    let Some(call) = kind.reenter(name, lease_ms, &held.field) else {
        // The hold count lives in the client (the string layout): nothing
        // to send, and nothing a cancellation could leave behind.
        tracing::debug!(key = %name, "lock re-entered");
        let hold = Hold::reentered(client.clone(), kind, name.clone(), held);
        return Ok(Reentry::Reentered(LockGuard::new(hold)));
    };
    let undo = Undo {
        conn: client.conn().clone(),
        kind,
        name: name.clone(),
        field: held.field.clone(),
        lease_ms,
    };
    let reply = cancel::run_or_undo(client.conn(), call, |took: &bool| *took, move || undo.run())
        .await
        .ok_or_else(|| Error::runtime_stopped("a re-entry"))?;
    // An error may come after the script ran (a lost reply): the count may
    // then stay raised, and the key outlives the scope's last release by at
    // most one lease, as a crashed holder's would.
    if !reply.map_err(|e| Error::from(e).with_key(name))? {
        // The scope's hold is gone: expired, or taken over.
        return Ok(Reentry::Acquire);
    }
    tracing::debug!(key = %name, "lock re-entered");
    let hold = Hold::reentered(client.clone(), kind, name.clone(), held);
    Ok(Reentry::Reentered(LockGuard::new(hold)))
}

/// Takes back one re-entry of a shared owner field.
#[derive(Clone)]
struct Undo {
    conn: Connection,
    kind: Kind,
    name: Arc<str>,
    field: Arc<str>,
    lease_ms: u64,
}

impl Undo {
    fn run(&self) {
        release::in_background(
            &self.conn,
            self.kind,
            &self.name,
            &self.field,
            self.lease_ms,
            None,
            // The field is shared with the scope's other holds: a repeat
            // after a lost reply could take back one of theirs.
            release::Retry::NotRun(std::time::Duration::from_millis(self.lease_ms)),
        );
    }
}
