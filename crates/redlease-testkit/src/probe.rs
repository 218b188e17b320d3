//! [`Probe`]: the connections a multi-node fixture asks its nodes through
//! while it waits for them to settle.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

/// How long a probe waits for one node's answer: a node that hangs must
/// not hang the wait past its deadline.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// Connections to the nodes, kept across the polls of a wait so that a
/// poll is a few round trips, not a few connects.
#[derive(Default)]
pub(crate) struct Probe {
    connections: HashMap<u16, redis::Connection>,
    /// The password of each node that requires one, sent with `AUTH` on
    /// connecting.
    passwords: HashMap<u16, String>,
}

impl Probe {
    /// Authenticates with `password` to the node on `port` from its next
    /// connection on.
    pub(crate) fn password(&mut self, port: u16, password: &str) {
        self.passwords.insert(port, password.to_owned());
        self.connections.remove(&port);
    }

    /// Sends `cmd` to the node on `port`; a failed connection is dropped so
    /// that the next poll connects again.
    pub(crate) fn query<T: redis::FromRedisValue>(
        &mut self,
        port: u16,
        cmd: &redis::Cmd,
    ) -> Result<T, String> {
        let connection = match self.connections.entry(port) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let mut connection = redis::Client::open(format!("redis://127.0.0.1:{port}"))
                    .and_then(|client| client.get_connection_with_timeout(ANSWER_WITHIN))
                    .map_err(|e| format!("node :{port} does not answer ({e})"))?;
                connection
                    .set_read_timeout(Some(ANSWER_WITHIN))
                    .map_err(|e| e.to_string())?;
                if let Some(password) = self.passwords.get(&port) {
                    redis::cmd("AUTH")
                        .arg(password)
                        .exec(&mut connection)
                        .map_err(|e| format!("node :{port} refuses AUTH ({e})"))?;
                }
                entry.insert(connection)
            }
        };
        cmd.query(connection).map_err(|e| {
            if e.is_unrecoverable_error() || e.is_timeout() {
                self.connections.remove(&port);
            }
            format!("node :{port} answers {e}")
        })
    }
}

/// The value of `name:` in an `INFO`-style answer.
pub(crate) fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        line.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_info_field_is_found_by_its_whole_name() {
        let info = "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n";
        assert_eq!(field(info, "role"), Some("slave"));
        assert_eq!(field(info, "master_link_status"), Some("up"));
        assert_eq!(field(info, "master_link"), None);
    }
}
