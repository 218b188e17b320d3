//! Which node is the master, as the sentinels say: asked of all of them at
//! once, at start, every second, and at once when any of them announces a
//! `+switch-master` for our master; the answer a majority gives wins.
//!
//! The announcement alone is not trusted (a sentinel of another group, or
//! a stale one, may say anything): it only makes the monitor ask again. A
//! sentinel that is down only shrinks the set of answers; one that answers
//! wrong is outvoted. The sentinels are sent nothing but `SENTINEL
//! GET-MASTER-ADDR-BY-NAME` and `SUBSCRIBE +switch-master`, so that a
//! sentinel ACL user with just those two works; only the doctor
//! ([`Monitor::survey`]) asks more, and reports a refusal as a finding.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use redis::aio::MultiplexedConnection;
use tokio::sync::{Notify, watch};

use crate::connection::timeouts::Timeouts;
use crate::error::Error;

/// How often the master's address is asked when nothing announces a
/// switch (Redisson's `scanInterval`).
const POLL: Duration = Duration::from_secs(1);

/// The master as the sentinels last agreed; `epoch` grows with each change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Master {
    pub(crate) epoch: u64,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Master {
    /// Before any sentinel answered: epoch 0, which every real master's
    /// epoch exceeds.
    fn unknown() -> Master {
        Master {
            epoch: 0,
            host: String::new(),
            port: 0,
        }
    }
}

/// One sentinel's view of the master ([`Monitor::survey`]).
pub(crate) struct Said {
    /// The sentinel's `host:port`.
    pub(crate) address: String,
    /// `SENTINEL MASTER name`: `quorum`, `num-slaves`,
    /// `num-other-sentinels`, `flags`, ...
    pub(crate) fields: Result<HashMap<String, String>, redis::RedisError>,
    /// `SENTINEL CKQUORUM name`: `OK ...`, or the error saying why not.
    pub(crate) quorum: Result<String, redis::RedisError>,
}

pub(crate) struct Monitor {
    sentinels: Vec<redis::Client>,
    name: String,
    timeouts: Timeouts,
    known: watch::Sender<Master>,
    /// Asks the sentinels again at once.
    nudge: Notify,
    /// One connection per sentinel for the polls, made on first use and
    /// dropped on an error.
    conns: Mutex<Vec<Option<MultiplexedConnection>>>,
    /// Dropped with the monitor: its tasks end.
    _stop: watch::Sender<()>,
}

