//! `RedLock` (#16) over 3 to 5 private masters: quorum, validity, foreign
//! holders on a minority or a majority, every subset of 4, masters down,
//! stopped or slow, late grants joining the guard (or released behind one
//! that is gone), extension and cancellation.

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

/// On free masters it returns as soon as a quorum granted it, and the
/// masters that answer after that join the guard: shortly after, all 5
/// hold it and `masters()` says so. The validity ends before the lease, and
/// the release leaves nothing.
#[tokio::test]
async fn every_free_master_ends_up_holding_it_and_validity_is_within_the_lease() {
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
        g.expires_at().unwrap() <= started + lease,
        "validity past the lease"
    );
    assert!(g.expires_at().unwrap() > std::time::Instant::now());
    let all = eventually(Duration::from_secs(1), || {
        g.masters() == 5 && servers.iter().all(|s| exists(s, &name))
    });
    assert!(
        all.await.is_some(),
        "{} masters in the guard, {} hold the key",
        g.masters(),
        servers.iter().filter(|s| exists(s, &name)).count()
    );
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

/// Three masters, the first behind a proxy that delays every chunk `delay`
/// each way, and a RedLock of `timeout` per master on them, warmed up.
async fn slow_first_master(
    name: &str,
    delay: Duration,
    timeout: Duration,
) -> (Vec<RedisServer>, Proxy, redlease::RedLock) {
    let servers = masters(3);
    let proxy = Proxy::start(servers[0].port());
    let slow = redlease::Client::connect(&proxy.url()).await.unwrap();
    let mut clients = vec![slow.clone()];
    clients.extend(self::clients(&servers[1..]).await);
    let redlock = redlease::RedLock::new(clients, name)
        .unwrap()
        .lease(Duration::from_secs(5))
        .master_timeout(timeout);
    // The slow master's scripts loaded first, so that its acquire is one
    // round trip: an EVALSHA answered NOSCRIPT would take a second one.
    // (A RedLock warm-up would not do: it returns at quorum, perhaps before
    // this master answered.)
    let warm = slow.lock(unique("redlock-slow-warm"));
    warm.try_lock().await.unwrap().unlock().await.unwrap();
    proxy.delay(delay);
    (servers, proxy, redlock)
}

/// A slow master (its request and reply each 300 ms late, within its
/// 2 s timeout) does not hold the acquire up: the lock returns held by the
/// other two, its validity counting from before the request. The slow
/// master's grant then joins the guard and stays (`masters()` becomes 3),
/// and `unlock` frees all three.
#[tokio::test]
async fn a_slow_master_does_not_delay_the_acquire_and_its_late_grant_joins_the_guard() {
    let (delay, timeout) = (Duration::from_millis(300), Duration::from_secs(2));
    let name = unique("redlock-slow");
    let (servers, _proxy, redlock) = slow_first_master(&name, delay, timeout).await;
    let started = Instant::now();
    let g = redlock.try_lock().await.unwrap();
    let took = started.elapsed();
    // The request has not even reached the slow master yet.
    assert!(took < delay, "{took:?}");
    assert_eq!(g.masters(), 2);
    assert!(
        g.expires_at().unwrap() <= started + Duration::from_secs(5),
        "validity past the lease"
    );
    // The request reaches the slow master about 300 ms late and takes the
    // key there; its reply comes back another 300 ms later.
    let late = eventually(Duration::from_secs(3), || exists(&servers[0], &name));
    assert!(late.await.is_some(), "the late request never arrived");
    let joined = eventually(Duration::from_secs(3), || g.masters() == 3);
    assert!(
        joined.await.is_some(),
        "the late grant never joined the guard"
    );
    // A withdrawal would have followed within one more delay: none does.
    tokio::time::sleep(delay * 3).await;
    assert!(
        servers.iter().all(|s| exists(s, &name)),
        "a master let go of it"
    );
    assert_eq!(g.masters(), 3);
    g.unlock().await.unwrap();
    assert!(servers.iter().all(|s| !exists(s, &name)));
}

