//! The doctor: checks the deployment a client talks to for settings that
//! lose locks or make them fail, and says what to change (`redlease
//! doctor`, and a service's own start-up check).
//!
//! * `mod.rs`: the [`Report`] and its [`Finding`]s, and [`examine`].
//! * `ask.rs`: what is asked of each node, of the sentinels and of the
//!   client itself.
//! * `judge.rs`: what the answers mean: pure functions of `INFO` text and
//!   replies, each with the reason for its threshold (`judge/tests.rs`
//!   shows each threshold from both sides).
//!
//! Exit 2 (a [`Severity::Danger`]) is kept for what loses a held lock in
//! normal operation, with no fault: an eviction policy, a writable replica.
//! What loses locks only in a fault (no persistence and a restart, a
//! failover with asynchronous replication), or makes lock calls fail
//! loudly (no scripting, missing ACL rights, a replica's `READONLY`), is a
//! [`Severity::Warning`]: the fencing token and a restart's seeding
//! (DESIGN.md, "Restarts") cover the first, the error the second.

mod ask;
mod judge;

use std::fmt;

use crate::client::Client;
use crate::error::Error;

/// How much a finding matters; ordered, so the worst of a report is its
/// maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Nothing to change.
    Ok,
    /// Something to change: lock calls fail, or a fault can lose a lock.
    Warning,
    /// A setting that can lose a held lock with no fault at all.
    Danger,
}

impl Severity {
    /// `ok`, `warning` or `danger`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Danger => "danger",
        }
    }

    /// The exit status `redlease doctor` gives for it: 0, 1 or 2.
    pub fn exit_code(self) -> u8 {
        match self {
            Severity::Ok => 0,
            Severity::Warning => 1,
            Severity::Danger => 2,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was checked. Its [`name`](Check::name) is the setting or property
/// the finding is about, as a table row or a JSON field names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Check {
    /// Master or replica; a writable replica takes locks nobody else sees.
    Role,
    /// `maxmemory-policy`: anything but `noeviction` can evict a held lock.
    Eviction,
    /// Memory in use against `maxmemory`: a full server refuses acquires.
    Memory,
    /// `appendonly`, `appendfsync` and snapshots: what a restart keeps.
    Persistence,
    /// The replicas connected.
    Replicas,
    /// Whether `WAIT` answers ([`ClientBuilder::require_replicas`](crate::ClientBuilder::require_replicas)
    /// sends it).
    Wait,
    /// Whether `WAITAOF` answers (Redis 7.2 and later).
    WaitAof,
    /// Whether Lua scripts run (every lock call is one).
    Scripting,
    /// Whether this client may take, fence and release the probe lock.
    Rights,
    /// Whether this client may subscribe to the probe lock's channel
    /// (waiters are woken by it).
    Subscribe,
    /// The server and its version.
    Version,
    /// The server's own compare-and-delete (`DELEX`, `DELIFEQ`), which
    /// string-layout releases use instead of a script.
    NativeRelease,
    /// Every hash slot served (`CLUSTER INFO`).
    ClusterSlots,
    /// Sharded pub/sub (`SSUBSCRIBE`, Redis 7) and the mode this client
    /// uses.
    ShardedPubSub,
    /// Whether the sentinels can agree on a failover (`SENTINEL CKQUORUM`)
    /// and how many there are.
    SentinelQuorum,
    /// Whether the sentinels have a replica to promote.
    SentinelReplicas,
    /// The server's clock against this machine's.
    Clock,
    /// The round trip to the node.
    RoundTrip,
}

impl Check {
    /// The check's name: `maxmemory-policy`, `persistence`, `clock`, ...
    pub fn name(self) -> &'static str {
        match self {
            Check::Role => "role",
            Check::Eviction => "maxmemory-policy",
            Check::Memory => "memory",
            Check::Persistence => "persistence",
            Check::Replicas => "replicas",
            Check::Wait => "wait",
            Check::WaitAof => "waitaof",
            Check::Scripting => "scripting",
            Check::Rights => "rights",
            Check::Subscribe => "subscribe",
            Check::Version => "version",
            Check::NativeRelease => "native-release",
            Check::ClusterSlots => "cluster-slots",
            Check::ShardedPubSub => "sharded-pubsub",
            Check::SentinelQuorum => "sentinel-quorum",
            Check::SentinelReplicas => "sentinel-replicas",
            Check::Clock => "clock",
            Check::RoundTrip => "round-trip",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One check's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// What was checked.
    pub check: Check,
    /// How much it matters.
    pub severity: Severity,
    /// The node it is about: a cluster node's or a sentinel's `host:port`,
    /// the master's under Sentinel; `None` for the URL's one node, or for
    /// the deployment as a whole.
    pub node: Option<String>,
    /// What was found, as the server said it (`allkeys-lru`,
    /// `appendonly no, save ""`, `+12 ms`).
    pub found: String,
    /// What to change and why; `None` when nothing needs to.
    pub advice: Option<String>,
}

impl Finding {
    fn new(check: Check, node: Option<&str>, verdict: judge::Verdict) -> Finding {
        Finding {
            check,
            severity: verdict.severity,
            node: node.map(str::to_owned),
            found: verdict.found,
            advice: verdict.advice,
        }
    }
}

/// Everything [`examine`] found, in the order checked: per node, then
/// the deployment's, then the client's rights.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Report {
    /// One per check and node.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The worst severity found; [`Severity::Ok`] for an empty report.
    pub fn worst(&self) -> Severity {
        self.findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok)
    }

    /// The findings of `check`, on every node.
    pub fn of(&self, check: Check) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.check == check)
    }
}

