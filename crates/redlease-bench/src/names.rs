//! `names`: what locking many distinct names once leaves in Redis (#28).
//! A service that locks one name per order or per invoice never reuses a
//! name, so whatever a lock leaves behind after its release grows with the
//! names: the fencing counter (`redisson_lock_token:{name}`, kept for
//! `fencing_counter_ttl`, 24 h by default). Measured for each layout with
//! fencing on and off: `used_memory` and the number of keys after N names
//! were each locked and unlocked once, on a private server flushed
//! between modes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use redlease::layout::Layout;
use redlease_testkit::RedisServer;

/// Calls in flight, as the scale worker's.
const TASKS: usize = 256;

/// Prints one table: a row per layout and fencing mode.
pub(crate) async fn run(server: &RedisServer, names: usize) {
    println!(
        "## Redis memory after {names} distinct names were each locked and unlocked once (#28)\n"
    );
    println!("| layout | fencing | keys left | used_memory left | per name | took |");
    println!("|---|---|---:|---:|---:|---:|");
    let mut conn = server.connection();
    for layout in [Layout::Redisson, Layout::String] {
        for fencing in [true, false] {
            redis::cmd("FLUSHALL")
                .query::<()>(&mut conn)
                .expect("flushall");
            let before = used_memory(&mut conn);
            let started = Instant::now();
            lock_each(server, layout, fencing, names).await;
            let took = started.elapsed();
            let keys: u64 = redis::cmd("DBSIZE").query(&mut conn).expect("dbsize");
            let left = used_memory(&mut conn).saturating_sub(before);
            println!(
                "| {} | {} | {keys} | {:.1} MB | {:.0} B | {:.1} s |",
                match layout {
                    Layout::String => "string",
                    _ => "Redisson's",
                },
                if fencing { "on" } else { "off" },
                left as f64 / 1e6,
                left as f64 / names as f64,
                took.as_secs_f64(),
            );
        }
    }
    println!();
}

/// Locks and unlocks `names` distinct names once each, [`TASKS`] at a time.
async fn lock_each(server: &RedisServer, layout: Layout, fencing: bool, names: usize) {
    let client = redlease::Client::builder(&server.url())
        .layout(layout)
        .fencing(fencing)
        .build()
        .await
        .expect("connect");
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (client, next) = (client.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= names {
                        break;
                    }
                    let guard = client
                        .lock(format!("bench:names:order:{i}"))
                        .try_lock()
                        .await
                        .expect("a fresh name is free");
                    guard.unlock().await.expect("unlock");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a names task");
    }
}

fn used_memory(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(conn)
        .expect("info memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO memory")
}
