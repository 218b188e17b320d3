//! The read-write lock: Redisson's `RReadWriteLock` layout, readers together
//! and writers alone, wake-ups, the read hold's timeout keys, downgrade and
//! refused upgrade in a scope, crashes, cancellation and bad input. A real
//! Redisson on the same names: `java/rwlock.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::{
    Proxy, RedisServer, client, client_with_watchdog, eventually, exists, pttl, unique,
};

fn hash(server: &RedisServer, name: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(name)
        .query(&mut server.connection())
        .unwrap()
}

/// A read hold is Redisson's: `mode = read`, the reader's field at 1, and a
/// timeout key `{name}:<reader>:rwlock_timeout:1` with the lease; a write
/// hold is `mode = write` with `<reader>:write` at 1.
#[tokio::test]
async fn holds_use_redissons_layout() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("rw-layout");
    let rw = c.read_write_lock(&name);
    let read = rw.read().try_lock().await.unwrap();
    let fields = hash(server, &name);
    assert_eq!(fields.get("mode").map(String::as_str), Some("read"));
    assert_eq!(fields.get(read.owner()).map(String::as_str), Some("1"));
    assert_eq!(fields.len(), 2, "{fields:?}");
    let timeout = format!("{{{name}}}:{}:rwlock_timeout:1", read.owner());
    let ttl = pttl(server, &timeout);
    assert!(ttl > 29_000 && ttl <= 30_000, "timeout key pttl {ttl}");
    let ttl = pttl(server, &name);
    assert!(ttl > 29_000 && ttl <= 30_000, "hash pttl {ttl}");
    read.unlock().await.unwrap();
    assert!(!exists(server, &name));
    assert!(!exists(server, &timeout));

    let write = rw
        .write()
        .lease(Duration::from_secs(10))
        .try_lock()
        .await
        .unwrap();
    assert!(write.owner().ends_with(":write"), "{}", write.owner());
    let fields = hash(server, &name);
    assert_eq!(fields.get("mode").map(String::as_str), Some("write"));
    assert_eq!(fields.get(write.owner()).map(String::as_str), Some("1"));
    let ttl = pttl(server, &name);
    assert!(ttl > 9_000 && ttl <= 10_000, "hash pttl {ttl}");
    write.unlock().await.unwrap();
    assert!(!exists(server, &name));
}

