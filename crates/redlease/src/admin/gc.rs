//! What locks leave behind, and its removal: [`leftovers`] reads (plain
//! commands, so it works on a replica and for a user who may only read),
//! [`gc`] removes what is provably dead, each removal one script that
//! checks again ([`crate::scripts::gc`]).

use std::collections::{BTreeMap, BTreeSet};

use super::read::{each, get, read_with, walk};
use crate::client::Client;
use crate::error::Error;
use crate::layout::{
    self, Derived, LEADER_PREFIX, LockState, REQUEST_PREFIX, UNLOCK_LATCH_PREFIX, derived_from,
    names_behind, permits_key_owner,
};
use crate::scripts::{commands, gc as scripts};

/// What kind of key a [`Leftover`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LeftoverKind {
    /// The fencing counter of a name nobody holds,
    /// [`token_key`](crate::layout::token_key). Never collected: a later
    /// lock of the name must go on from it (a Redisson `RFencedLock` would
    /// start again at 1, below tokens a database already saw). redlease
    /// gives it a day's expiry from each token; Redisson's has none.
    FencingCounter,
    /// A fair lock's queue with entries whose deadline has passed. The ones
    /// at the head are collected, as every fair acquire would; those
    /// behind a live waiter are not provably dead (Redisson's deadlines
    /// behind the head are estimates).
    FairQueue,
    /// An expirable semaphore's permits whose lease has passed; collected
    /// by giving them back, as every acquire would.
    ExpiredPermits,
    /// A read-write lock's per-hold timeout key whose reader holds the lock
    /// no more; collected.
    ReadTimeout,
    /// An election's record whose leader holds the lock no more (it died
    /// without resigning); collected.
    LeaderRecord,
    /// The unlock latch of a release (#37): expires by itself in seconds.
    UnlockLatch,
    /// The record of a request that changed a semaphore's or a latch's
    /// count (#36): expires by itself in seconds.
    RequestRecord,
}

impl LeftoverKind {
    /// Its name in `redlease inspect --leftovers` and `redlease gc`.
    pub fn name(self) -> &'static str {
        match self {
            LeftoverKind::FencingCounter => "fencing-counter",
            LeftoverKind::FairQueue => "fair-queue",
            LeftoverKind::ExpiredPermits => "expired-permits",
            LeftoverKind::ReadTimeout => "read-timeout",
            LeftoverKind::LeaderRecord => "leader-record",
            LeftoverKind::UnlockLatch => "unlock-latch",
            LeftoverKind::RequestRecord => "request-record",
        }
    }

    /// Returns true if and only if [`gc`] removes dead entries of this
    /// kind.
    pub fn is_collected(self) -> bool {
        matches!(
            self,
            LeftoverKind::FairQueue
                | LeftoverKind::ExpiredPermits
                | LeftoverKind::ReadTimeout
                | LeftoverKind::LeaderRecord
        )
    }
}

/// One key left behind by a lock, a semaphore or an election.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Leftover {
    /// The key.
    pub key: String,
    /// What it is.
    pub kind: LeftoverKind,
    /// The names (of a lock, a semaphore, an election) it can belong to,
    /// the likelier first (see [`derived_from`]); empty for latches and
    /// request records.
    pub names: Vec<String>,
    /// A read-timeout key's reader field, or a leader record's owner field.
    pub owner: Option<String>,
    /// On a cluster, the master it was found on (`host:port`).
    pub node: Option<String>,
    /// Its entries: a fair queue's waiters, a semaphore's acquired permits,
    /// else 1.
    pub entries: u64,
    /// Entries whose time is up (of the first 100 read, for a queue or a
    /// semaphore), or, for a key that is dead as a whole, 1.
    pub expired: u64,
    /// Of those, the ones [`gc`] removes: all for a collected kind, but a
    /// fair queue's behind a live waiter; 0 for other kinds.
    pub dead: u64,
    /// What [`gc`] removed (re-checked by its script: a leftover that came
    /// back to life or was cleaned by a client meanwhile gives 0); always 0
    /// from [`leftovers`].
    pub removed: u64,
    /// Its time to live in milliseconds (`-1`: no expiry).
    pub ttl_ms: i64,
    /// Its size, by `MEMORY USAGE`; `None` where that is refused.
    pub bytes: Option<u64>,
}

