//! The holds as the clients believed them, read from the histories: from
//! an acquire's `ok` to the release's `invoke` (or the process's last
//! event, if it died holding), with the work done under each and whether
//! the client knew the hold was lost when it did it; and the other
//! operations the checks need (fenced and unfenced writes, readers' reads,
//! fair-lock requests, latch operations).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Counts;
use crate::history::{Event, Op, Type};
use crate::workload::Workload;

/// A hold of one name as its client believed it. A multi-lock's members
/// are a hold each, sharing one `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hold {
    pub(crate) process: String,
    pub(crate) client: String,
    pub(crate) w: Workload,
    pub(crate) name: String,
    /// The acquire's invoke, its `ok`, and the release's invoke (or the
    /// process's last event), Unix µs.
    pub(crate) invoked: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) token: Option<u64>,
    pub(crate) release: Release,
    /// Whether the client said the hold was lost when it released it
    /// (`None`: it cannot tell, or never released).
    #[serde(skip)]
    pub(crate) released_lost: Option<bool>,
    /// The acquisition this hold belongs to (one per acquire `ok`).
    pub(crate) id: usize,
    /// The work done under it (writes and reads, not the release): each
    /// one's invoke time, and whether the client knew then that the hold
    /// was lost (`None`: it cannot tell).
    #[serde(skip)]
    pub(crate) work: Vec<(u64, Option<bool>)>,
}

/// How a hold ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Release {
    /// Released, at this time (the release's completion).
    Ok(u64),
    /// The release was refused: it was no longer the client's.
    Refused,
    /// The release's outcome is unknown.
    Unknown,
    /// Never released: the process died, or it was the end of the run.
    Never,
}

/// A fenced write.
#[derive(Clone, Debug)]
pub(crate) struct Fenced {
    pub(crate) name: String,
    pub(crate) process: String,
    pub(crate) token: u64,
    pub(crate) invoked: u64,
    pub(crate) completed: Option<u64>,
    /// `None`: unknown.
    pub(crate) accepted: Option<bool>,
    pub(crate) read: Option<i64>,
}

/// An unfenced write that completed (`read` what it read), or not.
#[derive(Clone, Debug)]
pub(crate) struct Unfenced {
    pub(crate) name: String,
    /// The hold it was done under.
    pub(crate) hold: usize,
    /// Its invoke (before its read) and completion (after its write).
    pub(crate) invoked: u64,
    pub(crate) done: u64,
    pub(crate) read: Option<i64>,
}

/// A reader's two reads under its hold.
#[derive(Clone, Debug)]
pub(crate) struct Reads {
    pub(crate) hold: usize,
    pub(crate) first: i64,
    pub(crate) second: i64,
}

/// A fair-lock acquire: when it was asked, and when and how it ended.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) process: String,
    pub(crate) name: String,
    pub(crate) invoked: u64,
    /// When it ended (`None`: never, the process died).
    pub(crate) done: Option<u64>,
    pub(crate) granted: bool,
    /// It ended in an error: it may have left the queue for a new place.
    pub(crate) failed: bool,
}

/// A latch operation.
#[derive(Clone, Debug)]
pub(crate) struct LatchOp {
    pub(crate) name: String,
    pub(crate) count_down: bool,
    pub(crate) invoked: u64,
    pub(crate) done: Option<u64>,
    /// An await's answer: the latch opened.
    pub(crate) open: bool,
}

/// Everything read from a phase's histories.
#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    pub(crate) counts: Counts,
    pub(crate) holds: Vec<Hold>,
    pub(crate) fenced: Vec<Fenced>,
    pub(crate) unfenced: Vec<Unfenced>,
    /// Unfenced writes of unknown outcome.
    pub(crate) unfenced_unknown: u64,
    pub(crate) reads: Vec<Reads>,
    pub(crate) fair: Vec<Request>,
    pub(crate) latch: Vec<LatchOp>,
    /// Per semaphore name: acquires and releases of unknown outcome.
    pub(crate) permit_unknowns: BTreeMap<String, (u64, u64)>,
    /// Acquisitions per client kind.
    pub(crate) acquired_by: BTreeMap<String, u64>,
    /// Acquires refused as busy, per client kind.
    pub(crate) refused_by: BTreeMap<String, u64>,
}

