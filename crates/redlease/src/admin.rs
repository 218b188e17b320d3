//! Operator actions on locks that are not ours: what `redlease unlock
//! --force` and `redlease inspect` are built on.
//!
//! These bypass the owner check that every [`LockGuard`](crate::LockGuard)
//! operation makes. A forced unlock of a lock that is really held lets a
//! second holder in while the first still works; use it on locks whose
//! holder is known to be gone (a lock without expiry, a crashed tool), and
//! let fencing tokens guard the data.
//!
//! The key-name functions give the names Redisson and redlease derive from a
//! lock name, so that tools need not copy the format.

use crate::{Client, Error, name, scripts};

/// The channel on which a release of lock `name` is announced
/// (`redisson_lock__channel:{name}`; braces left out when the name already
/// contains `{`). A fair lock's waiter `owner` listens on
/// `<channel>:<owner>`.
pub fn channel(name: &str) -> String {
    name::channel(name)
}

/// The fencing counter of lock `name`, `redisson_lock_token:{name}`: a
/// string integer holding the last fencing token issued, in microseconds of
/// the server's clock when redlease issued it.
pub fn token_key(name: &str) -> String {
    name::token_key(name)
}

/// The fair lock's waiting queue of lock `name`, `redisson_lock_queue:{name}`:
/// a list of owner fields in arrival order.
pub fn queue_key(name: &str) -> String {
    name::queue_key(name)
}

/// The fair lock's waiter deadlines of lock `name`,
/// `redisson_lock_timeout:{name}`: a zset of owner fields scored with the
/// time in milliseconds (server clock) after which the waiter counts as gone.
pub fn timeout_key(name: &str) -> String {
    name::timeout_key(name)
}

/// The channel of Redisson's read-write lock `name`,
/// `redisson_rwlock:{name}`.
pub fn rwlock_channel(name: &str) -> String {
    // Same brace rule as every derived name: swap the prefix of one.
    name::channel(name).replacen("redisson_lock__channel", "redisson_rwlock", 1)
}

/// Which auxiliary key of a lock a key is; see [`derived_from`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Derived {
    /// The fencing counter, [`token_key`].
    Token,
    /// The fair lock's queue, [`queue_key`].
    Queue,
    /// The fair lock's waiter deadlines, [`timeout_key`].
    Timeout,
}

/// Reads a key name as one of a lock's auxiliary keys: which one, and the
/// lock names it can belong to (first the likelier one).
///
/// Two names can derive the same key, since braces are added only when the
/// name has none: `redisson_lock_queue:{a}` belongs to lock `a` or to lock
/// `{a}`, so both are returned and the caller checks which exists.
pub fn derived_from(key: &str) -> Option<(Derived, Vec<String>)> {
    let table = [
        ("redisson_lock_token:", Derived::Token),
        ("redisson_lock_queue:", Derived::Queue),
        ("redisson_lock_timeout:", Derived::Timeout),
    ];
    let (rest, derived) = table
        .iter()
        .find_map(|(prefix, d)| key.strip_prefix(prefix).map(|rest| (rest, *d)))?;
    if !rest.contains('{') {
        return None;
    }
    let mut names = Vec::new();
    let inner = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}'));
    if let Some(inner) = inner.filter(|i| !i.is_empty() && !i.contains('{')) {
        names.push(inner.to_owned());
    }
    names.push(rest.to_owned());
    Some((derived, names))
}

/// One field of a lock hash: an owner `<client-id>:<owner>` and its hold
/// count, as written by redlease or Redisson (a read-write lock's writer is
/// `<client-id>:<owner>:write`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The hash field.
    pub field: String,
    /// The field's value as stored; a lock's is the hold count.
    pub value: String,
}

impl Holder {
    /// The hold count, when the value is an integer.
    pub fn count(&self) -> Option<i64> {
        self.value.parse().ok()
    }
}

/// One entry of a fair lock's queue.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Waiter {
    /// The waiter's owner field.
    pub owner: String,
    /// Its deadline in milliseconds of the server's clock, if it has one.
    pub deadline_ms: Option<f64>,
    /// Returns true if and only if the waiter is gone by the fair lock's
    /// rule: no deadline, or a deadline that has passed.
    pub stale: bool,
}

/// A lock key and its fair queue as [`force_unlock`] found them (before it
/// removed anything), or as [`lock_state`] sees them.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LockState {
    /// The lock name.
    pub name: String,
    /// The key's Redis type: `hash` for a lock, `none` when absent.
    pub key_type: String,
    /// The owner fields of a lock hash (not the `mode` field of a
    /// read-write lock); empty for other types.
    pub holders: Vec<Holder>,
    /// The `mode` field of a Redisson read-write lock (`read` or `write`).
    pub mode: Option<String>,
    /// The key's `PTTL`: milliseconds to live, `-1` for no expiry, `-2` for
    /// no key.
    pub pttl_ms: i64,
    /// Returns true if and only if the key was deleted.
    pub removed: bool,
    /// Returns true if and only if [`force_unlock_if_unchanged`] found the
    /// key different from what it was given (another type or other owner
    /// fields), and so changed nothing.
    pub changed: bool,
    /// The fair queue: list entries in order, then deadline-only entries.
    pub waiters: Vec<Waiter>,
}

