//! `pairs-worker --floor`: the commands redlease sends for one lock and
//! unlock, sent by redis-rs alone. What a pair costs a client that only
//! builds those commands, sends them on one `ConnectionManager` (as
//! redlease does) and reads the replies: the floor under redlease's own
//! cost when counted with callgrind (#28, `scripts/callgrind`).

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redlease::layout::{self, Layout};

/// The owner a pair writes: the shape of redlease's, a UUID and a number.
const OWNER: &str = "6f1c0c56-3a1e-4c55-9d7a-2f7f1b0c9e11:1";
const LEASE_MS: u64 = 30_000;
const KEY: &str = "bench:floor";

/// Takes and releases [`KEY`] `pairs` times as redlease would in `layout`
/// with fencing on or off, each command built anew, in a task of the
/// runtime (as `pairs_worker`).
pub(crate) async fn worker(url: &str, pairs: u64, layout: Layout, fencing: bool) {
    let client = redis::Client::open(url).expect("a redis URL");
    // Under valgrind a reply takes many times longer than the default
    // allows on a busy machine; as `pairs_worker`'s.
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(60)));
    let mut conn = ConnectionManager::new_with_config(client, config)
        .await
        .expect("connect");
    let sha = |name: &str| {
        let scripts = redlease::scripts::lua_scripts();
        let (_, sha, source) = scripts
            .into_iter()
            .find(|(n, _, _)| *n == name)
            .expect("a script of redlease's");
        (sha, source)
    };
    for name in ["acquire", "release", "string_release"] {
        let (_, source) = sha(name);
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query_async::<String>(&mut conn)
            .await
            .expect("script load");
    }
    let (acquire, release, string_release) =
        (sha("acquire").0, sha("release").0, sha("string_release").0);
    let fencing_ttl: i64 = if fencing { 86_400_000 } else { -1 };
    let task = tokio::spawn(async move {
        for _ in 0..pairs {
            match layout {
                Layout::String => {
                    let mut pipe = redis::pipe();
                    pipe.cmd("SET")
                        .arg(KEY)
                        .arg(OWNER)
                        .arg("NX")
                        .arg("PX")
                        .arg(LEASE_MS);
                    let granted = if fencing {
                        pipe.atomic().cmd("INCR").arg(layout::token_key(KEY));
                        let (set, _token): (redis::Value, i64) =
                            pipe.query_async(&mut conn).await.expect("acquire");
                        set == redis::Value::Okay
                    } else {
                        let (set,): (redis::Value,) =
                            pipe.query_async(&mut conn).await.expect("acquire");
                        set == redis::Value::Okay
                    };
                    assert!(granted, "uncontended");
                    let released: i64 = redis::cmd("EVALSHA")
                        .arg(string_release)
                        .arg(2)
                        .arg(KEY)
                        .arg(layout::channel(KEY))
                        .arg(OWNER)
                        .arg(0)
                        .arg("publish")
                        .query_async(&mut conn)
                        .await
                        .expect("release");
                    assert_eq!(released, 1);
                }
                _ => {
                    let (granted, _token): (i64, i64) = redis::cmd("EVALSHA")
                        .arg(acquire)
                        .arg(2)
                        .arg(KEY)
                        .arg(layout::token_key(KEY))
                        .arg(LEASE_MS)
                        .arg(OWNER)
                        .arg(fencing_ttl)
                        .query_async(&mut conn)
                        .await
                        .expect("acquire");
                    assert_eq!(granted, 1, "uncontended");
                    let released: i64 = redis::cmd("EVALSHA")
                        .arg(release)
                        .arg(2)
                        .arg(KEY)
                        .arg(layout::channel(KEY))
                        .arg(0)
                        .arg(LEASE_MS)
                        .arg(OWNER)
                        .arg("publish")
                        .query_async(&mut conn)
                        .await
                        .expect("release");
                    assert_eq!(released, 1);
                }
            }
        }
    });
    task.await.expect("the pairs task");
}
