//! Where the demo's keys live on a cluster, for the summary: how many
//! masters there are, the keys' hash slot and the master that serves it.

use redis::Value;
use serde::Serialize;

use crate::connect::Plain;

/// The cluster the demo ran on, as the summary tells it.
#[derive(Debug, Serialize)]
pub(crate) struct Placement {
    /// Masters that serve slots.
    pub(crate) masters: usize,
    /// The hash slot of the stock key, shared by the lock and its fencing
    /// counter (see `new_shop`).
    pub(crate) slot: u16,
    /// The master serving `slot` (`host:port`, as `inspect` names nodes);
    /// `None` if no master claimed it when asked.
    pub(crate) node: Option<String>,
}

/// Asks the cluster behind `conn` where `key` lives.
///
/// `CLUSTER SLOTS` rather than `CLUSTER SHARDS` (Redis 7) or `CLUSTER
/// NODES`: redis-rs maps the cluster with it, so any user the connection
/// works for may run it, on any version.
///
/// # Errors
///
/// A message when the cluster does not answer or answers something else
/// than a slot map.
pub(crate) async fn find(conn: &mut Plain, key: &str) -> Result<Placement, String> {
    let ranges: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(conn)
        .await
        .map_err(|e| format!("cannot read the cluster's slot map: {e}"))?;
    let ranges: Vec<SlotRange> = ranges
        .iter()
        .map(SlotRange::parse)
        .collect::<Option<_>>()
        .ok_or_else(|| format!("cannot read the cluster's slot map: {ranges:?}"))?;
    let mut masters: Vec<&str> = ranges.iter().map(|r| r.master.as_str()).collect();
    masters.sort_unstable();
    masters.dedup();
    // The same CRC16 of the hash tag that Redis and redis-rs compute.
    let slot = redlease_testkit::key_slot(key);
    let node = ranges
        .iter()
        .find(|r| (r.start..=r.end).contains(&slot))
        .map(|r| r.master.clone());
    Ok(Placement {
        masters: masters.len(),
        slot,
        node,
    })
}

/// One entry of `CLUSTER SLOTS`: `[start, end, [host, port, id, ...],
/// replicas...]`.
struct SlotRange {
    start: u16,
    end: u16,
    /// `host:port` of the master.
    master: String,
}

impl SlotRange {
    fn parse(entry: &Value) -> Option<SlotRange> {
        let Value::Array(fields) = entry else {
            return None;
        };
        let [start, end, Value::Array(master), ..] = fields.as_slice() else {
            return None;
        };
        let [host, port, ..] = master.as_slice() else {
            return None;
        };
        let int = |v: &Value| redis::from_redis_value_ref::<u16>(v).ok();
        let host = redis::from_redis_value_ref::<String>(host).ok()?;
        Some(SlotRange {
            start: int(start)?,
            end: int(end)?,
            master: format!("{host}:{}", int(port)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_a_slot_range() {
        let entry = Value::Array(vec![
            Value::Int(0),
            Value::Int(5460),
            Value::Array(vec![bulk("127.0.0.1"), Value::Int(7000), bulk("id")]),
            Value::Array(vec![bulk("127.0.0.1"), Value::Int(7003), bulk("id2")]),
        ]);
        let range = SlotRange::parse(&entry).expect("a range");
        assert_eq!((range.start, range.end), (0, 5460));
        assert_eq!(range.master, "127.0.0.1:7000");
        assert!(SlotRange::parse(&Value::Array(vec![Value::Int(0)])).is_none());
        assert!(SlotRange::parse(&Value::Nil).is_none());
    }
}
