//! What `inspect` reports for each lock, and the problems it looks for.

use std::time::Duration;

use serde::Serialize;

use super::read::{Now, Raw};

/// Fencing tokens below this (September 2001 in microseconds) were not
/// issued from the clock (Redisson's `RFencedLock` counts from 1), so they
/// say nothing about when the lock was taken.
const CLOCK_TOKEN_FLOOR: u64 = 1_000_000_000_000_000;

/// The whole answer of one `inspect` call.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) pattern: String,
    /// Where the scan stopped: `0` when it went through every key, else the
    /// value to pass to `--cursor` to go on.
    pub(crate) cursor: u64,
    pub(crate) complete: bool,
    /// Keys SCAN returned in this call.
    pub(crate) keys_seen: usize,
    /// Keys that are not locks, left out because no --pattern named them as
    /// lock keys.
    pub(crate) not_locks_skipped: usize,
    pub(crate) locks: Vec<Entry>,
}

/// One lock (or a key in its place), with its auxiliary keys attached.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) kind: Kind,
    /// The key's Redis type (`none` when only its queue exists).
    #[serde(rename = "type")]
    pub(crate) key_type: String,
    /// A read-write lock's mode, `read` or `write`.
    pub(crate) mode: Option<String>,
    pub(crate) owners: Vec<Owner>,
    /// Milliseconds to live; `None` when the key never expires or is absent.
    pub(crate) ttl_ms: Option<i64>,
    /// Approximate time since the newest fencing token of the name was
    /// issued, which is when the current hold was taken if a redlease client
    /// took it; `None` when unknown (no token, or not from the clock).
    pub(crate) age_ms: Option<u64>,
    pub(crate) fencing_token: Option<u64>,
    /// Entries in the fair queue (only the first 100 are listed).
    pub(crate) queue_len: i64,
    pub(crate) waiters: Vec<Waiter>,
    pub(crate) problems: Vec<Problem>,
}

/// What a key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A lock hash (`RLock`, `RFairLock`, redlease).
    Lock,
    /// A Redisson `RReadWriteLock` hash (with a `mode` field).
    #[serde(rename = "rwlock")]
    RwLock,
    /// No lock key, but a fair queue under its name.
    QueueOnly,
    /// A key that matched the pattern and is no lock hash.
    NotALock,
}

/// A field of a lock hash.
#[derive(Debug, Serialize)]
pub(crate) struct Owner {
    /// `<client-id>:<owner>` (`...:write` for a read-write lock's writer).
    pub(crate) field: String,
    pub(crate) count: Option<i64>,
}

/// A fair-queue entry.
#[derive(Debug, Serialize)]
pub(crate) struct Waiter {
    pub(crate) owner: String,
    /// Its deadline, in milliseconds of the server's clock.
    pub(crate) deadline_ms: Option<u64>,
    /// No deadline, or one that has passed: the waiter is gone.
    pub(crate) stale: bool,
}

/// Something an operator should look at.
#[derive(Debug, Serialize)]
pub(crate) struct Problem {
    pub(crate) kind: ProblemKind,
    pub(crate) message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ProblemKind {
    /// A lock without expiry: a holder that dies keeps it for ever.
    NoTtl,
    /// A key that is not a lock hash.
    WrongType,
    /// A lock field whose value is not a positive hold count.
    BadCount,
    /// Fair-queue entries whose waiters are gone.
    StaleWaiters,
}

impl ProblemKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProblemKind::NoTtl => "no_ttl",
            ProblemKind::WrongType => "wrong_type",
            ProblemKind::BadCount => "bad_count",
            ProblemKind::StaleWaiters => "stale_waiters",
        }
    }
}

/// Judges one lock name's keys.
pub(crate) fn entry(raw: Raw, now: Now) -> Entry {
    let mut problems = Vec::new();
    let mut problem = |kind, message: String| problems.push(Problem { kind, message });
    let mut owners = Vec::new();
    let mut mode = None;
    let kind = match (raw.key_type.as_str(), &raw.fields) {
        ("none", _) => Kind::QueueOnly,
        ("hash", Some(fields)) => {
            let mut strangers = Vec::new();
            for (field, value) in fields {
                if field == "mode" {
                    mode = Some(value.clone());
                } else if field.contains(':') {
                    let count = value.parse().ok();
                    if count.is_none_or(|c: i64| c < 1) {
                        problem(
                            ProblemKind::BadCount,
                            format!(
                                "owner {field} has hold count {value:?}, expected a positive integer"
                            ),
                        );
                    }
                    owners.push(Owner {
                        field: field.clone(),
                        count,
                    });
                } else {
                    strangers.push(field.as_str());
                }
            }
            if strangers.is_empty() {
                if mode.is_some() {
                    Kind::RwLock
                } else {
                    Kind::Lock
                }
            } else {
                problem(
                    ProblemKind::WrongType,
                    format!(
                        "hash with fields that are not lock owners ({}), not a lock",
                        strangers.join(", ")
                    ),
                );
                owners.clear();
                mode = None;
                Kind::NotALock
            }
        }
        ("hash", None) => {
            problem(
                ProblemKind::WrongType,
                format!("hash with {} fields, not a lock", raw.hash_len),
            );
            Kind::NotALock
        }
        (other, _) => {
            problem(
                ProblemKind::WrongType,
                format!("holds a {other}, not a lock hash (a SET NX lock of another tool?)"),
            );
            Kind::NotALock
        }
    };
    let is_lock = matches!(kind, Kind::Lock | Kind::RwLock);
    if is_lock && raw.pttl_ms == -1 {
        problem(
            ProblemKind::NoTtl,
            "never expires (no ttl): if its holder is gone it stays locked for ever".to_owned(),
        );
    }
    let fencing_token = raw.token.as_deref().and_then(|t| t.parse::<u64>().ok());
    let age_ms = fencing_token
        .filter(|&t| is_lock && t >= CLOCK_TOKEN_FLOOR && t <= now.micros)
        .map(|t| (now.micros - t) / 1_000);
    let waiters = waiters(&raw, now);
    let stale = waiters.iter().filter(|w| w.stale).count();
    if stale > 0 {
        problem(
            ProblemKind::StaleWaiters,
            format!(
                "{stale} fair-queue entr{} of gone waiters (deadline passed); the queue's next acquire or `redlease unlock --force` drops them",
                if stale == 1 { "y" } else { "ies" }
            ),
        );
    }
    Entry {
        key: raw.name,
        kind,
        key_type: raw.key_type,
        mode,
        owners,
        ttl_ms: (raw.pttl_ms >= 0).then_some(raw.pttl_ms),
        age_ms,
        fencing_token: fencing_token.filter(|_| is_lock),
        queue_len: raw.queue_len,
        waiters,
        problems,
    }
}

