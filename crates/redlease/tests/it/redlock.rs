//! `RedLock` (#16) over 3 to 5 private masters: quorum, validity, foreign
//! holders on a minority or a majority, every subset of 4, masters down or
//! stopped, and extension.

use std::time::{Duration, Instant};

use crate::support::{Proxy, RedisServer, eventually, exists, unique};

const FOREIGN: &str = "someone-else:1";

fn masters(n: usize) -> Vec<RedisServer> {
    (0..n).map(|_| RedisServer::start()).collect()
}

async fn clients(servers: &[RedisServer]) -> Vec<redlease::Client> {
    let mut clients = Vec::new();
    for s in servers {
        clients.push(redlease::Client::connect(&s.url()).await.unwrap());
    }
    clients
}

/// A foreign holder of `name` on `server`, with a long lease.
fn hold_foreign(server: &RedisServer, name: &str) {
    let mut conn = server.connection();
    redis::cmd("HSET")
        .arg(name)
        .arg(FOREIGN)
        .arg(1)
        .exec(&mut conn)
        .unwrap();
    redis::cmd("PEXPIRE")
        .arg(name)
        .arg(30_000)
        .exec(&mut conn)
        .unwrap();
}

fn foreign_stays(server: &RedisServer, name: &str) -> bool {
    redis::cmd("HEXISTS")
        .arg(name)
        .arg(FOREIGN)
        .query::<bool>(&mut server.connection())
        .unwrap()
}

/// On free masters it returns as soon as a quorum granted it (the grants
/// that come later are withdrawn); the validity ends before the lease, and
/// the release leaves nothing.
#[tokio::test]
async fn free_masters_grant_a_quorum_and_validity_is_within_the_lease() {
    let servers = masters(5);
    let clients = clients(&servers).await;
    let name = unique("redlock-free");
    let lease = Duration::from_secs(2);
    let redlock = redlease::RedLock::new(clients, &name).unwrap().lease(lease);
    assert_eq!(redlock.quorum(), 3);
    let started = std::time::Instant::now();
    let g = redlock.try_lock().await.unwrap();
    assert!(g.masters() >= 3, "{} masters", g.masters());
    assert!(
        g.valid_until() <= started + lease,
        "validity past the lease"
    );
    assert!(g.valid_until() > std::time::Instant::now());
    let held = eventually(Duration::from_secs(1), || {
        servers.iter().filter(|s| exists(s, &name)).count() == g.masters()
    });
    assert!(held.await.is_some(), "late grants were not withdrawn");
    assert!(redlock.try_lock().await.unwrap_err().is_busy());
    g.unlock().await.unwrap();
    assert!(servers.iter().all(|s| !exists(s, &name)));
}

/// Every subset of 4 masters held by someone else: acquired exactly when
/// at most one is (quorum 3 of 4); foreign values always stay, and a
/// refusal leaves nothing on the free masters.
#[tokio::test]
async fn every_subset_of_four_masters_behaves_by_quorum() {
    let servers = masters(4);
    let clients = clients(&servers).await;
    for subset in 0u32..16 {
        let name = unique("redlock-subset");
        for (i, s) in servers.iter().enumerate() {
            if subset & (1 << i) != 0 {
                hold_foreign(s, &name);
            }
        }
        let redlock = redlease::RedLock::new(clients.clone(), &name)
            .unwrap()
            .lease(Duration::from_secs(5));
        let outcome = redlock.try_lock().await;
        let foreign = subset.count_ones();
        match outcome {
            Ok(g) => {
                assert!(foreign <= 1, "acquired with {foreign} of 4 held elsewhere");
                assert!(g.masters() >= 3, "{} masters", g.masters());
                g.unlock().await.unwrap();
            }
            Err(e) => {
                assert!(e.is_busy(), "{e}");
                assert!(foreign >= 2, "refused with {foreign} of 4 held elsewhere");
            }
        }
        for (i, s) in servers.iter().enumerate() {
            if subset & (1 << i) != 0 {
                assert!(foreign_stays(s, &name), "a foreign holder was removed");
            } else {
                let gone = eventually(Duration::from_secs(1), || !exists(s, &name));
                assert!(gone.await.is_some(), "left held on a free master");
            }
        }
    }
}