/// Readers of two clients share the lock; a writer is refused while they
/// read, and readers while it writes; a plain lock of the same name is
/// excluded both ways.
#[tokio::test]
async fn readers_share_and_a_writer_is_alone() {
    let (a, b) = (client().await, client().await);
    let name = unique("rw-share");
    let r1 = a.read_write_lock(&name).read().try_lock().await.unwrap();
    let r2 = b.read_write_lock(&name).read().try_lock().await.unwrap();
    let refused = b
        .read_write_lock(&name)
        .write()
        .try_lock()
        .await
        .unwrap_err();
    assert!(refused.is_busy(), "{refused}");
    assert!(a.lock(&name).try_lock().await.unwrap_err().is_busy());
    r1.unlock().await.unwrap();
    assert!(
        b.read_write_lock(&name)
            .write()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    r2.unlock().await.unwrap();

    let w = a.read_write_lock(&name).write().try_lock().await.unwrap();
    assert!(
        b.read_write_lock(&name)
            .read()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    assert!(
        b.read_write_lock(&name)
            .write()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    // Another guard of the same client is another owner.
    assert!(
        a.read_write_lock(&name)
            .read()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    w.unlock().await.unwrap();

    let plain = a.lock(&name).try_lock().await.unwrap();
    assert!(
        b.read_write_lock(&name)
            .read()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    assert!(
        b.read_write_lock(&name)
            .write()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    plain.unlock().await.unwrap();
}

/// Under load from three clients, a writer is always alone and readers
/// overlap with each other only.
#[tokio::test]
async fn writers_exclude_everyone_under_load() {
    let clients = [client().await, client().await, client().await];
    let name = unique("rw-load");
    let readers = Arc::new(AtomicI64::new(0));
    let writers = Arc::new(AtomicI64::new(0));
    let most_readers = Arc::new(AtomicI64::new(0));
    let (reads, writes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let stop = Instant::now() + Duration::from_millis(1500);
    let mut tasks = Vec::new();
    for i in 0..24 {
        let rw = clients[i % 3].read_write_lock(&name);
        let (readers, writers, most_readers) =
            (readers.clone(), writers.clone(), most_readers.clone());
        let (reads, writes) = (reads.clone(), writes.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u32;
            while Instant::now() < stop {
                n += 1;
                if (i + n as usize).is_multiple_of(4) {
                    let g = rw
                        .write()
                        .try_lock_for(Duration::from_secs(5))
                        .await
                        .unwrap();
                    assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                    assert_eq!(
                        readers.load(Ordering::SeqCst),
                        0,
                        "a reader beside a writer"
                    );
                    tokio::time::sleep(Duration::from_micros(300)).await;
                    writers.fetch_sub(1, Ordering::SeqCst);
                    writes.fetch_add(1, Ordering::Relaxed);
                    g.unlock().await.unwrap();
                } else {
                    let g = rw
                        .read()
                        .try_lock_for(Duration::from_secs(5))
                        .await
                        .unwrap();
                    let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                    most_readers.fetch_max(now, Ordering::SeqCst);
                    assert_eq!(
                        writers.load(Ordering::SeqCst),
                        0,
                        "a writer beside a reader"
                    );
                    tokio::time::sleep(Duration::from_micros(300)).await;
                    readers.fetch_sub(1, Ordering::SeqCst);
                    reads.fetch_add(1, Ordering::Relaxed);
                    g.unlock().await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (reads, writes) = (
        reads.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed),
    );
    println!(
        "reads {reads}, writes {writes}, most readers at once {}",
        most_readers.load(Ordering::SeqCst)
    );
    assert!(reads > 20 && writes > 5, "reads {reads}, writes {writes}");
    assert!(
        most_readers.load(Ordering::SeqCst) > 1,
        "readers never overlapped"
    );
    assert!(!exists(RedisServer::shared(), &name));
}

/// One write unlock wakes every reader waiting behind it, in this client
/// and in another, long before the lease would have; the last read unlock
/// wakes a waiting writer.
#[tokio::test]
async fn a_write_unlock_wakes_every_waiting_reader() {
    let (a, b) = (client().await, client().await);
    let name = unique("rw-wake");
    let w = a.read_write_lock(&name).write().try_lock().await.unwrap();
    let mut waiting = Vec::new();
    for c in [&a, &a, &a, &b, &b] {
        let read = c.read_write_lock(&name).read();
        waiting.push(tokio::spawn(async move {
            let g = read.try_lock_for(Duration::from_secs(10)).await;
            (g, Instant::now())
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    w.unlock().await.unwrap();
    let mut readers = Vec::new();
    let mut latencies = Vec::new();
    for t in waiting {
        let (g, at) = t.await.unwrap();
        latencies.push(at - released);
        readers.push(g.unwrap());
    }
    latencies.sort();
    println!("readers woken after {latencies:?}");
    assert!(
        latencies[latencies.len() - 1] < Duration::from_secs(2),
        "{latencies:?}"
    );

    let writer = b.read_write_lock(&name).write();
    let waiter = tokio::spawn(async move {
        let g = writer.try_lock_for(Duration::from_secs(10)).await;
        (g, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let last = readers.pop().unwrap();
    for g in readers {
        g.unlock().await.unwrap();
    }
    let released = Instant::now();
    last.unlock().await.unwrap();
    let (g, at) = waiter.await.unwrap();
    println!("writer woken after {:?}", at - released);
    assert!(at - released < Duration::from_secs(2));
    g.unwrap().unlock().await.unwrap();
}

/// The watchdog renews a read hold's timeout keys: without that, another
/// reader's release (which keeps the hash only as long as some hold's
/// timeout key lives) would delete the hash under a live read hold.
#[tokio::test]
async fn the_watchdog_renews_the_read_holds_timeout_keys() {
    let server = RedisServer::shared();
    let renewing = client_with_watchdog(server, Duration::from_millis(900)).await;
    let other = client().await;
    let name = unique("rw-renew");
    let kept = renewing
        .read_write_lock(&name)
        .read()
        .try_lock()
        .await
        .unwrap();
    let passing = other
        .read_write_lock(&name)
        .read()
        .lease(Duration::from_secs(10))
        .try_lock()
        .await
        .unwrap();
    // Three leases of the renewing client.
    tokio::time::sleep(Duration::from_millis(2700)).await;
    let timeout = format!("{{{name}}}:{}:rwlock_timeout:1", kept.owner());
    assert!(pttl(server, &timeout) > 0, "timeout key not renewed");
    passing.unlock().await.unwrap();
    assert!(
        hash(server, &name).contains_key(kept.owner()),
        "another reader's release deleted a live read hold"
    );
    assert!(!kept.is_lost());
    assert!(
        other
            .read_write_lock(&name)
            .write()
            .try_lock()
            .await
            .unwrap_err()
            .is_busy()
    );
    kept.unlock().await.unwrap();
    assert!(!exists(server, &name));
}

/// A reader that crashed or lost Redis (nothing renews it any more) gives
/// the lock back within one lease, and a writer waiting for it gets it.
#[tokio::test]
async fn a_crashed_readers_hold_comes_back_within_one_lease() {
    let server = RedisServer::shared();
    let name = unique("rw-crash");
    let proxy = Proxy::start(server.port());
    let lease = Duration::from_millis(900);
    let cut_off = redlease::Client::builder(&proxy.url())
        .watchdog_timeout(lease)
        .build()
        .await
        .unwrap();
    let g = cut_off
        .read_write_lock(&name)
        .read()
        .try_lock()
        .await
        .unwrap();
    let c = client().await;
    let writer = c.read_write_lock(&name).write();
    let waiter = tokio::spawn(async move {
        let g = writer.try_lock_for(Duration::from_secs(5)).await;
        (g, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cut = Instant::now();
    proxy.cut();
    let (w, at) = waiter.await.unwrap();
    let took = at - cut;
    println!("writer got a cut-off reader's lock after {took:?}");
    assert!(took < lease + Duration::from_millis(700), "{took:?}");
    assert!(g.is_lost());
    w.unwrap().unlock().await.unwrap();
    drop(g);
}

/// In a scope, the writer may read (a downgrade) and keeps reading after
/// its write unlock, when other readers may join and writers may not; a
/// reader may not write.
#[tokio::test]
async fn a_scope_downgrades_and_refuses_to_upgrade() {
    let server = RedisServer::shared();
    let c = client().await;
    let other = client().await;
    let name = unique("rw-scope");
    let rw = c.read_write_lock(&name);
    // Another owner's attempts, outside the scope (a task of its own).
    let outside = |write: bool| {
        let other = other.clone();
        let name = name.clone();
        async move {
            tokio::spawn(async move {
                let rw = other.read_write_lock(name);
                let side = if write { rw.write() } else { rw.read() };
                side.try_lock().await
            })
            .await
            .unwrap()
        }
    };
    redlease::scope(async {
        let w = rw.write().try_lock().await.unwrap();
        let r = rw
            .read()
            .try_lock_for(Duration::from_millis(200))
            .await
            .unwrap();
        assert_eq!(format!("{}:write", r.owner()), w.owner());
        // The write hold still excludes other readers.
        assert!(outside(false).await.unwrap_err().is_busy());
        let again = rw.write().try_lock().await.unwrap();
        assert_eq!(
            hash(server, &name).get(w.owner()).map(String::as_str),
            Some("2")
        );
        again.unlock().await.unwrap();
        w.unlock().await.unwrap();
        assert_eq!(
            hash(server, &name).get("mode").map(String::as_str),
            Some("read")
        );
        let joined = outside(false).await.unwrap();
        assert!(outside(true).await.unwrap_err().is_busy());
        let refused = rw.write().try_lock().await.unwrap_err();
        assert!(refused.is_invalid_argument(), "{refused}");
        assert!(refused.to_string().contains("upgrade"), "{refused}");
        let nested = rw.read().try_lock().await.unwrap();
        assert_eq!(
            hash(server, &name).get(r.owner()).map(String::as_str),
            Some("2")
        );
        nested.unlock().await.unwrap();
        r.unlock().await.unwrap();
        joined.unlock().await.unwrap();
    })
    .await;
    assert!(!exists(server, &name));
}

/// Tokens from both sides keep increasing.
#[tokio::test]
async fn both_sides_issue_increasing_fencing_tokens() {
    let c = client().await;
    let name = unique("rw-fence");
    let rw = c.read_write_lock(&name);
    let mut last = 0;
    for i in 0..6 {
        let g = if i % 2 == 0 {
            rw.read().try_lock().await.unwrap()
        } else {
            rw.write().try_lock().await.unwrap()
        };
        assert!(g.fencing_token().unwrap() > last);
        last = g.fencing_token().unwrap();
        g.unlock().await.unwrap();
    }
}

/// Dropping acquires at any point leaves no hold behind, on either side.
#[tokio::test]
async fn cancelled_acquires_leave_nothing_behind() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("rw-cancel");
    let rw = c.read_write_lock(&name);
    for i in 0..40u64 {
        let limit = Duration::from_micros(i * 50);
        let side = if i % 2 == 0 { rw.read() } else { rw.write() };
        if let Ok(Ok(g)) = tokio::time::timeout(limit, side.try_lock()).await {
            g.unlock().await.unwrap();
        }
    }
    let gone = eventually(Duration::from_secs(2), || !exists(server, &name)).await;
    assert!(gone.is_some(), "left behind: {:?}", hash(server, &name));

    // A waiting reader cancelled while a writer holds leaves no field.
    let w = rw.write().try_lock().await.unwrap();
    let other = client().await;
    let waiting = other.read_write_lock(&name).read();
    assert!(
        tokio::time::timeout(Duration::from_millis(150), waiting.lock())
            .await
            .is_err()
    );
    assert_eq!(hash(server, &name).len(), 2, "{:?}", hash(server, &name));
    w.unlock().await.unwrap();
    assert!(
        eventually(Duration::from_secs(2), || !exists(server, &name))
            .await
            .is_some()
    );
}

/// A key holding another type is a typed error on both sides, and is left
/// as it was.
#[tokio::test]
async fn a_non_hash_key_is_a_wrong_type_error() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("rw-type");
    redis::cmd("SET")
        .arg(&name)
        .arg("x")
        .query::<()>(&mut server.connection())
        .unwrap();
    let rw = c.read_write_lock(&name);
    let e = rw.read().try_lock().await.unwrap_err();
    assert!(e.is_wrong_type(), "{e}");
    let e = rw.write().try_lock().await.unwrap_err();
    assert!(e.is_wrong_type(), "{e}");
    let value: String = redis::cmd("GET")
        .arg(&name)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(value, "x");
    let e = c.read_write_lock("").read().try_lock().await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
}
