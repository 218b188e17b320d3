//! The nemesis: faults on a random schedule drawn from the run's seed, each
//! logged with its start and end, for the checker to explain what the
//! clients saw.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// A kind of fault. A phase of a run injects one kind (or none).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FaultKind {
    /// No fault: the baseline.
    None,
    /// `SIGSTOP` of a client holding a lock, for longer than its lease,
    /// then `SIGCONT`.
    Pause,
    /// `SIGKILL` of a client holding a lock; a new one takes its place.
    Kill,
    /// Redis killed and started again empty on the same port.
    Restart,
    /// A client holding a lock cut off from Redis (not from the database)
    /// for longer than its lease: a real partition, see [`crate::netns`].
    Partition,
    /// A Sentinel failover (`SENTINEL FAILOVER`, the old master then made a
    /// replica of the new one), in a group of a master, a replica and
    /// three Sentinels.
    Sentinel,
    /// A Cluster shard failover: the master of a shard the names live on
    /// killed, its replica promoted, the old master back as a replica; in a
    /// cluster of three masters with a replica each.
    Cluster,
}

impl FaultKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FaultKind::None => "none",
            FaultKind::Pause => "pause",
            FaultKind::Kill => "kill",
            FaultKind::Restart => "restart",
            FaultKind::Partition => "partition",
            FaultKind::Sentinel => "sentinel",
            FaultKind::Cluster => "cluster",
        }
    }
}

/// One fault as it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Fault {
    pub(crate) kind: FaultKind,
    /// The process it hit (`redis` for the server), or what failed over.
    pub(crate) target: String,
    /// When it began and ended, Unix µs: a pause or a partition from the
    /// signal or cut to its end; a kill at once; a restart until the
    /// server answers again; a Sentinel failover until every Sentinel
    /// names the new master (the switch); a Cluster failover from the kill
    /// to the replica's promotion.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Whether the signals or commands that made it succeeded (a `kill`
    /// that found no process, say, did not).
    #[serde(default = "yes")]
    pub(crate) ok: bool,
    /// The names whose data it could lose (a Cluster shard's); empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) names: Vec<String>,
    /// A failover's aftermath, Unix µs: when the old master had been made a
    /// replica of the new one (until then it still takes writes from
    /// clients that have not followed the switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settled: Option<u64>,
}

fn yes() -> bool {
    true
}

/// Appends `fault` to the nemesis log `path`.
pub(crate) fn record(path: &Path, fault: &Fault) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut line = serde_json::to_vec(fault).map_err(std::io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)
}

/// Reads the nemesis log `path` (none: no faults).
pub(crate) fn read(path: &Path) -> std::io::Result<Vec<Fault>> {
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(Vec::new());
    };
    let mut faults = Vec::new();
    for line in BufReader::new(file).lines() {
        if let Ok(fault) = serde_json::from_str(&line?) {
            faults.push(fault);
        }
    }
    Ok(faults)
}
