//! The blocking API (#18), from plain threads: exclusion under load, busy
//! errors, Drop releases, fencing, every primitive's twin, and a clear
//! error inside a runtime.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redlease::LostReason;
use redlease::blocking::{Client, DROP_RELEASE_WAIT, RedLock};

use crate::support::{RedisServer, exists, pttl, subscribers, unique};

fn client() -> Client {
    Client::connect(&RedisServer::shared().url()).unwrap()
}

/// Eight threads, each with its own client, take one lock 25 times each
/// and do a read-modify-write on Redis inside it: never two inside at
/// once, no update lost, and each holder's fencing token is above the one
/// before.
#[test]
fn threads_exclude_each_other_under_load() {
    let server = RedisServer::shared();
    let name = unique("blocking-load");
    let counter = format!("{name}:counter");
    let inside = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (name, counter) = (name.clone(), counter.clone());
            let (inside, tokens) = (inside.clone(), tokens.clone());
            let url = server.url();
            thread::spawn(move || {
                let client = Client::connect(&url).unwrap();
                let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
                for _ in 0..25 {
                    let guard = client
                        .lock(&name)
                        .try_lock_for(Duration::from_secs(10))
                        .unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    tokens
                        .lock()
                        .unwrap()
                        .push(guard.fencing_token().expect("a lock has a token"));
                    let n: Option<u64> = redis::cmd("GET").arg(&counter).query(&mut conn).unwrap();
                    thread::yield_now();
                    redis::cmd("SET")
                        .arg(&counter)
                        .arg(n.unwrap_or(0) + 1)
                        .exec(&mut conn)
                        .unwrap();
                    inside.store(false, Ordering::SeqCst);
                    guard.unlock().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let total: u64 = redis::cmd("GET")
        .arg(&counter)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(total, 200);
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 200);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens not increasing in the order of the holds"
    );
    assert!(!exists(server, &name));
}

/// A held lock: `try_lock` is busy at once, `try_lock_for` after its wait,
/// and both say so in the error.
#[test]
fn busy_after_the_wait() {
    let client = client();
    let name = unique("blocking-busy");
    let held = client.lock(&name).try_lock().unwrap();
    let other = client.lock(&name);
    let e = other.try_lock().unwrap_err();
    assert!(e.is_busy(), "{e}");
    let started = Instant::now();
    let e = other.try_lock_for(Duration::from_millis(150)).unwrap_err();
    let waited = started.elapsed();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.key(), Some(name.as_str()));
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    held.unlock().unwrap();
}

/// A waiter in another thread takes the lock as soon as the holder
/// releases it: woken by the release message, long before its wait ends.
#[test]
fn a_waiting_thread_wakes_on_release() {
    let client = client();
    let name = unique("blocking-wake");
    let held = client.lock(&name).try_lock().unwrap();
    let waiter = thread::spawn({
        let lock = client.lock(&name);
        move || {
            let guard = lock.try_lock_for(Duration::from_secs(20)).unwrap();
            let at = Instant::now();
            guard.unlock().unwrap();
            at
        }
    });
    wait_for_subscriber(&format!("redisson_lock__channel:{{{name}}}"));
    let released = Instant::now();
    held.unlock().unwrap();
    let acquired = waiter.join().unwrap();
    let delay = acquired - released;
    assert!(delay < Duration::from_secs(2), "woken after {delay:?}");
}

/// Waits (at most 5 s) until a waiter subscribed to `channel` on the
/// shared server: it is waiting then.
fn wait_for_subscriber(channel: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while subscribers(RedisServer::shared(), channel) == 0 {
        assert!(Instant::now() < deadline, "nobody waits on {channel}");
        thread::sleep(Duration::from_millis(5));
    }
}

/// A dropped guard has released the lock when Drop returns: the key is
/// gone and another client takes the lock at once.
#[test]
fn drop_releases_before_returning() {
    let server = RedisServer::shared();
    let (a, b) = (client(), client());
    let name = unique("blocking-drop");
    for lock in [
        a.lock(&name),
        a.lock(&name).lease(Duration::from_secs(30)),
        a.fair_lock(&name),
    ] {
        let guard = lock.try_lock().unwrap();
        assert!(exists(server, &name));
        drop(guard);
        assert!(!exists(server, &name), "the key outlived the dropped guard");
        b.lock(&name).try_lock().unwrap().unlock().unwrap();
    }
}

