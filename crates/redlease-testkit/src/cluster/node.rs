//! [`ClusterNode`]: one node of a cluster, as last agreed.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::view::short;

/// One node of a [`RedisCluster`](crate::RedisCluster) as the cluster last agreed it is: a
/// snapshot, which an operation that changes roles or slots makes stale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    pub(super) port: u16,
    pub(super) tls_port: Option<u16>,
    pub(super) id: String,
    pub(super) role: Role,
    pub(super) master_id: Option<String>,
    pub(super) slots: Vec<RangeInclusive<u16>>,
}

/// Whether a [`ClusterNode`] is a master or a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Serves writes for its slots (a master may also own none).
    Master,
    /// Copies a master and takes over when it fails.
    Replica,
}

impl ClusterNode {
    /// The client port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The TLS port on 127.0.0.1, for a cluster started with
    /// [`ServerOptions::tls`](crate::ServerOptions::tls): what the node
    /// tells TLS clients (in `CLUSTER SLOTS`, `MOVED` and `ASK`).
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// `127.0.0.1:<port>`, as `MOVED` and `ASK` redirections name nodes.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The node id (`CLUSTER MYID`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Master or replica.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the node is a master.
    pub fn is_master(&self) -> bool {
        self.role == Role::Master
    }

    /// The id of the master a replica copies; `None` for a master.
    pub fn master_id(&self) -> Option<&str> {
        self.master_id.as_deref()
    }

    /// The slots a master owns, as ranges in ascending order; empty for a
    /// replica.
    pub fn slots(&self) -> &[RangeInclusive<u16>] {
        &self.slots
    }

    /// Whether this master owns `slot`.
    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|range| range.contains(&slot))
    }

    /// A new plain (not cluster-aware) connection to this node: commands
    /// for slots it does not serve answer `MOVED` or `ASK`, which is what a
    /// test of redirections wants.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .expect("valid url")
            .get_connection_with_timeout(Duration::from_secs(2))
            .unwrap_or_else(|e| panic!("connect to cluster node {}: {e}", self.address()))
    }

    /// The port and short id, for messages.
    pub(super) fn name(&self) -> String {
        format!(":{} ({})", self.port, short(&self.id))
    }
}
