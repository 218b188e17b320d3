//! Failovers, kills and restarts.

use super::view::Health;
use super::{ClusterNode, RedisCluster, line_at};

impl RedisCluster {
    /// Makes `replica` the master of its shard with a manual `CLUSTER
    /// FAILOVER` (the replica first catches up with its master, so no
    /// acknowledged write is lost) and waits until the cluster settles:
    /// the old master is then a replica of the new one, in sync.
    ///
    /// # Panics
    ///
    /// When `replica` is not a running replica, or the cluster does not
    /// settle.
    pub fn failover(&mut self, replica: &ClusterNode) {
        let replica = self.current(replica);
        assert!(
            !replica.is_master(),
            "node {} is a master, not a replica",
            replica.name()
        );
        redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .exec(&mut replica.connection())
            .unwrap_or_else(|e| panic!("CLUSTER FAILOVER on {}: {e}", replica.name()));
        self.settle(&format!("CLUSTER FAILOVER on {}", replica.name()), |view| {
            let line = line_at(view, replica.port)?;
            if line.master {
                Ok(())
            } else {
                Err(format!("node :{} is not master yet", replica.port))
            }
        });
    }

    /// Kills `master` with SIGKILL and waits until the cluster has promoted
    /// one of its replicas to take over its slots and settled again, which
    /// takes about twice the 2 s node timeout. Returns the new master.
    ///
    /// The killed node keeps its scratch directory, so
    /// [`restart_node`](RedisCluster::restart_node) can bring it back as a
    /// replica.
    ///
    /// # Panics
    ///
    /// When `master` is not a running master with a running replica, when
    /// fewer than 3 masters own slots (the survivors would be no majority),
    /// or when the cluster does not settle.
    pub fn kill_master_and_wait_for_promotion(&mut self, master: &ClusterNode) -> ClusterNode {
        let master = self.current(master);
        assert!(master.is_master(), "node {} is not a master", master.name());
        let replicas: Vec<String> = self
            .replicas_of(&master)
            .iter()
            .map(|node| node.id.clone())
            .collect();
        assert!(
            !replicas.is_empty(),
            "master {} has no replica to promote",
            master.name()
        );
        // A replica is promoted only once a majority of the masters that
        // own slots flagged its master failed and voted for it; the killed
        // master counts among them but cannot vote.
        let voters = self.masters().filter(|node| !node.slots.is_empty()).count();
        assert!(
            voters >= 3,
            "with {voters} masters owning slots, the survivors of a kill are no majority and no replica is ever promoted"
        );
        let member = self.member_mut(master.port);
        member.server.kill();
        member.running = false;
        let promoted = self.settle(&format!("killing master {}", master.name()), |view| {
            let dead = line_at(view, master.port)?;
            if dead.health != Health::Failed {
                return Err(format!("the killed master is seen as {dead}"));
            }
            view.iter()
                .find(|line| line.master && replicas.contains(&line.id))
                .map(|line| line.port)
                .ok_or_else(|| "no replica of the killed master is master yet".to_owned())
        });
        self.node(promoted).clone()
    }

    /// Kills a replica with SIGKILL and waits until the other nodes flag it
    /// failed (after the node timeout, 2 s). Its master keeps serving, with
    /// one replica fewer. [`restart_node`](RedisCluster::restart_node)
    /// brings it back.
    ///
    /// # Panics
    ///
    /// When `replica` is not a running replica, or the cluster does not
    /// settle.
    pub fn kill_replica(&mut self, replica: &ClusterNode) {
        let replica = self.current(replica);
        assert!(!replica.is_master(), "node {} is a master", replica.name());
        let member = self.member_mut(replica.port);
        member.server.kill();
        member.running = false;
        self.settle(&format!("killing replica {}", replica.name()), |view| {
            let dead = line_at(view, replica.port)?;
            match dead.health {
                Health::Failed => Ok(()),
                _ => Err(format!("the killed replica is seen as {dead}")),
            }
        });
    }

    /// Restarts a node killed by
    /// [`kill_master_and_wait_for_promotion`](RedisCluster::kill_master_and_wait_for_promotion)
    /// on its old port and waits until the cluster settles. The node comes
    /// back with its old id and configuration (its `nodes.conf`) but no
    /// data; finding its slots taken by a newer epoch, it turns itself into
    /// a replica of their new owner and syncs from it. Returns the node.
    ///
    /// # Panics
    ///
    /// When `node` is running, cannot be restarted (its port was taken
    /// meanwhile), or the cluster does not settle.
    pub fn restart_node(&mut self, node: &ClusterNode) -> ClusterNode {
        let member = self.member_mut(node.port);
        assert!(!member.running, "node {} is running", node.name());
        member.server.restart();
        member.running = true;
        let port = node.port;
        self.settle(&format!("restarting node {}", node.name()), |view| {
            let line = line_at(view, port)?;
            if line.master {
                Err(format!("the restarted node is still {line}"))
            } else {
                Ok(())
            }
        });
        self.node(port).clone()
    }
}
