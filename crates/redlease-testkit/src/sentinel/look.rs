//! What the data nodes and the Sentinels say about the group, and whether
//! that is a settled group.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{POLL_EVERY, SETTLE_WITHIN, SentinelGroup, State, shown};
use crate::probe::{Probe, field};

/// A settled group as the kit expects it: who is master, which replicas
/// and which Sentinels run (and are not wrong).
pub(super) struct Expect<'a> {
    pub(super) name: &'a str,
    pub(super) master: u16,
    pub(super) replicas: Vec<u16>,
    pub(super) sentinels: Vec<u16>,
    /// The port each process above is known by to the others, by its
    /// plain port (see [`shown`]), when they differ.
    pub(super) shown: HashMap<u16, u16>,
}

impl Expect<'_> {
    /// The port the process on the plain `port` is known by.
    fn shown(&self, port: u16) -> u16 {
        self.shown.get(&port).copied().unwrap_or(port)
    }
}

/// One Sentinel's description of an instance (`SENTINEL MASTER`, and each
/// entry of `SENTINEL REPLICAS` and `SENTINEL SENTINELS`).
type Description = HashMap<String, String>;

impl SentinelGroup {
    /// Waits until the group is settled (see [`SentinelGroup`]) with every
    /// Sentinel's view of every replica up to date: after a failover, or
    /// a paused master resumed, until the old master replicates the new
    /// one and every Sentinel has seen it do so (up to about 20 s).
    ///
    /// # Panics
    ///
    /// When the group does not settle within 45 s.
    pub fn wait_settled(&self) {
        self.settle("waiting", 0);
    }

    /// Waits until the group is settled with at most `stale` Sentinels
    /// whose view of a replica predates its last change; returns those
    /// Sentinels' ports.
    pub(super) fn settle(&self, after: &str, stale: usize) -> Vec<u16> {
        self.wait(SETTLE_WITHIN, |probe| self.look(probe, stale))
            .unwrap_or_else(|e| panic!("after {after}: {e}\n{}", self.logs()))
    }

    /// The end of every member's log, Sentinels first: what a failed wait
    /// shows, since a Sentinel's log says what it did and why
    /// (`+switch-master`, `+convert-to-slave`, ...).
    pub(super) fn logs(&self) -> String {
        let mut out = String::new();
        let members = self.sentinels.iter().map(|m| ("sentinel", m));
        for (what, member) in members.chain(self.nodes.iter().map(|m| ("node", m))) {
            out.push_str(&format!(
                "--- {what} :{} ({:?}), its log's end:\n{}\n",
                member.server.port(),
                member.state,
                member.server.log_tail(40)
            ));
        }
        out
    }

    /// One look at the group, as [`settle`](SentinelGroup::settle) wants it.
    pub(super) fn look(&self, probe: &mut Probe, stale: usize) -> Result<Vec<u16>, String> {
        let expect = self.expect();
        let seen = check(probe, &expect)?;
        if seen.len() > stale {
            return Err(format!(
                "sentinels {} have not yet seen every replica as a replica of :{}",
                ports(&seen),
                expect.master
            ));
        }
        Ok(seen)
    }

    /// What a settled group looks like now.
    pub(super) fn expect(&self) -> Expect<'_> {
        Expect {
            name: &self.options.master_name,
            master: self.master().port(),
            replicas: self.replicas().iter().map(|server| server.port()).collect(),
            sentinels: self.right_sentinels(),
            shown: self
                .nodes
                .iter()
                .chain(&self.sentinels)
                .map(|member| (member.server.port(), shown(&member.server)))
                .collect(),
        }
    }

    /// The ports of the running Sentinels that are not wrong.
    pub(super) fn right_sentinels(&self) -> Vec<u16> {
        self.sentinels
            .iter()
            .filter(|member| member.state == State::Running)
            .map(|member| member.server.port())
            .collect()
    }

    /// A probe that knows the passwords.
    pub(super) fn probe(&self) -> Probe {
        let mut probe = Probe::default();
        let groups = [
            (&self.nodes, &self.options.password),
            (&self.sentinels, &self.options.sentinel_password),
        ];
        for (members, password) in groups {
            let Some(password) = password else { continue };
            for member in members {
                probe.password(member.server.port(), password);
            }
        }
        if let Some(password) = &self.options.password {
            for decoy in self.sentinels.iter().filter_map(|m| m.decoy.as_ref()) {
                probe.password(decoy.port(), password);
            }
        }
        probe
    }

    /// Polls `step` with one probe until it succeeds, for at most `within`;
    /// `step` says what it still misses when it does not.
    pub(super) fn wait<T>(
        &self,
        within: Duration,
        mut step: impl FnMut(&mut Probe) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut probe = self.probe();
        let deadline = Instant::now() + within;
        loop {
            let last = match step(&mut probe) {
                Ok(value) => return Ok(value),
                Err(reason) => reason,
            };
            if Instant::now() > deadline {
                return Err(format!(
                    "not settled within {} s; last: {last}",
                    within.as_secs()
                ));
            }
            std::thread::sleep(POLL_EVERY);
        }
    }
}