impl LockState {
    /// Returns true if and only if the key is absent and no waiter is
    /// queued: there is nothing to unlock.
    pub fn is_empty(&self) -> bool {
        self.key_type == "none" && self.waiters.is_empty()
    }

    /// Returns true if and only if the key is a hash, the type of a lock.
    pub fn is_lock(&self) -> bool {
        self.key_type == "hash"
    }
}

/// What the forced unlock may remove.
#[derive(Clone, Copy)]
enum Mode {
    Peek,
    Hash,
    Any,
}

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
    run(client, name, Mode::Peek).await
}

/// Removes lock `name` whatever its owner, when it is a hash (a lock), and
/// announces the release so waiters try at once: `0` on [`channel`] for
/// plain waiters, `1` on [`rwlock_channel`] for a read-write lock, and to
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
    run(client, name, Mode::Hash).await
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
    run(client, name, Mode::Any).await
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
    let mode = if any_type { Mode::Any } else { Mode::Hash };
    run_with(client, &seen.name, mode, Some(seen)).await
}

/// The script's reply: type, hash fields, pttl, removed, queue, changed.
type Reply = (String, Vec<String>, i64, i64, Vec<String>, i64);

async fn run(client: &Client, key: &str, mode: Mode) -> Result<LockState, Error> {
    run_with(client, key, mode, None).await
}

async fn run_with(
    client: &Client,
    key: &str,
    mode: Mode,
    seen: Option<&LockState>,
) -> Result<LockState, Error> {
    name::validate(key)?;
    let mut conn = client.inner.conn.clone();
    let mode = match mode {
        Mode::Peek => "peek",
        Mode::Hash => "hash",
        Mode::Any => "any",
    };
    let mut call = scripts::FORCE_UNLOCK.prepare_invoke();
    call.key(key)
        .key(name::channel(key))
        .key(name::queue_key(key))
        .key(name::timeout_key(key))
        .key(rwlock_channel(key))
        .arg(scripts::UNLOCK_MESSAGE)
        .arg(mode);
    if let Some(seen) = seen {
        call.arg("expect").arg(&seen.key_type);
        for holder in &seen.holders {
            call.arg(&holder.field);
        }
        if seen.mode.is_some() {
            call.arg("mode");
        }
    }
    let (key_type, fields, pttl_ms, removed, queue, changed): Reply = call
        .invoke_async(&mut conn)
        .await
        .map_err(|e| Error::from(e).with_key(key))?;
    tracing::debug!(key, mode, removed, "force unlock");
    let mut holders = Vec::new();
    let mut lock_mode = None;
    for pair in fields.chunks_exact(2) {
        if pair[0] == "mode" {
            lock_mode = Some(pair[1].clone());
        } else {
            holders.push(Holder {
                field: pair[0].clone(),
                value: pair[1].clone(),
            });
        }
    }
    let waiters = queue.chunks_exact(3).map(|entry| Waiter {
        owner: entry[0].clone(),
        deadline_ms: entry[1].parse().ok(),
        stale: entry[2] == "1",
    });
    Ok(LockState {
        name: key.to_owned(),
        key_type,
        holders,
        mode: lock_mode,
        pttl_ms,
        removed: removed == 1,
        changed: changed == 1,
        waiters: waiters.collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_round_trip() {
        for lock in ["orders:1", "lock:{sku}:7", "a"] {
            for (key, kind) in [
                (token_key(lock), Derived::Token),
                (queue_key(lock), Derived::Queue),
                (timeout_key(lock), Derived::Timeout),
            ] {
                let (found, names) = derived_from(&key).expect(&key);
                assert_eq!(found, kind);
                assert_eq!(names[0], lock, "{key}");
            }
        }
        // `{a}` derives the same names as `a`; both are offered.
        assert_eq!(
            derived_from(&queue_key("{a}")).unwrap().1,
            vec!["a".to_owned(), "{a}".to_owned()]
        );
        assert_eq!(derived_from("orders:1"), None);
        assert_eq!(derived_from("redisson_lock_token:x"), None);
    }

    #[test]
    fn rwlock_channel_follows_the_brace_rule() {
        assert_eq!(rwlock_channel("a"), "redisson_rwlock:{a}");
        assert_eq!(rwlock_channel("{a}:b"), "redisson_rwlock:{a}:b");
    }
}