impl Monitor {
    /// Asks the sentinels for the master of `name`, then keeps watching.
    ///
    /// # Errors
    ///
    /// `is_connection` when no sentinel answers (the message says what each
    /// said), `is_invalid_argument` when none knows the name.
    pub(crate) async fn start(
        sentinels: Vec<redis::Client>,
        name: String,
        timeouts: Timeouts,
    ) -> Result<Arc<Monitor>, Error> {
        let (stop, stopped) = watch::channel(());
        let count = sentinels.len();
        let monitor = Arc::new(Monitor {
            sentinels,
            name,
            timeouts,
            known: watch::channel(Master::unknown()).0,
            nudge: Notify::new(),
            conns: Mutex::new(vec![None; count]),
            _stop: stop,
        });
        let answers = monitor.ask_all().await;
        let addresses: Vec<(String, u16)> = answers
            .iter()
            .filter_map(|a| a.clone().ok().flatten())
            .collect();
        if addresses.is_empty() {
            let said: Vec<String> = monitor
                .sentinels
                .iter()
                .zip(&answers)
                .map(|(s, a)| {
                    let address = s.get_connection_info().addr().to_string();
                    match a {
                        Ok(_) => format!("{address}: does not know it"),
                        Err(e) => format!("{address}: {e}"),
                    }
                })
                .collect();
            let message = format!(
                "no sentinel named a master for {:?} ({})",
                monitor.name,
                said.join("; ")
            );
            let refused = |a: &Result<_, redis::RedisError>| {
                a.as_ref().is_err_and(|e| Error::from(e.clone()).is_auth())
            };
            return Err(if answers.iter().any(Result::is_ok) {
                Error::invalid(message)
            } else if answers.iter().all(refused) {
                // Every sentinel wants (other) credentials: say whose.
                Error::from(redis::RedisError::from((
                    redis::ErrorKind::AuthenticationFailed,
                    "the sentinels refused the connection",
                    format!(
                        "{message}; the sentinels' password is set with ClientBuilder::sentinel_password, the url's credentials are the master's"
                    ),
                )))
            } else {
                Error::from(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    message,
                )))
            });
        }
        monitor.decide(&addresses);
        tokio::spawn(poll(Arc::downgrade(&monitor), stopped.clone()));
        for i in 0..count {
            tokio::spawn(listen(Arc::downgrade(&monitor), i, stopped.clone()));
        }
        Ok(monitor)
    }

    /// The master as last agreed, and its changes.
    pub(crate) fn watch(&self) -> watch::Receiver<Master> {
        self.known.subscribe()
    }

    pub(crate) fn known(&self) -> Master {
        self.known.borrow().clone()
    }

    /// Makes the monitor ask the sentinels again now: a connection error,
    /// or `READONLY`, may mean the master changed.
    pub(crate) fn nudge(&self) {
        self.nudge.notify_one();
    }

    /// What each sentinel says of the master, for the doctor: its
    /// `SENTINEL MASTER` fields and its `SENTINEL CKQUORUM` answer, asked of
    /// all at once.
    pub(crate) async fn survey(&self) -> Vec<Said> {
        join_all((0..self.sentinels.len()).map(|i| async move {
            let address = self.sentinels[i].get_connection_info().addr().to_string();
            let master = self.conn(i).await;
            let (fields, quorum) = match master {
                Ok(mut conn) => {
                    let fields = redis::cmd("SENTINEL")
                        .arg("MASTER")
                        .arg(&self.name)
                        .query_async(&mut conn)
                        .await;
                    let quorum = redis::cmd("SENTINEL")
                        .arg("CKQUORUM")
                        .arg(&self.name)
                        .query_async(&mut conn)
                        .await;
                    (fields, quorum)
                }
                Err(e) => (Err(e.clone()), Err(e)),
            };
            Said {
                address,
                fields,
                quorum,
            }
        }))
        .await
    }

    /// The monitor's connection to sentinel `i`, made on first use.
    async fn conn(&self, i: usize) -> Result<MultiplexedConnection, redis::RedisError> {
        let cached = self.conns.lock().unwrap_or_else(|e| e.into_inner())[i].clone();
        match cached {
            Some(conn) => Ok(conn),
            None => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.timeouts.connect))
                    .set_response_timeout(Some(self.timeouts.response));
                let conn = self.sentinels[i]
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                self.conns.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(conn.clone());
                Ok(conn)
            }
        }
    }

    /// Asks every sentinel at once; each answer is an address, `None` (the
    /// sentinel does not know the name), or an error.
    async fn ask_all(&self) -> Vec<Result<Option<(String, u16)>, redis::RedisError>> {
        join_all((0..self.sentinels.len()).map(|i| self.ask(i))).await
    }

    async fn ask(&self, i: usize) -> Result<Option<(String, u16)>, redis::RedisError> {
        let mut conn = self.conn(i).await?;
        let reply: Result<Option<(String, String)>, _> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.name)
            .query_async(&mut conn)
            .await;
        match reply {
            Ok(Some((host, port))) => match port.parse() {
                Ok(port) => Ok(Some((host, port))),
                Err(_) => Ok(None),
            },
            Ok(None) => Ok(None),
            Err(e) => {
                self.conns.lock().unwrap_or_else(|e| e.into_inner())[i] = None;
                Err(e)
            }
        }
    }

    /// Picks the master from the addresses named: the one a strict majority
    /// names; without one, the current master if any sentinel still names
    /// it, else the most named (the first named, on a tie). Publishes it
    /// when it changed.
    fn decide(&self, named: &[(String, u16)]) {
        if named.is_empty() {
            return;
        }
        let mut counts: Vec<(&(String, u16), usize)> = Vec::new();
        for address in named {
            match counts.iter_mut().find(|(a, _)| *a == address) {
                Some((_, n)) => *n += 1,
                None => counts.push((address, 1)),
            }
        }
        let current = self.known();
        let is_current = |a: &(String, u16)| a.0 == current.host && a.1 == current.port;
        let winner = counts
            .iter()
            .find(|(_, n)| 2 * n > named.len())
            .or_else(|| counts.iter().find(|(a, _)| is_current(a)))
            .or_else(|| counts.iter().max_by_key(|(_, n)| *n))
            .map(|(a, _)| (*a).clone());
        if let Some((host, port)) = winner
            && !is_current(&(host.clone(), port))
        {
            let epoch = current.epoch + 1;
            if current.epoch > 0 {
                tracing::warn!(
                    master = %self.name,
                    from = %format!("{}:{}", current.host, current.port),
                    to = %format!("{host}:{port}"),
                    "the sentinels switched the redis master"
                );
            }
            self.known.send_replace(Master { epoch, host, port });
        }
    }
}

