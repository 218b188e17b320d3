//! The checker: reads a phase's history, the nemesis's log and the final
//! rows, and judges them. It knows nothing of how the clients work.
//!
//! * **Holds as the clients believed them**: from an acquire's `ok` to the
//!   release's `invoke` (or the process's last event, if it died holding).
//!   Two holds of one name that overlap in time are each explained by a
//!   fault (a holder stopped during its hold; Redis restarted empty between
//!   the two acquires) or counted as a violation.
//! * **Fenced writes**: none accepted with a token lower than a token
//!   accepted before it was invoked; the final balance equals the accepted
//!   increments (none lost, none invented).
//! * **Tokens follow the holds**: of two holds of one name that do not
//!   overlap, the later has the larger token.
//! * **The unfenced counter**: its lost updates are counted, not judged:
//!   they are what the fence is for.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::history::{Event, Op, Type};
use crate::nemesis::{Fault, FaultKind};

/// A hold of a lock as its client believed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hold {
    pub(crate) process: String,
    pub(crate) client: String,
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) token: Option<u64>,
}

/// Why two holds overlapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Cause {
    /// A holder was stopped during its hold, past its lease.
    Pause,
    /// A holder was cut off from Redis during its hold, past its lease.
    Partition,
    /// Redis restarted empty while the first was held: its lock was lost.
    Restart,
    /// A failover while the first was held: its lock was not yet on the
    /// replica that took over.
    Failover,
    /// Nothing in the nemesis's log explains it: a violation.
    Unexplained,
}

/// Two holds of one name at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Overlap {
    pub(crate) name: String,
    pub(crate) first: String,
    pub(crate) second: String,
    /// How long both were held, in µs.
    pub(crate) overlap_us: u64,
    pub(crate) cause: Cause,
}

/// A fenced write accepted after a write with a larger token had been
/// accepted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StaleWrite {
    pub(crate) name: String,
    pub(crate) process: String,
    pub(crate) token: u64,
    pub(crate) newer_accepted: u64,
}

/// Two holds in turn whose tokens go the other way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TokenOrder {
    pub(crate) name: String,
    pub(crate) first: String,
    pub(crate) first_token: u64,
    pub(crate) second: String,
    pub(crate) second_token: u64,
    /// A pause (a holder learned of its grant late), a restart (a counter
    /// that Redis lost begins again, unless its client seeds it from the
    /// clock as redlease does), or nothing: a violation.
    pub(crate) cause: Cause,
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
    /// Increments done but missing from the total.
    pub(crate) lost: u64,
    /// More in the total than done and unknown together could explain.
    pub(crate) invented: u64,
}

/// The verdict on one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Check {
    /// Operations invoked.
    pub(crate) ops: u64,
    pub(crate) acquired: u64,
    pub(crate) busy: u64,
    /// Operations that ended in an error or never ended.
    pub(crate) unknown: u64,
    /// Releases refused: the lock was no longer the client's.
    pub(crate) released_not_owner: u64,
    /// Releases of a lock its client had been told was lost.
    pub(crate) released_lost: u64,
    pub(crate) holds: Vec<Hold>,
    pub(crate) overlaps: Vec<Overlap>,
    pub(crate) stale_writes: Vec<StaleWrite>,
    pub(crate) token_order: Vec<TokenOrder>,
    pub(crate) fenced: Writes,
    pub(crate) unfenced: Writes,
}

impl Check {
    /// What is wrong, one line each; empty when the phase passed.
    pub(crate) fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for o in self
            .overlaps
            .iter()
            .filter(|o| o.cause == Cause::Unexplained)
        {
            out.push(format!(
                "unexplained overlap on {}: {} and {} held it together for {} ms",
                o.name,
                o.first,
                o.second,
                o.overlap_us / 1000
            ));
        }
        for s in &self.stale_writes {
            out.push(format!(
                "stale fenced write accepted on {}: {} wrote with token {} after {} was accepted",
                s.name, s.process, s.token, s.newer_accepted
            ));
        }
        for t in self
            .token_order
            .iter()
            .filter(|t| t.cause == Cause::Unexplained)
        {
            out.push(format!(
                "tokens against the hold order on {}: {} held it first with {}, {} then with {}",
                t.name, t.first, t.first_token, t.second, t.second_token
            ));
        }
        if self.fenced.lost > 0 {
            out.push(format!("{} fenced increments lost", self.fenced.lost));
        }
        if self.fenced.invented > 0 {
            out.push(format!(
                "{} fenced increments nobody made",
                self.fenced.invented
            ));
        }
        out
    }
}

