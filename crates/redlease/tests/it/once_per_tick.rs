//! #40: a scheduled job runs once per tick on replicas whose clocks differ,
//! with `unlock_at_least`, in separate processes on tokio-cron-scheduler
//! (the `once_per_tick` example's replica, as shipped); and without the
//! minimum the same replicas run ticks twice, so the check can fail.
//! Also `unlock_at_least` on its own: both layouts, a minimum already
//! passed, no renewal after it, a read hold refused.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::process::spawn_child;
use crate::replica_example::{Record, Replica};
use crate::support::{RedisServer, client_with_watchdog, unique};
use redlease::layout::Layout;

/// The schedule: every 6 s. The minimum: longer than the clocks' spread
/// (1 s) plus the lateness a replica accepts (1.5 s, `LATE_LIMIT`: later
/// ticks are skipped), shorter than the interval minus that lateness.
const EVERY: Duration = Duration::from_secs(6);
const AT_LEAST: Duration = Duration::from_millis(3500);
const RUN_FOR: Duration = Duration::from_secs(20);

/// A replica process: `replica URL LOCK LIST AT_LEAST_MS SKEW_SECS ID`.
pub(crate) async fn replica_child(args: &[&str]) {
    let [url, lock, list, at_least_ms, skew, id] = args else {
        panic!("replica URL LOCK LIST AT_LEAST_MS SKEW_SECS ID, not {args:?}");
    };
    let client = redlease::Client::connect(url).await.unwrap();
    let conn = redis::Client::open(*url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let replica = Replica {
        client,
        lock: (*lock).to_owned(),
        schedule: format!("*/{} * * * * *", EVERY.as_secs()),
        every: EVERY,
        at_least: Duration::from_millis(at_least_ms.parse().unwrap()),
        skew_secs: skew.parse().unwrap(),
        id: (*id).to_owned(),
        record: Some(Record {
            conn,
            list: (*list).to_owned(),
        }),
    };
    crate::replica_example::run(replica, RUN_FOR).await.unwrap();
}

/// Three replicas, clocks 0 s, +1 s and 0 s from true time: their runs,
/// by tick.
fn replicas(server: &RedisServer, at_least: Duration) -> (Vec<Child>, String) {
    let lock = unique("once-per-tick");
    let list = format!("{lock}:runs");
    let children = [("a", 0), ("b", 1), ("c", 0)]
        .iter()
        .map(|(id, skew)| {
            spawn_child(&format!(
                "replica {} {lock} {list} {} {skew} {id}",
                server.url(),
                at_least.as_millis()
            ))
        })
        .collect();
    (children, list)
}

fn runs_by_tick(server: &RedisServer, list: &str) -> BTreeMap<i64, Vec<String>> {
    let runs: Vec<String> = redis::cmd("LRANGE")
        .arg(list)
        .arg(0)
        .arg(-1)
        .query(&mut server.connection())
        .unwrap();
    let mut by_tick: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for run in runs {
        let (tick, id) = run.split_once(' ').unwrap();
        by_tick
            .entry(tick.parse().unwrap())
            .or_default()
            .push(id.to_owned());
    }
    by_tick
}

fn wait_all(children: Vec<Child>) {
    let deadline = Instant::now() + RUN_FOR + Duration::from_secs(30);
    for mut child in children {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "a replica failed: {status}");
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("a replica did not stop");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn issue_40_once_per_tick_on_skewed_clocks() {
    let server = RedisServer::shared();
    // Both at once, on locks of their own: with the minimum, and the
    // planted bug of none.
    let (kept, kept_list) = replicas(server, AT_LEAST);
    let (plain, plain_list) = replicas(server, Duration::ZERO);
    wait_all(kept.into_iter().chain(plain).collect());

    let kept = runs_by_tick(server, &kept_list);
    assert!(kept.len() >= 2, "too few ticks ran: {kept:?}");
    for (tick, ids) in &kept {
        assert_eq!(ids.len(), 1, "tick {tick} ran on {ids:?}: {kept:?}");
    }
    // The replica whose clock is ahead fires first and takes most ticks;
    // which one does not matter, only that each tick runs once.

    let plain = runs_by_tick(server, &plain_list);
    assert!(
        plain.values().any(|ids| ids.len() > 1),
        "without a minimum the late clocks should run a tick again: {plain:?}"
    );
}

/// The lock stays held, by nobody, for the minimum; then it is free.
#[tokio::test]
async fn unlock_at_least_keeps_the_lock_until_its_minimum_on_both_layouts() {
    let server = RedisServer::shared();
    for layout in [Layout::Redisson, Layout::String] {
        let client = redlease::Client::builder(&server.url())
            .layout(layout)
            .build()
            .await
            .unwrap();
        let name = unique("at-least");
        let lock = client.lock(&name);
        let guard = lock.try_lock().await.unwrap();
        let owner = guard.owner().to_owned();
        guard
            .unlock_at_least(Duration::from_millis(800))
            .await
            .unwrap();
        let mut conn = server.connection();
        let pttl: i64 = redis::cmd("PTTL").arg(&name).query(&mut conn).unwrap();
        assert!(pttl > 500 && pttl <= 800, "{layout:?}: pttl {pttl}");
        let value: redis::Value = if layout == Layout::String {
            redis::cmd("GET").arg(&name).query(&mut conn).unwrap()
        } else {
            redis::cmd("HGETALL").arg(&name).query(&mut conn).unwrap()
        };
        assert!(
            !format!("{value:?}").contains(&owner),
            "{layout:?}: the old owner is gone: {value:?}"
        );
        let e = lock.try_lock().await.unwrap_err();
        assert!(e.is_busy(), "{layout:?}: {e}");
        // Free once the minimum is up, with no release message: a waiter
        // retries at the holder's expiry.
        let waited = Instant::now();
        let next = lock.try_lock_for(Duration::from_secs(3)).await.unwrap();
        assert!(waited.elapsed() < Duration::from_millis(900));
        next.unlock().await.unwrap();
    }
}

/// A minimum already passed is a plain unlock: free at once, and the
/// waiter woken by the release message.
#[tokio::test]
async fn unlock_at_least_after_the_minimum_releases_at_once() {
    let client = redlease::Client::connect(&RedisServer::shared().url())
        .await
        .unwrap();
    let lock = client.lock(unique("at-least-passed"));
    let guard = lock.try_lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    guard
        .unlock_at_least(Duration::from_millis(50))
        .await
        .unwrap();
    lock.try_lock().await.unwrap().unlock().await.unwrap();
}

/// The watchdog stops renewing: the lock lasts the minimum, not a lease
/// more, and a renewal round after it finds no owner to renew.
#[tokio::test]
async fn unlock_at_least_is_not_renewed_after() {
    let server = RedisServer::shared();
    let client = client_with_watchdog(server, Duration::from_millis(900)).await;
    let name = unique("at-least-watchdog");
    let guard = client.lock(&name).try_lock().await.unwrap();
    guard
        .unlock_at_least(Duration::from_millis(400))
        .await
        .unwrap();
    assert_eq!(client.renewing(), 0, "renewal stopped");
    // Three renewal periods (300 ms each) later, gone: never renewed to
    // the watchdog's 900 ms.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let exists: bool = redis::cmd("EXISTS")
        .arg(&name)
        .query(&mut server.connection())
        .unwrap();
    assert!(!exists, "the lock outlived its minimum");
}

/// A read hold is shared: nothing to keep. A typed error, and the hold
/// released all the same.
#[tokio::test]
async fn unlock_at_least_of_a_read_hold_is_refused_and_released() {
    let client = redlease::Client::connect(&RedisServer::shared().url())
        .await
        .unwrap();
    let rw = client.read_write_lock(unique("at-least-read"));
    let read = rw.read().try_lock().await.unwrap();
    let e = read
        .unlock_at_least(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let write = rw.write().try_lock_for(Duration::from_secs(2)).await;
    write.unwrap().unlock().await.unwrap();
}