/// A master stopped (SIGSTOP) or killed costs at most the per-master
/// timeout: with 1 of 3 out the lock is acquired, with 2 of 3 it is
/// refused, quickly either way.
#[tokio::test]
async fn masters_down_or_stopped_do_not_block_past_their_timeout() {
    let mut servers = masters(3);
    let clients = clients(&servers).await;
    let timeout = Duration::from_millis(100);
    let redlock = |name: &str| {
        redlease::RedLock::new(clients.clone(), name)
            .unwrap()
            .lease(Duration::from_secs(5))
            .master_timeout(timeout)
    };
    servers[0].pause();
    let started = Instant::now();
    let g = redlock(&unique("redlock-stopped"))
        .try_lock()
        .await
        .unwrap();
    assert!(
        started.elapsed() < timeout + Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(g.masters(), 2);
    g.unlock().await.unwrap();
    servers[1].kill();
    let started = Instant::now();
    let e = redlock(&unique("redlock-down"))
        .try_lock()
        .await
        .unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert!(
        started.elapsed() < timeout + Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    servers[0].resume();
}

/// A slow master (behind a proxy that delays every packet well past the
/// per-master timeout) costs at most that timeout: the lock is granted by
/// the other two, its validity counts from before the request, and the
/// slow master's late grant is withdrawn behind it, so nothing stays there.
#[tokio::test]
async fn a_slow_master_costs_its_timeout_and_its_late_grant_is_withdrawn() {
    let servers = masters(3);
    let proxy = Proxy::start(servers[0].port());
    let slow = redlease::Client::connect(&proxy.url()).await.unwrap();
    let mut clients = vec![slow.clone()];
    clients.extend(self::clients(&servers[1..]).await);
    let (timeout, lease) = (Duration::from_millis(50), Duration::from_secs(5));
    let name = unique("redlock-slow");
    let redlock = redlease::RedLock::new(clients, &name)
        .unwrap()
        .lease(lease)
        .master_timeout(timeout);
    // The slow master's scripts loaded first: an EVALSHA answered NOSCRIPT
    // after the timeout would never run the acquire at all. (A RedLock
    // warm-up would not do: it returns at quorum, perhaps before this
    // master answered.)
    let warm = slow.lock(unique("redlock-slow-warm"));
    warm.try_lock().await.unwrap().unlock().await.unwrap();
    proxy.delay(Duration::from_millis(300));
    let started = Instant::now();
    let g = redlock.try_lock().await.unwrap();
    let took = started.elapsed();
    assert!(took < timeout + Duration::from_millis(250), "{took:?}");
    assert_eq!(g.masters(), 2);
    assert!(
        g.valid_until() <= started + lease,
        "validity past the lease"
    );
    // The request reaches the slow master about 300 ms late and takes the
    // key there; the release sent behind it follows another 300 ms later.
    let late = eventually(Duration::from_secs(3), || exists(&servers[0], &name));
    assert!(late.await.is_some(), "the late request never arrived");
    let withdrawn = eventually(Duration::from_secs(5), || !exists(&servers[0], &name));
    assert!(
        withdrawn.await.is_some(),
        "the late grant stayed on the slow master"
    );
    assert!(exists(&servers[1], &name) && exists(&servers[2], &name));
    g.unlock().await.unwrap();
    assert!(servers.iter().all(|s| !exists(s, &name)));
}

/// Extended before its validity ends, it stays valid; once it ended (or
/// the masters lost it), extension is refused.
#[tokio::test]
async fn extend_needs_a_quorum_and_a_live_validity() {
    let servers = masters(3);
    let clients = clients(&servers).await;
    let name = unique("redlock-extend");
    let redlock = redlease::RedLock::new(clients, &name)
        .unwrap()
        .lease(Duration::from_millis(400));
    let mut g = redlock.try_lock().await.unwrap();
    let first = g.valid_until();
    g.extend(Duration::from_secs(2)).await.unwrap();
    assert!(g.valid_until() > first + Duration::from_millis(1000));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!g.is_lost());
    // Two masters lose it: no quorum to extend.
    for s in &servers[..2] {
        redis::cmd("DEL")
            .arg(&name)
            .exec(&mut s.connection())
            .unwrap();
    }
    assert!(
        g.extend(Duration::from_secs(2))
            .await
            .unwrap_err()
            .is_not_owner()
    );
    let _ = g.unlock().await;

    let mut g = redlock.try_lock().await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(1), g.lost()).await;
    assert_eq!(lost.unwrap(), redlease::LostReason::Expired);
    assert!(g.is_lost());
    assert!(
        g.extend(Duration::from_secs(2))
            .await
            .unwrap_err()
            .is_not_owner()
    );
}

/// Dropping acquires at any point leaves nothing held on any master: the
/// acquires in flight are withdrawn, the grants released.
#[tokio::test]
async fn cancelled_acquires_leave_nothing_on_any_master() {
    let servers = masters(3);
    let clients = clients(&servers).await;
    let name = unique("redlock-cancel");
    let redlock = redlease::RedLock::new(clients, &name)
        .unwrap()
        .lease(Duration::from_secs(5));
    for i in 0..40u64 {
        let limit = Duration::from_micros(i * 50);
        if let Ok(Ok(g)) = tokio::time::timeout(limit, redlock.try_lock()).await {
            g.unlock().await.unwrap();
        }
    }
    let clear = eventually(Duration::from_secs(2), || {
        servers.iter().all(|s| !exists(s, &name))
    });
    assert!(clear.await.is_some(), "a master was left held");
    // A dropped guard releases in the background.
    let g = redlock.try_lock().await.unwrap();
    drop(g);
    let clear = eventually(Duration::from_secs(2), || {
        servers.iter().all(|s| !exists(s, &name))
    });
    assert!(clear.await.is_some(), "a dropped guard left a master held");
}
