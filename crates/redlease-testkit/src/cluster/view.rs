//! What the nodes say about the cluster, and the wait until they all say
//! the same healthy thing.
//!
//! A cluster is settled when every running node reports `cluster_state:ok`,
//! every replica has `master_link_status:up`, and every node's `CLUSTER
//! NODES` says the same: the same nodes, roles, masters, failure flags and
//! slots. Comparing `CLUSTER NODES` rather than `CLUSTER SLOTS` also covers
//! the nodes that own no slots (a killed master, a replica marked failed,
//! which `CLUSTER SLOTS` leaves out).

use std::fmt;
use std::time::{Duration, Instant};

use crate::probe::{Probe, field};

/// How often a wait asks the nodes again.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// One node as one observer's `CLUSTER NODES` describes it, without what
/// rightly differs between observers: ping and pong times, link state, the
/// `myself` flag, epochs, and a node's own `[slot->-id]` migration marks,
/// which only that node lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeLine {
    pub(crate) id: String,
    pub(crate) port: u16,
    pub(crate) master: bool,
    pub(crate) master_id: Option<String>,
    pub(crate) health: Health,
    pub(crate) slots: Vec<(u16, u16)>,
}

/// A node's health as its observer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    Ok,
    /// `fail?`: this observer has not heard from it within the node timeout.
    Suspected,
    /// `fail`: a majority of masters agreed it failed.
    Failed,
    /// `handshake` or `noaddr`: still being introduced.
    Joining,
}

/// The cluster as every running node agreed it is: its lines sorted by id.
pub(crate) type View = Vec<NodeLine>;

impl fmt::Display for NodeLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} :{} ", short(&self.id), self.port)?;
        match &self.master_id {
            Some(master) if !self.master => write!(f, "replica of {}", short(master))?,
            _ => f.write_str("master")?,
        }
        if self.health != Health::Ok {
            write!(f, " {:?}", self.health)?;
        }
        for (first, last) in &self.slots {
            write!(f, " {first}-{last}")?;
        }
        Ok(())
    }
}

/// The first 8 characters of a node id, enough to tell nodes apart in a
/// message.
pub(crate) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A view on one line per node, for messages.
pub(crate) fn describe(view: &[NodeLine]) -> String {
    let lines: Vec<String> = view.iter().map(|line| format!("[{line}]")).collect();
    lines.join(" ")
}

/// Parses `CLUSTER NODES` output into a [`View`].
pub(crate) fn parse_nodes(text: &str) -> Result<View, String> {
    let mut view = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            parse_line(line).ok_or_else(|| format!("cannot parse CLUSTER NODES line {line:?}"))
        })
        .collect::<Result<View, String>>()?;
    view.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(view)
}

/// `<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent>
/// <pong-recv> <config-epoch> <link-state> <slot> ...`
fn parse_line(line: &str) -> Option<NodeLine> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [id, address, flags, master_id, _, _, _, _, slots @ ..] = fields.as_slice() else {
        return None;
    };
    let port = address
        .split('@')
        .next()?
        .rsplit(':')
        .next()?
        .parse()
        .ok()?;
    let flags: Vec<&str> = flags.split(',').collect();
    let health = if flags.iter().any(|f| matches!(*f, "handshake" | "noaddr")) {
        Health::Joining
    } else if flags.contains(&"fail") {
        Health::Failed
    } else if flags.contains(&"fail?") {
        Health::Suspected
    } else {
        Health::Ok
    };
    let slots = slots
        .iter()
        .filter(|s| !s.starts_with('['))
        .map(|s| match s.split_once('-') {
            Some((first, last)) => Some((first.parse().ok()?, last.parse().ok()?)),
            None => s.parse().ok().map(|slot| (slot, slot)),
        })
        .collect::<Option<Vec<_>>>()?;
    Some(NodeLine {
        id: (*id).to_owned(),
        port,
        master: flags.contains(&"master"),
        master_id: (*master_id != "-").then(|| (*master_id).to_owned()),
        health,
        slots,
    })
}

impl Probe {
    /// One look at the nodes on `ports`: the view they all agree on, or
    /// what the first node that spoils it says.
    pub(crate) fn look(&mut self, ports: &[u16]) -> Result<View, String> {
        let mut agreed: Option<(u16, View)> = None;
        for &port in ports {
            let info: String = self.query(port, redis::cmd("CLUSTER").arg("INFO"))?;
            if field(&info, "cluster_state") != Some("ok") {
                return Err(format!(
                    "node :{port} says cluster_state:{}",
                    field(&info, "cluster_state").unwrap_or("?")
                ));
            }
            let replication: String = self.query(port, redis::cmd("INFO").arg("replication"))?;
            if field(&replication, "role") == Some("slave")
                && field(&replication, "master_link_status") != Some("up")
            {
                return Err(format!(
                    "replica :{port} says master_link_status:{}",
                    field(&replication, "master_link_status").unwrap_or("?")
                ));
            }
            let nodes: String = self.query(port, redis::cmd("CLUSTER").arg("NODES"))?;
            let view = parse_nodes(&nodes)?;
            match &agreed {
                None => agreed = Some((port, view)),
                Some((first, first_view)) if *first_view != view => {
                    return Err(format!(
                        "node :{first} sees {} but node :{port} sees {}",
                        describe(first_view),
                        describe(&view)
                    ));
                }
                Some(_) => {}
            }
        }
        let (_, view) = agreed.ok_or("no node is running")?;
        for &port in ports {
            match view.iter().find(|line| line.port == port) {
                Some(line) if line.health == Health::Ok => {}
                Some(line) => return Err(format!("the nodes see node :{port} as {line}")),
                None => return Err(format!("the nodes do not know node :{port}")),
            }
        }
        if let Some(line) = view.iter().find(|line| line.health == Health::Joining) {
            return Err(format!("a node is still joining: {line}"));
        }
        Ok(view)
    }

    /// Polls the nodes on `ports` until they agree on a healthy view that
    /// `done` accepts too, for at most `within`. `done` says what it still
    /// misses when it does not accept.
    pub(crate) fn wait<T>(
        &mut self,
        ports: &[u16],
        within: Duration,
        mut done: impl FnMut(&View) -> Result<T, String>,
    ) -> Result<(View, T), String> {
        let deadline = Instant::now() + within;
        loop {
            let last = match self.look(ports).and_then(|view| Ok((done(&view)?, view))) {
                Ok((value, view)) => return Ok((view, value)),
                Err(reason) => reason,
            };
            if Instant::now() > deadline {
                return Err(format!(
                    "the cluster did not settle within {} s; last: {last}",
                    within.as_secs()
                ));
            }
            std::thread::sleep(POLL_EVERY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_nodes_answer_parses_without_observer_details() {
        let text = "\
07c3 127.0.0.1:30004@31004,host slave e7d1 0 1426238317239 4 connected
67ed 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-67ed] 16000
6ec2 127.0.0.1:30005@31005 master,fail? - 1 2 5 disconnected
";
        let view = parse_nodes(text).unwrap();
        let ids: Vec<&str> = view.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, ["07c3", "67ed", "6ec2", "e7d1"]);
        assert_eq!(view[0].port, 30004);
        assert!(!view[0].master);
        assert_eq!(view[0].master_id.as_deref(), Some("e7d1"));
        assert_eq!(view[2].health, Health::Suspected);
        assert_eq!(view[3].slots, [(0, 5460), (16000, 16000)]);
        assert_eq!(view[3].master_id, None);
    }
}