/// Judges one phase: `events` from every client, `faults` from the
/// nemesis, `rows` the final `(name, fenced balance, unfenced counter)`.
pub(crate) fn check(events: &[Event], faults: &[Fault], rows: &[(String, i64, i64)]) -> Check {
    let mut by_process: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in events {
        by_process.entry(&e.p).or_default().push(e);
    }
    let mut out = Check::default();
    let mut writes: Vec<Write> = Vec::new();
    for events in by_process.values_mut() {
        events.sort_by_key(|e| e.t);
        read_process(events, &mut out, &mut writes);
    }
    out.overlaps = overlaps(&out.holds, faults);
    out.token_order = token_order(&out.holds, faults);
    out.stale_writes = stale_writes(&writes);
    let accepted = writes.iter().filter(|w| w.accepted == Some(true)).count() as u64;
    let refused = writes.iter().filter(|w| w.accepted == Some(false)).count() as u64;
    let unknown = writes.iter().filter(|w| w.accepted.is_none()).count() as u64;
    out.fenced = totals(accepted, unknown, rows.iter().map(|r| r.1).sum());
    out.fenced.refused = refused;
    let plain_unknown = out.unfenced.unknown;
    out.unfenced = totals(
        out.unfenced.done,
        plain_unknown,
        rows.iter().map(|r| r.2).sum(),
    );
    out.holds.sort_by_key(|h| h.start);
    out
}

fn totals(done: u64, unknown: u64, total: i64) -> Writes {
    let total_u = u64::try_from(total).unwrap_or(0);
    Writes {
        done,
        refused: 0,
        unknown,
        total,
        lost: done.saturating_sub(total_u),
        invented: total_u.saturating_sub(done + unknown),
    }
}

/// A fenced write: its token, when it was invoked and completed, and
/// whether it was accepted (`None`: unknown).
struct Write {
    name: String,
    process: String,
    token: u64,
    invoked: u64,
    completed: Option<u64>,
    accepted: Option<bool>,
}

/// Walks one process's events in order: its holds, its fenced writes, its
/// counts.
fn read_process(events: &[&Event], out: &mut Check, writes: &mut Vec<Write>) {
    let mut open: Option<Hold> = None;
    let mut pending: Option<&Event> = None;
    for e in events {
        match e.ty {
            Type::Invoke => {
                out.ops += 1;
                if let Some(p) = pending.take() {
                    unfinished(p, out, writes);
                }
                if e.f == Op::Release
                    && let Some(mut hold) = open.take()
                {
                    hold.end = e.t;
                    out.holds.push(hold);
                }
                pending = Some(e);
            }
            _ => {
                let Some(invoke) = pending.take() else {
                    continue;
                };
                finished(invoke, e, out, writes, &mut open);
            }
        }
    }
    if let Some(p) = pending {
        unfinished(p, out, writes);
    }
    if let Some(mut hold) = open {
        // Died (or the run ended) holding: held as far as it knew until
        // its last event.
        hold.end = events.last().map_or(hold.start, |e| e.t);
        out.holds.push(hold);
    }
}

/// An operation whose process went on to something else, or died, without
/// completing it.
fn unfinished(invoke: &Event, out: &mut Check, writes: &mut Vec<Write>) {
    out.unknown += 1;
    match invoke.f {
        Op::Write => writes.push(Write {
            name: invoke.name.clone(),
            process: invoke.p.clone(),
            token: invoke.token.unwrap_or(0),
            invoked: invoke.t,
            completed: None,
            accepted: None,
        }),
        Op::Unfenced => out.unfenced.unknown += 1,
        Op::Acquire | Op::Release => {}
    }
}