/// A late grant is never left held: `unlock` hears the slow master out
/// (its request is 300 ms late each way) and releases its grant before it
/// returns; after a drop, the grant that lands behind the gone guard is
/// released in the background. Regression (CI of #26): `unlock` used to
/// withdraw the request and return at once, and a loaded machine found the
/// late grant still held right after.
#[tokio::test]
async fn a_late_grant_is_released_by_unlock_and_after_a_drop() {
    let (delay, timeout) = (Duration::from_millis(300), Duration::from_secs(2));
    for unlock in [true, false] {
        let name = unique("redlock-after");
        let (servers, _proxy, redlock) = slow_first_master(&name, delay, timeout).await;
        let g = redlock.try_lock().await.unwrap();
        assert_eq!(g.masters(), 2);
        if unlock {
            let started = Instant::now();
            g.unlock().await.unwrap();
            assert!(
                started.elapsed() >= delay,
                "unlock returned before the slow master answered"
            );
            assert!(
                servers.iter().all(|s| !exists(s, &name)),
                "a master still held it when unlock returned"
            );
            continue;
        }
        drop(g);
        let late = eventually(Duration::from_secs(3), || exists(&servers[0], &name));
        assert!(late.await.is_some(), "the late request never arrived");
        let released = eventually(Duration::from_secs(5), || {
            servers.iter().all(|s| !exists(s, &name))
        });
        assert!(
            released.await.is_some(),
            "a late grant stayed held after the guard was dropped"
        );
    }
}

/// A busy answer leaves no grant behind: two masters are held by a peer,
/// the slow one (300 ms late each way) grants its request after the other
/// two refused, and that grant is released before `try_lock` says busy.
/// Regression (CI of #26): the busy answer used to come at once, with the
/// slow master's grant landing behind it and held until a release that
/// followed it through the same slow link.
#[tokio::test]
async fn a_busy_answer_leaves_no_grant_behind() {
    let (delay, timeout) = (Duration::from_millis(300), Duration::from_secs(2));
    let name = unique("redlock-busy");
    let (servers, _proxy, redlock) = slow_first_master(&name, delay, timeout).await;
    let mut peer = Vec::new();
    for client in clients(&servers[1..]).await {
        peer.push(client.lock(&name).try_lock().await.unwrap());
    }
    let started = Instant::now();
    let e = redlock.try_lock().await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert!(!exists(&servers[0], &name), "held when busy was answered");
    // Past the moment the slow master's copy of the request landed.
    tokio::time::sleep_until((started + delay + Duration::from_millis(100)).into()).await;
    assert!(
        !exists(&servers[0], &name),
        "the slow master's grant was left held"
    );
    for guard in peer {
        guard.unlock().await.unwrap();
    }
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
    let g = redlock.try_lock().await.unwrap();
    let first = g.expires_at().unwrap();
    g.extend(Duration::from_secs(2)).await.unwrap();
    assert!(g.expires_at().unwrap() > first + Duration::from_millis(1000));
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

    let g = redlock.try_lock().await.unwrap();
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

/// Over string-layout clients (#17), a RedLock is what rslock and redsync
/// take: a string holding the owner on each master, so it excludes their
/// RedLocks too. A peer's `SET NX` on a majority keeps it out; on a
/// minority it is taken on the rest and released from there only.
#[tokio::test]
async fn over_string_layout_clients_it_holds_strings_and_respects_peers() {
    let servers = masters(3);
    let mut clients = Vec::new();
    for s in &servers {
        let client = redlease::Client::builder(&s.url())
            .layout(redlease::layout::Layout::String)
            .build()
            .await
            .unwrap();
        clients.push(client);
    }
    let name = unique("redlock-string");
    let redlock = redlease::RedLock::new(clients, &name)
        .unwrap()
        .lease(Duration::from_secs(5));
    let guard = redlock.try_lock().await.unwrap();
    let owner = |s: &RedisServer| -> Option<String> {
        redis::cmd("GET")
            .arg(&name)
            .query(&mut s.connection())
            .unwrap()
    };
    let held = eventually(Duration::from_secs(2), || {
        servers.iter().all(|s| owner(s).is_some())
    })
    .await;
    assert!(held.is_some(), "a string on every master");
    guard.unlock().await.unwrap();
    assert!(servers.iter().all(|s| !exists(s, &name)));

    // A peer's RedLock on two of three masters: a majority, so busy.
    let peer = |s: &RedisServer| {
        redis::cmd("SET")
            .arg(&name)
            .arg("peer-token")
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .exec(&mut s.connection())
            .unwrap();
    };
    peer(&servers[0]);
    peer(&servers[1]);
    let busy = redlock.try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    assert!(
        !exists(&servers[2], &name),
        "the minority it got was given back"
    );
    // On a minority only: taken, and the peer's keys are left alone.
    redis::cmd("DEL")
        .arg(&name)
        .exec(&mut servers[1].connection())
        .unwrap();
    let guard = redlock.try_lock().await.unwrap();
    guard.unlock().await.unwrap();
    assert_eq!(owner(&servers[0]).as_deref(), Some("peer-token"));
}
