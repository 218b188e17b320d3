//! Failovers: by command, by a killed or a paused master; and bringing the
//! old master back.

use super::look::sentinel_cmd;
use super::{SWITCH_WITHIN, SentinelGroup, State, shown};
use crate::probe::field;

impl SentinelGroup {
    /// Promotes a replica with `SENTINEL FAILOVER` and waits until every
    /// running Sentinel names it as the master (about 1.1 s); returns its
    /// address, `127.0.0.1:<port>`, as the Sentinels name it (its TLS port
    /// in a TLS group).
    ///
    /// The old master is not waited for: it goes on accepting writes until
    /// a Sentinel turns it into a replica of the new one, about 11 s later.
    /// [`failover_and_reconvert`](SentinelGroup::failover_and_reconvert)
    /// waits for that too.
    ///
    /// First waits until the group is settled with at most one Sentinel
    /// whose view of a replica is stale (such a Sentinel would undo the
    /// promotion of a replica it still believes to be a master, unless it
    /// leads the failover itself), and sends the command to that Sentinel.
    ///
    /// # Panics
    ///
    /// When the master has no running replica, no Sentinel runs, the group
    /// does not settle first, the Sentinel refuses the failover, or the
    /// Sentinels do not agree on a new master within 30 s.
    pub fn failover(&mut self) -> String {
        assert!(
            !self.replicas().is_empty(),
            "the master :{} has no running replica to promote",
            self.master().port()
        );
        assert!(
            !self.right_sentinels().is_empty(),
            "no sentinel runs and answers right"
        );
        let old = self.master().port();
        let stale = self.settle("before SENTINEL FAILOVER", 1);
        let target = match stale.first() {
            Some(&port) => port,
            None => *self
                .right_sentinels()
                .first()
                .expect("a settled group has a running sentinel"),
        };
        self.probe()
            .query::<()>(target, &sentinel_cmd("FAILOVER", self.master_name()))
            .unwrap_or_else(|e| panic!("SENTINEL FAILOVER on sentinel :{target}: {e}"));
        self.switch_from(old, "SENTINEL FAILOVER")
    }

    /// [`failover`](SentinelGroup::failover), then waits until the old
    /// master has been turned into a replica of the new one with its link
    /// up, and the group is ready for the next failover (about 11 s more);
    /// returns the new master's address. A test can chain these.
    ///
    /// # Panics
    ///
    /// As [`failover`](SentinelGroup::failover), and when the group does
    /// not settle afterwards within 45 s.
    pub fn failover_and_reconvert(&mut self) -> String {
        let address = self.failover();
        self.wait_reconverted(&address);
        address
    }

    /// After [`failover`](SentinelGroup::failover) to `address`: waits
    /// until the old master has been turned into a replica of the new one
    /// with its link up, and the group is ready for the next failover
    /// (about 11 s). Until then the old master takes the writes of clients
    /// that have not followed the switch.
    ///
    /// # Panics
    ///
    /// When the group does not settle within 45 s.
    pub fn wait_reconverted(&mut self, address: &str) {
        self.settle(&format!("the failover to {address}"), 1);
    }

    /// Kills the master with SIGKILL and waits until the Sentinels agree on
    /// a promoted replica: the down-after time (1 s, lowered for this from
    /// the group's 5 s at rest), then an election and
    /// the promotion. Returns the new master's address. The killed node
    /// keeps its port for [`restart_node`](SentinelGroup::restart_node).
    ///
    /// First waits until the group is settled with every Sentinel's view up
    /// to date (see [`wait_settled`](SentinelGroup::wait_settled)).
    ///
    /// # Panics
    ///
    /// When the master has no running replica, fewer Sentinels than the
    /// quorum run and answer right, the group does not settle first, or no
    /// replica is promoted within 30 s.
    pub fn kill_master(&mut self) -> String {
        let old = self.before_losing_the_master();
        let master = &mut self.nodes[self.master];
        master.server.kill();
        master.state = State::Killed;
        self.switch_quickly_from(old, &format!("killing the master :{old}"))
    }

    /// Stops the master with SIGSTOP, as a partition from everything would,
    /// and waits until the Sentinels agree on a promoted replica, as
    /// [`kill_master`](SentinelGroup::kill_master) does; returns the new
    /// master's address. The old master stays paused, still a master in its
    /// own eyes, until [`resume_node`](SentinelGroup::resume_node); a
    /// Sentinel then turns it into a replica about 10 s later.
    ///
    /// For a pause too short to cause a failover, pause the
    /// [`master`](SentinelGroup::master) itself with
    /// [`RedisServer::pause`](crate::RedisServer::pause) and
    /// [`resume`](crate::RedisServer::resume).
    ///
    /// # Panics
    ///
    /// As [`kill_master`](SentinelGroup::kill_master).
    pub fn pause_master(&mut self) -> String {
        let old = self.before_losing_the_master();
        let master = &mut self.nodes[self.master];
        master.server.pause();
        master.state = State::Paused;
        self.switch_quickly_from(old, &format!("pausing the master :{old}"))
    }

