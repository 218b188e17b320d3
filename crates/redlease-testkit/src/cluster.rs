//! [`RedisCluster`]: a Redis Cluster of private `redis-server` nodes, and
//! the failovers, kills and slot migrations a test does to it.

mod faults;
mod form;
mod migrate;
mod node;
mod slot;
mod view;

use std::time::Duration;

pub use node::{ClusterNode, Role};
pub use slot::{SLOTS, key_slot};
use view::{NodeLine, View};

use crate::probe::Probe;
use crate::{RedisServer, ServerOptions, StartError};

/// How long forming the cluster, or any change to it, may take before the
/// kit gives up. A 3+3 cluster settles in a few seconds and a killed master
/// is replaced in about twice the node timeout; the rest is room for a
/// loaded machine.
const SETTLE_WITHIN: Duration = Duration::from_secs(30);

/// A Redis Cluster on loopback, owned by the caller: `masters` masters that
/// split the 16384 slots evenly, each with `replicas_per_master` replicas.
///
/// Every node is a [`RedisServer`] started as a cluster node (free client
/// and bus ports, node timeout 2 s, watched like any other server), so
/// dropping the cluster stops them all, and so does the death of the owning
/// process.
///
/// The kit keeps a snapshot of the topology ([`nodes`](RedisCluster::nodes),
/// [`master_for_key`](RedisCluster::master_for_key), ...) taken when the
/// cluster last settled: after starting and after each operation here, each
/// of which waits (at most 30 s) until every running node reports
/// `cluster_state:ok`, every replica's link to its master is up and all
/// nodes agree on the nodes, roles and slots. A change made behind its
/// back through a node's [`connection`](ClusterNode::connection) is not in
/// the snapshot.
///
/// The operations are test fixtures: they panic with what the nodes last
/// said when the cluster does not settle.
#[derive(Debug)]
pub struct RedisCluster {
    /// Every node ever started, in start order: masters first, then
    /// replicas. A killed node stays, so that it can be restarted.
    members: Vec<Member>,
    /// The running nodes as last agreed, in the order of `members`.
    nodes: Vec<ClusterNode>,
}

/// A node's server, and whether it runs: a killed one keeps its port and
/// scratch directory for a restart.
#[derive(Debug)]
struct Member {
    server: RedisServer,
    running: bool,
}

impl RedisCluster {
    /// Starts a cluster of `masters` masters with `replicas_per_master`
    /// replicas each and waits until it is settled.
    ///
    /// # Panics
    ///
    /// When the cluster cannot be started: this is a test fixture. Also
    /// when `masters` is 0.
    pub fn start(masters: usize, replicas_per_master: usize) -> RedisCluster {
        match RedisCluster::try_start(masters, replicas_per_master) {
            Ok(cluster) => cluster,
            Err(StartError::NotInstalled) => panic!(
                "redis-server is not on PATH; install it (scripts/test does: apt-get install redis-server)"
            ),
            Err(e) => panic!("could not start a redis cluster: {e}"),
        }
    }

    /// Starts a cluster like [`start`](RedisCluster::start); for programs,
    /// which report a failure rather than panic.
    ///
    /// # Errors
    ///
    /// [`StartError::NotInstalled`] when there is no `redis-server` on PATH,
    /// else [`StartError::Failed`] saying which node failed to start, or
    /// what the nodes last said when they did not settle within 30 s.
    ///
    /// # Panics
    ///
    /// When `masters` is 0 or more than 16384.
    pub fn try_start(
        masters: usize,
        replicas_per_master: usize,
    ) -> Result<RedisCluster, StartError> {
        RedisCluster::try_start_with(masters, replicas_per_master, ServerOptions::default())
    }

    /// Starts a cluster like [`start`](RedisCluster::start) whose nodes
    /// also take `options`: TLS ([`ServerOptions::tls`], which makes the
    /// nodes talk TLS to each other and report their TLS ports to TLS
    /// clients; [`tls_url`](RedisCluster::tls_url) names them), a password.
    /// `options.cluster` defaults to [`ClusterNodeOptions::default`](crate::ClusterNodeOptions::default);
    /// `replica_of` is not for cluster nodes and is ignored.
    ///
    /// # Panics
    ///
    /// When the cluster cannot be started: this is a test fixture. Also
    /// when `masters` is 0.
    pub fn start_with(
        masters: usize,
        replicas_per_master: usize,
        options: ServerOptions,
    ) -> RedisCluster {
        match RedisCluster::try_start_with(masters, replicas_per_master, options) {
            Ok(cluster) => cluster,
            Err(StartError::NotInstalled) => panic!(
                "redis-server is not on PATH; install it (scripts/test does: apt-get install redis-server)"
            ),
            Err(e) => panic!("could not start a redis cluster: {e}"),
        }
    }