fn finished(
    invoke: &Event,
    e: &Event,
    out: &mut Check,
    writes: &mut Vec<Write>,
    open: &mut Option<Hold>,
) {
    if e.ty == Type::Info {
        unfinished(invoke, out, writes);
        return;
    }
    match (e.f, e.ty) {
        (Op::Acquire, Type::Ok) => {
            out.acquired += 1;
            *open = Some(Hold {
                process: e.p.clone(),
                client: e.c.clone(),
                name: e.name.clone(),
                start: e.t,
                end: e.t,
                token: e.token,
            });
        }
        (Op::Acquire, _) => out.busy += 1,
        (Op::Write, _) => writes.push(Write {
            name: e.name.clone(),
            process: e.p.clone(),
            token: invoke.token.or(e.token).unwrap_or(0),
            invoked: invoke.t,
            completed: Some(e.t),
            accepted: e.accepted,
        }),
        (Op::Unfenced, _) => out.unfenced.done += 1,
        (Op::Release, Type::Fail) => out.released_not_owner += 1,
        (Op::Release, _) => {}
    }
    if e.f == Op::Release && e.lost == Some(true) {
        out.released_lost += 1;
    }
}

fn overlaps(holds: &[Hold], faults: &[Fault]) -> Vec<Overlap> {
    let mut by_name: HashMap<&str, Vec<&Hold>> = HashMap::new();
    for h in holds {
        by_name.entry(&h.name).or_default().push(h);
    }
    let mut out = Vec::new();
    for holds in by_name.values_mut() {
        holds.sort_by_key(|h| h.start);
        for (i, a) in holds.iter().enumerate() {
            for b in &holds[i + 1..] {
                if b.start >= a.end {
                    // Sorted by start: b and every later hold begin after a.
                    break;
                }
                if a.process == b.process {
                    continue;
                }
                out.push(Overlap {
                    name: a.name.clone(),
                    first: a.process.clone(),
                    second: b.process.clone(),
                    overlap_us: a.end.min(b.end) - b.start,
                    cause: cause(a, b, faults),
                });
            }
        }
    }
    out.sort_by(|x, y| (&x.name, &x.first).cmp(&(&y.name, &y.first)));
    out
}

/// What explains holds `a` and `b` (`a` began first) overlapping.
fn cause(a: &Hold, b: &Hold, faults: &[Fault]) -> Cause {
    let during = |f: &Fault, h: &Hold| f.start < h.end && f.end > h.start;
    let hit = |kind: FaultKind| {
        faults.iter().any(|f| {
            f.kind == kind
                && ((f.target == a.process && during(f, a))
                    || (f.target == b.process && during(f, b)))
        })
    };
    if hit(FaultKind::Pause) {
        return Cause::Pause;
    }
    if hit(FaultKind::Partition) {
        return Cause::Partition;
    }
    let lost = |kind: FaultKind| {
        faults
            .iter()
            .any(|f| f.kind == kind && f.end > a.start && f.start < b.start)
    };
    if lost(FaultKind::Restart) {
        return Cause::Restart;
    }
    if lost(FaultKind::Sentinel) || lost(FaultKind::Cluster) {
        return Cause::Failover;
    }
    Cause::Unexplained
}

