//! Operator actions on locks that are not ours: what `redlease unlock
//! --force` is built on.
//!
//! These bypass the owner check that every [`LockGuard`](crate::LockGuard)
//! operation makes. A forced unlock of a lock that is really held lets a
//! second holder in while the first still works; use it on locks whose
//! holder is known to be gone (a lock without expiry, a crashed tool), and
//! let fencing tokens guard the data.
//!
//! The names of a lock's keys and channels, and the [`LockState`] these
//! functions return, are in [`crate::layout`].

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
pub async fn lock_state(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Peek, None).await
}

/// Removes lock `name` whatever its owner, when it is a hash (a lock), and
/// announces the release so waiters try at once: `0` on [`layout::channel`](crate::layout::channel) for
/// plain waiters, `1` on [`layout::rwlock_channel`](crate::layout::rwlock_channel) for a read-write lock, and to
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
/// whether the key was deleted. A key of another type is left alone and
/// reported (see [`force_unlock_any_type`]). The holder, if alive, learns of
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
pub async fn force_unlock(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Hash, None).await
}

/// As [`force_unlock`], but deletes the key whatever its type, for locks
/// written by other tools (a `SET NX` string, for example).
///
/// # Errors
///
/// As [`lock_state`].
///
/// # Cancel safety
///
/// As [`force_unlock`].
pub async fn force_unlock_any_type(client: &Client, name: &str) -> Result<LockState, Error> {
    run(client, name, Removal::Any, None).await
}

/// As [`force_unlock`] (or [`force_unlock_any_type`] when `any_type`), but
/// only if the key still is as `seen` shows it: the same type and the same
/// owner fields (hold counts may differ). Otherwise nothing is changed and
/// [`LockState::changed`] is true. For a removal an operator confirmed
/// after looking at [`lock_state`]: a lock released and taken by a live
/// holder in between is not removed.
///
/// # Errors
///
/// As [`lock_state`].
///
/// # Cancel safety
///
/// As [`force_unlock`].
pub async fn force_unlock_if_unchanged(
    client: &Client,
    seen: &LockState,
    any_type: bool,
) -> Result<LockState, Error> {
    let removal = if any_type {
        Removal::Any
    } else {
        Removal::Hash
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
    let conn = client.conn();
    let ForceUnlocked(mut state) = conn
        .run(&call(key, removal, conn.publish(), seen))
        .await
        .map_err(|e| Error::from(e).with_key(key))?;
    tracing::debug!(key, ?removal, removed = state.removed, "force unlock");
    state.name = key.to_owned();
    Ok(state)
}
