//! Bringing a freshly started group together.

use std::time::Duration;

use super::{DOWN_AFTER_AT_REST, SETTLE_WITHIN, SentinelGroup, look, shown};
use crate::probe::Probe;

impl SentinelGroup {
    /// Tells every Sentinel to monitor the master once the replicas are
    /// linked to it, then waits until the group settles. In that order
    /// because a Sentinel learns the replicas from the master's `INFO`,
    /// which it asks at once and then every 10 s only.
    pub(super) fn introduce(&self) -> Result<(), String> {
        let replicas = self.expect().replicas;
        let master = shown(self.master());
        self.wait(SETTLE_WITHIN, |probe| {
            for &port in &replicas {
                let info: String = probe.query(port, redis::cmd("INFO").arg("replication"))?;
                look::replicates(&info, port, master)?;
            }
            Ok(())
        })?;
        let mut probe = self.probe();
        for i in 0..self.sentinels.len() {
            self.monitor(&mut probe, i, master, self.quorum())?;
        }
        self.wait(SETTLE_WITHIN, |probe| self.look(probe, 0))
            .map(drop)
    }

    /// Makes Sentinel `i` monitor the master on `port` (the port the group
    /// knows it by: its TLS port in a TLS group) as the group's master,
    /// with the group's options.
    pub(super) fn monitor(
        &self,
        probe: &mut Probe,
        i: usize,
        port: u16,
        quorum: usize,
    ) -> Result<(), String> {
        let sentinel = self.sentinels[i].server.port();
        let name = &self.options.master_name;
        probe.query::<()>(
            sentinel,
            redis::cmd("SENTINEL")
                .arg("MONITOR")
                .arg(name)
                .arg("127.0.0.1")
                .arg(port)
                .arg(quorum),
        )?;
        let mut set = redis::cmd("SENTINEL");
        set.arg("SET")
            .arg(name)
            .arg("down-after-milliseconds")
            .arg(millis(self.down_after_at_rest()))
            .arg("failover-timeout")
            .arg(millis(self.options.failover_timeout))
            .arg("parallel-syncs")
            .arg(1);
        if let Some(password) = &self.options.password {
            set.arg("auth-pass").arg(password);
        }
        probe.query::<()>(sentinel, &set)
    }

    /// The down-after time of a group left alone: see
    /// [`DOWN_AFTER_AT_REST`].
    pub(super) fn down_after_at_rest(&self) -> Duration {
        self.options.down_after.max(DOWN_AFTER_AT_REST)
    }

    /// Sets every running Sentinel's `down-after-milliseconds`.
    pub(super) fn set_down_after(&self, after: Duration) {
        let mut probe = self.probe();
        for port in self.right_sentinels() {
            probe
                .query::<()>(
                    port,
                    redis::cmd("SENTINEL")
                        .arg("SET")
                        .arg(self.master_name())
                        .arg("down-after-milliseconds")
                        .arg(millis(after)),
                )
                .unwrap_or_else(|e| {
                    panic!("SENTINEL SET down-after-milliseconds on sentinel :{port}: {e}")
                });
        }
    }
}

fn millis(time: Duration) -> u64 {
    u64::try_from(time.as_millis()).unwrap_or(u64::MAX)
}