/// Holds of one name in turn (the first ended before the second began)
/// whose tokens do not increase, each with what explains it: a holder
/// stopped between its grant and learning of it learns late, after its
/// lease ran out and others held the lock in between (a pause); a counter
/// lost with Redis's data starts again (a restart).
fn token_order(holds: &[Hold], faults: &[Fault]) -> Vec<TokenOrder> {
    let cause = |first: &Hold, second: &Hold| {
        let between = |f: &Fault| f.start < second.start && f.end > first.start;
        let hit = |kind: FaultKind| {
            faults.iter().any(|f| {
                f.kind == kind
                    && (f.target == first.process || f.target == second.process)
                    && between(f)
            })
        };
        if hit(FaultKind::Pause) {
            Cause::Pause
        } else if hit(FaultKind::Partition) {
            Cause::Partition
        } else if faults
            .iter()
            .any(|f| f.kind == FaultKind::Restart && between(f))
        {
            Cause::Restart
        } else if faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::Sentinel | FaultKind::Cluster) && between(f))
        {
            Cause::Failover
        } else {
            Cause::Unexplained
        }
    };
    let mut by_name: HashMap<&str, Vec<&Hold>> = HashMap::new();
    for h in holds.iter().filter(|h| h.token.is_some()) {
        by_name.entry(&h.name).or_default().push(h);
    }
    let mut out = Vec::new();
    for holds in by_name.values_mut() {
        holds.sort_by_key(|h| h.start);
        // The largest token of the holds that ended before this one began:
        // a sweep over the holds by end time.
        let mut ended: Vec<&Hold> = holds.clone();
        ended.sort_by_key(|h| h.end);
        let mut j = 0;
        let mut max: Option<&Hold> = None;
        for h in holds.iter() {
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
            {
                out.push(TokenOrder {
                    name: h.name.clone(),
                    first: m.process.clone(),
                    first_token: m.token.unwrap_or(0),
                    second: h.process.clone(),
                    second_token: h.token.unwrap_or(0),
                    cause: cause(m, h),
                });
            }
        }
    }
    out
}