/// One call of [`leftovers`] or [`gc`]: what was found, and where to go on.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Leftovers {
    /// Where the scan stopped, as [`Scan::cursor`](super::Scan::cursor).
    pub cursor: u64,
    /// Keys SCAN returned in this call.
    pub keys_seen: usize,
    /// The leftovers among them, sorted by node, kind, key.
    pub leftovers: Vec<Leftover>,
}

/// Walks the keys matching `pattern` as [`scan`](super::scan) does (from
/// `cursor`, about `limit` keys, every master of a cluster) and reports
/// what locks left behind: fencing counters of names that hold nothing,
/// fair-queue entries and permits whose time is up, read-write lock
/// timeout keys and election records of holders gone, unlock latches and
/// request records. Keys of live holds are no leftovers and are not shown.
/// Reads only (no scripts).
///
/// # Errors
///
/// As [`scan`](super::scan).
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
/// use redlease::admin::{self, LeftoverKind};
///
/// let client = redlease::Client::connect(&url).await?;
/// client.lock("doc:leftovers:a").try_lock().await?.unlock().await?;
/// let page = admin::leftovers(&client, "*doc:leftovers:a*", 0, 1_000).await?;
/// // The fencing counter stays when the lock is gone, by design.
/// assert_eq!(page.leftovers[0].kind, LeftoverKind::FencingCounter);
/// assert_eq!(page.leftovers[0].dead, 0); // and gc leaves it
/// # Ok(())
/// # }
/// ```
pub async fn leftovers(
    client: &Client,
    pattern: &str,
    cursor: u64,
    limit: u64,
) -> Result<Leftovers, Error> {
    let conn = client.shared().conn();
    let walked = walk(conn, pattern, cursor, limit).await?;
    let mut found = Vec::new();
    for (index, keys) in &walked.found {
        let node = &walked.masters[*index].address;
        let mut classes: BTreeMap<String, Class> = BTreeMap::new();
        for key in keys {
            if let Some((key, class)) = classify(key) {
                classes.entry(key).or_insert(class);
            }
        }
        let names: BTreeSet<String> = classes
            .values()
            .flat_map(|c| c.names.iter().cloned())
            .collect();
        let names: Vec<String> = names.into_iter().collect();
        let states: BTreeMap<String, LockState> = names
            .iter()
            .cloned()
            .zip(read_with(conn, &names).await?)
            .collect();
        let pipe = commands::leftover_facts(
            classes
                .iter()
                .map(|(key, c)| (key.as_str(), c.kind == LeftoverKind::LeaderRecord)),
        );
        let facts = each(conn, &pipe).await?;
        for ((key, class), facts) in classes.into_iter().zip(facts.chunks_exact(3)) {
            let ttl_ms = get::<i64>(&facts[0]).unwrap_or(-2);
            if ttl_ms == -2 {
                continue; // gone since the scan
            }
            let owner = match class.kind {
                LeftoverKind::LeaderRecord => get::<String>(&facts[2]),
                _ => class.field,
            };
            let of = |name: &String| states.get(name);
            let Some((entries, expired, dead)) = judge(class.kind, &class.names, &owner, of) else {
                continue;
            };
            found.push(Leftover {
                key,
                kind: class.kind,
                names: class.names,
                owner,
                node: node.clone(),
                entries,
                expired,
                dead,
                removed: 0,
                ttl_ms,
                bytes: get::<u64>(&facts[1]),
            });
        }
    }
    found.sort_by(|a, b| (&a.node, a.kind, &a.key).cmp(&(&b.node, b.kind, &b.key)));
    Ok(Leftovers {
        cursor: walked.cursor,
        keys_seen: walked.keys_seen,
        leftovers: found,
    })
}

