//! The checker: reads a phase's histories, the nemesis's log, the final
//! rows and the semaphores' final permits, and judges them. It knows
//! nothing of how the clients work, only what each kind can tell and how
//! its holds end.
//!
//! * [`holds`]: the holds as the clients believed them, and their work;
//! * [`blame`]: two holds of one name at once, each excused by one fault
//!   that explains it (the earlier holder paused or cut off past its lease,
//!   Redis restarted empty or failed over between the two acquires) or a
//!   violation; and what each fault excused;
//! * [`learn`]: a holder whose hold was taken over must learn it (its
//!   release refused, its client telling it lost) before it works again;
//! * [`tokens`]: fencing tokens only grow, and are never given twice;
//! * [`rows`]: the database's evidence: the fenced balance's chain, the
//!   unfenced counter's reads, a reader's two reads;
//! * [`order`]: the fair lock grants in arrival order;
//! * [`permits`]: never more permits held than the semaphore has, none lost
//!   or invented by the end;
//! * [`latch`]: a latch opens only after its count-downs;
//! * [`answers`]: a redlease caller hears that the server cannot serve (a
//!   failover under way) only once its wait, or its lease, is spent;
//! * [`validity`]: the run did what it claims: every client kind acquired,
//!   every fault hit, every process ended as it should.

mod answers;
mod blame;
mod holds;
mod latch;
mod learn;
mod order;
mod permits;
mod rows;
mod tokens;
pub(crate) mod validity;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::history::Event;
use crate::nemesis::Fault;

pub(crate) use blame::{Cause, FaultStat, Overlap};
pub(crate) use holds::Hold;

/// What the checker must know of the run: the clients' lease and work.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Params {
    /// The lease (watchdog timeout) of every client, in ms.
    pub(crate) lease_ms: u64,
    /// The work under the lock per write, in ms.
    pub(crate) hold_ms: u64,
    /// How long an acquire waits, in ms.
    pub(crate) wait_ms: u64,
}

impl Params {
    fn lease_us(&self) -> u64 {
        self.lease_ms * 1000
    }

    /// How long a holder may go on after a fault ends before it reaches
    /// its next step, where it asks whether its hold is lost: the step in
    /// flight (a multi-lock's two names, each a fenced and an unfenced
    /// write), and a second for a loaded machine.
    fn step_us(&self) -> u64 {
        4 * self.hold_ms * 1000 + 1_000_000
    }

    /// How long after its hold was taken over a holder whose client renews
    /// it may go on not knowing: a renewal comes every third of the lease
    /// and tells it, and failing that the lease's end by its own clock;
    /// plus a quarter second for the renewal's round trip.
    fn learn_us(&self) -> u64 {
        self.lease_us() + self.lease_us() / 3 + 250_000
    }

    /// The longest hold a client makes: six steps with a quarter lease
    /// between them.
    fn longest_hold_us(&self) -> u64 {
        6 * (self.lease_us() / 4 + 4 * self.hold_ms * 1000) + 1_000_000
    }
}

/// What the checker knows of a client kind, from its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Traits {
    /// It tells a holder that its hold is lost (redlease's `is_lost`).
    pub(crate) tells_loss: bool,
    /// After a Sentinel switch it goes on using the old master until that
    /// one is made a replica (redis-py's `Sentinel`).
    pub(crate) follows_late: bool,
    /// Its tokens come from a counter seeded from the server's clock
    /// (redlease's; the judge's for clients without tokens), so they grow
    /// across restarts; Redisson's `RFencedLock` counts from 1 again.
    pub(crate) clock_tokens: bool,
    /// Its locks have a fixed lease, not renewed (redis-py's).
    pub(crate) fixed_lease: bool,
    /// Its fair lock's release answers success when the lock is gone
    /// (Redisson's `RFairLock.unlockInnerAsync` returns 1 when the key does
    /// not exist, and `nil`, refused, only when another holds it).
    pub(crate) fair_release_of_gone_succeeds: bool,
}