/// Accepted fenced writes whose token is below one accepted before they
/// were invoked.
fn stale_writes(writes: &[Write]) -> Vec<StaleWrite> {
    let mut by_name: HashMap<&str, Vec<&Write>> = HashMap::new();
    for w in writes.iter().filter(|w| w.accepted == Some(true)) {
        by_name.entry(&w.name).or_default().push(w);
    }
    let mut out = Vec::new();
    for writes in by_name.values() {
        let mut done: Vec<&Write> = writes.clone();
        done.sort_by_key(|w| w.completed);
        let mut invoked: Vec<&Write> = writes.clone();
        invoked.sort_by_key(|w| w.invoked);
        let mut j = 0;
        let mut max = 0;
        for w in invoked {
            while j < done.len() && done[j].completed.is_some_and(|c| c < w.invoked) {
                max = max.max(done[j].token);
                j += 1;
            }
            if max > w.token {
                out.push(StaleWrite {
                    name: w.name.clone(),
                    process: w.process.clone(),
                    token: w.token,
                    newer_accepted: max,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One hand-written event: `(process, op, type, name, t, token,
    /// accepted)`.
    type Row<'a> = (&'a str, Op, Type, &'a str, u64, Option<u64>, Option<bool>);

    /// A history written by hand.
    fn history(rows: &[Row<'_>]) -> Vec<Event> {
        rows.iter()
            .map(|&(p, f, ty, name, t, token, accepted)| Event {
                p: p.to_owned(),
                c: "test".to_owned(),
                f,
                ty,
                name: name.to_owned(),
                t,
                token,
                read: None,
                accepted,
                lost: None,
                err: None,
            })
            .collect()
    }

    use Op::{Acquire, Release, Write as W};
    use Type::{Invoke, Ok as Done};

    /// One client's whole turn on `n`: acquire at `t` with `token`, a
    /// fenced write, release at `t + len`.
    fn turn(p: &'static str, t: u64, len: u64, token: u64, accepted: bool) -> Vec<Event> {
        history(&[
            (p, Acquire, Invoke, "n", t, None, None),
            (p, Acquire, Done, "n", t + 1, Some(token), None),
            (p, W, Invoke, "n", t + 2, Some(token), None),
            (p, W, Done, "n", t + len - 2, Some(token), Some(accepted)),
            (p, Release, Invoke, "n", t + len - 1, None, None),
            (p, Release, Done, "n", t + len, None, None),
        ])
    }

    #[test]
    fn holds_in_turn_with_rising_tokens_pass() {
        let mut events = turn("a", 0, 100, 1, true);
        events.extend(turn("b", 200, 100, 2, true));
        let c = check(&events, &[], &[("n".into(), 2, 2)]);
        assert_eq!(c.holds.len(), 2);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
        assert_eq!((c.ops, c.acquired, c.fenced.done), (6, 2, 2));
    }

    #[test]
    fn an_overlap_is_unexplained_without_a_fault_and_explained_by_a_pause() {
        let mut events = turn("a", 0, 100, 1, false);
        events.extend(turn("b", 50, 100, 2, true));
        let c = check(&events, &[], &[("n".into(), 1, 2)]);
        assert_eq!(c.overlaps.len(), 1);
        assert_eq!(c.overlaps[0].cause, Cause::Unexplained);
        assert_eq!(c.violations().len(), 1, "{:?}", c.violations());
        let pause = Fault {
            kind: FaultKind::Pause,
            target: "a".into(),
            start: 10,
            end: 60,
        };
        let c = check(&events, &[pause], &[("n".into(), 1, 2)]);
        assert_eq!(c.overlaps[0].cause, Cause::Pause);
        assert!(c.violations().is_empty());
        let restart = Fault {
            kind: FaultKind::Restart,
            target: "redis".into(),
            start: 20,
            end: 30,
        };
        assert_eq!(
            check(&events, &[restart], &[]).overlaps[0].cause,
            Cause::Restart
        );
    }

    #[test]
    fn tokens_against_the_hold_order_are_a_violation() {
        let mut events = turn("a", 0, 100, 5, true);
        events.extend(turn("b", 200, 100, 3, false));
        let c = check(&events, &[], &[("n".into(), 1, 2)]);
        assert_eq!(c.token_order.len(), 1);
        assert_eq!(
            (c.token_order[0].first_token, c.token_order[0].second_token),
            (5, 3)
        );
    }

    #[test]
    fn tokens_against_the_hold_order_are_explained_by_a_pause_between_them() {
        let mut events = turn("a", 0, 100, 5, true);
        events.extend(turn("b", 200, 100, 3, false));
        let pause = Fault {
            kind: FaultKind::Pause,
            target: "b".into(),
            start: 50,
            end: 150,
        };
        let c = check(&events, &[pause], &[("n".into(), 1, 2)]);
        assert_eq!(c.token_order[0].cause, Cause::Pause);
        assert!(c.violations().is_empty());
    }

    #[test]
    fn a_stale_accepted_write_and_a_lost_increment_are_violations() {
        let mut events = turn("a", 0, 100, 5, true);
        // Accepted with a lower token, after 5 was accepted.
        events.extend(turn("b", 200, 100, 3, true));
        let c = check(&events, &[], &[("n".into(), 1, 2)]);
        assert_eq!(c.stale_writes.len(), 1);
        assert_eq!(c.fenced.lost, 1);
        assert!(c.violations().iter().any(|v| v.contains("lost")));
    }

    #[test]
    fn a_hold_killed_at_its_acquire_does_not_precede_itself() {
        let events = history(&[
            ("a", Acquire, Invoke, "n", 0, None, None),
            ("a", Acquire, Done, "n", 10, Some(1), None),
        ]);
        let c = check(&events, &[], &[]);
        assert_eq!((c.holds[0].start, c.holds[0].end), (10, 10));
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }

    #[test]
    fn a_process_killed_holding_holds_until_its_last_event() {
        let events = history(&[
            ("a", Acquire, Invoke, "n", 0, None, None),
            ("a", Acquire, Done, "n", 10, Some(1), None),
            ("a", W, Invoke, "n", 20, Some(1), None),
        ]);
        let c = check(&events, &[], &[("n".into(), 1, 0)]);
        assert_eq!(c.holds[0].end, 20);
        assert_eq!((c.fenced.unknown, c.fenced.invented, c.unknown), (1, 0, 1));
    }
}
