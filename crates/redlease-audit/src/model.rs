//! What an audit finds: the declared locks, the warnings about them, and the
//! problems that kept parts of the source from being read. All of it
//! serializes to the JSON the `--json` flag prints.

use std::time::Duration;

use serde::Serialize;

/// Everything one audit found, in source order (files sorted by path, then
/// by line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// Every `#[distributed_lock]` whose arguments could be read.
    pub locks: Vec<Declared>,
    /// What a reviewer should look at, each about one lock in `locks`.
    pub warnings: Vec<Warning>,
    /// Files that do not parse and attributes whose arguments are malformed:
    /// the locks they declare are missing from `locks`.
    pub problems: Vec<Problem>,
}

impl Audit {
    /// True when there is nothing to review: no warnings and no problems.
    pub fn is_clean(&self) -> bool {
        self.warnings.is_empty() && self.problems.is_empty()
    }
}

/// One `#[distributed_lock(..)]` attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Declared {
    /// The file, relative to the audited root, with `/` separators.
    pub file: String,
    /// The 1-based line of the attribute's `#`.
    pub line: usize,
    /// The function: `name`, `Type::method` in an `impl` (the trait's name in
    /// a trait's default method), with inline module names in front
    /// (`jobs::run_payroll`) since the file alone does not tell them.
    pub function: String,
    /// The key template as written, e.g. `sales:receipt:lock:{bill_id}`.
    pub key: String,
    /// Which lock the key names: the plain lock, or a side of the
    /// read-write lock (`mode = "read"` / `"write"`).
    pub mode: Mode,
    /// The namespace the key starts with (the text before the first
    /// placeholder, up to its last `:`); `None` when there is none.
    pub prefix: Option<String>,
    /// How long to wait for a held lock; `None` means one attempt.
    pub wait: Option<Timing>,
    /// The fixed lease; `None` means watchdog mode (a 30 s lease renewed
    /// every 10 s while the function runs).
    pub lease: Option<Timing>,
    /// The least time the lock is held (`at_least`): released no earlier,
    /// for a job that runs once per tick; `None` when not given.
    pub at_least: Option<Timing>,
    /// The `client = ..` expression as written, when given.
    pub client: Option<String>,
}

impl Declared {
    /// The lease the holder has at any moment: the fixed lease, or the
    /// watchdog's lease in watchdog mode.
    pub fn effective_lease(&self) -> Duration {
        self.lease
            .as_ref()
            .map_or(crate::WATCHDOG_LEASE, |lease| lease.duration)
    }

    /// `file:line`, the location column of the table.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The lock a declaration takes, by its `mode`; serialized as `plain`,
/// `read` or `write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No `mode`: the plain (exclusive) lock.
    Plain,
    /// `mode = "read"`: the read side of the read-write lock.
    Read,
    /// `mode = "write"`: the write side of the read-write lock.
    Write,
}

impl Mode {
    /// The name used in the table and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// A duration argument: as written, and parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// The string in the attribute, e.g. `1m30s`.
    pub text: String,
    /// Its value; serialized as `ms`, whole milliseconds.
    #[serde(rename = "ms", serialize_with = "crate::duration::serialize_ms")]
    pub duration: Duration,
}

/// Something a reviewer should look at in one lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The lock's file, as in [`Declared::file`].
    pub file: String,
    /// The lock's line, as in [`Declared::line`].
    pub line: usize,
    /// The lock's function, as in [`Declared::function`].
    pub function: String,
    /// The lock's key template.
    pub key: String,
    /// Which check fired.
    pub kind: WarningKind,
    /// What is wrong and why it matters, lowercase.
    pub message: String,
}

/// The checks; see the crate docs for what each means and its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The wait is at least half the lease (the watchdog's 30 s in watchdog
    /// mode).
    WaitNearLease,
    /// The key has no `prefix:` before its first placeholder.
    KeyWithoutPrefix,
    /// The fixed lease is at least 10× the median of the other fixed leases
    /// under the same prefix.
    LeaseOutlier,
    /// The fixed lease is under 1 s.
    ShortLease,
    /// `at_least` is at least the fixed lease.
    AtLeastOverLease,
}

impl WarningKind {
    /// The name used in the table and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitNearLease => "wait_near_lease",
            Self::KeyWithoutPrefix => "key_without_prefix",
            Self::LeaseOutlier => "lease_outlier",
            Self::ShortLease => "short_lease",
            Self::AtLeastOverLease => "at_least_over_lease",
        }
    }
}

/// Source the audit could not read, so locks may be missing from the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as in [`Declared::file`].
    pub file: String,
    /// The 1-based line of the error, when known.
    pub line: Option<usize>,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What is wrong, lowercase.
    pub message: String,
}

impl Problem {
    /// `file:line`, or just the file when the line is unknown.
    pub fn location(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.clone(),
        }
    }
}

/// The kinds of [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The file is not valid Rust (or not UTF-8); none of its locks are
    /// listed.
    UnparsableFile,
    /// A `#[distributed_lock]` whose arguments the attribute would reject;
    /// that lock is not listed.
    MalformedAttribute,
}

impl ProblemKind {
    /// The name used in the table and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnparsableFile => "unparsable_file",
            Self::MalformedAttribute => "malformed_attribute",
        }
    }
}
