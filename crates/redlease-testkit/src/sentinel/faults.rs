//! Failovers, kills, pauses, restarts and wrong Sentinels.

use super::look::sentinel_cmd;
use std::collections::HashMap;

use super::{SETTLE_WITHIN, SentinelGroup, State, shown};
use crate::{RedisServer, ServerOptions};

/// How [`SentinelGroup::make_sentinel_wrong`] makes a Sentinel give a wrong
/// answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrongSentinel {
    /// It names a master of its own: a standalone server that no replica
    /// follows and no other Sentinel knows, as a Sentinel of another
    /// deployment that uses the same master name would.
    OtherMaster,
    /// It knows no master by the group's name: `SENTINEL
    /// GET-MASTER-ADDR-BY-NAME` answers nil.
    NoMaster,
}

impl SentinelGroup {
    /// Kills Sentinel `i` with SIGKILL. Does not wait: the other Sentinels
    /// flag it down after the down-after time, and fail over without it as
    /// long as a quorum and a majority of all Sentinels remain.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is neither running nor paused.
    pub fn kill_sentinel(&mut self, i: usize) {
        let sentinel = self.sentinel_member_mut(i);
        assert!(
            matches!(sentinel.state, State::Running | State::Paused),
            "sentinel {i} is {:?}",
            sentinel.state
        );
        sentinel.server.kill();
        sentinel.state = State::Killed;
    }

    /// Restarts a killed Sentinel on its port with the configuration it had
    /// saved (its id, the master, replicas and Sentinels it knew), and
    /// waits until the group is settled with it: it learns a master that
    /// changed meanwhile from the others.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is not killed, cannot be restarted, or the group
    /// does not settle.
    pub fn restart_sentinel(&mut self, i: usize) {
        let sentinel = self.sentinel_member_mut(i);
        assert_eq!(sentinel.state, State::Killed, "sentinel {i} is not killed");
        sentinel.server.restart();
        sentinel.state = State::Running;
        self.settle(&format!("restarting sentinel {i}"), 0);
    }

    /// Stops Sentinel `i` with SIGSTOP: connections to it open but nothing
    /// is answered, so a client learns nothing from it until its own
    /// time-outs fire.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is not running.
    pub fn pause_sentinel(&mut self, i: usize) {
        let sentinel = self.sentinel_member_mut(i);
        assert_eq!(
            sentinel.state,
            State::Running,
            "sentinel {i} is not running"
        );
        sentinel.server.pause();
        sentinel.state = State::Paused;
    }

    /// Lets a paused Sentinel run again. Does not wait; it catches up on a
    /// failover it missed within a few seconds.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is not paused.
    pub fn resume_sentinel(&mut self, i: usize) {
        let sentinel = self.sentinel_member_mut(i);
        assert_eq!(sentinel.state, State::Paused, "sentinel {i} is not paused");
        sentinel.server.resume();
        sentinel.state = State::Running;
    }

    /// Makes Sentinel `i` answer wrong for the group's master name, at its
    /// own address, while the others go on answering right: it forgets
    /// the master (`SENTINEL REMOVE`) and, for
    /// [`WrongSentinel::OtherMaster`], monitors a standalone server of its
    /// own under the same name. Waits until the group is settled without
    /// it, and returns what it now answers to `SENTINEL
    /// GET-MASTER-ADDR-BY-NAME`.
    ///
    /// For [`WrongSentinel::OtherMaster`] the others also forget it
    /// (`SENTINEL RESET`), as they would not know a Sentinel of another
    /// deployment: otherwise their gossip, which carries the master's
    /// address under its name, would correct it after the next failover.
    /// They find each other again within 2 s, but the replicas only at the
    /// master's next `INFO`, so this takes up to about 10 s. A
    /// [`WrongSentinel::NoMaster`] Sentinel ignores gossip about a name it
    /// does not know, and the others still count it, as they would a
    /// Sentinel of theirs that lost its configuration.
    ///
    /// With 3 Sentinels the 2 right ones still fail over: they reach the
    /// quorum of 2 and a majority of the Sentinels they know.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is not running, a Sentinel refuses the commands,
    /// or the group does not settle before or after.
    pub fn make_sentinel_wrong(&mut self, i: usize, how: WrongSentinel) -> Option<String> {
        assert_eq!(
            self.sentinel_member(i).state,
            State::Running,
            "sentinel {i} is not running"
        );
        self.settle(&format!("before making sentinel {i} wrong"), 0);
        let port = self.sentinel(i).port();
        let name = self.master_name().to_owned();
        let mut probe = self.probe();
        probe
            .query::<()>(port, &sentinel_cmd("REMOVE", &name))
            .unwrap_or_else(|e| panic!("SENTINEL REMOVE on sentinel {i}: {e}"));
        let decoy = match how {
            WrongSentinel::NoMaster => None,
            WrongSentinel::OtherMaster => {
                let decoy = RedisServer::start_with(ServerOptions {
                    password: self.options.password.clone(),
                    ..self.options.tls_server()
                });
                self.monitor(&mut probe, i, shown(&decoy), 1)
                    .unwrap_or_else(|e| panic!("sentinel {i} monitoring a decoy: {e}"));
                Some(decoy)
            }
        };
        let answer = decoy
            .as_ref()
            .map(|decoy| format!("127.0.0.1:{}", shown(decoy)));
        let sentinel = self.sentinel_member_mut(i);
        sentinel.decoy = decoy;
        sentinel.state = State::Wrong;
        let others = match how {
            WrongSentinel::OtherMaster => self.right_sentinels(),
            WrongSentinel::NoMaster => Vec::new(),
        };
        for &other in &others {
            probe
                .query::<i64>(other, &sentinel_cmd("RESET", &name))
                .unwrap_or_else(|e| panic!("SENTINEL RESET on sentinel :{other}: {e}"));
        }
        let after = format!("making sentinel {i} wrong");
        let known_as = shown(self.sentinel(i)).to_string();
        self.wait(SETTLE_WITHIN, |probe| {
            self.look(probe, 0)?;
            for &other in &others {
                let known: Vec<HashMap<String, String>> =
                    probe.query(other, &sentinel_cmd("SENTINELS", &name))?;
                if known
                    .iter()
                    .any(|entry| entry.get("port") == Some(&known_as))
                {
                    return Err(format!("sentinel :{other} still knows sentinel :{port}"));
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("after {after}: {e}\n{}", self.logs()));
        answer
    }

    /// Makes a [wrong](SentinelGroup::make_sentinel_wrong) Sentinel monitor
    /// the group's master again, and waits until the group is settled with
    /// it.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` is not wrong, refuses the commands, or the group
    /// does not settle.
    pub fn make_sentinel_right(&mut self, i: usize) {
        assert_eq!(
            self.sentinel_member(i).state,
            State::Wrong,
            "sentinel {i} is not wrong"
        );
        let port = self.sentinel(i).port();
        let mut probe = self.probe();
        if self.sentinel_member(i).decoy.is_some() {
            probe
                .query::<()>(port, &sentinel_cmd("REMOVE", self.master_name()))
                .unwrap_or_else(|e| panic!("SENTINEL REMOVE on sentinel {i}: {e}"));
        }
        self.monitor(&mut probe, i, shown(self.master()), self.quorum())
            .unwrap_or_else(|e| panic!("sentinel {i} monitoring the master again: {e}"));
        let sentinel = self.sentinel_member_mut(i);
        sentinel.decoy = None;
        sentinel.state = State::Running;
        self.settle(&format!("making sentinel {i} right"), 0);
    }
}