impl Traits {
    pub(crate) fn of(client: &str) -> Traits {
        let redlease = client.starts_with("redlease") || client == PROBE;
        Traits {
            tells_loss: redlease,
            follows_late: client == "redis-py",
            clock_tokens: client != "redisson-fenced",
            fixed_lease: client == "redis-py",
            fair_release_of_gone_succeeds: client == "redisson-rlock",
        }
    }
}

/// The client kind of the recovery probe (a redlease client of the run
/// itself, judged with the rest).
pub(crate) const PROBE: &str = "redlease-probe";

/// What the run read at the end of a phase, beside the histories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Finals {
    /// Each row: name, fenced balance, unfenced counter.
    pub(crate) rows: Vec<(String, i64, i64)>,
    /// Each semaphore's available permits once every client had stopped
    /// (and, for the expirable one, every lease had run out).
    pub(crate) permits: Vec<(String, i64)>,
}

/// One broken promise, with the class it belongs to (the first words of
/// its line, which the tests look for).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Violation {
    pub(crate) class: Class,
    pub(crate) line: String,
}

/// The kinds of violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Class {
    /// Two holds at once that no single fault explains.
    UnexplainedOverlap,
    /// A release succeeded while a later holder of the name was inside.
    ReleaseInside,
    /// A release succeeded after a fault had certainly taken its lock.
    ReleaseLost,
    /// A holder whose hold was taken over worked on without being told.
    NotTold,
    /// Tokens against the hold order.
    TokenOrder,
    /// One token for two holds.
    TokenTwice,
    /// A stale fenced write accepted.
    StaleWrite,
    /// The fenced balance's chain broken: an increment lost or invented.
    FencedChain,
    /// One unfenced counter value read by two holds that did not overlap.
    ReadTwice,
    /// A reader saw the value change under its read lock.
    ReaderSawWrite,
    /// A fair waiter overtaken by a later one.
    FairOrder,
    /// More permits held than the semaphore has.
    PermitExcess,
    /// Permits lost or invented by the end.
    PermitCount,
    /// A latch opened before its count-downs.
    LatchEarly,
    /// A redlease caller told the server could not serve (a redirection,
    /// a cluster or master down) while it still had time to wait.
    ErrorWithTimeLeft,
    /// A name not acquirable again once the faults stopped.
    Recovery,
    /// The run did not do what it claims.
    Invalid,
}

impl Class {
    /// The words every line of the class begins with.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Class::UnexplainedOverlap => "unexplained overlap",
            Class::ReleaseInside => "release succeeded while another held",
            Class::ReleaseLost => "release of a lost lock succeeded",
            Class::NotTold => "holder not told of its loss",
            Class::TokenOrder => "tokens against the hold order",
            Class::TokenTwice => "one token for two holds",
            Class::StaleWrite => "stale fenced write accepted",
            Class::FencedChain => "fenced chain broken",
            Class::ReadTwice => "one counter value read twice",
            Class::ReaderSawWrite => "reader saw a write",
            Class::FairOrder => "fair lock out of order",
            Class::PermitExcess => "more permits held than exist",
            Class::PermitCount => "permits lost or invented",
            Class::LatchEarly => "latch opened early",
            Class::ErrorWithTimeLeft => "failover error with time left",
            Class::Recovery => "no recovery",
            Class::Invalid => "invalid run",
        }
    }

    pub(crate) fn line(self, detail: String) -> Violation {
        Violation {
            class: self,
            line: format!("{}: {detail}", self.words()),
        }
    }
}

/// Counts of one kind of write.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Writes {
    /// Completed and applied (accepted, for fenced writes).
    pub(crate) done: u64,
    /// Refused by the fence (fenced writes only).
    pub(crate) refused: u64,
    /// Outcome unknown: an error, or the process died during it.
    pub(crate) unknown: u64,
    /// The sum of the final rows.
    pub(crate) total: i64,
    /// Increments done but missing from the total, summed over the names.
    pub(crate) lost: u64,
}

