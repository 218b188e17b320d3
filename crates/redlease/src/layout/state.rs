//! [`LockState`]: what Redis holds for one lock name.

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

/// A lock key and its fair queue, as
/// [`admin::lock_state`](crate::admin::lock_state) reads them or
/// [`admin::force_unlock`](crate::admin::force_unlock) found them (before it
/// removed anything).
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
    /// Returns true if and only if
    /// [`admin::force_unlock_if_unchanged`](crate::admin::force_unlock_if_unchanged)
    /// found the key different from what it was given (another type or
    /// other owner fields), and so changed nothing.
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