/// Reads every process's events, in time order.
pub(crate) fn read(events: &[Event]) -> History {
    let mut by_process: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in events {
        by_process.entry(&e.p).or_default().push(e);
    }
    let mut out = History::default();
    for events in by_process.values_mut() {
        events.sort_by_key(|e| e.t);
        Process::default().read(events, &mut out);
    }
    out
}

/// One process's state as its events are read.
#[derive(Default)]
struct Process {
    /// The invoke of the operation in flight.
    pending: Option<usize>,
    /// Indices into `holds` of what is held now.
    open: Vec<usize>,
    /// Indices of the holds whose release is in flight.
    closing: Vec<usize>,
}

impl Process {
    fn read(mut self, events: &[&Event], out: &mut History) {
        for (i, e) in events.iter().enumerate() {
            if e.ty == Type::Invoke {
                out.counts.ops += 1;
                if let Some(p) = self.pending.take() {
                    unfinished(events[p], out);
                }
                self.invoke(e, out);
                self.pending = Some(i);
                continue;
            }
            let Some(p) = self.pending.take() else {
                continue;
            };
            self.complete(events[p], e, out);
        }
        if let Some(p) = self.pending {
            unfinished(events[p], out);
        }
        // Died (or the run ended) holding: held as far as it knew until
        // its last event.
        let last = events.last().map_or(0, |e| e.t);
        for h in self.open {
            out.holds[h].end = last.max(out.holds[h].start);
        }
    }

    fn invoke(&mut self, e: &Event, out: &mut History) {
        match e.f {
            Op::Release => {
                for &h in &self.open {
                    out.holds[h].end = e.t;
                    out.holds[h].released_lost = e.lost;
                }
                self.closing = std::mem::take(&mut self.open);
            }
            Op::Write | Op::Unfenced | Op::Read => {
                // A multi-lock's step works on one member: that member's
                // hold did it.
                let on: Vec<usize> = match self.open.iter().find(|&&h| out.holds[h].name == e.name)
                {
                    Some(&h) => vec![h],
                    None => self.open.clone(),
                };
                for h in on {
                    out.holds[h].work.push((e.t, e.lost));
                }
            }
            Op::Acquire | Op::CountDown | Op::Await => {}
        }
    }

