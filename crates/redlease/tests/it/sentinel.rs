//! Locks through Redis Sentinel (#14), against a real group from the test
//! kit: a master, one replica and three sentinels on loopback. Each test
//! has a group of its own (its faults would disturb the others).

use std::time::{Duration, Instant};

use redlease_testkit::{RedisServer, SentinelGroup, SentinelOptions, WrongSentinel};

use crate::support::{
    assert_fencing_off_excludes, channel_of, eventually, spawn_timed, subscribers, unique,
};

async fn client(group: &SentinelGroup, watchdog: Duration) -> redlease::Client {
    redlease::Client::builder(&group.url())
        .watchdog_timeout(watchdog)
        .build()
        .await
        .unwrap()
}

fn exists_on(server: &RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query::<i64>(&mut server.connection())
        .unwrap()
        == 1
}

/// Waits until the master's writes so far reached its replica.
fn replicated(group: &SentinelGroup) {
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut group.master().connection())
        .unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

/// A waiter on `b`, once subscribed to the lock's channel on the master,
/// is woken within 1 s by the release of `held`.
async fn release_wakes_a_waiter(
    group: &SentinelGroup,
    held: redlease::LockGuard,
    b: &redlease::Client,
    name: &str,
) {
    let waiter = spawn_timed(b.lock(name), Duration::from_secs(20));
    let channel = channel_of(name);
    let subscribed = eventually(Duration::from_secs(5), || {
        subscribers(group.master(), &channel) > 0
    })
    .await;
    assert!(subscribed.is_some(), "the waiter never subscribed");
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    assert!(
        at - released < Duration::from_secs(1),
        "{:?}",
        at - released
    );
    guard.unwrap().unlock().await.unwrap();
}

/// `group.failover()` off the async workers (it sleeps while it waits):
/// returns the group and the new master's address once every sentinel
/// names it.
async fn failover(group: SentinelGroup) -> (SentinelGroup, String) {
    tokio::task::spawn_blocking(move || {
        let mut group = group;
        let address = group.failover();
        (group, address)
    })
    .await
    .unwrap()
}

/// The lock API through the sentinels: the lock lands on the master, and a
/// release wakes a waiter at once; with fencing off, no counter is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_work_through_sentinel() {
    let group = SentinelGroup::start(1, 3);
    let (a, b) = (
        client(&group, Duration::from_secs(30)).await,
        client(&group, Duration::from_secs(30)).await,
    );
    let name = unique("sentinel:api");
    let held = a.lock(&name).try_lock().await.unwrap();
    assert!(exists_on(group.master(), &name));
    assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
    release_wakes_a_waiter(&group, held, &b, &name).await;

    // #28: fencing off through the sentinels, in both layouts: no token,
    // no counter on the master.
    for layout in [
        redlease::layout::Layout::Redisson,
        redlease::layout::Layout::String,
    ] {
        let builder = redlease::Client::builder(&group.url()).layout(layout);
        let fencing = builder.clone().build().await.unwrap();
        let off = builder.fencing(false).build().await.unwrap();
        let name = unique("sentinel:fence-off");
        let held = off.lock(&name).try_lock().await.unwrap();
        assert_eq!(held.fencing_token(), None, "{layout:?}");
        held.unlock().await.unwrap();
        assert!(!exists_on(
            group.master(),
            &redlease::layout::token_key(&name)
        ));
        assert_fencing_off_excludes(&off, &fencing, "sentinel:fence-off-excluded").await;
    }
}