/// Drop against a server that stopped answering returns within its bound
/// and never panics; the release goes on when the server comes back.
#[test]
fn drop_is_bounded_when_redis_does_not_answer() {
    let server = RedisServer::start();
    let client = Client::connect(&server.url()).unwrap();
    let name = unique("blocking-drop-paused");
    let guard = client
        .lock(&name)
        .lease(Duration::from_secs(30))
        .try_lock()
        .unwrap();
    server.pause();
    let started = Instant::now();
    drop(guard);
    let took = started.elapsed();
    server.resume();
    assert!(
        took < DROP_RELEASE_WAIT + Duration::from_millis(500),
        "drop blocked {took:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while exists(&server, &name) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(!exists(&server, &name), "the background release never ran");
}

/// `lost` waits at most its timeout: `None` for a lock still held, the
/// reason for a fixed lease that ran out.
#[test]
fn lost_waits_with_a_timeout() {
    let client = client();
    let held = client.lock(unique("blocking-held")).try_lock().unwrap();
    let started = Instant::now();
    assert_eq!(held.lost(Duration::from_millis(100)).unwrap(), None);
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert!(!held.is_lost());
    held.unlock().unwrap();

    let name = unique("blocking-expiring");
    let short = client
        .lock(&name)
        .lease(Duration::from_millis(100))
        .try_lock()
        .unwrap();
    assert!(short.expires_at().is_some());
    assert_eq!(
        short.lost(Duration::from_secs(5)).unwrap(),
        Some(LostReason::Expired)
    );
    assert!(short.is_lost());
    // The guard's clock runs from before the request, so the key may
    // outlive `lost()` by a moment: once Redis has expired it, the release
    // is refused.
    let server = RedisServer::shared();
    let deadline = Instant::now() + Duration::from_secs(2);
    while exists(server, &name) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert!(short.unlock().unwrap_err().is_not_owner());
}

/// `extend` and `is_held` on a fixed lease, as their async twins.
#[test]
fn extend_and_is_held() {
    let client = client();
    let name = unique("blocking-extend");
    let guard = client
        .lock(&name)
        .lease(Duration::from_millis(300))
        .try_lock()
        .unwrap();
    let before = guard.expires_at().unwrap();
    guard.extend(Duration::from_secs(10)).unwrap();
    assert!(guard.expires_at().unwrap() > before);
    assert!(guard.is_held().unwrap());
    thread::sleep(Duration::from_millis(400));
    assert!(guard.is_held().unwrap(), "extended lease ran out early");
    guard.unlock().unwrap();
}

/// Inside a runtime, every call is refused with a runtime error and sends
/// nothing, whether made by async code or in `spawn_blocking`; a guard
/// dropped or unlocked there releases in the background, without a panic.
#[test]
fn inside_a_runtime_is_a_clear_error() {
    let server = RedisServer::shared();
    let client = client();
    let name = unique("blocking-in-runtime");
    let guard = client.lock(&name).try_lock().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let e = Client::connect(&server.url()).unwrap_err();
        assert!(e.is_runtime(), "{e}");
        assert!(e.to_string().contains("inside a tokio runtime"), "{e}");
        let other = unique("blocking-in-runtime-untouched");
        let e = client.lock(&other).try_lock().unwrap_err();
        assert!(e.is_runtime(), "{e}");
        assert!(!exists(server, &other), "a refused call wrote the key");
        let lock = client.lock(&other);
        let e = tokio::task::spawn_blocking(move || lock.try_lock().unwrap_err())
            .await
            .unwrap();
        assert!(e.is_runtime(), "{e}");
        // Unlock inside the runtime: refused, and released in the
        // background.
        let e = guard.unlock().unwrap_err();
        assert!(e.is_runtime(), "{e}");
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while exists(server, &name) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert!(!exists(server, &name), "unlock in a runtime never released");

    // A guard dropped inside a runtime releases in the background too.
    let guard = client.lock(&name).try_lock().unwrap();
    rt.block_on(async move { drop(guard) });
    let deadline = Instant::now() + Duration::from_secs(5);
    while exists(server, &name) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !exists(server, &name),
        "a guard dropped in a runtime leaked"
    );
}