    fn complete(&mut self, invoke: &Event, e: &Event, out: &mut History) {
        if e.ty == Type::Info {
            unfinished(invoke, out);
            if invoke.f == Op::Release {
                for &h in &self.closing {
                    out.holds[h].release = Release::Unknown;
                }
            }
            return;
        }
        match (invoke.f, e.ty) {
            (Op::Acquire, Type::Ok) => {
                out.counts.acquired += 1;
                *out.acquired_by.entry(e.c.clone()).or_default() += 1;
                let id = out.holds.len();
                let members: Vec<&str> = e.name.split(',').collect();
                for (i, member) in members.iter().enumerate() {
                    let token = match members.len() {
                        1 => e.token,
                        _ => e.tokens.get(i).copied().flatten(),
                    };
                    self.open.push(out.holds.len());
                    out.holds.push(Hold {
                        process: e.p.clone(),
                        client: e.c.clone(),
                        w: e.w,
                        name: (*member).to_owned(),
                        invoked: invoke.t,
                        start: e.t,
                        end: e.t,
                        token,
                        release: Release::Never,
                        released_lost: None,
                        id,
                        work: Vec::new(),
                    });
                }
                request(invoke, Some(e), out);
            }
            (Op::Acquire, _) => {
                out.counts.busy += 1;
                if e.ty == Type::Fail {
                    *out.refused_by.entry(e.c.clone()).or_default() += 1;
                }
                request(invoke, Some(e), out);
            }
            (Op::Write, _) => out.fenced.push(Fenced {
                name: e.name.clone(),
                process: e.p.clone(),
                token: invoke.token.or(e.token).unwrap_or(0),
                invoked: invoke.t,
                completed: Some(e.t),
                accepted: e.accepted,
                read: e.read,
            }),
            (Op::Unfenced, _) => {
                if let Some(hold) = self.hold_of(&e.name, out) {
                    out.unfenced.push(Unfenced {
                        name: e.name.clone(),
                        hold,
                        invoked: invoke.t,
                        done: e.t,
                        read: e.read,
                    });
                }
            }
            (Op::Read, _) => {
                if let (Some(hold), Some(first), Some(second)) =
                    (self.hold_of(&e.name, out), e.read, e.read2)
                {
                    out.reads.push(Reads {
                        hold,
                        first,
                        second,
                    });
                }
            }
            (Op::Release, Type::Fail) => {
                out.counts.released_not_owner += 1;
                for &h in &self.closing {
                    out.holds[h].release = Release::Refused;
                }
            }
            (Op::Release, _) => {
                for &h in &self.closing {
                    out.holds[h].release = Release::Ok(e.t);
                }
            }
            (Op::CountDown | Op::Await, _) => out.latch.push(LatchOp {
                name: e.name.clone(),
                count_down: invoke.f == Op::CountDown,
                invoked: invoke.t,
                done: Some(e.t),
                open: e.open == Some(true),
            }),
        }
    }

    /// The open hold of `name`.
    fn hold_of(&self, name: &str, out: &History) -> Option<usize> {
        self.open
            .iter()
            .copied()
            .find(|&h| out.holds[h].name == name)
    }
}

/// A fair-lock acquire, with its completion `e` (`None`: never).
fn request(invoke: &Event, e: Option<&Event>, out: &mut History) {
    if invoke.w != Workload::Fair {
        return;
    }
    out.fair.push(Request {
        process: invoke.p.clone(),
        name: invoke.name.clone(),
        invoked: invoke.t,
        done: e.map(|e| e.t),
        granted: e.is_some_and(|e| e.ty == Type::Ok),
        failed: e.is_none_or(|e| e.ty == Type::Info),
    });
}

/// An operation whose outcome is unknown: its process died during it, or
/// it ended in an error.
fn unfinished(invoke: &Event, out: &mut History) {
    out.counts.unknown += 1;
    match invoke.f {
        Op::Write => out.fenced.push(Fenced {
            name: invoke.name.clone(),
            process: invoke.p.clone(),
            token: invoke.token.unwrap_or(0),
            invoked: invoke.t,
            completed: None,
            accepted: None,
            read: None,
        }),
        Op::Acquire => {
            request(invoke, None, out);
            if matches!(invoke.w, Workload::Sem | Workload::Xsem) {
                out.permit_unknowns
                    .entry(invoke.name.clone())
                    .or_default()
                    .0 += 1;
            }
        }
        Op::Release => {
            if matches!(invoke.w, Workload::Sem | Workload::Xsem) {
                out.permit_unknowns
                    .entry(invoke.name.clone())
                    .or_default()
                    .1 += 1;
            }
        }
        Op::CountDown | Op::Await => out.latch.push(LatchOp {
            name: invoke.name.clone(),
            count_down: invoke.f == Op::CountDown,
            invoked: invoke.t,
            done: None,
            open: false,
        }),
        Op::Unfenced => out.unfenced_unknown += 1,
        Op::Read => {}
    }
}

/// The indices of `holds` by name, each name's in order of start.
pub(crate) fn by_name(holds: &[Hold]) -> BTreeMap<&str, Vec<usize>> {
    let mut out: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, h) in holds.iter().enumerate() {
        out.entry(&h.name).or_default().push(i);
    }
    for same in out.values_mut() {
        same.sort_by_key(|&i| holds[i].start);
    }
    out
}