/// Checks the deployment `client` talks to: each master (every master of
/// a cluster; the one the sentinels name under Sentinel), the cluster's
/// slots, the sentinels, and what this client may do, by taking, fencing
/// and releasing lock `probe` with a 10 s fixed lease, and subscribing to
/// its channel.
///
/// `probe` should be a name the client's ACL user may lock (a name under
/// the prefix given to `redlease acl --prefix`) and that nothing else uses:
/// when another holds it, the rights check says so and proves nothing.
///
/// A check that cannot be made (a command refused or renamed, as managed
/// services do with `CONFIG`) is a [`Severity::Warning`] saying so, not an
/// error.
///
/// # Errors
///
/// An invalid `probe` name gives an error for which
/// [`is_invalid_argument`](Error::is_invalid_argument) is true; a
/// deployment whose nodes cannot be listed or read at all (`INFO` fails on
/// the first), the error that says why.
///
/// # Cancel safety
///
/// Cancel safe as a lock acquire is: dropped while it holds the probe lock,
/// the guard's background release frees it, and its 10 s lease bounds it
/// if that fails.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::doctor::{self, Check, Severity};
///
/// let client = redlease::Client::connect(&url).await?;
/// let report = doctor::examine(&client, "doc:doctor:probe").await?;
/// // The test servers evict nothing; a start-up check could refuse to run
/// // on one that does.
/// assert!(report.of(Check::Eviction).all(|f| f.severity == Severity::Ok));
/// for finding in &report.findings {
///     println!("{} {} {}", finding.severity, finding.check, finding.found);
/// }
/// # Ok(())
/// # }
/// ```
pub async fn examine(client: &Client, probe: &str) -> Result<Report, Error> {
    crate::name::validate(probe)?;
    let survey = client.shared().conn().sentinel_survey().await;
    let master = survey.as_ref().map(|(master, _)| master.as_str());
    let (mut findings, servers, masters) = ask::nodes(client, master).await?;
    let said = survey.as_ref().map(|(_, said)| said.as_slice());
    findings.extend(ask::deployment(client, &masters, &servers, said).await);
    findings.extend(ask::rights(client, probe).await);
    Ok(Report { findings })
}
