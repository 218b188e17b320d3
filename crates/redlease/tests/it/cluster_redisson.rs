//! Redisson on the same cluster, in its default (sharded) mode, played with
//! the raw commands its scripts run: its holder's release wakes a redlease
//! waiter, and a redlease release wakes its waiter.

use std::time::{Duration, Instant};

use crate::cluster_support::{cluster_client, shared_cluster};
use crate::support::{spawn_timed, unique};

/// A Redisson client's owner field: `<client-uuid>:<thread-id>`.
const JAVA_FIELD: &str = "5f0c7a43-9b1e-4c55-8f1f-0d6c2e1f9a77:42";

/// Redisson's unlock, after its `RedissonLock.unlockInnerAsync` contract
/// (shared/reference/redisson.md §1.3): KEYS = lock, channel, unlock latch;
/// ARGV = message, lease, owner field, publish command, latch ttl.
const REDISSON_UNLOCK: &str = r"
local latch = redis.call('get', KEYS[3])
if latch ~= false then return tonumber(latch) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
";

/// A Redisson holder's release (its unlock script, with `spublish` as the
/// cluster's default subscription mode makes it pass) wakes a redlease
/// waiter on the cluster at once.
#[tokio::test]
async fn redisson_release_wakes_a_redlease_waiter() {
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let name = unique("java-sharded");
    let mut shard = cluster.master_for_key(&name).connection();
    redis::pipe()
        .cmd("HINCRBY")
        .arg(&name)
        .arg(JAVA_FIELD)
        .arg(1)
        .cmd("PEXPIRE")
        .arg(&name)
        .arg(30_000)
        .exec(&mut shard)
        .unwrap();
    assert!(c.lock(&name).try_lock().await.unwrap_err().is_busy());
    let waiter = spawn_timed(c.lock(&name), Duration::from_secs(20));
    // Let the waiter subscribe (SSUBSCRIBE, on this shard).
    let channel = redlease::layout::channel(&name);
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis::cmd("PUBSUB")
        .arg("SHARDNUMSUB")
        .arg(&channel)
        .query::<(String, i64)>(&mut shard)
        .unwrap()
        .1
        == 0
    {
        assert!(Instant::now() < deadline, "the waiter never subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let latch = format!("redisson_unlock_latch:{{{name}}}:req-1");
    let released: i64 = redis::Script::new(REDISSON_UNLOCK)
        .key(&name)
        .key(&channel)
        .key(&latch)
        .arg(0)
        .arg(30_000)
        .arg(JAVA_FIELD)
        .arg("spublish")
        .arg(5_000)
        .invoke(&mut shard)
        .unwrap();
    assert_eq!(released, 1);
    let at_release = Instant::now();
    let (guard, at) = waiter.await.unwrap();
    assert!(
        at - at_release < Duration::from_millis(500),
        "{:?}",
        at - at_release
    );
    guard.unwrap().unlock().await.unwrap();
}

/// A Redisson waiter in sharded mode (SSUBSCRIBE on the lock's shard) hears
/// `0` when redlease releases the lock.
#[tokio::test]
async fn redlease_release_reaches_a_sharded_redisson_waiter() {
    let cluster = shared_cluster();
    let c = cluster_client(cluster, Duration::from_secs(30)).await;
    let name = unique("java-waits");
    let channel = redlease::layout::channel(&name);
    let node = cluster.master_for_key(&name).url();
    let g = c.lock(&name).try_lock().await.unwrap();
    // Redisson's waiter: a RESP3 connection to the shard, SSUBSCRIBEd.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = redis::Client::open(format!("{node}/?protocol=resp3")).unwrap();
    let config = redis::AsyncConnectionConfig::new().set_push_sender(tx);
    let mut java = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let _: () = redis::cmd("SSUBSCRIBE")
        .arg(&channel)
        .query_async(&mut java)
        .await
        .unwrap();
    g.unlock().await.unwrap();
    let message = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let push = rx.recv().await.expect("pushes");
            if push.kind == redis::PushKind::SMessage {
                return push.data;
            }
        }
    })
    .await
    .expect("no sharded message within 5 s");
    let payload: Vec<String> = message
        .iter()
        .map(|v| redis::from_redis_value_ref::<String>(v).unwrap())
        .collect();
    assert_eq!(payload, [channel, "0".to_owned()]);
}
