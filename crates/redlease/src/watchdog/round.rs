//! One renewal round: the registered locks in batches (by master, by slot
//! or all together), sent [`IN_FLIGHT`] at a time, and what each batch's
//! reply means for its locks.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::metrics::Label;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

use super::schedule::{BATCH, IN_FLIGHT};
use super::{Entry, Kept, Shared};
use crate::connection::{Connection, SlotId, SlotNodes};
use crate::lost::LostReason;
use crate::metrics::{self, Tally};
use crate::scripts;
use crate::scripts::lock::{Renewal, Renewed};

/// The entries of one renewal call.
pub(super) struct Batch {
    pub(super) ids: Vec<u64>,
    script: Script,
}

/// Which script renews a batch.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Script {
    /// Locks of one slot (or of the one node): [`scripts::lock::renew`].
    Locks,
    /// Locks of several slots of one cluster master:
    /// [`scripts::lock::renew_on_node`].
    OnNode,
    /// Read holds of read-write locks, of one slot:
    /// [`scripts::rwlock::renew_reads`].
    Reads,
    /// Expirable-semaphore permits, of one slot:
    /// [`scripts::expirable::renew_all`].
    Permits,
}

/// What a batch's entries share: the script and where it runs. Read holds
/// (two keys each) and permits (three keys per semaphore) are batched by
/// slot: the permits of a semaphore share its slot, and read holds are
/// rare enough that a per-node script of their own would not pay.
#[derive(PartialEq, Eq, Hash)]
enum Group {
    Slot(Script, Option<SlotId>),
    Node(u16),
}

/// Which registered locks a round renews.
#[derive(Clone, Copy)]
pub(super) enum Select<'a> {
    /// Every one.
    All,
    /// These (renewed again where their slot is served).
    Only(&'a [u64]),
}

impl Shared {
    /// The locks `select` picks, in batches of up to [`BATCH`]: by the
    /// master that serves their slot where `nodes` says, else by slot on a
    /// cluster, else all together; each batch of the locks nearest their
    /// deadlines, and the batches most urgent first, so that a round that
    /// runs long reaches the oldest renewals first (#28), and a lock
    /// acquired during a round comes early in the next.
    pub(super) fn batches(&self, select: Select<'_>, nodes: Option<&SlotNodes>) -> Vec<Batch> {
        let mut groups: HashMap<Group, Vec<(Instant, u64)>> = HashMap::new();
        let mut add = |id: u64, entry: &Entry| {
            let node = nodes.zip(entry.slot).and_then(|(n, slot)| n.node_of(slot));
            let group = match entry.kept {
                Kept::Lock(_) => node.map_or(Group::Slot(Script::Locks, entry.slot), Group::Node),
                Kept::Read(_) => Group::Slot(Script::Reads, entry.slot),
                Kept::Permit(_) => Group::Slot(Script::Permits, entry.slot),
            };
            groups.entry(group).or_default().push((entry.deadline, id));
        };
        let state = self.lock();
        match select {
            Select::Only(ids) => {
                for id in ids {
                    if let Some(entry) = state.entries.get(id) {
                        add(*id, entry);
                    }
                }
            }
            Select::All => {
                for (id, entry) in &state.entries {
                    add(*id, entry);
                }
            }
        }
        drop(state);
        let mut batches = Vec::new();
        for (group, mut locks) in groups {
            locks.sort_unstable();
            for chunk in locks.chunks(BATCH) {
                batches.push((
                    chunk[0].0,
                    Batch {
                        ids: chunk.iter().map(|(_, id)| *id).collect(),
                        script: match group {
                            Group::Slot(script, _) => script,
                            Group::Node(_) => Script::OnNode,
                        },
                    },
                ));
            }
        }
        batches.sort_unstable_by_key(|(first, _)| *first);
        batches.into_iter().map(|(_, batch)| batch).collect()
    }
}

/// Renews every registered lock once, [`IN_FLIGHT`] batches at a time;
/// returns false if any batch failed.
pub(super) async fn renew_all(shared: Arc<Shared>, conn: Connection) -> bool {
    // Asked every round, so that a round follows the last failover or
    // migration; one call, against hundreds saved on a cluster.
    let nodes = if shared.per_node.load(Ordering::Relaxed) {
        conn.slot_nodes().await.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "no slot map; renewing by slot");
            None
        })
    } else {
        None
    };
    let batches = shared.batches(Select::All, nodes.as_ref());
    let (mut all_ok, elsewhere) = renew_batches(&shared, &conn, batches).await;
    if !elsewhere.is_empty() {
        let batches = shared.batches(Select::Only(&elsewhere), None);
        all_ok &= renew_batches(&shared, &conn, batches).await.0;
    }
    all_ok
}

/// Sends `batches`, [`IN_FLIGHT`] at a time: whether all went through, and
/// the locks to renew again where their slot is served.
async fn renew_batches(
    shared: &Shared,
    conn: &Connection,
    batches: Vec<Batch>,
) -> (bool, Vec<u64>) {
    let mut pending = batches.iter();
    let mut in_flight = FuturesUnordered::new();
    let mut all_ok = true;
    let mut elsewhere = Vec::new();
    loop {
        while in_flight.len() < IN_FLIGHT {
            let Some(batch) = pending.next() else { break };
            in_flight.push(renew_batch(shared, conn.clone(), batch));
        }
        match in_flight.next().await {
            Some((ok, more)) => {
                all_ok &= ok;
                elsewhere.extend(more);
            }
            None => return (all_ok, elsewhere),
        }
    }
}

