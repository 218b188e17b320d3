//! The Redis layout and messages must match Redisson's `RLock` exactly (see
//! `shared/reference/redisson.md`, section 1), so that Java and Rust
//! services exclude each other on one key; read directly from Redis here,
//! and tried with a real Redisson client in `java/`.

use std::collections::HashMap;

use crate::support::{RedisServer, client, listen_once, pttl, unique};

/// A held lock is a hash with one field `<client-id>:<n>` = hold count 1,
/// with the watchdog lease (30 s by default) as its PEXPIRE.
#[tokio::test]
async fn layout_is_a_hash_with_owner_field_and_count() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("layout");
    let g = c.lock(&name).try_lock().await.unwrap();
    let mut conn = server.connection();
    let kind: String = redis::cmd("TYPE").arg(&name).query(&mut conn).unwrap();
    assert_eq!(kind, "hash");
    let fields: HashMap<String, String> =
        redis::cmd("HGETALL").arg(&name).query(&mut conn).unwrap();
    assert_eq!(fields.len(), 1);
    let (field, count) = fields.into_iter().next().unwrap();
    assert_eq!(count, "1");
    assert_eq!(field, g.owner());
    let (id, n) = field.rsplit_once(':').unwrap();
    assert_eq!(id, c.id());
    assert_eq!(
        id.len(),
        36,
        "client id should be a UUID like Redisson's: {id}"
    );
    n.parse::<u64>().unwrap();
    let ttl = pttl(server, &name);
    assert!(ttl > 29_000 && ttl <= 30_000, "pttl {ttl}");
    g.unlock().await.unwrap();
}

/// Unlock publishes the integer 0 on `redisson_lock__channel:{name}`, with
/// the braces left out when the name already has a hash tag.
#[tokio::test]
async fn unlock_publishes_zero_on_redisson_channel() {
    let c = client().await;
    for (name, channel) in [
        (unique("chan"), None),
        (format!("{{{}}}:tagged", unique("chan")), Some(())),
    ] {
        let expected = match channel {
            None => format!("redisson_lock__channel:{{{name}}}"),
            Some(()) => format!("redisson_lock__channel:{name}"),
        };
        let listener = listen_once(RedisServer::shared(), expected.clone());
        let g = c.lock(&name).try_lock().await.unwrap();
        g.unlock().await.unwrap();
        let (got_channel, payload) = listener.await.unwrap();
        assert_eq!(got_channel, expected);
        assert_eq!(payload, "0");
    }
}
