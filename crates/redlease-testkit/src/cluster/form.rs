//! Forming a cluster from freshly started nodes.

use std::time::{Duration, Instant};

use super::view::short;
use super::{RedisCluster, SETTLE_WITHIN, SLOTS, line_at};
use crate::probe::Probe;

impl RedisCluster {
    /// Makes the first `masters` members the masters of an even split of
    /// the slots and the others their replicas, round robin, with plain
    /// commands: faster than `redis-cli --cluster create`, which sleeps
    /// between its steps.
    pub(super) fn form(&mut self, masters: usize) -> Result<(), String> {
        let mut probe = Probe::default();
        let ports = self.running_ports();
        let mut ids = Vec::with_capacity(ports.len());
        for (i, &port) in ports.iter().enumerate() {
            ids.push(probe.query::<String>(port, redis::cmd("CLUSTER").arg("MYID"))?);
            // Distinct epochs before the nodes meet, as redis-cli does:
            // otherwise the masters start on one epoch and resolve the
            // collision one bump at a time.
            probe.query::<()>(
                port,
                redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(i + 1),
            )?;
        }
        let total = usize::from(SLOTS);
        for (i, &port) in ports.iter().take(masters).enumerate() {
            let (first, last) = (i * total / masters, (i + 1) * total / masters - 1);
            probe.query::<()>(
                port,
                redis::cmd("CLUSTER")
                    .arg("ADDSLOTSRANGE")
                    .arg(first)
                    .arg(last),
            )?;
        }
        // One node meets all others; gossip introduces them to each other.
        for member in &self.members[1..] {
            let bus_port = member.server.cluster_bus_port().expect("a cluster node");
            probe.query::<()>(
                ports[0],
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(member.server.port())
                    .arg(bus_port),
            )?;
        }
        // A replica can only follow a master it has heard of: retry until
        // gossip has told each one about its master.
        let masters_of: Vec<(u16, &str)> = ports[masters..]
            .iter()
            .enumerate()
            .map(|(k, &port)| (port, ids[k % masters].as_str()))
            .collect();
        let mut pending = masters_of.clone();
        // One bound for both waits: a slow handshake leaves less for the rest.
        let deadline = Instant::now() + SETTLE_WITHIN;
        while let Some(&(port, master_id)) = pending.first() {
            match probe.query::<()>(port, redis::cmd("CLUSTER").arg("REPLICATE").arg(master_id)) {
                Ok(()) => {
                    pending.remove(0);
                }
                Err(e) if Instant::now() > deadline => {
                    return Err(format!(
                        "node :{port} did not become a replica of {}: {e}",
                        short(master_id)
                    ));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let (view, ()) = probe.wait(&ports, left, |view| {
            for &(port, master_id) in &masters_of {
                let line = line_at(view, port)?;
                if line.master || line.master_id.as_deref() != Some(master_id) {
                    return Err(format!("node :{port} is not yet seen as a replica: {line}"));
                }
            }
            Ok(())
        })?;
        self.adopt(&view);
        Ok(())
    }
}