    /// Starts a cluster like [`start_with`](RedisCluster::start_with); for
    /// programs, which report a failure rather than panic.
    ///
    /// # Errors
    ///
    /// As [`try_start`](RedisCluster::try_start).
    ///
    /// # Panics
    ///
    /// When `masters` is 0 or more than 16384.
    pub fn try_start_with(
        masters: usize,
        replicas_per_master: usize,
        options: ServerOptions,
    ) -> Result<RedisCluster, StartError> {
        assert!(
            (1..=usize::from(SLOTS)).contains(&masters),
            "a cluster needs 1 to 16384 masters, not {masters}"
        );
        let count = masters * (1 + replicas_per_master);
        let options = ServerOptions {
            cluster: Some(options.cluster.clone().unwrap_or_default()),
            replica_of: None,
            ..options
        };
        // Side by side: each node takes 0.1–0.25 s to answer, and a master
        // reports cluster_state:ok no sooner than 2 s after it started
        // (Redis's CLUSTER_WRITABLE_DELAY), so the forming below overlaps
        // that delay instead of following it.
        let started: Vec<Result<RedisServer, StartError>> = std::thread::scope(|scope| {
            let starts: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| RedisServer::try_start_with(options.clone())))
                .collect();
            starts
                .into_iter()
                .map(|start| {
                    start.join().unwrap_or_else(|_| {
                        Err(StartError::Failed("starting a node panicked".to_owned()))
                    })
                })
                .collect()
        });
        // On an error the nodes already started drop here, and stop.
        let servers = started.into_iter().collect::<Result<Vec<_>, _>>()?;
        let mut cluster = RedisCluster {
            members: servers
                .into_iter()
                .map(|server| Member {
                    server,
                    running: true,
                })
                .collect(),
            nodes: Vec::new(),
        };
        cluster
            .form(masters)
            .map_err(|e| StartError::Failed(format!("the cluster did not form: {e}")))?;
        Ok(cluster)
    }

    /// `redis-cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,...`: the current
    /// masters as seed nodes, the URL redlease takes for a cluster.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.masters().map(ClusterNode::address).collect();
        format!("redis-cluster://{}", seeds.join(","))
    }

    /// `rediss-cluster://127.0.0.1:<t1>,127.0.0.1:<t2>,...`: the current
    /// masters' TLS ports as seed nodes, for a cluster started with
    /// [`ServerOptions::tls`].
    ///
    /// # Panics
    ///
    /// When the cluster was started without TLS.
    pub fn tls_url(&self) -> String {
        let seeds: Vec<String> = self
            .masters()
            .map(|node| {
                let port = node.tls_port().expect("a cluster started with tls");
                format!("127.0.0.1:{port}")
            })
            .collect();
        format!("rediss-cluster://{}", seeds.join(","))
    }

    /// `redis://127.0.0.1:<port>` of each current master, for clients that
    /// take seed nodes one by one.
    pub fn seed_urls(&self) -> Vec<String> {
        self.masters().map(ClusterNode::url).collect()
    }

    /// The running nodes, masters and replicas, in the order they were
    /// started.
    pub fn nodes(&self) -> &[ClusterNode] {
        &self.nodes
    }

    /// The running masters, in the order they were started.
    pub fn masters(&self) -> impl Iterator<Item = &ClusterNode> {
        self.nodes.iter().filter(|node| node.is_master())
    }

    /// The master that owns `slot`.
    pub fn master_for_slot(&self, slot: u16) -> &ClusterNode {
        self.masters()
            .find(|node| node.owns(slot))
            .unwrap_or_else(|| panic!("no master owns slot {slot} in {:?}", self.nodes))
    }

    /// The master that owns the slot of `key` (see [`key_slot`]).
    pub fn master_for_key(&self, key: impl AsRef<[u8]>) -> &ClusterNode {
        self.master_for_slot(key_slot(key))
    }

    /// A new plain connection to the master that owns `key`'s slot.
    pub fn connection_for_key(&self, key: impl AsRef<[u8]>) -> redis::Connection {
        self.master_for_key(key).connection()
    }

    /// The replicas of `master`, in the order they were started.
    pub fn replicas_of(&self, master: &ClusterNode) -> Vec<&ClusterNode> {
        self.nodes
            .iter()
            .filter(|node| node.master_id() == Some(master.id()))
            .collect()
    }

    /// The first replica of `master`.
    ///
    /// # Panics
    ///
    /// When `master` has no running replica.
    pub fn replica_of(&self, master: &ClusterNode) -> &ClusterNode {
        self.replicas_of(master)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("master {} has no replica", master.name()))
    }

    /// Waits until the running nodes settle in a view `done` accepts, and
    /// takes that view as the new snapshot.
    fn settle<T>(&mut self, after: &str, done: impl FnMut(&View) -> Result<T, String>) -> T {
        let (view, value) = Probe::default()
            .wait(&self.running_ports(), SETTLE_WITHIN, done)
            .unwrap_or_else(|e| panic!("after {after}: {e}"));
        self.adopt(&view);
        value
    }

    /// Rebuilds the snapshot of the running nodes from an agreed view.
    fn adopt(&mut self, view: &View) {
        self.nodes = self
            .members
            .iter()
            .filter(|member| member.running)
            .filter_map(|member| {
                let line = view.iter().find(|line| line.port == member.server.port())?;
                Some((line, member.server.tls_port()))
            })
            .map(|(line, tls_port)| ClusterNode {
                port: line.port,
                tls_port,
                id: line.id.clone(),
                role: if line.master {
                    Role::Master
                } else {
                    Role::Replica
                },
                master_id: if line.master {
                    None
                } else {
                    line.master_id.clone()
                },
                slots: line.slots.iter().map(|&(a, b)| a..=b).collect(),
            })
            .collect();
    }

    fn running_ports(&self) -> Vec<u16> {
        self.members
            .iter()
            .filter(|member| member.running)
            .map(|member| member.server.port())
            .collect()
    }

    /// The snapshot of the running node on `port`.
    fn node(&self, port: u16) -> &ClusterNode {
        self.nodes
            .iter()
            .find(|node| node.port == port)
            .unwrap_or_else(|| panic!("no running node on port {port}"))
    }

    /// The current snapshot of a node the caller may hold an old one of.
    fn current(&self, node: &ClusterNode) -> ClusterNode {
        self.node(node.port).clone()
    }

    /// Stops `node` with SIGSTOP: it neither answers nor replicates until
    /// [`resume`](RedisCluster::resume). The cluster sees it fail after the
    /// node timeout (2 s), so keep the pause shorter to leave it in place.
    pub fn pause(&self, node: &ClusterNode) {
        self.member(node.port).server.pause();
    }

    /// Lets a [paused](RedisCluster::pause) node run again.
    pub fn resume(&self, node: &ClusterNode) {
        self.member(node.port).server.resume();
    }

    /// The last `lines` lines of `node`'s log (restarts included), for a
    /// test's failure message.
    ///
    /// # Panics
    ///
    /// When `node` is not a node of this cluster.
    pub fn log_tail(&self, node: &ClusterNode, lines: usize) -> String {
        self.member(node.port).server.log_tail(lines)
    }

    fn member(&self, port: u16) -> &Member {
        self.members
            .iter()
            .find(|member| member.server.port() == port)
            .unwrap_or_else(|| panic!("no node of this cluster on port {port}"))
    }

    fn member_mut(&mut self, port: u16) -> &mut Member {
        self.members
            .iter_mut()
            .find(|member| member.server.port() == port)
            .unwrap_or_else(|| panic!("no node of this cluster on port {port}"))
    }
}

/// The line for the node on `port` in `view`.
fn line_at(view: &View, port: u16) -> Result<&NodeLine, String> {
    view.iter()
        .find(|line| line.port == port)
        .ok_or_else(|| format!("the nodes do not know node :{port}"))
}