    /// What killing or pausing the master needs: a replica, a quorum, a
    /// settled group. Returns the master's port.
    fn before_losing_the_master(&self) -> u16 {
        let old = self.master().port();
        assert!(
            !self.replicas().is_empty(),
            "the master :{old} has no running replica to promote"
        );
        let voters = self.right_sentinels().len();
        assert!(
            voters >= self.quorum(),
            "with {voters} of {} sentinels running and answering right, no failover reaches the quorum of {}",
            self.sentinels.len(),
            self.quorum()
        );
        self.settle("before losing the master", 0);
        // Lowered before the master goes: a Sentinel compares the time
        // since the master last answered with the value of the moment, so
        // the switch starts the options' down-after time after the loss.
        self.set_down_after(self.options.down_after);
        old
    }

    /// [`switch_from`](SentinelGroup::switch_from) with the down-after time
    /// lowered by [`before_losing_the_master`](SentinelGroup::before_losing_the_master),
    /// raised again at once after the switch: the freshly promoted master
    /// is the node most likely to be slow to answer for a moment.
    fn switch_quickly_from(&mut self, old: u16, after: &str) -> String {
        let address = self.switch_from(old, after);
        self.set_down_after(self.down_after_at_rest());
        address
    }

    /// Waits until every running Sentinel names the same running data node,
    /// other than the one on `old`, as master and that node says it is one;
    /// makes it the group's master and returns its address.
    fn switch_from(&mut self, old: u16, after: &str) -> String {
        let sentinels = self.right_sentinels();
        // The ports the Sentinels name, and the plain ports to ask.
        let running: Vec<(u16, u16)> = self
            .nodes
            .iter()
            .filter(|member| member.state == State::Running)
            .map(|member| (shown(&member.server), member.server.port()))
            .collect();
        let old_shown = shown(&self.nodes[self.node_index(old)].server);
        let name = self.master_name().to_owned();
        let result = self.wait(SWITCH_WITHIN, |probe| {
            let mut named = None;
            for &sentinel in &sentinels {
                let answer: Option<(String, u16)> =
                    probe.query(sentinel, &sentinel_cmd("GET-MASTER-ADDR-BY-NAME", &name))?;
                let (host, port) =
                    answer.ok_or_else(|| format!("sentinel :{sentinel} knows no master {name}"))?;
                if port == old_shown {
                    return Err(format!("sentinel :{sentinel} still names :{old_shown}"));
                }
                match &named {
                    None => named = Some((host, port, sentinel)),
                    Some((_, first, by)) if *first != port => {
                        return Err(format!(
                            "sentinel :{by} names :{first} but sentinel :{sentinel} names :{port}"
                        ));
                    }
                    Some(_) => {}
                }
            }
            let (host, port, _) = named.ok_or("no sentinel runs")?;
            let Some(&(_, plain)) = running.iter().find(|&&(known, _)| known == port) else {
                return Err(format!(
                    "the sentinels name :{port}, not a running node of the group"
                ));
            };
            let info: String = probe.query(plain, redis::cmd("INFO").arg("replication"))?;
            match field(&info, "role") {
                Some("master") => Ok(format!("{host}:{port}")),
                role => Err(format!(
                    "the sentinels name :{port}, which says role:{}",
                    role.unwrap_or("?")
                )),
            }
        });
        let address = result.unwrap_or_else(|e| panic!("after {after}: {e}\n{}", self.logs()));
        let port = address
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("an address ends with its port");
        self.master = self.node_index(port);
        address
    }

    /// Lets a data node paused by [`pause_master`](SentinelGroup::pause_master)
    /// run again. Does not wait: an old master comes back believing it is
    /// the master until a Sentinel turns it into a replica;
    /// [`wait_settled`](SentinelGroup::wait_settled) waits for that.
    ///
    /// # Panics
    ///
    /// When no data node of the group on `port` is paused.
    pub fn resume_node(&mut self, port: u16) {
        let i = self.node_index(port);
        let node = &mut self.nodes[i];
        assert_eq!(node.state, State::Paused, "node :{port} is not paused");
        node.server.resume();
        node.state = State::Running;
    }

    /// Restarts a data node killed by [`kill_master`](SentinelGroup::kill_master)
    /// on its old port, empty, as a replica of the master (as the
    /// configuration Sentinel rewrites on a node would bring it back), and
    /// waits until the group is settled with every Sentinel's view up to
    /// date.
    ///
    /// # Panics
    ///
    /// When no data node of the group on `port` is killed, it cannot be
    /// restarted, or the group does not settle.
    pub fn restart_node(&mut self, port: u16) {
        let i = self.node_index(port);
        assert_eq!(
            self.nodes[i].state,
            State::Killed,
            "node :{port} is not killed"
        );
        let master = shown(self.master());
        let node = &mut self.nodes[i];
        node.server.set_replica_of(master);
        node.server.restart();
        node.state = State::Running;
        self.settle(&format!("restarting node :{port}"), 0);
    }
}
