//! Redis Cluster, through redis-rs's cluster connection: it routes each
//! command to the node that owns its key's slot and follows `MOVED` and
//! `ASK` (a slot that moved or is moving), refreshing its slot map.

use futures_util::future::join_all;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{FromRedisValue, ProtocolVersion, RedisError, Value};
use tokio::sync::mpsc;

use super::nodes::Node;
use super::publish::{PubSubMode, Publish};
use super::pushes::Pushes;
use super::timeouts::Timeouts;
use super::tls::Certificates;
use crate::error::Error;

/// Hash slots in a Redis Cluster.
pub(super) const SLOTS: u16 = 16384;

/// The hash slot of `key`: CRC16 (XMODEM) of its hash tag, the part
/// between the first `{` and the next `}` when not empty, or of the whole
/// key, modulo [`SLOTS`]. As redis-rs routes (its `Slot::for_key`, which
/// does not say the number) and Redis serves.
pub(super) fn slot_of(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tag.unwrap_or(key)) % SLOTS
}

/// A cluster connection. Cheap to clone.
#[derive(Clone)]
pub(super) struct Cluster {
    conn: ClusterConnection,
}

/// How many times redis-rs retries a request on its own (after `MOVED`,
/// `ASK`, `TRYAGAIN`, `CLUSTERDOWN` or a lost connection) before the error
/// comes back. Enough for the hops of a failover or a migration (a dead
/// node, then a stale slot map, then `MOVED`); the time they may take is
/// bounded by [`OVERALL`] responses, so the waiting engine and the
/// watchdog still retry within their own deadlines.
const RETRIES: u32 = 8;

/// The longest a request may take with its retries, in response timeouts.
const OVERALL: u32 = 2;

/// Connects to the cluster that `nodes` (seed URLs, `redis://...`, or
/// `rediss://...` with `certs` if any) belong to, and settles the kind of
/// pub/sub.
pub(super) async fn open(
    nodes: &[String],
    certs: Option<&Certificates>,
    timeouts: Timeouts,
    mode: PubSubMode,
    pushes: bool,
) -> Result<(Cluster, Publish, Option<Pushes>), Error> {
    let mut builder = ClusterClientBuilder::new(nodes.iter().map(String::as_str))
        .use_protocol(ProtocolVersion::RESP3)
        .connection_timeout(timeouts.connect)
        .response_timeout(timeouts.response)
        .overall_response_timeout(Some(timeouts.response * OVERALL))
        .retries(RETRIES)
        .min_retry_wait(10)
        .max_retry_wait(200);
    #[cfg(feature = "tls-rustls")]
    if let Some(certs) = certs {
        builder = builder.certs(certs.0.clone());
    }
    #[cfg(not(feature = "tls-rustls"))]
    let _ = certs;
    let mut receiver = None;
    if pushes {
        let (tx, rx) = mpsc::unbounded_channel();
        builder = builder.push_sender(tx);
        receiver = Some(Pushes::new(rx));
    }
    let client = builder.build()?;
    let conn = client.get_async_connection().await?;
    let cluster = Cluster { conn };
    let publish = match mode {
        PubSubMode::Plain => Publish::Plain,
        PubSubMode::Sharded => Publish::Sharded,
        PubSubMode::Auto => cluster.probe_sharded().await,
    };
    tracing::debug!(?publish, "connected to a redis cluster");
    Ok((cluster, publish, receiver))
}

impl Cluster {
    pub(super) fn conn(&self) -> ClusterConnection {
        self.conn.clone()
    }

    /// Sharded pub/sub when the cluster knows `PUBSUB SHARDNUMSUB` (Redis
    /// 7 and later), as Redisson probes it.
    async fn probe_sharded(&self) -> Publish {
        let probe = redis::cmd("PUBSUB")
            .arg("SHARDNUMSUB")
            .query_async::<Value>(&mut self.conn())
            .await;
        match probe {
            Ok(_) => Publish::Sharded,
            Err(e) => {
                tracing::debug!(error = %e, "no sharded pub/sub; using plain pub/sub");
                Publish::Plain
            }
        }
    }