/// How a phase's operations ended, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    /// Operations invoked.
    pub(crate) ops: u64,
    pub(crate) acquired: u64,
    pub(crate) busy: u64,
    /// Operations that ended in an error or never ended.
    pub(crate) unknown: u64,
    /// Releases refused: the hold was no longer the client's.
    pub(crate) released_not_owner: u64,
}

/// The verdict on one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Check {
    #[serde(flatten)]
    pub(crate) counts: Counts,
    pub(crate) holds: Vec<Hold>,
    pub(crate) overlaps: Vec<Overlap>,
    /// What each fault of the nemesis's log excused, in its order.
    pub(crate) faults: Vec<FaultStat>,
    pub(crate) fenced: Writes,
    pub(crate) unfenced: Writes,
    /// How long after the faults stopped each plain lock name was next
    /// acquired, in ms (`None`: not in time); see [`validity::check`].
    pub(crate) recovery_ms: Vec<(String, Option<u64>)>,
    /// Acquisitions per client kind.
    pub(crate) acquired_by: std::collections::BTreeMap<String, u64>,
    /// Acquires refused as busy, per client kind.
    #[serde(default)]
    pub(crate) refused_by: std::collections::BTreeMap<String, u64>,
    /// Latch waits that saw their latch open.
    pub(crate) latch_opened: u64,
    /// Permits taken by acquires of unknown outcome that no release gave
    /// back (they may have leaked).
    pub(crate) permits_unknown: u64,
    pub(crate) violations: Vec<Violation>,
}

impl Check {
    /// What is wrong, one line each; empty when the phase passed.
    pub(crate) fn violations(&self) -> Vec<String> {
        self.violations.iter().map(|v| v.line.clone()).collect()
    }

    /// How many violations of `class`.
    pub(crate) fn count(&self, class: Class) -> usize {
        self.violations.iter().filter(|v| v.class == class).count()
    }
}

/// Judges one phase: `events` from every client, `faults` from the
/// nemesis, and what was read at the end.
pub(crate) fn check(events: &[Event], faults: &[Fault], finals: &Finals, params: Params) -> Check {
    let history = holds::read(events);
    let mut out = Check {
        counts: history.counts,
        acquired_by: history.acquired_by.clone(),
        refused_by: history.refused_by.clone(),
        ..Check::default()
    };
    let blamed = blame::overlaps(&history.holds, faults, params);
    out.violations.extend(blamed.violations());
    learn::check(&history.holds, &blamed, faults, params, &mut out.violations);
    tokens::check(&history.holds, faults, params, &mut out.violations);
    rows::check(&history, &blamed, finals, &mut out);
    order::check(&history.fair, faults, params, &mut out.violations);
    permits::check(&history, &blamed, faults, finals, params, &mut out);
    latch::check(&history, faults, &mut out);
    answers::check(events, params, &mut out.violations);
    out.faults = blamed.stats;
    for (stat, f) in out.faults.iter_mut().zip(faults) {
        stat.hit = hit_a_holder(&history.holds, f);
    }
    out.overlaps = blamed.overlaps;
    let mut holds = history.holds;
    holds.sort_by_key(|h| h.start);
    out.holds = holds;
    out
}

/// Whether fault `f` aimed at a process found it holding: a pause or a
/// partition during one of its holds, a kill while it held (its hold then
/// never ended).
fn hit_a_holder(holds: &[Hold], f: &Fault) -> bool {
    use crate::nemesis::FaultKind;
    holds.iter().any(|h| {
        h.process == f.target
            && h.start <= f.start
            && match f.kind {
                FaultKind::Kill => h.release == holds::Release::Never,
                _ => f.start < h.end,
            }
    })
}
