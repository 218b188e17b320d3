//! [`Connection`], the one type the rest of the crate talks to Redis
//! through, and the backend behind it: one node (`single.rs`), a Redis
//! Cluster (`cluster.rs`) or a master under Sentinel (`sentinel.rs`), as
//! the URL said. Each method is one `match` over the backends, so that
//! what differs between deployments is visible in one place.

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, RedisError, Value};

#[cfg(feature = "cluster")]
use super::cluster;
use super::natives::NativesCell;
use super::nodes::{Node, SlotId, SlotNodes};
use super::publish::{PubSubMode, Publish};
use super::pushes::Pushes;
use super::timeouts::Timeouts;
use super::{sentinel, single, tls, url};

/// A multiplexed connection to Redis that reconnects by itself. Cheap to
/// clone: clones share the connection.
#[derive(Clone)]
pub(crate) struct Connection {
    backend: Backend,
    publish: Publish,
    /// The server's own owner-checked commands, found by the connection's
    /// first string-layout call ([`crate::scripts::string`]).
    natives: NativesCell,
}

#[derive(Clone)]
enum Backend {
    Single(ConnectionManager),
    #[cfg(feature = "cluster")]
    Cluster(cluster::Cluster),
    Sentinel(sentinel::SentinelConn),
}

impl Connection {
    /// Connects to what `target` names. With `pushes`, release messages
    /// are delivered on this same connection (RESP3) and re-subscribed
    /// after a reconnect. A certificate that TLS rejected is named in the
    /// error (`tls::explain`).
    pub(crate) async fn open(
        target: &url::Target,
        timeouts: Timeouts,
        mode: PubSubMode,
        pushes: bool,
    ) -> Result<(Connection, Option<Pushes>), crate::error::Error> {
        Connection::open_as_given(target, timeouts, mode, pushes)
            .await
            .map_err(tls::explain)
    }

    /// [`open`](Connection::open), with redis-rs's errors as they come.
    async fn open_as_given(
        target: &url::Target,
        timeouts: Timeouts,
        mode: PubSubMode,
        pushes: bool,
    ) -> Result<(Connection, Option<Pushes>), crate::error::Error> {
        match target {
            url::Target::Single(client) => {
                if mode == PubSubMode::Sharded {
                    return Err(crate::error::Error::invalid(
                        "sharded pub/sub needs a redis-cluster:// url",
                    ));
                }
                let (manager, pushes) = single::open(client, timeouts, pushes).await?;
                let conn = Connection {
                    backend: Backend::Single(manager),
                    publish: Publish::Plain,
                    natives: NativesCell::default(),
                };
                Ok((conn, pushes))
            }
            url::Target::Sentinel(target) => {
                if mode == PubSubMode::Sharded {
                    return Err(crate::error::Error::invalid(
                        "sharded pub/sub needs a redis-cluster:// url",
                    ));
                }
                let (conn, pushes) = sentinel::SentinelConn::open(target, timeouts, pushes).await?;
                let conn = Connection {
                    backend: Backend::Sentinel(conn),
                    publish: Publish::Plain,
                    natives: NativesCell::default(),
                };
                Ok((conn, pushes))
            }
            #[cfg(feature = "cluster")]
            url::Target::Cluster(nodes, certs) => {
                let (cluster, publish, pushes) =
                    cluster::open(nodes, certs.as_ref(), timeouts, mode, pushes).await?;
                let conn = Connection {
                    backend: Backend::Cluster(cluster),
                    publish,
                    natives: NativesCell::default(),
                };
                Ok((conn, pushes))
            }
        }
    }

    /// Which pub/sub the scripts and subscriptions use.
    pub(crate) fn publish(&self) -> Publish {
        self.publish
    }

    /// The server's own owner-checked commands, as far as known.
    pub(crate) fn natives(&self) -> &NativesCell {
        &self.natives
    }

    /// Sends the commands of `pipe` together (on a cluster, to the node of
    /// their keys, which must share a slot) and answers each command's reply
    /// (with `ignore_errors`, errors among them). A transaction
    /// (`atomic`) answers what `EXEC` did.
    pub(crate) async fn query_pipe(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<Vec<Value>, RedisError> {
        match &self.backend {
            Backend::Single(manager) => pipe.query_async(&mut manager.clone()).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => pipe.query_async(&mut cluster.conn()).await,
            Backend::Sentinel(s) => {
                s.with(|mut m| async move { pipe.query_async(&mut m).await })
                    .await
            }
        }
    }

    /// Sends one command (on a cluster, where its key or the command says).
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, RedisError> {
        match &self.backend {
            Backend::Single(manager) => cmd.query_async(&mut manager.clone()).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cmd.query_async(&mut cluster.conn()).await,
            Backend::Sentinel(s) => {
                s.with(|mut m| async move { cmd.query_async(&mut m).await })
                    .await
            }
        }
    }

    /// Sends one keyless command to the node that owns `key` (on one node,
    /// simply sends it): `WAIT` after an acquire, for example.
    pub(crate) async fn query_at_key<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        key: &str,
    ) -> Result<T, RedisError> {
        match &self.backend {
            Backend::Single(manager) => cmd.query_async(&mut manager.clone()).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.query_at_key(cmd, key).await,
            Backend::Sentinel(s) => {
                s.with(|mut m| async move { cmd.query_async(&mut m).await })
                    .await
            }
        }
    }