    pub(super) async fn query_at_key<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        key: &str,
    ) -> Result<T, RedisError> {
        let route = Route::with_key(key, SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        let value = self.conn().route_command(cmd.clone(), routing).await?;
        Ok(T::from_redis_value(value)?)
    }

    /// Each command of `pipe` on its own, all in flight at once: the
    /// connection queues the ones for one node on that node's connection,
    /// so they still travel as a pipeline per node.
    pub(super) async fn query_each(
        &self,
        pipe: &redis::Pipeline,
    ) -> Vec<Result<Value, RedisError>> {
        let requests = pipe.cmd_iter().map(|cmd| {
            let mut conn = self.conn();
            async move { cmd.query_async::<Value>(&mut conn).await }
        });
        join_all(requests).await
    }

    /// The masters, from `CLUSTER SLOTS`: the first node of each slot
    /// range.
    pub(super) async fn masters(&self) -> Result<Vec<Node>, RedisError> {
        let mut masters: Vec<Node> = Vec::new();
        for (_, _, address) in self.slot_ranges().await? {
            let node = Node {
                address: Some(address),
            };
            if !masters.contains(&node) {
                masters.push(node);
            }
        }
        masters.sort_by(|a, b| a.address.cmp(&b.address));
        Ok(masters)
    }

    /// `CLUSTER SLOTS`, from whichever node answers: each range of slots,
    /// first and last, with its master's `host:port`.
    pub(super) async fn slot_ranges(&self) -> Result<Vec<(u16, u16, String)>, RedisError> {
        let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut self.conn())
            .await?;
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let (Some(start), Some(end), Some(Value::Array(master))) =
                (range.first(), range.get(1), range.get(2))
            else {
                continue;
            };
            let (Some(host), Some(port)) = (master.first(), master.get(1)) else {
                continue;
            };
            let host: String = FromRedisValue::from_redis_value_ref(host)?;
            let port: u16 = FromRedisValue::from_redis_value_ref(port)?;
            out.push((
                FromRedisValue::from_redis_value_ref(start)?,
                FromRedisValue::from_redis_value_ref(end)?,
                format!("{host}:{port}"),
            ));
        }
        Ok(out)
    }

    pub(super) async fn query_on<T: FromRedisValue>(
        &self,
        node: &Node,
        cmd: &redis::Cmd,
    ) -> Result<T, RedisError> {
        let address = node.address.as_deref().unwrap_or_default();
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
            .ok_or_else(|| {
                RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "not a cluster node address",
                    address.to_owned(),
                ))
            })?;
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
        let value = self.conn().route_command(cmd.clone(), routing).await?;
        Ok(T::from_redis_value(value)?)
    }

    pub(super) async fn subscribe(
        &self,
        channel: &str,
        publish: Publish,
    ) -> Result<(), RedisError> {
        match publish {
            Publish::Plain => self.conn().subscribe(channel).await,
            Publish::Sharded => self.conn().ssubscribe(channel).await,
        }
    }

    pub(super) async fn unsubscribe(
        &self,
        channel: &str,
        publish: Publish,
    ) -> Result<(), RedisError> {
        match publish {
            Publish::Plain => self.conn().unsubscribe(channel).await,
            Publish::Sharded => self.conn().sunsubscribe(channel).await,
        }
    }

    /// After the server dropped a sharded subscription unasked (its slot
    /// moved): redis-rs took the server's `sunsubscribe` push for a
    /// confirmation and forgot the channel, and its slot map may still
    /// point at the old node. A keyed command in the channel's slot makes
    /// the old node answer `MOVED` (or the new one answer), which refreshes
    /// the slot map; then `SSUBSCRIBE` goes to the node that owns the slot
    /// now. (redis-rs 1.8.1; see DESIGN.md.)
    pub(super) async fn resubscribe_moved(
        &self,
        channel: &str,
        publish: Publish,
    ) -> Result<(), RedisError> {
        // `EXISTS` of the channel's own name: a key in the channel's slot
        // that reads nothing of the application's.
        let _: Value = redis::cmd("EXISTS")
            .arg(channel)
            .query_async(&mut self.conn())
            .await?;
        self.subscribe(channel, publish).await
    }
}

#[cfg(test)]
mod tests {
    use redis::cluster_routing::Slot;

    use super::*;

    #[test]
    fn slot_of_agrees_with_redis_rs_and_redis() {
        // CLUSTER KEYSLOT answers: foo 12182, bar 5061.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"{bar}:x"), 5061);
        for key in [
            "", "a", "{}", "{}x", "x{y}z", "{a}{b}", "orders:1", "{", "}{", "\u{e9}",
        ] {
            let slot = slot_of(key.as_bytes());
            assert_eq!(Slot::new(slot), Some(Slot::for_key(key)), "{key:?}");
        }
    }
}