/// `SENTINEL FAILOVER` with a holder, a waiter, the watchdog and a stream
/// of acquisitions running: within 2 s of every sentinel naming the new
/// master, new acquisitions land there and none on the old master (which
/// still accepts writes for seconds); the holder keeps its replicated
/// lock, renewed on the new master; the waiter is woken by the release on
/// the new master; fencing tokens keep increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_under_load_moves_everything_to_the_new_master() {
    let group = SentinelGroup::start(1, 3);
    let watchdog = Duration::from_millis(1500);
    let (a, b) = (
        client(&group, watchdog).await,
        client(&group, watchdog).await,
    );
    let old = group.master().port();
    let name = unique("sentinel:held");
    let held = a.lock(&name).try_lock().await.unwrap();
    replicated(&group);
    let waiter = spawn_timed(b.lock(&name), Duration::from_secs(60));
    // Load: acquisitions on fresh names, recorded with when they returned
    // and whether the old master had the key right then (later it would
    // have it anyway: it becomes a replica of the new one about 10 s after
    // the switch).
    let old_url = group.master().url();
    let load = tokio::spawn({
        let c = a.clone();
        async move {
            let mut on_old = redis::Client::open(old_url)
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
            let mut taken = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(8);
            while Instant::now() < deadline {
                let name = unique("sentinel:load");
                if let Ok(g) = c
                    .lock(&name)
                    .lease(Duration::from_secs(60))
                    .try_lock()
                    .await
                {
                    let at = Instant::now();
                    let there: i64 = redis::cmd("EXISTS")
                        .arg(&name)
                        .query_async(&mut on_old)
                        .await
                        .unwrap_or(0);
                    taken.push((name, at, there == 1));
                    std::mem::forget(g); // kept: the check reads the keys
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            taken
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (group, address) = failover(group).await;
    let switched = Instant::now();
    let new = group.master().port();
    assert_ne!(new, old);
    assert_eq!(address, format!("127.0.0.1:{new}"));
    let taken = load.await.unwrap();
    assert!(
        taken.iter().any(|(_, at, there)| *at < switched && *there),
        "the probe of the old master saw nothing before the switch"
    );
    let first = taken
        .iter()
        .find(|(name, at, _)| *at > switched && exists_on(group.master(), name))
        .map(|(_, at, _)| *at - switched)
        .expect("no acquisition on the new master after the switch");
    assert!(
        first < Duration::from_secs(2),
        "first on the new master after {first:?}"
    );
    // From 2 s after the switch on, every acquisition is on the new master
    // and none on the old one, which still takes writes.
    let late: Vec<_> = taken
        .iter()
        .filter(|(_, at, _)| *at > switched + Duration::from_secs(2))
        .collect();
    assert!(!late.is_empty(), "the load stopped too early");
    for (name, at, there) in late {
        assert!(
            exists_on(group.master(), name) && !there,
            "{name}, taken {:?} after the switch: on the new master {}, on the old {there}",
            *at - switched,
            exists_on(group.master(), name)
        );
    }
    // The holder's key reached the replica: renewed there, still ours.
    tokio::time::sleep(watchdog).await;
    assert!(!held.is_lost());
    assert!(held.is_held().await.unwrap());
    let first_token = held.fencing_token().unwrap();
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, at) = waiter.await.unwrap();
    let guard = guard.unwrap();
    assert!(
        at - released < Duration::from_secs(1),
        "woken after {:?}",
        at - released
    );
    assert!(guard.fencing_token().unwrap() > first_token);
    assert!(exists_on(group.master(), &name));
    guard.unlock().await.unwrap();
}

/// A holder whose key never reached the replica that was promoted (here
/// deleted on the replica itself, which replicas do not pass on) is told
/// `lost()` within one renewal period of the switch, while another client
/// takes the lock on the new master: it does not go on silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_key_missed_the_replica_is_told_lost() {
    let group = SentinelGroup::start(1, 3);
    let watchdog = Duration::from_secs(3);
    let (a, b) = (
        client(&group, watchdog).await,
        client(&group, watchdog).await,
    );
    let name = unique("sentinel:missed");
    let held = a.lock(&name).try_lock().await.unwrap();
    replicated(&group);
    let replica = group.replicas()[0];
    let mut conn = replica.connection();
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("replica-read-only")
        .arg("no")
        .query(&mut conn)
        .unwrap();
    let _: i64 = redis::cmd("DEL").arg(&name).query(&mut conn).unwrap();
    let (group, _) = failover(group).await;
    let switched = Instant::now();
    tokio::time::timeout(watchdog / 3 + Duration::from_secs(1), held.lost())
        .await
        .expect("not told lost within one renewal period of the switch");
    let told = switched.elapsed();
    assert!(held.is_lost());
    let other = b.lock(&name).try_lock().await.unwrap();
    assert!(exists_on(group.master(), &name));
    assert!(told < watchdog / 3 + Duration::from_secs(1), "{told:?}");
    other.unlock().await.unwrap();
}

/// One sentinel of three down, or answering for another deployment, does
/// not stop the client: it connects, locks on the real master, and follows
/// a failover that the two right sentinels make.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sentinel_down_or_wrong_does_not_stop_the_client() {
    let mut group = SentinelGroup::start(1, 3);
    group.kill_sentinel(0);
    let c = client(&group, Duration::from_secs(30)).await;
    let name = unique("sentinel:down");
    c.lock(&name)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    group.restart_sentinel(0);
    let decoy = group.make_sentinel_wrong(1, WrongSentinel::OtherMaster);
    assert_ne!(decoy, Some(format!("127.0.0.1:{}", group.master().port())));
    let c = client(&group, Duration::from_secs(30)).await;
    let name = unique("sentinel:wrong");
    let held = c.lock(&name).try_lock().await.unwrap();
    assert!(exists_on(group.master(), &name));
    held.unlock().await.unwrap();
    let (group, _) = failover(group).await;
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let name = unique("sentinel:after");
        let g = c.lock(&name).try_lock().await;
        if let Ok(g) = g {
            let landed = exists_on(group.master(), &name);
            // Taken on the old master in its last moments, the lock is
            // gone with its demotion: only one on the new master must
            // release cleanly.
            let released = g.unlock().await;
            if landed {
                released.unwrap();
                break;
            }
        }
        assert!(Instant::now() < deadline, "never on the new master");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A URL naming a master the sentinels do not know is a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_master_name_is_an_invalid_argument() {
    let group = SentinelGroup::start(0, 1);
    let url = group
        .url()
        .replace(&format!("#{}", group.master_name()), "#nosuch");
    let err = redlease::Client::connect(&url).await.unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(err.to_string().contains("nosuch"), "{err}");
    let err = redlease::Client::connect("redis-sentinel://127.0.0.1:1#m")
        .await
        .unwrap_err();
    assert!(err.is_connection(), "{err:?}");
}

/// Sentinels that require a password (`requirepass`), data nodes with a
/// password of their own: `sentinel_password` goes to the sentinels, the
/// URL's password to the master. Without the sentinels' password, or with
/// a wrong one, building fails with an auth error naming every sentinel
/// and the option; without the URL's password the master refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_with_a_password_take_sentinel_password() {
    let group = SentinelGroup::start_with(
        1,
        3,
        SentinelOptions {
            password: Some("data-secret".to_owned()),
            sentinel_password: Some("sentinel-secret".to_owned()),
            ..SentinelOptions::default()
        },
    );
    let url = group.url();
    let client = redlease::Client::builder(&url)
        .sentinel_password("sentinel-secret")
        .build()
        .await
        .unwrap();
    let name = unique("sentinel:auth");
    let guard = client.lock(&name).try_lock().await.unwrap();
    assert!(exists_on(group.master(), &name));
    guard.unlock().await.unwrap();

    for builder in [
        redlease::Client::builder(&url),
        redlease::Client::builder(&url).sentinel_password("wrong"),
    ] {
        let e = builder.build().await.expect_err("the sentinels refuse");
        let message = e.to_string();
        assert!(e.is_auth(), "{e:?}");
        for sentinel in group.sentinel_addresses() {
            assert!(message.contains(&sentinel), "{message}");
        }
        assert!(message.contains("sentinel_password"), "{message}");
        assert!(!message.contains("secret"), "{message}");
    }

    // The sentinels' password is not the master's: the URL's is.
    let bare = url.replace(":data-secret@", "");
    assert_ne!(bare, url);
    let refused = match redlease::Client::builder(&bare)
        .sentinel_password("sentinel-secret")
        .build()
        .await
    {
        Err(e) => e,
        Ok(client) => client.lock(&name).try_lock().await.err().unwrap(),
    };
    assert!(refused.is_auth(), "{refused:?}");
}

/// `rediss-sentinel://` with the test's own CA: the sentinels and the
/// master are reached over TLS only (the sentinels name TLS ports); a lock,
/// a waiter woken by its release, and after `SENTINEL FAILOVER` new
/// acquisitions land on the new master within 2 s.
#[cfg(feature = "tls-rustls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_sentinel_locks_wakes_and_follows_a_failover() {
    use redlease_testkit::TestCerts;

    let certs = TestCerts::generate();
    let group = SentinelGroup::start_with(
        1,
        3,
        SentinelOptions {
            tls: Some(certs.server.clone()),
            tls_ca: Some(certs.ca.clone()),
            ..SentinelOptions::default()
        },
    );
    let url = group.tls_url();
    assert!(url.starts_with("rediss-sentinel://"), "{url}");
    let connect = || {
        redlease::Client::builder(&url)
            .tls_ca(TestCerts::pem(&certs.ca))
            .watchdog_timeout(Duration::from_millis(1500))
            .build()
    };
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    // Without the CA the sentinels' certificates are not trusted.
    assert!(redlease::Client::connect(&url).await.is_err());

    let name = unique("sentinel:tls");
    let held = a.lock(&name).try_lock().await.unwrap();
    assert!(exists_on(group.master(), &name));
    release_wakes_a_waiter(&group, held, &b, &name).await;

    let (group, address) = failover(group).await;
    let switched = Instant::now();
    let tls_port = group.master().tls_port().unwrap();
    assert_eq!(address, format!("127.0.0.1:{tls_port}"));
    loop {
        let name = unique("sentinel:tls-after");
        if let Ok(guard) = a.lock(&name).try_lock().await
            && exists_on(group.master(), &name)
        {
            guard.unlock().await.unwrap();
            break;
        }
        assert!(
            switched.elapsed() < Duration::from_secs(2),
            "no acquisition on the new master within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Connected clients of `server`, less the one asking.
fn clients_of(server: &RedisServer) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut server.connection())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .map_or(0, |n| n.trim().parse::<i64>().unwrap())
        - 1
}

/// `url::sentinel_master` answers the master's one-node URL, and is
/// cancel-safe: cancelled at any point, or dropped after answering, it
/// leaves no connection open on the sentinels (its monitor and tasks end
/// with it); a dropped client closes its sentinel connections too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_master_answers_and_leaves_nothing_behind() {
    let group = SentinelGroup::start(1, 3);
    let sentinel = group.sentinel(0);
    let before = clients_of(sentinel);
    let master = redlease::url::sentinel_master(&group.url())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        master,
        format!("redis://127.0.0.1:{}/0", group.master().port())
    );
    for cut in [0, 1, 2, 5, 20] {
        let _ = tokio::time::timeout(
            Duration::from_millis(cut),
            redlease::url::sentinel_master(&group.url()),
        )
        .await;
    }
    let c = client(&group, Duration::from_secs(30)).await;
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(5);
    while clients_of(sentinel) > before {
        assert!(
            Instant::now() < deadline,
            "{} connections left on a sentinel, {before} before",
            clients_of(sentinel)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        redlease::url::sentinel_master("redis://127.0.0.1:1")
            .await
            .unwrap()
            .is_none()
    );
}