/// An entry of a renewal batch: id, name, what it keeps, metrics label.
type Batched = (u64, Arc<str>, Kept, Label);

/// Renews the locks of `chunk` still registered, in one call: whether the
/// call went through, and the locks it could not renew where it ran.
async fn renew_batch(shared: &Shared, conn: Connection, chunk: &Batch) -> (bool, Vec<u64>) {
    // Read the entries just before sending: a lock deregistered while
    // earlier batches were in flight must not be renewed again.
    let batch: Vec<Batched> = {
        let entries = &shared.lock().entries;
        chunk
            .ids
            .iter()
            .filter_map(|id| {
                entries
                    .get(id)
                    .map(|e| (*id, e.key.clone(), e.kept.clone(), e.label.clone()))
            })
            .collect()
    };
    if batch.is_empty() {
        return (true, Vec::new());
    }
    let held = batch.iter().filter_map(|(_, key, kept, _)| match kept {
        Kept::Lock(field) | Kept::Read(field) => Some((&**key, &**field)),
        Kept::Permit(_) => None,
    });
    let lease_ms = shared.timeout_ms;
    let call = match chunk.script {
        Script::Locks => scripts::lock::renew(lease_ms, held),
        Script::OnNode => scripts::lock::renew_on_node(lease_ms, held),
        Script::Reads => scripts::rwlock::renew_reads(lease_ms, held),
        Script::Permits => {
            let permits = batch.iter().filter_map(|(_, key, kept, _)| match kept {
                Kept::Permit(id) => Some((&**key, id)),
                Kept::Lock(_) | Kept::Read(_) => None,
            });
            scripts::expirable::renew_all(lease_ms, conn.publish(), permits)
        }
    };
    let on_node = chunk.script == Script::OnNode;
    let sent_at = Instant::now();
    match call.run::<Renewed>(&conn).await {
        Ok(Renewed(renewed)) if renewed.len() == batch.len() => {
            (true, shared.apply(&batch, &renewed, sent_at))
        }
        Ok(Renewed(renewed)) => {
            tracing::error!(
                expected = batch.len(),
                found = renewed.len(),
                "renewal script returned the wrong number of results"
            );
            failed(&batch);
            (false, Vec::new())
        }
        Err(err) if on_node && !crate::error::Error::from(err.clone()).is_transient() => {
            // Not a network or failover hiccup: this server will not run
            // the per-master script (Redis 6 has no script flags, or an
            // ACL). Renew these by slot now, and every lock from now on.
            if shared.per_node.swap(false, Ordering::Relaxed) {
                tracing::info!(error = %err, "renewing locks one hash slot per call");
            }
            (true, batch.iter().map(|(id, ..)| *id).collect())
        }
        Err(err) => {
            tracing::warn!(error = %err, held = batch.len(), "renewal failed; retrying");
            // The next round is the retry.
            crate::metrics::retried(crate::error::Error::from(err).retry_reason());
            failed(&batch);
            (false, Vec::new())
        }
    }
}

impl Shared {
    /// Records a renewal sent at `sent_at`: `renewed[i]` says what became
    /// of `batch[i]`. Returns the locks to renew again elsewhere.
    fn apply(&self, batch: &[Batched], renewed: &[Renewal], sent_at: Instant) -> Vec<u64> {
        let now = Instant::now();
        let mut renewals = Tally::default();
        let mut lost = Vec::new();
        let mut elsewhere = Vec::new();
        let mut state = self.lock();
        let entries = &mut state.entries;
        for ((id, key, _, label), &result) in batch.iter().zip(renewed) {
            if result == Renewal::Elsewhere {
                elsewhere.push(*id);
            } else if result == Renewal::Renewed {
                renewals.add(label);
                // A lock whose deadline passed while this call was in
                // flight stays lost, whether or not it was reported yet
                // (`is_lost()` may have answered true already): the key
                // expires within one timeout of this renewal.
                match entries.get_mut(id) {
                    Some(e) if e.deadline <= now => {
                        // Counted before the guard is told (as in
                        // `expire_and_plan`).
                        metrics::lost(label, LostReason::RenewalFailed);
                        e.lost.set(LostReason::RenewalFailed);
                        lost.push((key, LostReason::RenewalFailed));
                        entries.remove(id);
                    }
                    Some(e) => e.deadline = sent_at + self.timeout,
                    None => {}
                }
            } else if let Some(e) = entries.remove(id) {
                metrics::lost(label, LostReason::OwnerChanged);
                e.lost.set(LostReason::OwnerChanged);
                lost.push((key, LostReason::OwnerChanged));
            }
        }
        // Logged after the lock is let go: acquires and unlocks take it.
        drop(state);
        for (key, reason) in lost {
            match reason {
                LostReason::OwnerChanged => {
                    tracing::warn!(key = %key, "lost: renewal found another owner, or nothing")
                }
                _ => {
                    tracing::warn!(key = %key, "lost: renewed only after its lease could have expired")
                }
            }
        }
        renewals.record(metrics::renewals);
        elsewhere
    }
}

/// Counts a failed renewal of every lock in `batch`.
fn failed(batch: &[Batched]) {
    let mut failures = Tally::default();
    for (_, _, _, label) in batch {
        failures.add(label);
    }
    failures.record(metrics::renewal_failures);
}
