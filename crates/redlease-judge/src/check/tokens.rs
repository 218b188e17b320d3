//! Fencing tokens: for each name, of two holds in turn the later has the
//! larger token, and no two acquisitions share one, over the whole phase,
//! restarts included: redlease seeds its counter from the server's clock
//! when Redis has lost it (as the judge's token script does for clients
//! without tokens), so a restart gives no excuse. Excused only:
//!
//! * a later holder that learned of its grant late (paused or cut off
//!   between its acquire and the answer), so that its token is older than
//!   its hold looks;
//! * a failover, which can lose the counter's last increments (the next
//!   token repeats one), for a name of the failed shard, between the two
//!   holds; and a client taking tokens on a Sentinel switch's old master
//!   (one that follows late until it is made a replica, the others until
//!   they have followed, [`FOLLOW_US`]);
//! * Redisson's `RFencedLock`, whose counter begins again at 1 when Redis
//!   restarts empty: its tokens after a restart, judged against tokens from
//!   before it.

use std::collections::BTreeMap;

use super::blame::FOLLOW_US;
use super::holds::{Hold, by_name};
use super::{Class, Params, Traits, Violation};
use crate::nemesis::{Fault, FaultKind};

pub(crate) fn check(holds: &[Hold], faults: &[Fault], _p: Params, out: &mut Vec<Violation>) {
    for (name, same) in by_name(holds) {
        let tokened: Vec<&Hold> = same
            .iter()
            .map(|&i| &holds[i])
            .filter(|h| h.token.is_some() && h.w.is_exclusive())
            .collect();
        order(name, &tokened, faults, out);
        twice(name, &tokened, faults, out);
    }
}

/// Holds in turn whose tokens do not grow: for each hold, the largest
/// token of the holds that ended before it began (`holds` by start).
fn order(name: &str, holds: &[&Hold], faults: &[Fault], out: &mut Vec<Violation>) {
    let mut ended: Vec<&Hold> = holds.to_vec();
    ended.sort_by_key(|h| h.end);
    let mut j = 0;
    let mut max: Option<&Hold> = None;
    for h in holds {
        // Strictly before: a hold cut short right at its acquire (its
        // process killed) ends where it begins, and is not its own
        // predecessor.
        while j < ended.len() && ended[j].end < h.start {
            if max.is_none_or(|m| ended[j].token > m.token) {
                max = Some(ended[j]);
            }
            j += 1;
        }
        if let Some(m) = max
            && m.token >= h.token
            && m.id != h.id
            && !excused(m, h, faults)
        {
            out.push(Class::TokenOrder.line(format!(
                "{name}: {} held it first with {}, {} then with {}",
                m.process,
                m.token.unwrap_or(0),
                h.process,
                h.token.unwrap_or(0)
            )));
        }
    }
}

/// Two acquisitions of a name with one token.
fn twice(name: &str, holds: &[&Hold], faults: &[Fault], out: &mut Vec<Violation>) {
    let mut by_token: BTreeMap<u64, Vec<&Hold>> = BTreeMap::new();
    for h in holds {
        by_token.entry(h.token.unwrap_or(0)).or_default().push(h);
    }
    for (token, same) in by_token {
        for (k, a) in same.iter().enumerate() {
            if let Some(b) = same[k + 1..]
                .iter()
                .find(|b| b.id != a.id && !excused(a, b, faults))
            {
                out.push(Class::TokenTwice.line(format!(
                    "{name}: {} and {} both held it with {token}",
                    a.process, b.process
                )));
                break;
            }
        }
    }
}

/// Whether a fault explains `later`'s token not being above `earlier`'s.
fn excused(earlier: &Hold, later: &Hold, faults: &[Fault]) -> bool {
    let (from, to) = (
        earlier.start.min(later.start),
        earlier.start.max(later.start),
    );
    faults.iter().filter(|f| f.ok).any(|f| match f.kind {
        // Learned of its grant late.
        FaultKind::Pause | FaultKind::Partition => [earlier, later]
            .iter()
            .any(|h| f.target == h.process && f.start < h.start && f.end > h.invoked),
        FaultKind::Cluster => {
            (f.names.is_empty() || f.names.contains(&later.name)) && f.start < to && f.end > from
        }
        FaultKind::Sentinel => {
            // Either taken on the old master: by a client that follows late
            // until it was made a replica, by the others until they had
            // followed the switch.
            let settled = f.settled.unwrap_or(f.end).max(f.end);
            let on_old_master = [earlier, later].iter().any(|h| {
                let until = match Traits::of(&h.client).follows_late {
                    true => settled,
                    false => f.end + FOLLOW_US,
                };
                h.start >= f.start && h.invoked <= until
            });
            on_old_master || (f.start < to && f.end > from)
        }
        // Only for a counter that is not seeded from the clock.
        FaultKind::Restart => {
            [earlier, later]
                .iter()
                .any(|h| !Traits::of(&h.client).clock_tokens)
                && f.start < to
                && f.end > from
        }
        FaultKind::None | FaultKind::Kill => false,
    })
}
