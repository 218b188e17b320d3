//! What the clients work on: every primitive of redlease's lock family, each
//! on names of its own in a phase, and which client kinds use which.
//!
//! A phase's names all start with its prefix (`judge:<seed>:<phase>`) and
//! end with a tag that says the primitive: `r<i>` and `s<i>` plain locks in
//! Redisson's and the string layout (a multi-lock takes `r0` and `r1`
//! together), `f0` the fair lock, `w0` the read-write lock, `m0` the
//! semaphore, `x0` the expirable semaphore, `l<round>` the latches, `e0`
//! the election (#40).

use serde::{Deserialize, Serialize};

/// A primitive, as one operation of a client's loop uses it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Workload {
    /// The plain lock (either layout, by its name).
    #[default]
    Lock,
    /// The fair lock: holds as a lock's, granted in arrival order.
    Fair,
    /// A read-write lock's read side: shared with readers only.
    Read,
    /// A read-write lock's write side: alone.
    Write,
    /// One permit of the semaphore (Redisson's `RSemaphore`): at most
    /// [`PERMITS`] at once; a permit never expires.
    Sem,
    /// One permit of the expirable semaphore (`RPermitExpirableSemaphore`):
    /// at most [`PERMITS`] at once, each renewed while held.
    Xsem,
    /// A count-down latch of the current round.
    Latch,
    /// A multi-lock of the plain locks `r0` and `r1`, all or none.
    Multi,
    /// Leadership of the election `e0` (#40): a redlease client campaigns
    /// and holds a leadership, whose token is its epoch; a Java client
    /// holds `RLock` on the name, a leader with no value. One leader at a
    /// time, and epochs that grow, are the lock's checks.
    Elect,
}

/// The permits of each semaphore.
pub(crate) const PERMITS: u64 = 2;

/// How many count-downs open a latch.
pub(crate) const LATCH_COUNT: u64 = 2;

/// How long a latch round lasts, in ms: a client's latch operation works
/// on the latch of the round it falls in.
pub(crate) const LATCH_ROUND_MS: u64 = 2000;

impl Workload {
    pub(crate) const ALL: [Workload; 9] = [
        Workload::Lock,
        Workload::Fair,
        Workload::Read,
        Workload::Write,
        Workload::Sem,
        Workload::Xsem,
        Workload::Latch,
        Workload::Multi,
        Workload::Elect,
    ];

    /// How often a client's loop picks it, against the others it can do.
    pub(crate) fn weight(self) -> u64 {
        match self {
            Workload::Lock => 8,
            Workload::Fair | Workload::Multi | Workload::Latch | Workload::Elect => 2,
            Workload::Read | Workload::Write | Workload::Sem | Workload::Xsem => 1,
        }
    }

    /// Whether its holds exclude every other hold of their name (a lock,
    /// a write side, a multi-lock's member); readers exclude writers only;
    /// permits count against [`PERMITS`].
    pub(crate) fn is_exclusive(self) -> bool {
        matches!(
            self,
            Workload::Lock | Workload::Fair | Workload::Write | Workload::Multi | Workload::Elect
        )
    }

    /// Whether a hold is given up by Redis when its holder stops renewing
    /// it: everything but the plain semaphore's permits, which stay taken
    /// until released.
    pub(crate) fn expires(self) -> bool {
        self != Workload::Sem
    }
}

/// A phase's names.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    prefix: String,
    per_layout: usize,
}

impl Names {
    pub(crate) fn new(prefix: &str, per_layout: usize) -> Names {
        Names {
            prefix: prefix.to_owned(),
            per_layout: per_layout.max(2),
        }
    }

    fn name(&self, tag: &str) -> String {
        format!("{}:{tag}", self.prefix)
    }

    /// The plain locks of one layout.
    pub(crate) fn locks(&self, redisson_layout: bool) -> Vec<String> {
        let layout = if redisson_layout { "r" } else { "s" };
        (0..self.per_layout)
            .map(|i| self.name(&format!("{layout}{i}")))
            .collect()
    }