    /// Sends the commands of `pipe`, each answered on its own, so that one
    /// failing command (a key of another type) does not fail the others. On
    /// one node they go as one pipeline; on a cluster each goes to its own
    /// node, all at once.
    pub(crate) async fn query_each(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
        match &self.backend {
            Backend::Single(manager) => {
                let mut pipe = pipe.clone();
                pipe.ignore_errors().query_async(&mut manager.clone()).await
            }
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => Ok(cluster.query_each(pipe).await),
            Backend::Sentinel(s) => {
                s.with(|mut m| {
                    let mut pipe = pipe.clone();
                    async move { pipe.ignore_errors().query_async(&mut m).await }
                })
                .await
            }
        }
    }

    /// Whether this is a cluster, where a (non-sharded) subscription is
    /// only the one node's to count.
    pub(crate) fn is_cluster(&self) -> bool {
        match &self.backend {
            Backend::Single(_) | Backend::Sentinel(_) => false,
            #[cfg(feature = "cluster")]
            Backend::Cluster(_) => true,
        }
    }

    /// The nodes that hold keys: the one node, or a cluster's masters.
    pub(crate) async fn masters(&self) -> Result<Vec<Node>, RedisError> {
        match &self.backend {
            Backend::Single(_) | Backend::Sentinel(_) => Ok(vec![Node { address: None }]),
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.masters().await,
        }
    }

    /// Sends one command to `node` (from [`masters`](Connection::masters)).
    pub(crate) async fn query_on<T: FromRedisValue>(
        &self,
        node: &Node,
        cmd: &redis::Cmd,
    ) -> Result<T, RedisError> {
        match &self.backend {
            Backend::Single(manager) => cmd.query_async(&mut manager.clone()).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.query_on(node, cmd).await,
            Backend::Sentinel(s) => {
                s.with(|mut m| async move { cmd.query_async(&mut m).await })
                    .await
            }
        }
    }

    /// The hash slot of `key` on a cluster, for grouping keys that one
    /// script call may touch together; `None` on one node, where any keys
    /// may go together.
    pub(crate) fn slot(&self, key: &str) -> Option<SlotId> {
        match &self.backend {
            Backend::Single(_) | Backend::Sentinel(_) => None,
            #[cfg(feature = "cluster")]
            Backend::Cluster(_) => Some(SlotId(cluster::slot_of(key.as_bytes()))),
        }
    }

    /// Which master serves each slot, asked of the cluster now (one
    /// `CLUSTER SLOTS`); `None` on one node.
    pub(crate) async fn slot_nodes(&self) -> Result<Option<SlotNodes>, RedisError> {
        match &self.backend {
            Backend::Single(_) | Backend::Sentinel(_) => Ok(None),
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => {
                let ranges = cluster.slot_ranges().await?;
                let mut addresses: Vec<&str> = Vec::new();
                let mut node = vec![None; usize::from(cluster::SLOTS)];
                for (start, end, address) in &ranges {
                    let index = match addresses.iter().position(|a| a == address) {
                        Some(i) => i,
                        None => {
                            addresses.push(address);
                            addresses.len() - 1
                        }
                    };
                    for slot in *start..=(*end).min(cluster::SLOTS - 1) {
                        node[usize::from(slot)] = u16::try_from(index).ok();
                    }
                }
                Ok(Some(SlotNodes { node }))
            }
        }
    }

    pub(crate) async fn subscribe(&self, channel: &str) -> Result<(), RedisError> {
        match &self.backend {
            Backend::Single(manager) => manager.clone().subscribe(channel).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.subscribe(channel, self.publish).await,
            Backend::Sentinel(s) => s.manager().await?.subscribe(channel).await,
        }
    }

    pub(crate) async fn unsubscribe(&self, channel: &str) -> Result<(), RedisError> {
        match &self.backend {
            Backend::Single(manager) => manager.clone().unsubscribe(channel).await,
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.unsubscribe(channel, self.publish).await,
            Backend::Sentinel(s) => s.manager().await?.unsubscribe(channel).await,
        }
    }

    /// A sharded subscription to `channel` was dropped by the server (its
    /// slot moved, for example to a promoted replica): makes the connection
    /// learn where the slot lives now, then subscribes again there. Nothing
    /// to do on one node.
    pub(crate) async fn resubscribe_moved(&self, channel: &str) -> Result<(), RedisError> {
        match &self.backend {
            Backend::Single(_) | Backend::Sentinel(_) => Ok(()),
            #[cfg(feature = "cluster")]
            Backend::Cluster(cluster) => cluster.resubscribe_moved(channel, self.publish).await,
        }
    }

    /// Under Sentinel, the master's `host:port` and what each sentinel
    /// says of it, for the doctor; `None` for other deployments.
    pub(crate) async fn sentinel_survey(&self) -> Option<(String, Vec<sentinel::Said>)> {
        match &self.backend {
            Backend::Sentinel(s) => Some(s.survey().await),
            _ => None,
        }
    }

    /// The master switches of a connection under Sentinel: the value changes
    /// at each one (the watchdog renews at once then); `None` for other
    /// deployments.
    pub(crate) fn switches(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        match &self.backend {
            Backend::Sentinel(s) => Some(s.switches()),
            _ => None,
        }
    }

    /// A connection to `url` that connects on first use, for unit tests of
    /// what runs on top of it (an address nothing listens on, or a server
    /// that never answers).
    #[cfg(test)]
    pub(crate) fn lazy(url: &str, timeouts: Timeouts) -> Connection {
        Connection {
            backend: Backend::Single(single::lazy(url, timeouts)),
            publish: Publish::Plain,
            natives: NativesCell::default(),
        }
    }
}