/// Asks the sentinels every [`POLL`], or at once when nudged.
async fn poll(monitor: Weak<Monitor>, mut stopped: watch::Receiver<()>) {
    loop {
        let Some(m) = monitor.upgrade() else { return };
        tokio::select! {
            _ = stopped.changed() => return,
            _ = tokio::time::sleep(POLL) => {}
            _ = m.nudge.notified() => {}
        }
        let answers = m.ask_all().await;
        let named: Vec<(String, u16)> = answers
            .into_iter()
            .filter_map(|a| a.ok().flatten())
            .collect();
        m.decide(&named);
    }
}

/// Listens for `+switch-master` on sentinel `i`, reconnecting with a
/// growing pause (0.1 s to 1 s); an announcement for our master nudges the
/// monitor, which asks every sentinel.
async fn listen(monitor: Weak<Monitor>, i: usize, mut stopped: watch::Receiver<()>) {
    let mut pause = Duration::from_millis(100);
    loop {
        let Some((client, name, connect)) = monitor
            .upgrade()
            .map(|m| (m.sentinels[i].clone(), m.name.clone(), m.timeouts.connect))
        else {
            return;
        };
        let subscribed = async {
            let mut pubsub = tokio::time::timeout(connect, client.get_async_pubsub())
                .await
                .map_err(|_| {
                    redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
                })??;
            pubsub.subscribe("+switch-master").await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::select! {
            _ = stopped.changed() => return,
            p = subscribed => p,
        };
        match pubsub {
            Ok(mut pubsub) => {
                pause = Duration::from_millis(100);
                let mut messages = pubsub.on_message();
                loop {
                    let message = tokio::select! {
                        _ = stopped.changed() => return,
                        m = messages.next() => m,
                    };
                    let Some(message) = message else { break };
                    let payload: String = message.get_payload().unwrap_or_default();
                    if payload.split(' ').next() == Some(name.as_str()) {
                        let Some(m) = monitor.upgrade() else { return };
                        m.nudge();
                    }
                }
            }
            Err(e) => {
                tracing::debug!(sentinel = i, error = %e, "cannot listen to a sentinel; retrying");
            }
        }
        tokio::select! {
            _ = stopped.changed() => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor() -> Monitor {
        Monitor {
            sentinels: Vec::new(),
            name: "m".to_owned(),
            timeouts: Timeouts {
                response: Duration::from_secs(1),
                connect: Duration::from_secs(1),
            },
            known: watch::channel(Master::unknown()).0,
            nudge: Notify::new(),
            conns: Mutex::new(Vec::new()),
            _stop: watch::channel(()).0,
        }
    }

    fn at(host: &str, port: u16) -> (String, u16) {
        (host.to_owned(), port)
    }

    #[test]
    fn a_majority_decides_and_one_wrong_sentinel_is_outvoted() {
        let m = monitor();
        m.decide(&[at("a", 1), at("a", 1), at("x", 9)]);
        assert_eq!((m.known().host.as_str(), m.known().epoch), ("a", 1));
        // One of three says otherwise: nothing changes.
        m.decide(&[at("x", 9), at("a", 1), at("a", 1)]);
        assert_eq!(m.known().epoch, 1);
        // Two of three moved: the switch is published.
        m.decide(&[at("b", 2), at("b", 2), at("a", 1)]);
        assert_eq!((m.known().host.as_str(), m.known().epoch), ("b", 2));
    }

    #[test]
    fn without_a_majority_the_current_master_stays_while_named() {
        let m = monitor();
        m.decide(&[at("a", 1)]);
        // One down, the other two split: keep the current one.
        m.decide(&[at("a", 1), at("b", 2)]);
        assert_eq!(m.known().host, "a");
        // Nobody names it any more: the most named wins.
        m.decide(&[at("b", 2), at("c", 3), at("b", 2), at("c", 3), at("c", 3)]);
        assert_eq!(m.known().host, "c");
        m.decide(&[]);
        assert_eq!(m.known().host, "c");
    }
}
