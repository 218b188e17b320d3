use std::time::Duration;

use crate::support::{
    RedisServer, assert_fencing_off_excludes, client, eventually, exists, pttl, unique,
};

/// Redisson's fencing counter for `name`.
fn counter_of(name: &str) -> String {
    format!("redisson_lock_token:{{{name}}}")
}

/// The server clock in microseconds.
fn server_micros(server: &RedisServer) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
    secs * 1_000_000 + micros
}

/// Every acquisition, plain or fair, by any client, gets a larger token
/// than the one before, and the token is at least the server clock.
#[tokio::test]
async fn tokens_increase_across_clients_and_kinds() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("fence-increase");
    let before = server_micros(server);
    let mut last = 0;
    for round in 0..20 {
        let c = if round % 2 == 0 { &a } else { &b };
        let lock = match round % 3 {
            0 => c.lock(&name),
            1 => c.fair_lock(&name),
            _ => c.lock(&name).lease(Duration::from_secs(5)),
        };
        let guard = lock.try_lock_for(Duration::from_secs(2)).await.unwrap();
        let token = guard.fencing_token().unwrap();
        assert!(token > last, "round {round}: {token} after {last}");
        assert!(token >= before, "token {token} below the clock {before}");
        last = token;
        guard.unlock().await.unwrap();
    }
    let stored: u64 = redis::cmd("GET")
        .arg(counter_of(&name))
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(stored, last);
}

/// A Redisson `RFencedLock` issues tokens with `INCR` on the same counter:
/// redlease's next token is above it, whether the Java side is behind or
/// ahead of the clock, and the Java side's next token is above ours.
#[tokio::test]
async fn redisson_incr_keeps_the_sequence_increasing() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("fence-incr");
    let mut conn = server.connection();
    let first = c.lock(&name).try_lock().await.unwrap();
    let t1 = first.fencing_token().unwrap();
    first.unlock().await.unwrap();

    // A Java holder takes the next token.
    let java: u64 = redis::cmd("INCR")
        .arg(counter_of(&name))
        .query(&mut conn)
        .unwrap();
    assert_eq!(java, t1 + 1);
    let second = c.lock(&name).try_lock().await.unwrap();
    let t2 = second.fencing_token().unwrap();
    assert!(t2 > java, "{t2} after java's {java}");
    second.unlock().await.unwrap();

    // A counter far ahead of the clock (a Redisson sequence moved forward
    // by hand, or a clock that stepped back): we continue from it.
    let ahead = server_micros(server) + 1_000_000_000_000;
    // (With the expiry a counter we started has: our INCR keeps it.)
    let _: () = redis::cmd("SET")
        .arg(counter_of(&name))
        .arg(ahead)
        .arg("PX")
        .arg(60_000)
        .query(&mut conn)
        .unwrap();
    let third = c.lock(&name).try_lock().await.unwrap();
    assert_eq!(third.fencing_token().unwrap(), ahead + 1);
    third.unlock().await.unwrap();
    let java: u64 = redis::cmd("INCR")
        .arg(counter_of(&name))
        .query(&mut conn)
        .unwrap();
    assert_eq!(java, ahead + 2);

    // INCR keeps the counter's expiry.
    let ttl = pttl(server, &counter_of(&name));
    assert!(ttl > 0, "counter lost its expiry: {ttl}");

    // A counter Redisson restarted from 1 (its INCR after ours expired):
    // our next token comes from the clock again, above every earlier one.
    let _: () = redis::cmd("SET")
        .arg(counter_of(&name))
        .arg(5)
        .query(&mut conn)
        .unwrap();
    let clock = server_micros(server);
    let fourth = c.lock(&name).try_lock().await.unwrap();
    assert!(
        fourth.fencing_token().unwrap() >= clock,
        "{}",
        fourth.fencing_token().unwrap()
    );
    fourth.unlock().await.unwrap();
    let ttl = pttl(server, &counter_of(&name));
    assert!(ttl > 0, "the restarted counter has no expiry: {ttl}");
}

