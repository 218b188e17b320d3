//! The one place that talks to Redis.
//!
//! The rest of the crate sees a [`Connection`]: send a script call or a
//! command, subscribe and unsubscribe, and read release messages as
//! [`Push`]es. Only this module names redis-rs connection types, so another
//! kind of connection (a cluster, a Sentinel-managed master) can take the
//! place of today's single node without touching the lock code.

pub mod url;

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, PushInfo, PushKind, RedisError, Value};
use tokio::sync::mpsc;

use crate::scripts::ScriptCall;

/// How a connection waits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// For any one reply.
    pub(crate) response: Duration,
    /// For one connection attempt.
    pub(crate) connect: Duration,
}

/// A multiplexed connection to one Redis node that reconnects by itself.
/// Cheap to clone: clones share the connection.
#[derive(Clone)]
pub(crate) struct Connection {
    manager: ConnectionManager,
}

/// A message for the client's subscriptions.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// A message arrived on this channel.
    Message(String),
    /// The connection dropped: messages may have been lost.
    Disconnected,
}

/// The pushes of a connection opened with [`Connection::open_subscriber`].
pub(crate) struct Pushes {
    rx: mpsc::UnboundedReceiver<PushInfo>,
}

impl Pushes {
    /// Pushes that never come, for unit tests of the subscriptions.
    #[cfg(test)]
    pub(crate) fn none() -> Pushes {
        // The sender is dropped: `next` answers `None` at once.
        Pushes {
            rx: mpsc::unbounded_channel().1,
        }
    }

    /// The next push the subscriptions care about; `None` once the
    /// connection is gone for good.
    pub(crate) async fn next(&mut self) -> Option<Push> {
        loop {
            let push = self.rx.recv().await?;
            match push.kind {
                PushKind::Message => match push.data.first() {
                    Some(Value::BulkString(bytes)) => {
                        return Some(Push::Message(String::from_utf8_lossy(bytes).into_owned()));
                    }
                    _ => continue,
                },
                PushKind::Disconnection => return Some(Push::Disconnected),
                _ => continue,
            }
        }
    }
}

fn config(timeouts: Timeouts) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_response_timeout(Some(timeouts.response))
        .set_connection_timeout(Some(timeouts.connect))
        // Few, quick reconnect attempts: a lock call should fail fast while
        // Redis is down, and the next call tries again anyway.
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500))
}

impl Connection {
    /// Connects, with release messages delivered as RESP3 pushes on this
    /// same connection (no connection of their own), and re-subscribed
    /// after a reconnect.
    pub(crate) async fn open_subscriber(
        client: &redis::Client,
        timeouts: Timeouts,
    ) -> Result<(Connection, Pushes), RedisError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let config = config(timeouts)
            .set_push_sender(tx)
            .set_automatic_resubscription();
        let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
        Ok((Connection { manager }, Pushes { rx }))
    }

    /// Connects, for commands only.
    pub(crate) async fn open(
        client: &redis::Client,
        timeouts: Timeouts,
    ) -> Result<Connection, RedisError> {
        let manager = ConnectionManager::new_with_config(client.clone(), config(timeouts)).await?;
        Ok(Connection { manager })
    }

    /// Sends a script call (`EVALSHA`, loading the script on `NOSCRIPT`).
    pub(crate) async fn run<T: FromRedisValue>(&self, call: &ScriptCall) -> Result<T, RedisError> {
        let mut manager = self.manager.clone();
        call.invocation().invoke_async(&mut manager).await
    }

    /// Sends one command.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, RedisError> {
        let mut manager = self.manager.clone();
        cmd.query_async(&mut manager).await
    }

    /// Sends a pipeline in which one failing command (a key of another
    /// type) does not fail the others.
    pub(crate) async fn query_each(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
        let mut manager = self.manager.clone();
        let mut pipe = pipe.clone();
        pipe.ignore_errors().query_async(&mut manager).await
    }

    pub(crate) async fn subscribe(&self, channel: &str) -> Result<(), RedisError> {
        self.manager.clone().subscribe(channel).await
    }

    pub(crate) async fn unsubscribe(&self, channel: &str) -> Result<(), RedisError> {
        self.manager.clone().unsubscribe(channel).await
    }

    /// A connection to `url` that connects on first use, for unit tests of
    /// what runs on top of it (an address nothing listens on, or a server
    /// that never answers).
    #[cfg(test)]
    pub(crate) fn lazy(url: &str, timeouts: Timeouts) -> Connection {
        let client = redis::Client::open(url).unwrap();
        let config = config(timeouts).set_number_of_retries(0);
        let manager = ConnectionManager::new_lazy_with_config(client, config).unwrap();
        Connection { manager }
    }
}