/// Queue entries with their deadlines, then passed deadlines of members not
/// in the queue (the fair prelude's rule: no deadline or a passed one is a
/// gone waiter).
fn waiters(raw: &Raw, now: Now) -> Vec<Waiter> {
    let now_ms = now.millis() as f64;
    let listed = raw.queue.iter().map(|(owner, deadline)| Waiter {
        owner: owner.clone(),
        deadline_ms: deadline.map(|d| d.max(0.0) as u64),
        stale: deadline.is_none_or(|d| d <= now_ms),
    });
    let unlisted = raw.past_deadlines.iter().map(|(owner, deadline)| Waiter {
        owner: owner.clone(),
        deadline_ms: Some(deadline.max(0.0) as u64),
        stale: true,
    });
    listed.chain(unlisted).collect()
}

/// `ttl` as a table cell.
pub(crate) fn ttl_cell(entry: &Entry) -> String {
    match (entry.ttl_ms, entry.key_type.as_str()) {
        (Some(ms), _) => crate::duration::human(Duration::from_millis(ms as u64)),
        (None, "none") => "-".to_owned(),
        (None, _) => "never".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(key_type: &str, fields: &[(&str, &str)], pttl_ms: i64) -> Raw {
        Raw {
            name: "k".to_owned(),
            key_type: key_type.to_owned(),
            pttl_ms,
            hash_len: fields.len() as i64,
            fields: Some(
                fields
                    .iter()
                    .map(|(f, v)| (f.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Raw::default()
        }
    }

    const NOW: Now = Now {
        micros: 1_800_000_000_000_000,
    };

    fn kinds(e: &Entry) -> Vec<ProblemKind> {
        e.problems.iter().map(|p| p.kind).collect()
    }

    #[test]
    fn a_held_lock_has_no_problem_and_an_age() {
        let mut r = raw("hash", &[("u:1", "1")], 20_000);
        r.token = Some((NOW.micros - 3_000_000).to_string());
        let e = entry(r, NOW);
        assert_eq!(e.kind, Kind::Lock);
        assert!(e.problems.is_empty());
        assert_eq!(e.age_ms, Some(3_000));
    }

    #[test]
    fn redisson_tokens_give_no_age() {
        let mut r = raw("hash", &[("u:1", "1")], 20_000);
        r.token = Some("7".to_owned());
        assert_eq!(entry(r, NOW).age_ms, None);
    }

    #[test]
    fn problems_are_found() {
        assert_eq!(
            kinds(&entry(raw("hash", &[("u:1", "1")], -1), NOW)),
            [ProblemKind::NoTtl]
        );
        assert_eq!(
            kinds(&entry(raw("string", &[], -1), NOW)),
            [ProblemKind::WrongType]
        );
        let e = entry(raw("hash", &[("name", "bob")], -1), NOW);
        assert_eq!(
            (e.kind, kinds(&e)),
            (Kind::NotALock, vec![ProblemKind::WrongType])
        );
        assert_eq!(
            kinds(&entry(raw("hash", &[("u:1", "x")], 5), NOW)),
            [ProblemKind::BadCount]
        );
    }

    #[test]
    fn read_write_locks_are_locks() {
        let e = entry(
            raw("hash", &[("mode", "read"), ("u:1", "2"), ("v:3", "1")], 9),
            NOW,
        );
        assert_eq!(
            (e.kind, e.mode.as_deref(), e.owners.len()),
            (Kind::RwLock, Some("read"), 2)
        );
        assert!(e.problems.is_empty());
    }

    #[test]
    fn waiters_past_their_deadline_are_stale() {
        let now_ms = NOW.millis() as f64;
        let mut r = raw("none", &[], -2);
        r.queue = vec![
            ("a:1".to_owned(), Some(now_ms - 1.0)),
            ("b:1".to_owned(), Some(now_ms + 5_000.0)),
            ("c:1".to_owned(), None),
        ];
        r.past_deadlines = vec![("d:1".to_owned(), now_ms - 9.0)];
        let e = entry(r, NOW);
        let stale: Vec<_> = e.waiters.iter().map(|w| w.stale).collect();
        assert_eq!(stale, [true, false, true, true]);
        assert_eq!(
            (e.kind, kinds(&e)),
            (Kind::QueueOnly, vec![ProblemKind::StaleWaiters])
        );
    }
}