/// Between calls nobody calls, yet a held lock is renewed: the background
/// thread drives the runtime once no call has for a moment (#39: each call
/// drives it while it runs). A 300 ms watchdog timeout, held for ten times
/// that without a call, from a thread that made call after call before.
#[test]
fn issue_39_between_calls_the_watchdog_still_renews() {
    let server = RedisServer::shared();
    let builder =
        redlease::Client::builder(&server.url()).watchdog_timeout(Duration::from_millis(300));
    let client = Client::from_builder(builder).unwrap();
    let name = unique("blocking-idle-renewal");
    let lock = client.lock(&name);
    for _ in 0..50 {
        lock.try_lock().unwrap().unlock().unwrap();
    }
    let guard = lock.try_lock().unwrap();
    thread::sleep(Duration::from_secs(3));
    assert!(!guard.is_lost(), "lost while no call ran");
    let left = pttl(server, &name);
    assert!(left > 0, "the lock expired between calls: pttl {left}");
    assert_eq!(guard.lost(Duration::ZERO).unwrap(), None);
    guard.unlock().unwrap();
    assert!(!exists(server, &name));
}

/// Two threads, each making call after call, with no hand-over stalling
/// either: while one thread drives the runtime, the other's replies are
/// read by it, and each thread's calls go on (#39).
#[test]
fn issue_39_threads_calling_at_once_each_go_on() {
    let client = client();
    let stop = Arc::new(AtomicBool::new(false));
    let counts: Vec<_> = (0..2)
        .map(|i| {
            let lock = client.lock(unique(&format!("blocking-two-drivers-{i}")));
            let stop = stop.clone();
            thread::spawn(move || {
                let mut pairs = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    lock.try_lock().unwrap().unlock().unwrap();
                    pairs += 1;
                }
                pairs
            })
        })
        .collect();
    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    for (i, thread) in counts.into_iter().enumerate() {
        let pairs = thread.join().unwrap();
        assert!(
            pairs >= 50,
            "thread {i} made only {pairs} pairs in a second"
        );
    }
}

