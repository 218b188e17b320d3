//! Helpers for the tests against a real local Redis Cluster.

use std::sync::OnceLock;
use std::time::Duration;

pub(crate) use redlease_testkit::{RedisCluster, key_slot};

/// A 3-master cluster (no replicas), shared by the tests that only
/// touch their own keys (starting one takes seconds). Never dropped: the
/// test kit's watcher stops its servers when the test process ends.
pub(crate) fn shared_cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| RedisCluster::start(3, 0))
}

/// A client of `cluster` whose watchdog renews every `timeout / 3`.
pub(crate) async fn cluster_client(cluster: &RedisCluster, timeout: Duration) -> redlease::Client {
    redlease::Client::builder(&cluster.url())
        .watchdog_timeout(timeout)
        .build()
        .await
        .unwrap()
}

/// `EVALSHA` calls the cluster's masters have run, summed.
pub(crate) fn evalsha_calls(cluster: &RedisCluster) -> u64 {
    cluster
        .masters()
        .map(|node| {
            let info: String = redis::cmd("INFO")
                .arg("commandstats")
                .query(&mut node.connection())
                .unwrap();
            info.lines()
                .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
                .and_then(|rest| rest.split(',').next())
                .map_or(0, |n| n.parse::<u64>().unwrap())
        })
        .sum()
}

/// A lock name in a hash slot other than any of `taken`'s, from `prefix`.
pub(crate) fn name_in_new_slot(prefix: &str, taken: &mut Vec<u16>) -> String {
    (0..)
        .map(|i| format!("{prefix}:{i}"))
        .find(|name| {
            let slot = key_slot(name);
            let new = !taken.contains(&slot);
            if new {
                taken.push(slot);
            }
            new
        })
        .expect("an endless supply of names")
}
