//! Operator actions on locks that are not ours: what `redlease inspect`
//! and `redlease unlock --force` are built on.
//!
//! [`read`], [`scan`] and [`leftovers`] only read (plain commands, no
//! scripts: they work on a replica and for an ACL user who may only read);
//! [`lock_state`] and the `force_unlock` family go through one script each,
//! and [`gc`] through one per removal.
//!
//! These bypass the owner check that every [`LockGuard`](crate::LockGuard)
//! operation makes. A forced unlock of a lock that is really held lets a
//! second holder in while the first still works; use it on locks whose
//! holder is known to be gone (a lock without expiry, a crashed tool), and
//! let fencing tokens guard the data.
//!
//! The names of a lock's keys and channels, and the [`LockState`] these
//! functions return, are in [`crate::layout`].

mod gc;
mod read;

pub use gc::{Leftover, LeftoverKind, Leftovers, gc, leftovers};
pub use read::{Scan, read, scan};

use crate::client::Client;
use crate::error::Error;
use crate::layout::LockState;
use crate::name;
use crate::scripts::admin::{ForceUnlocked, Removal, force_unlock as call};

/// Reads lock `name` and its fair queue as [`force_unlock`] would find
/// them, without changing anything. One script call, so the snapshot is
/// consistent.
///
/// # Errors
///
/// An invalid name gives an error for which
/// [`is_invalid_argument`](Error::is_invalid_argument) is true; connection
/// and server errors as they come.
///
/// # Cancel safety
///
/// Cancel safe: it only reads.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::admin;
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:admin:state").try_lock().await?;
/// let state = admin::lock_state(&client, "doc:admin:state").await?;
/// assert_eq!(state.owners()[0].field, guard.owner());
/// assert_eq!(state.lock_token(), guard.fencing_token());
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
pub async fn lock_state(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Peek, None).await
}

/// Removes lock `name` whatever its owner, when it is a lock: a hash
/// (Redisson's layout), or a lock of the string layout (a string whose
/// value is not a count, see [`LockState::kind`] and
/// [`LockState::is_lock`]). It announces the release so waiters try at
/// once: `0` on [`layout::channel`](crate::layout::channel) for plain and
/// string-layout waiters, `1` on [`layout::rwlock_channel`](crate::layout::rwlock_channel) for a read-write lock, and to
/// the head of a fair queue on its own channel. Queue entries of gone
/// waiters are removed too (also when the lock key is absent: a stuck
/// queue); live waiters keep their places. The fencing counter stays, so
/// later tokens still increase. All in one script.
///
/// Stale entries are removed wherever they are in the queue. Redisson's own
/// fair lock only drops them from the head, and its deadlines for waiters
/// behind the head are estimates, so a live Redisson waiter far back in a
/// long queue can be taken for gone; it then queues again at the tail when
/// it next tries. A Redisson read-write lock's per-reader timeout keys are
/// left to expire on their own.
///
/// Returns the state found before the removal: [`LockState::removed`] says
/// whether the key was deleted. Any other key (a semaphore's or a latch's
/// count, a list, ...) is left alone and reported (see
/// [`force_unlock_any_type`]). The holder, if alive, learns of
/// the loss at its next renewal ([`LostReason::OwnerChanged`](crate::LostReason::OwnerChanged)).
///
/// # Errors
///
/// As [`lock_state`].
///
/// # Cancel safety
///
/// The script runs whole or not at all; a dropped future leaves either
/// outcome, and calling again is harmless.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::admin;
///
/// let client = redlease::Client::connect(&url).await?;
/// let guard = client.lock("doc:admin:force").try_lock().await?;
/// // Its holder is known to be gone (say): an operator removes the lock.
/// let found = admin::force_unlock(&client, "doc:admin:force").await?;
/// assert!(found.removed);
/// assert_eq!(found.owners()[0].field, guard.owner()); // as it was found
/// assert!(guard.unlock().await.unwrap_err().is_not_owner());
/// # Ok(())
/// # }
/// ```
pub async fn force_unlock(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Lock, None).await
}

/// As [`force_unlock`], but deletes the key whatever its type or value, for
/// keys that are no lock by [`force_unlock`]'s rule (a string integer, a
/// list, a big hash).
///
/// # Errors
///
/// As [`lock_state`].
///
/// # Cancel safety
///
/// As [`force_unlock`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::admin;
///
/// let client = redlease::Client::connect(&url).await?;
/// let mut redis = redlease_testkit::RedisServer::shared().connection();
/// // A counter where a lock was expected:
/// redis::cmd("SET").arg("doc:admin:any-type").arg("7").query::<()>(&mut redis)?;
/// let found = admin::force_unlock(&client, "doc:admin:any-type").await?;
/// assert!(!found.removed && found.key_type == "string"); // a count, no lock: left alone
/// let found = admin::force_unlock_any_type(&client, "doc:admin:any-type").await?;
/// assert!(found.removed);
/// # Ok(())
/// # }
/// ```
pub async fn force_unlock_any_type(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Any, None).await
}

/// As [`force_unlock`] (or [`force_unlock_any_type`] when `any_type`), but
/// only if the key still is as `seen` shows it: the same type, the same
/// owner fields of a hash (hold counts may differ), and the same value of
/// a string (a string-layout lock's owner, compared whole by
/// [`LockState::value_sha1`]), checked in the same script as the removal.
/// Otherwise nothing is changed and [`LockState::changed`] is true. For a
/// removal an operator confirmed after looking at [`lock_state`]: a lock
/// released and taken by a live holder in between, even of the same type,
/// is not removed. `seen` must come from [`lock_state`] (or a forced
/// unlock): a string read by [`read`] has no
/// digest, so it always counts as changed.
///
/// # Errors
///
/// As [`lock_state`].
///
/// # Cancel safety
///
/// As [`force_unlock`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::admin;
///
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:admin:if-unchanged");
/// let guard = lock.try_lock().await?;
/// let seen = admin::lock_state(&client, lock.name()).await?; // shown to the operator
/// guard.unlock().await?;
/// let _live = lock.try_lock().await?; // a live holder took it in between
/// let state = admin::force_unlock_if_unchanged(&client, &seen, false).await?;
/// assert!(state.changed && !state.removed); // left alone
/// # Ok(())
/// # }
/// ```
pub async fn force_unlock_if_unchanged(
    client: &Client,
    seen: &LockState,
    any_type: bool,
) -> Result<LockState, Error> {
    let removal = if any_type {
        Removal::Any
    } else {
        Removal::Lock
    };
    run(client, &seen.name, removal, Some(seen)).await
}

async fn run(
    client: &Client,
    key: &str,
    removal: Removal,
    seen: Option<&LockState>,
) -> Result<LockState, Error> {
    name::validate(key)?;
    let conn = client.shared().conn();
    let ForceUnlocked(mut state) = call(key, removal, conn.publish(), seen)
        .run(conn)
        .await
        .map_err(|e| Error::from(e).with_key(key))?;
    tracing::debug!(key, ?removal, removed = state.removed, "force unlock");
    state.name = key.to_owned();
    Ok(state)
}