/// The fair lock's twin: threads waiting in turn each get it, one at a
/// time.
#[test]
fn fair_lock_from_threads() {
    let name = unique("blocking-fair");
    let inside = Arc::new(AtomicBool::new(false));
    let holds = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (lock, inside, holds) = (client().fair_lock(&name), inside.clone(), holds.clone());
            thread::spawn(move || {
                for _ in 0..5 {
                    let guard = lock.try_lock_for(Duration::from_secs(10)).unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    holds.fetch_add(1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    guard.unlock().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(holds.load(Ordering::SeqCst), 20);
}

/// The read-write lock's twin: readers share, a writer waits for them.
#[test]
fn read_write_lock_from_threads() {
    let client = client();
    let name = unique("blocking-rw");
    let rw = client.read_write_lock(&name);
    let (r1, r2) = (rw.read().try_lock().unwrap(), rw.read().try_lock().unwrap());
    assert!(rw.write().try_lock().unwrap_err().is_busy());
    let writer = thread::spawn({
        let write = rw.write();
        move || {
            write
                .try_lock_for(Duration::from_secs(10))
                .map(|g| g.unlock())
        }
    });
    wait_for_subscriber(&format!("redisson_rwlock:{{{name}}}"));
    r1.unlock().unwrap();
    r2.unlock().unwrap();
    writer.join().unwrap().unwrap().unwrap();
}

/// The semaphore's twin: with 3 permits and 6 threads, never more than 3
/// holders at once, and every permit back at the end; a permit dropped is
/// back when Drop returns, one forgotten is not.
#[test]
fn semaphore_bounds_threads() {
    let name = unique("blocking-semaphore");
    let setup = client().semaphore(&name);
    assert!(setup.try_set_available(3).unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let (sem, inside, most) = (client().semaphore(&name), inside.clone(), most.clone());
            thread::spawn(move || {
                for _ in 0..5 {
                    let permit = sem.try_acquire_for(1, Duration::from_secs(10)).unwrap();
                    assert_eq!(permit.permits(), 1);
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(2));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    permit.release().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert!(most.load(Ordering::SeqCst) <= 3);
    assert_eq!(setup.available_permits().unwrap(), 3);
    setup.add_permits(-1).unwrap();
    assert!(setup.try_acquire(3).unwrap_err().is_busy());
    let e = setup
        .try_acquire_for(3, Duration::from_millis(50))
        .unwrap_err();
    assert!(e.is_busy(), "{e}");
    let permit = setup.try_acquire(2).unwrap();
    assert_eq!(permit.name(), name);
    drop(permit);
    assert_eq!(
        setup.available_permits().unwrap(),
        2,
        "dropped permits not back"
    );
    setup.set_available(1).unwrap();
    let taken = setup.acquire(1).unwrap().forget();
    assert_eq!(taken, 1);
    assert_eq!(setup.available_permits().unwrap(), 0);
    setup.release(taken).unwrap();
    assert_eq!(setup.available_permits().unwrap(), 1);
}

/// The expirable semaphore's twin: a permit dropped is back at once, one
/// released by id too.
#[test]
fn expirable_semaphore_permits_come_back() {
    let client = client();
    let name = unique("blocking-expirable");
    let slots = client
        .expirable_semaphore(&name)
        .lease(Duration::from_secs(30));
    slots.try_set_total(1).unwrap();
    let permit = slots.try_acquire().unwrap();
    assert_eq!(slots.acquired_permits().unwrap(), 1);
    assert!(slots.try_acquire().unwrap_err().is_busy());
    drop(permit);
    assert_eq!(
        slots.available_permits().unwrap(),
        1,
        "dropped permit not back"
    );
    let permit = slots.try_acquire_for(Duration::from_secs(1)).unwrap();
    slots.release_by_id(permit.id()).unwrap();
    assert!(permit.release().unwrap_err().is_not_owner());
    let permit = slots.acquire().unwrap();
    assert_eq!(permit.lost(Duration::from_millis(20)).unwrap(), None);
    let end = permit.expires_at().expect("a fixed lease ends");
    assert!(end <= Instant::now() + Duration::from_secs(30));
    permit.release().unwrap();
    let permit = slots.try_acquire().unwrap();
    slots.set_total(2).unwrap();
    assert_eq!(slots.available_permits().unwrap(), 1);
    permit.release().unwrap();
    let renewed = client.expirable_semaphore(&name).try_acquire().unwrap();
    assert_eq!(renewed.expires_at(), None, "a renewed permit has no end");
    renewed.release().unwrap();
}

/// The latch's twin: a waiting thread wakes when the others count down.
#[test]
fn latch_from_threads() {
    let client = client();
    let latch = client.count_down_latch(unique("blocking-latch"));
    assert!(latch.try_set_count(3).unwrap());
    let waiter = thread::spawn({
        let latch = latch.clone();
        move || latch.wait_for(Duration::from_secs(10))
    });
    for _ in 0..3 {
        thread::sleep(Duration::from_millis(20));
        latch.count_down().unwrap();
    }
    waiter.join().unwrap().unwrap();
    assert_eq!(latch.count().unwrap(), 0);
    assert!(latch.try_set_count(1).unwrap());
    let e = latch.wait_for(Duration::from_millis(50)).unwrap_err();
    assert!(e.is_busy(), "{e}");
    latch.count_down().unwrap();
    latch.wait().unwrap();
    assert!(!latch.delete().unwrap());
}

/// The multi-lock's twin: all or none, each member fenced, released by
/// Drop.
#[test]
fn multi_lock_all_or_none() {
    let server = RedisServer::shared();
    let client = client();
    let (a, b) = (unique("blocking-multi-a"), unique("blocking-multi-b"));
    let held_b = client.lock(&b).try_lock().unwrap();
    let both = client.multi_lock([&a, &b]);
    assert!(both.try_lock().unwrap_err().is_busy());
    assert!(!exists(server, &a), "a member stayed held");
    held_b.unlock().unwrap();
    let guard = both.try_lock_for(Duration::from_secs(2)).unwrap();
    assert!(guard.fencing_token_of(&a).is_some() && guard.fencing_token_of(&b).is_some());
    assert_eq!(guard.fencing_token(), None);
    assert_eq!(guard.names().count(), 2);
    let mut sorted = [a.clone(), b.clone()];
    sorted.sort();
    assert_eq!(guard.name(), sorted.join(","));
    assert_eq!(guard.expires_at(), None, "watchdog mode");
    assert_eq!(guard.lost(Duration::from_millis(20)).unwrap(), None);
    drop(guard);
    assert!(!exists(server, &a) && !exists(server, &b));
    both.lock().unwrap().unlock().unwrap();

    let guard = both
        .clone()
        .lease(Duration::from_secs(2))
        .try_lock()
        .unwrap();
    let before = guard.expires_at().unwrap();
    guard.extend(Duration::from_secs(30)).unwrap();
    assert!(guard.expires_at().unwrap() > before);
    assert!(!guard.is_lost());
    guard.unlock().unwrap();
}

/// The RedLock's twin, on three masters: a quorum, extended, released.
#[test]
fn redlock_over_three_masters() {
    let servers: Vec<_> = (0..3).map(|_| RedisServer::start()).collect();
    let clients: Vec<_> = servers
        .iter()
        .map(|s| Client::connect(&s.url()).unwrap())
        .collect();
    let name = unique("blocking-redlock");
    let lock = RedLock::new(clients, &name)
        .unwrap()
        .lease(Duration::from_secs(10));
    let guard = lock.try_lock().unwrap();
    assert_eq!(guard.name(), name);
    assert_eq!(guard.fencing_token(), None);
    assert!(guard.masters() >= lock.quorum());
    assert!(
        lock.try_lock_for(Duration::from_millis(50))
            .unwrap_err()
            .is_busy()
    );
    guard.extend(Duration::from_secs(20)).unwrap();
    assert!(guard.expires_at().unwrap() > Instant::now() + Duration::from_secs(15));
    assert_eq!(guard.lost(Duration::from_millis(20)).unwrap(), None);
    guard.unlock().unwrap();
    assert!(servers.iter().all(|s| !exists(s, &name)));
    drop(lock.try_lock().unwrap());
    assert!(servers.iter().all(|s| !exists(s, &name)));
    let guard = lock.lock().unwrap();
    assert!(!guard.is_lost());
    guard.unlock().unwrap();
}

/// Bad input gets the async API's typed error, through the blocking one.
#[test]
fn bad_input_is_a_typed_error() {
    let e = client().lock("").try_lock().unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let e = Client::connect("not a url").unwrap_err();
    assert!(!e.is_runtime(), "{e}");
}

/// Many threads' first calls at once start one runtime between them, and
/// all of them work.
#[test]
fn first_calls_at_once() {
    let url = RedisServer::shared().url();
    let start = Arc::new(Barrier::new(6));
    let ok = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (url, start, ok) = (url.clone(), start.clone(), ok.clone());
            thread::spawn(move || {
                start.wait();
                let client = Client::connect(&url).unwrap();
                client
                    .lock(unique("blocking-first"))
                    .try_lock()
                    .unwrap()
                    .unlock()
                    .unwrap();
                ok.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(ok.load(Ordering::SeqCst), 6);
}

/// Every handle and guard can move to and be shared with other threads
/// (checked when this compiles).
#[test]
fn handles_and_guards_are_send_and_sync() {
    use redlease::blocking::{
        CountDownLatch, ExpirableSemaphore, Lock, LockGuard, MultiGuard, MultiLock, PermitGuard,
        ReadWriteLock, RedLockGuard, Semaphore, SemaphorePermit,
    };
    fn check<T: Send + Sync + 'static>() {}
    check::<Client>();
    check::<Lock>();
    check::<LockGuard>();
    check::<ReadWriteLock>();
    check::<Semaphore>();
    check::<SemaphorePermit>();
    check::<ExpirableSemaphore>();
    check::<PermitGuard>();
    check::<CountDownLatch>();
    check::<MultiLock>();
    check::<MultiGuard>();
    check::<RedLock>();
    check::<RedLockGuard>();
}

/// On a Redis Cluster: the lock lands on its slot's master, a waiting
/// thread is woken by the release (sharded pub/sub), and Drop releases.
#[test]
fn blocking_locks_on_a_cluster() {
    let cluster = crate::cluster_support::shared_cluster();
    let client = Client::connect(&cluster.url()).unwrap();
    let name = unique("blocking-cluster");
    let on_master = |name: &str| -> bool {
        redis::cmd("EXISTS")
            .arg(name)
            .query(&mut cluster.connection_for_key(name))
            .unwrap()
    };
    let held = client.lock(&name).try_lock().unwrap();
    assert!(on_master(&name));
    let waiter = thread::spawn({
        let lock = client.lock(&name);
        move || lock.try_lock_for(Duration::from_secs(20))
    });
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, n): (String, i64) = redis::cmd("PUBSUB")
            .arg("SHARDNUMSUB")
            .arg(&channel)
            .query(&mut cluster.connection_for_key(&channel))
            .unwrap();
        if n > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "nobody waits on {channel}");
        thread::sleep(Duration::from_millis(5));
    }
    // A 30 s watchdog lease: only the release message can wake the waiter
    // within its wait.
    held.unlock().unwrap();
    let guard = waiter.join().unwrap().unwrap();
    drop(guard);
    assert!(!on_master(&name), "the dropped guard left the key");
}