/// As [`leftovers`], then removes what is provably dead: a fair queue's
/// dead head entries (the new head told when the lock is free), an
/// expirable semaphore's expired permits (given back), timeout keys of
/// readers gone, election records of leaders gone. Each removal is one
/// script that checks again by the clients' own rule, so it is safe beside
/// live Java and Rust clients; [`Leftover::removed`] says what it removed.
/// Fencing counters, unlock latches and request records are left.
///
/// # Errors
///
/// As [`scan`](super::scan); a script's error (a semaphore's count that
/// is no integer, a refused command) is returned with its key, and stops
/// the call: what was removed before stays removed.
///
/// # Cancel safety
///
/// Each removal runs whole or not at all; a dropped future leaves some
/// done, and calling again is harmless.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::admin::{self, LeftoverKind};
///
/// let client = redlease::Client::connect(&url).await?;
/// // A fair-queue entry whose waiter died (its deadline passed):
/// let mut redis = redlease_testkit::RedisServer::shared().connection();
/// redis::pipe()
///     .rpush("redisson_lock_queue:{doc:gc:fair}", "gone:1")
///     .zadd("redisson_lock_timeout:{doc:gc:fair}", "gone:1", 1)
///     .exec(&mut redis)?;
/// let page = admin::gc(&client, "redisson_lock_*{doc:gc:fair}", 0, 1_000).await?;
/// assert_eq!(page.leftovers[0].kind, LeftoverKind::FairQueue);
/// assert_eq!(page.leftovers[0].removed, 1);
/// # Ok(())
/// # }
/// ```
pub async fn gc(
    client: &Client,
    pattern: &str,
    cursor: u64,
    limit: u64,
) -> Result<Leftovers, Error> {
    let mut page = leftovers(client, pattern, cursor, limit).await?;
    let conn = client.shared().conn();
    for left in page.leftovers.iter_mut().filter(|l| l.dead > 0) {
        let call = match (left.kind, left.names.first(), &left.owner) {
            (LeftoverKind::FairQueue, Some(name), _) => scripts::fair(name, conn.publish()),
            (LeftoverKind::ExpiredPermits, Some(name), _) => scripts::permits(name, conn.publish()),
            (LeftoverKind::ReadTimeout, _, Some(field)) => {
                scripts::read_timeout(&left.key, &left.names, field)
            }
            (LeftoverKind::LeaderRecord, _, _) => scripts::leader(&left.key, &left.names),
            _ => continue,
        };
        left.removed = call
            .run(conn)
            .await
            .map_err(|e| Error::from(e).with_key(&left.key))?;
        tracing::debug!(
            key = left.key,
            kind = left.kind.name(),
            removed = left.removed,
            "gc"
        );
    }
    Ok(page)
}

/// A key's kind, the names it can belong to, and a reader's field.
struct Class {
    kind: LeftoverKind,
    names: Vec<String>,
    field: Option<String>,
}

/// What a key is by its name alone, under the key that stands for it (a
/// fair lock's queue and deadlines count once, under the queue).
fn classify(key: &str) -> Option<(String, Class)> {
    let class = |kind, names| Class {
        kind,
        names,
        field: None,
    };
    if let Some((derived, names)) = derived_from(key) {
        return Some(match derived {
            Derived::Token => (key.to_owned(), class(LeftoverKind::FencingCounter, names)),
            _ => (
                layout::queue_key(&names[0]),
                class(LeftoverKind::FairQueue, names),
            ),
        });
    }
    if let Some(names) = permits_key_owner(key) {
        return Some((key.to_owned(), class(LeftoverKind::ExpiredPermits, names)));
    }
    if let Some(rest) = under(key, LEADER_PREFIX) {
        return Some((
            key.to_owned(),
            class(LeftoverKind::LeaderRecord, names_behind(rest)?),
        ));
    }
    if under(key, UNLOCK_LATCH_PREFIX).is_some() {
        return Some((key.to_owned(), class(LeftoverKind::UnlockLatch, Vec::new())));
    }
    if under(key, REQUEST_PREFIX).is_some() {
        return Some((
            key.to_owned(),
            class(LeftoverKind::RequestRecord, Vec::new()),
        ));
    }
    let (rest, n) = key.rsplit_once(":rwlock_timeout:")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `<base>:<client-id>:<n>`: a reader's field is the last two parts.
    let (front, thread) = rest.rsplit_once(':')?;
    let (base, client) = front.rsplit_once(':')?;
    Some((
        key.to_owned(),
        Class {
            kind: LeftoverKind::ReadTimeout,
            names: names_behind(base)?,
            field: Some(format!("{client}:{thread}")),
        },
    ))
}

