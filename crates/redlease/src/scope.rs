//! Owner scopes: within one, taking a lock the scope already holds
//! re-enters it instead of waiting for itself.
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

use crate::guard::{Held, LeaseMode, LockGuard, Registration};
use crate::watchdog::LostSender;

tokio::task_local! {
    static SCOPE: RefCell<Holds>;
}

/// Holds of one scope by (client id, lock name). An entry outlives its
/// hold (the registration is weak) and is replaced by the next acquisition.
type Holds = HashMap<(String, String), Entry>;

struct Entry {
    field: Arc<str>,
    lease_ms: u64,
    mode: LeaseMode,
    lost: LostSender,
    /// Alive while any guard of the hold is.
    registration: Weak<Registration>,
    token: u64,
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
/// key's expiry to the full lease again; the guards keep reporting the first
/// acquisition's expiry, so they never claim more time than they have.
///
/// # Cancel safety
///
/// `scope` is as cancel safe as `fut`: dropping it drops `fut`, and the
/// guards `fut` held release as dropped guards do.
pub async fn scope<F: Future>(fut: F) -> F::Output {
    if SCOPE.try_with(|_| ()).is_ok() {
        fut.await
    } else {
        SCOPE.scope(RefCell::new(Holds::new()), fut).await
    }
}

/// The hold that the current scope has on `name` through client `client_id`,
/// if the scope has one that is still held.
pub(crate) fn lookup(client_id: &str, name: &str) -> Option<Held> {
    SCOPE
        .try_with(|holds| {
            let mut holds = holds.borrow_mut();
            let key = (client_id.to_owned(), name.to_owned());
            let entry = holds.get(&key)?;
            match entry.registration.upgrade() {
                Some(registration) => Some(Held {
                    field: entry.field.clone(),
                    lease_ms: entry.lease_ms,
                    mode: entry.mode,
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

/// Records a new hold in the current scope, if there is one.
pub(crate) fn remember(client_id: &str, guard: &LockGuard) {
    let Some(held) = guard.held() else { return };
    let _ = SCOPE.try_with(|holds| {
        holds.borrow_mut().insert(
            (client_id.to_owned(), guard.name().to_owned()),
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