    /// The names `w` uses (all but the latches, which have one per round:
    /// see [`Names::latch`]); a multi-lock's one entry is its members
    /// joined by `,`.
    pub(crate) fn of(&self, w: Workload, redisson_layout: bool) -> Vec<String> {
        match w {
            Workload::Lock => self.locks(redisson_layout),
            Workload::Fair => vec![self.name("f0")],
            Workload::Read | Workload::Write => vec![self.name("w0")],
            Workload::Sem => vec![self.name("m0")],
            Workload::Xsem => vec![self.name("x0")],
            Workload::Latch => Vec::new(),
            Workload::Multi => vec![self.locks(true)[..2].join(",")],
            Workload::Elect => vec![self.name("e0")],
        }
    }

    /// The latch of the round `t_us` falls in, counting from `start_us`.
    pub(crate) fn latch(&self, start_us: u64, t_us: u64) -> String {
        let round = t_us.saturating_sub(start_us) / (LATCH_ROUND_MS * 1000);
        self.name(&format!("l{round}"))
    }

    /// Every latch of a phase that lasts `seconds`.
    pub(crate) fn latches(&self, seconds: u64) -> Vec<String> {
        (0..=seconds * 1000 / LATCH_ROUND_MS)
            .map(|round| self.name(&format!("l{round}")))
            .collect()
    }

    /// Every name whose row the clients write: the locks, the fair lock,
    /// the read-write lock and the election.
    pub(crate) fn rows(&self) -> Vec<String> {
        let mut out = self.locks(true);
        out.extend(self.locks(false));
        out.push(self.name("f0"));
        out.push(self.name("w0"));
        out.push(self.name("e0"));
        out
    }
}

/// Which workload a name belongs to, from its tag.
pub(crate) fn of_name(name: &str) -> Option<Workload> {
    let tag = name.rsplit(':').next()?;
    Some(match tag.chars().next()? {
        'r' | 's' => Workload::Lock,
        'f' => Workload::Fair,
        'w' => Workload::Write,
        'm' => Workload::Sem,
        'x' => Workload::Xsem,
        'l' => Workload::Latch,
        'e' => Workload::Elect,
        _ => return None,
    })
}

/// Picks one of `can` by weight with the random number `roll`.
pub(crate) fn pick(can: &[Workload], roll: u64) -> Workload {
    let total: u64 = can.iter().map(|w| w.weight()).sum();
    let mut at = roll % total.max(1);
    for w in can {
        if at < w.weight() {
            return *w;
        }
        at -= w.weight();
    }
    Workload::Lock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_their_workload_and_a_multi_lock_takes_two_plain_locks() {
        let names = Names::new("judge:1:none", 2);
        assert_eq!(names.locks(true), ["judge:1:none:r0", "judge:1:none:r1"]);
        assert_eq!(
            names.of(Workload::Multi, true),
            ["judge:1:none:r0,judge:1:none:r1"]
        );
        assert_eq!(names.latch(0, 4_100_000), "judge:1:none:l2");
        for w in [
            Workload::Lock,
            Workload::Fair,
            Workload::Sem,
            Workload::Xsem,
            Workload::Elect,
        ] {
            for name in names.of(w, true) {
                assert_eq!(of_name(&name), Some(w), "{name}");
            }
        }
        assert_eq!(of_name("judge:1:none:s1"), Some(Workload::Lock));
    }

    #[test]
    fn picks_follow_the_weights() {
        let can = [Workload::Lock, Workload::Sem];
        let picks: Vec<Workload> = (0..9).map(|r| pick(&can, r)).collect();
        assert_eq!(picks.iter().filter(|w| **w == Workload::Sem).count(), 1);
        assert_eq!(pick(&[Workload::Fair], 12345), Workload::Fair);
    }
}