/// The counter expires when the name is idle, so names leave no key behind,
/// and the next token is still larger.
#[tokio::test]
async fn tokens_increase_after_the_counter_expires() {
    let server = RedisServer::shared();
    let c = redlease::Client::builder(&server.url())
        .fencing_counter_ttl(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let name = unique("fence-expire");
    let guard = c.lock(&name).try_lock().await.unwrap();
    let t1 = guard.fencing_token().unwrap();
    let ttl = pttl(server, &counter_of(&name));
    assert!((1..=100).contains(&ttl), "counter ttl {ttl}");
    guard.unlock().await.unwrap();
    let gone = eventually(Duration::from_secs(2), || {
        !exists(server, &counter_of(&name))
    })
    .await;
    assert!(gone.is_some(), "the counter did not expire");

    let guard = c.lock(&name).try_lock().await.unwrap();
    assert!(guard.fencing_token().unwrap() > t1);

    // A token is one INCR, which keeps the time to live the counter started
    // with (#17): the next token on a live counter does not refresh it.
    let t2 = guard.fencing_token().unwrap();
    guard.unlock().await.unwrap();
    let before = pttl(server, &counter_of(&name));
    let guard = c.lock(&name).try_lock().await.unwrap();
    assert_eq!(guard.fencing_token().unwrap(), t2 + 1, "one INCR");
    let after = pttl(server, &counter_of(&name));
    assert!(after <= before, "refreshed: {before} then {after}");
    guard.unlock().await.unwrap();

    // The default starts a counter for a day.
    let fresh = unique("fence-expire-default");
    let guard = client().await.lock(&fresh).try_lock().await.unwrap();
    let ttl = pttl(server, &counter_of(&fresh));
    let day = redlease::DEFAULT_FENCING_COUNTER_TTL.as_millis() as i64;
    assert!(ttl > day - 60_000 && ttl <= day, "counter ttl {ttl}");
    guard.unlock().await.unwrap();
}

/// The hazard of a mixed deployment with the default counter expiry
/// (#15): Java's `INCR` never refreshes the expiry redlease set, so a name
/// only Java locks loses its counter, and Java's next token is 1. With
/// `redisson_fenced_interop(true)` the counter has no expiry (one it had is
/// removed at the next acquisition, plain or fair), so Java's `INCR`
/// continues the sequence however long Java alone takes the lock.
#[tokio::test]
async fn redisson_fenced_interop_keeps_the_counter_for_ever() {
    let server = RedisServer::shared();
    let mut conn = server.connection();
    let incr = |conn: &mut redis::Connection, name: &str| -> u64 {
        redis::cmd("INCR")
            .arg(counter_of(name))
            .query(conn)
            .unwrap()
    };
    // The hazard, with a short expiry to see it.
    let short = redlease::Client::builder(&server.url())
        .fencing_counter_ttl(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let name = unique("fence-java-backwards");
    let ours = short.lock(&name).try_lock().await.unwrap();
    let t1 = ours.fencing_token().unwrap();
    ours.unlock().await.unwrap();
    assert_eq!(
        incr(&mut conn, &name),
        t1 + 1,
        "java continues while it lives"
    );
    let gone = eventually(Duration::from_secs(2), || {
        !exists(server, &counter_of(&name))
    })
    .await;
    assert!(
        gone.is_some(),
        "java's INCR kept the expiry, and it ran out"
    );
    assert_eq!(incr(&mut conn, &name), 1, "java's token went back to 1");

    // The setting: no expiry, for both kinds, even over a counter that had
    // one.
    let interop = redlease::Client::builder(&server.url())
        .redisson_fenced_interop(true)
        .build()
        .await
        .unwrap();
    for fair in [false, true] {
        let name = unique("fence-interop");
        let g = short.lock(&name).try_lock().await.unwrap();
        g.unlock().await.unwrap();
        assert!(pttl(server, &counter_of(&name)) > 0);
        let lock = if fair {
            interop.fair_lock(&name)
        } else {
            interop.lock(&name)
        };
        let g = lock.try_lock().await.unwrap();
        let t = g.fencing_token().unwrap();
        g.unlock().await.unwrap();
        assert_eq!(pttl(server, &counter_of(&name)), -1, "fair: {fair}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(incr(&mut conn, &name), t + 1, "fair: {fair}");
        let g = interop.lock(&name).try_lock().await.unwrap();
        assert!(g.fencing_token().unwrap() > t + 1);
        g.unlock().await.unwrap();
        assert_eq!(pttl(server, &counter_of(&name)), -1);
    }
}

/// Redis restarted without its data: the counter is gone, and tokens still
/// increase.
#[tokio::test]
async fn tokens_increase_after_redis_restarts_empty() {
    let mut server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("fence-restart");
    let mut last = 0;
    for _ in 0..3 {
        let guard = c.lock(&name).try_lock().await.unwrap();
        assert!(guard.fencing_token().unwrap() > last);
        last = guard.fencing_token().unwrap();
        guard.unlock().await.unwrap();
    }
    server.restart();
    assert!(!exists(&server, &counter_of(&name)));
    let guard = c
        .lock(&name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        guard.fencing_token().unwrap() > last,
        "{} after {last}",
        guard.fencing_token().unwrap()
    );
    guard.unlock().await.unwrap();
}

/// Issue #37: a client that held a lock when Redis restarted empty seeds
/// that name's counter from the clock once it sees the new run id, before
/// any acquire: Redisson's `RFencedLock`, which counts by `INCR` alone,
/// then gets a token above every token issued before the restart, where it
/// got 1 (and every fence refused it) until a redlease acquire came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_37_a_restart_seeds_the_counters_of_the_locks_held() {
    let mut server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("fence-restart-seed");
    let held = c.lock(&name).try_lock().await.unwrap();
    let before = held.fencing_token().unwrap();
    server.restart();
    let seeded = eventually(Duration::from_secs(5), || {
        exists(&server, &counter_of(&name))
    })
    .await;
    assert!(seeded.is_some(), "the counter was not seeded");
    // A Java `RFencedLock` acquire, as it issues its token.
    let java: u64 = redis::cmd("INCR")
        .arg(counter_of(&name))
        .query(&mut server.connection())
        .unwrap();
    assert!(java > before, "token {java} after {before}");
    // The held lock went with the data; its guard lets go.
    let _ = held.unlock().await;
}

/// A counter holding something other than an integer is an error, not a
/// reset, and the lock is not taken.
#[tokio::test]
async fn a_corrupt_counter_is_an_error_and_takes_nothing() {
    let server = RedisServer::shared();
    let c = client().await;
    let mut conn = server.connection();
    for (i, plant) in ["abc", "1.5", "9007199254740991", "hash"]
        .into_iter()
        .enumerate()
    {
        let name = unique(&format!("fence-corrupt-{i}"));
        let counter = counter_of(&name);
        let _: () = if plant == "hash" {
            redis::cmd("HSET")
                .arg(&counter)
                .arg("f")
                .arg(1)
                .query(&mut conn)
                .unwrap()
        } else {
            redis::cmd("SET")
                .arg(&counter)
                .arg(plant)
                .query(&mut conn)
                .unwrap()
        };
        for lock in [c.lock(&name), c.fair_lock(&name)] {
            let err = lock.try_lock().await.unwrap_err();
            if plant == "hash" {
                assert!(err.is_wrong_type(), "{err:?}");
            } else {
                assert!(err.to_string().contains("fencing token counter"), "{err}");
            }
            assert_eq!(err.key(), Some(name.as_str()));
            assert!(!exists(server, &name), "{plant}: lock taken");
        }
    }
}

/// #28: a client built with `fencing(false)` writes no counter for any
/// kind of lock, in either layout, and its guards answer no token; its
/// locks exclude as before, and a fencing client's tokens on the same
/// names keep increasing.
#[tokio::test]
async fn issue_28_fencing_off_writes_no_counter() {
    use redlease::layout::Layout;
    let server = RedisServer::shared();
    for layout in [Layout::Redisson, Layout::String] {
        let builder = redlease::Client::builder(&server.url()).layout(layout);
        let fencing = builder.clone().build().await.unwrap();
        let off = builder.fencing(false).build().await.unwrap();
        let name = unique("fence-off");
        let leased = Duration::from_secs(5);
        let plain = off.lock(&name).try_lock().await.unwrap();
        assert_eq!(plain.fencing_token(), None);
        plain.unlock().await.unwrap();
        // Still a lock: another client is refused while it is held.
        assert_fencing_off_excludes(&off, &fencing, "fence-off-excluded").await;
        // Re-entered in a scope: the same (absent) token.
        let lock = off.lock(&name);
        redlease::scope(async {
            let outer = lock.try_lock().await.unwrap();
            let inner = lock.try_lock().await.unwrap();
            assert_eq!((outer.fencing_token(), inner.fencing_token()), (None, None));
            inner.unlock().await.unwrap();
            outer.unlock().await.unwrap();
        })
        .await;
        let fixed = off.lock(&name).lease(leased).try_lock().await.unwrap();
        assert_eq!(fixed.fencing_token(), None);
        fixed.unlock().await.unwrap();
        let (a, b) = (unique("fence-off-a"), unique("fence-off-b"));
        let multi = off
            .multi_lock([a.as_str(), b.as_str()])
            .try_lock()
            .await
            .unwrap();
        assert_eq!(multi.fencing_token_of(&a), None);
        multi.unlock().await.unwrap();
        let mut names = vec![name.clone(), a, b];
        if layout == Layout::Redisson {
            let fair = off.fair_lock(&name).try_lock().await.unwrap();
            assert_eq!(fair.fencing_token(), None);
            fair.unlock().await.unwrap();
            let rw_name = unique("fence-off-rw");
            let rw = off.read_write_lock(&rw_name);
            let read = rw.read().try_lock().await.unwrap();
            assert_eq!(read.fencing_token(), None);
            read.unlock().await.unwrap();
            let write = rw.write().try_lock().await.unwrap();
            assert_eq!(write.fencing_token(), None);
            write.unlock().await.unwrap();
            names.push(rw_name);
        }
        for name in &names {
            assert!(
                !exists(server, &counter_of(name)),
                "{layout:?}: counter of {name}"
            );
        }
        // The fencing client on the same name starts its counter as usual.
        let before = server_micros(server);
        let first = fencing.lock(&name).try_lock().await.unwrap();
        let token = first.fencing_token().expect("fencing is on");
        assert!(token >= before);
        first.unlock().await.unwrap();
        let off_again = off.lock(&name).try_lock().await.unwrap();
        off_again.unlock().await.unwrap();
        let second = fencing.lock(&name).try_lock().await.unwrap();
        assert!(second.fencing_token() > Some(token));
        second.unlock().await.unwrap();
    }
}

/// #28: fencing off contradicts the Redisson counter interop, and says so
/// before connecting.
#[tokio::test]
async fn issue_28_fencing_off_with_the_counter_interop_is_invalid() {
    let err = redlease::Client::builder("redis://127.0.0.1:1")
        .fencing(false)
        .redisson_fenced_interop(true)
        .build()
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert!(err.to_string().contains("fencing(false)"), "{err}");
}

/// #28: fencing off on a cluster: no counter on any master, in both
/// layouts, for names spread over the slots and a multi-lock across them;
/// a fencing client is still refused while a fencing-off client holds.
#[tokio::test]
async fn issue_28_fencing_off_on_a_cluster_writes_no_counter() {
    use redlease::layout::Layout;
    let cluster = crate::cluster_support::shared_cluster();
    for layout in [Layout::Redisson, Layout::String] {
        let builder = redlease::Client::builder(&cluster.url()).layout(layout);
        let fencing = builder.clone().build().await.unwrap();
        let off = builder.fencing(false).build().await.unwrap();
        let names: Vec<String> = (0..8)
            .map(|i| unique(&format!("fence-off-cl-{i}")))
            .collect();
        for name in &names {
            let held = off.lock(name).try_lock().await.unwrap();
            assert_eq!(held.fencing_token(), None, "{layout:?}");
            held.unlock().await.unwrap();
        }
        assert_fencing_off_excludes(&off, &fencing, "fence-off-cl-excluded").await;
        let multi = off.multi_lock(&names[..4]).try_lock().await.unwrap();
        assert_eq!(multi.fencing_token_of(&names[0]), None, "{layout:?}");
        multi.unlock().await.unwrap();
        for name in &names {
            let counter = counter_of(name);
            let found: i64 = redis::cmd("EXISTS")
                .arg(&counter)
                .query(&mut cluster.connection_for_key(&counter))
                .unwrap();
            assert_eq!(found, 0, "{layout:?}: {counter}");
        }
    }
}