/// One look at the group: `Ok` with the Sentinels whose view of some
/// replica is stale when everything is in place, else what is not.
///
/// In place: the master says it is one; each replica replicates it with
/// its link up; each Sentinel names it, with no flag but `master` (no
/// `s_down`, no failover in progress), lists each replica with no flag but
/// `slave`, and each other Sentinel with no flag but `sentinel` (and
/// `master_down`).
///
/// Stale: a Sentinel's entry for a replica says, from the replica's last
/// `INFO` (asked every 10 s), that it is a master, replicates another
/// master, or has its link down. Such a Sentinel, seeing a replica it
/// believes has long been a master still report master (because it was
/// just promoted), turns it back into a replica.
fn check(probe: &mut Probe, expect: &Expect<'_>) -> Result<Vec<u16>, String> {
    let info: String = probe.query(expect.master, redis::cmd("INFO").arg("replication"))?;
    if field(&info, "role") != Some("master") {
        return Err(format!(
            "the master :{} says role:{}",
            expect.master,
            field(&info, "role").unwrap_or("?")
        ));
    }
    for &port in &expect.replicas {
        let info: String = probe.query(port, redis::cmd("INFO").arg("replication"))?;
        replicates(&info, port, expect.shown(expect.master))?;
    }
    let master_shown = expect.shown(expect.master);
    let mut stale = Vec::new();
    for &sentinel in &expect.sentinels {
        let master: Description = probe.query(sentinel, &sentinel_cmd("MASTER", expect.name))?;
        let port = get(&master, "port");
        let flags = get(&master, "flags");
        if port != master_shown.to_string() || flags != "master" {
            return Err(format!(
                "sentinel :{sentinel} sees master :{port} as {flags}, not :{master_shown} as master"
            ));
        }
        let replicas: Vec<Description> =
            probe.query(sentinel, &sentinel_cmd("REPLICAS", expect.name))?;
        for &replica in &expect.replicas {
            let entry = find(&replicas, expect.shown(replica))
                .ok_or_else(|| format!("sentinel :{sentinel} does not know replica :{replica}"))?;
            if get(entry, "flags") != "slave" {
                return Err(format!(
                    "sentinel :{sentinel} sees replica :{replica} as {}",
                    get(entry, "flags")
                ));
            }
            let fresh = get(entry, "role-reported") == "slave"
                && get(entry, "master-port") == master_shown.to_string()
                && get(entry, "master-link-status") == "ok";
            if !fresh && !stale.contains(&sentinel) {
                stale.push(sentinel);
            }
        }
        let others: Vec<Description> =
            probe.query(sentinel, &sentinel_cmd("SENTINELS", expect.name))?;
        for &other in expect.sentinels.iter().filter(|&&other| other != sentinel) {
            let entry = find(&others, expect.shown(other))
                .ok_or_else(|| format!("sentinel :{sentinel} does not know sentinel :{other}"))?;
            // `master_down` is what the other said when last asked about
            // the master, a vote's leftover that clears within 5 s.
            let flags = get(entry, "flags");
            if flags != "sentinel" && flags != "sentinel,master_down" {
                return Err(format!(
                    "sentinel :{sentinel} sees sentinel :{other} as {}",
                    flags
                ));
            }
        }
    }
    Ok(stale)
}

/// Whether `info` (`INFO replication` of the node on `port`) says it
/// replicates the master on `master` with its link up.
pub(super) fn replicates(info: &str, port: u16, master: u16) -> Result<(), String> {
    let role = field(info, "role").unwrap_or("?");
    let master_port = field(info, "master_port").unwrap_or("-");
    let link = field(info, "master_link_status").unwrap_or("-");
    if role == "slave" && master_port == master.to_string() && link == "up" {
        Ok(())
    } else {
        Err(format!(
            "replica :{port} says role:{role} master_port:{master_port} master_link_status:{link}, not a replica of :{master} with its link up"
        ))
    }
}

/// `SENTINEL <sub> <name>`.
pub(super) fn sentinel_cmd(sub: &str, name: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SENTINEL");
    cmd.arg(sub).arg(name);
    cmd
}

/// `:a, :b` for messages.
pub(super) fn ports(ports: &[u16]) -> String {
    let ports: Vec<String> = ports.iter().map(|port| format!(":{port}")).collect();
    ports.join(", ")
}

fn find(entries: &[Description], port: u16) -> Option<&Description> {
    entries
        .iter()
        .find(|entry| get(entry, "port") == port.to_string())
}

fn get<'a>(description: &'a Description, key: &str) -> &'a str {
    description.get(key).map_or("?", String::as_str)
}
