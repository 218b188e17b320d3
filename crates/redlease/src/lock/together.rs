//! Several plain locks taken in one script call: the members of a
//! [`MultiLock`](crate::MultiLock) that one script may touch together (one
//! hash slot on a cluster, every member on one node), in one round trip
//! and all or none by Redis's own atomicity, where taking them one by one
//! would cost a round trip each and, on a refusal, a release each.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Lock;
use crate::cancel::Withdrawal;
use crate::error::Error;
use crate::guard::LockGuard;
use crate::kind::Kind;
use crate::metrics;
use crate::scope::{self, Reentry};
use crate::scripts::multi::{AcquiredAll, acquire_all};
use crate::wait::Attempt;

/// Why [`Lock::attempt_together`] took not every lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The lock, by its place in the slice, held by someone else.
    pub(crate) member: usize,
    /// Its holder's time to live, if it has one.
    pub(crate) ttl: Option<Duration>,
}

impl Lock {
    /// One attempt to take every lock of `locks`, all plain locks (several
    /// only in Redisson's layout) with one
    /// client and one lease whose keys one script may touch together.
    /// Holds an owner scope has are re-entered first, one call each; the
    /// rest go in one [`acquire_all`] call (or one acquire, for one).
    ///
    /// Each guard taken is pushed on `taken` as soon as it exists, also when
    /// the attempt then fails: the caller releases them (or, dropped, they
    /// release themselves). Returns the refusal when a lock is busy; then
    /// nothing was taken by the script call.
    ///
    /// # Cancel safety
    ///
    /// As [`Lock::try_lock`]: if the script call may have been sent, every
    /// owner field it carried is released behind it in the background.
    pub(crate) async fn attempt_together(
        locks: &[Lock],
        taken: &mut Vec<LockGuard>,
    ) -> Result<Option<Refusal>, Error> {
        // (index in `locks`, lease in ms, new owner field)
        let mut fresh: Vec<(usize, u64, Arc<str>)> = Vec::with_capacity(locks.len());
        for (i, lock) in locks.iter().enumerate() {
            debug_assert!(matches!(lock.kind, Kind::Plain | Kind::Str));
            let lease_ms = lock.prepare()?;
            match scope::reenter(&lock.handle.client, lock.kind, &lock.handle.name).await? {
                Reentry::Reentered(guard) => taken.push(guard),
                // A downgrade is the read side's (of a write hold); a plain
                // lock acquires anew.
                Reentry::Acquire | Reentry::Downgrade(_) => {
                    let field = lock.kind.owner_field(lock.handle.client.new_owner_field());
                    fresh.push((i, lease_ms, field));
                }
            }
        }
        let refused = |member, ttl| Some(Refusal { member, ttl });
        let (first, lease_ms) = match fresh.as_slice() {
            [] => return Ok(None),
            [(i, lease_ms, field)] => {
                return match locks[*i].attempt(*lease_ms, field, false, true).await? {
                    Attempt::Acquired(guard) => {
                        taken.push(guard);
                        Ok(None)
                    }
                    Attempt::Busy(ttl) | Attempt::Short(ttl) => Ok(refused(*i, ttl)),
                };
            }
            [(i, lease_ms, _), ..] => (&locks[*i], *lease_ms),
        };
        let conn = first.handle.client.acquire_conn();
        // Armed until the outcome is known, as a single acquire's: dropped
        // armed, each releases its field behind the call.
        let mut pending: Vec<Withdrawal> = fresh
            .iter()
            .map(|(i, lease_ms, field)| {
                let lock = &locks[*i];
                let retry = lock.withdrawal_retry(*lease_ms, true);
                Withdrawal::pending_acquire(
                    conn,
                    lock.kind,
                    &lock.handle.name,
                    field,
                    *lease_ms,
                    retry,
                )
            })
            .collect();
        let call = acquire_all(
            fresh
                .iter()
                .map(|(i, _, field)| (&*locks[*i].handle.name, &**field)),
            lease_ms,
            first.handle.client.fencing(),
        );
        let sent_at = Instant::now();
        for (i, ..) in &fresh {
            metrics::acquire_attempt(&locks[*i].handle.label);
        }
        let reply = call.run::<AcquiredAll>(conn).await;
        let known = match &reply {
            Ok(AcquiredAll::Granted(tokens)) => tokens.len() == fresh.len(),
            Ok(_) => true,
            // An error reply: the script refused or never ran. Anything else
            // leaves the outcome unknown.
            Err(e) => e.code().is_some(),
        };
        if known {
            pending.iter_mut().for_each(Withdrawal::disarm);
        }
        match reply {
            Ok(AcquiredAll::Granted(tokens)) if known => {
                for ((i, lease_ms, field), token) in fresh.iter().zip(tokens) {
                    taken.push(locks[*i].granted(field, *lease_ms, sent_at, token));
                }
                Ok(None)
            }
            Ok(AcquiredAll::Granted(tokens)) => Err(Error::from(redis::RedisError::from((
                redis::ErrorKind::Parse,
                "acquire_all answered the wrong number of tokens",
                format!(
                    "{} for {} locks (released again)",
                    tokens.len(),
                    fresh.len()
                ),
            )))),
            Ok(AcquiredAll::Busy { member, ttl }) => {
                Ok(refused(fresh.get(member).map_or(fresh[0].0, |m| m.0), ttl))
            }
            Ok(AcquiredAll::NotALock { member }) => {
                let i = fresh.get(member).map_or(fresh[0].0, |m| m.0);
                Err(Error::not_a_lock(&locks[i].handle.name))
            }
            Err(err) => {
                let err = Error::from(err);
                tracing::debug!(error = %err, "multi-lock acquire failed");
                Err(err)
            }
        }
    }
}