/// `rest` of `prefix:rest`.
fn under<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    key.strip_prefix(prefix)?.strip_prefix(':')
}

/// Whether a classified key is a leftover, from the states of the names it
/// can belong to: `(entries, expired, dead)`, or `None` when it serves a
/// live hold.
fn judge<'a>(
    kind: LeftoverKind,
    names: &[String],
    owner: &Option<String>,
    state: impl Fn(&String) -> Option<&'a LockState>,
) -> Option<(u64, u64, u64)> {
    let states: Vec<&LockState> = names.iter().filter_map(state).collect();
    let holds = |owner: &str| {
        states
            .iter()
            .any(|s| s.owners().iter().any(|h| h.field == owner) || s.string_owner() == Some(owner))
    };
    match kind {
        LeftoverKind::FencingCounter => states
            .iter()
            .all(|s| s.key_type == "none")
            .then_some((1, 0, 0)),
        LeftoverKind::FairQueue => {
            let state = states.first()?;
            let queued = (state.queue_len as usize).min(state.waiters.len());
            // The judge's planted bug (#40) takes live waiters too.
            let planted = crate::plant::on(crate::plant::Plant::GcPrunesLiveWaiters);
            let expired = state.waiters.iter().filter(|w| planted || w.stale).count() as u64;
            let dead = state.waiters[..queued]
                .iter()
                .take_while(|w| planted || w.stale)
                .count() as u64;
            (expired > 0).then_some((state.queue_len, expired, dead))
        }
        LeftoverKind::ExpiredPermits => {
            let counted = states.iter().find(|s| s.key_type == "string");
            let state = counted.or(states.first())?;
            let now_ms = (state.server_time_us / 1_000) as f64;
            // The judge's planted bug (#40) takes live permits too.
            let planted = crate::plant::on(crate::plant::Plant::GcReclaimsLivePermits);
            let expired = state
                .permits
                .iter()
                .filter(|p| planted || p.expires_ms.is_some_and(|e| e <= now_ms))
                .count() as u64;
            let dead = if counted.is_some() { expired } else { 0 };
            (expired > 0).then_some((state.permits_len, expired, dead))
        }
        LeftoverKind::ReadTimeout | LeftoverKind::LeaderRecord => {
            let owner = owner.as_deref()?;
            (!holds(owner)).then_some((1, 1, 1))
        }
        LeftoverKind::UnlockLatch | LeftoverKind::RequestRecord => Some((1, 0, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_classified_by_their_names() {
        let kind = |key: &str| classify(key).map(|(k, c)| (k, c.kind, c.names, c.field));
        assert_eq!(
            kind("redisson_lock_timeout:{a:1}").unwrap().0,
            "redisson_lock_queue:{a:1}"
        );
        let (_, k, names, field) = kind("{a:1}:5f1e-uuid:7:rwlock_timeout:2").unwrap();
        assert_eq!(k, LeftoverKind::ReadTimeout);
        assert_eq!(names, ["a:1", "{a:1}"]);
        assert_eq!(field.as_deref(), Some("5f1e-uuid:7"));
        let (_, k, names, _) = kind("redlease_leader:{jobs}").unwrap();
        assert_eq!(
            (k, names),
            (
                LeftoverKind::LeaderRecord,
                vec!["jobs".to_owned(), "{jobs}".to_owned()]
            )
        );
        assert_eq!(kind("{s}:timeout").unwrap().1, LeftoverKind::ExpiredPermits);
        assert_eq!(
            kind("redisson_unlock_latch:{a}:ab").unwrap().1,
            LeftoverKind::UnlockLatch
        );
        assert!(kind("orders:1").is_none());
        assert!(kind("x:rwlock_timeout:1").is_none()); // no reader field
        assert!(kind("redlease_leader:plain").is_none()); // no braces: not ours
    }
}
