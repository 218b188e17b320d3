//! Keys that clean up (#40): `admin::leftovers` finds what locks leave
//! behind, and `admin::gc` removes what is dead by the clients' own rule
//! while leaving, beside it, what a live holder or waiter still uses.

use std::time::Duration;

use redlease::admin::{self, Leftover, LeftoverKind};
use redlease::layout;

use crate::support::{RedisServer, client, exists, unique};

/// The leftovers of one name's keys (a pattern that matches them all).
async fn found(client: &redlease::Client, name: &str) -> Vec<Leftover> {
    let page = admin::leftovers(client, &format!("*{name}*"), 0, 10_000)
        .await
        .unwrap();
    assert_eq!(page.cursor, 0);
    page.leftovers
}

async fn collect(client: &redlease::Client, name: &str) -> Vec<Leftover> {
    admin::gc(client, &format!("*{name}*"), 0, 10_000)
        .await
        .unwrap()
        .leftovers
}

fn of(found: &[Leftover], kind: LeftoverKind) -> Vec<&Leftover> {
    found.iter().filter(|l| l.kind == kind).collect()
}

fn redis() -> redis::Connection {
    RedisServer::shared().connection()
}

/// A fair queue whose head waiter died: gc removes it (and only it), so
/// the live waiter behind it is next, and takes the lock at its release.
#[tokio::test]
async fn issue_40_gc_removes_a_dead_fair_waiter_and_keeps_the_live_one() {
    let c = client().await;
    let name = unique("gc:fair");
    let holder = c.fair_lock(&name).try_lock().await.unwrap();
    let waiter = {
        let lock = c.fair_lock(&name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(10)).await })
    };
    let queue = layout::queue_key(&name);
    let queued = crate::support::eventually(Duration::from_secs(5), || {
        redis::cmd("LLEN")
            .arg(&queue)
            .query::<i64>(&mut redis())
            .unwrap()
            == 1
    })
    .await;
    assert!(queued.is_some(), "the waiter queued");
    // A Java waiter that died at the head: its deadline passed long ago.
    let () = redis::pipe()
        .lpush(&queue, "dead-java-client:1")
        .zadd(layout::timeout_key(&name), "dead-java-client:1", 1)
        .query(&mut redis())
        .unwrap();

    let seen = found(&c, &name).await;
    let fair = of(&seen, LeftoverKind::FairQueue);
    assert_eq!(fair.len(), 1, "{seen:?}");
    assert_eq!((fair[0].entries, fair[0].expired, fair[0].dead), (2, 1, 1));
    assert_eq!(fair[0].removed, 0, "leftovers only reads");

    let done = collect(&c, &name).await;
    assert_eq!(of(&done, LeftoverKind::FairQueue)[0].removed, 1);
    let left: Vec<String> = redis::cmd("LRANGE")
        .arg(&queue)
        .arg(0)
        .arg(-1)
        .query(&mut redis())
        .unwrap();
    assert_eq!(left.len(), 1, "the live waiter stays");
    assert!(of(&found(&c, &name).await, LeftoverKind::FairQueue).is_empty());

    holder.unlock().await.unwrap();
    let next = waiter.await.unwrap().expect("the live waiter is next");
    next.unlock().await.unwrap();
}

/// A permit whose holder let its lease pass goes back to the pool; a
/// permit still leased stays acquired.
#[tokio::test]
async fn issue_40_gc_gives_back_expired_permits_only() {
    let c = client().await;
    let name = unique("gc:permits");
    let semaphore = c.expirable_semaphore(&name);
    semaphore.try_set_total(2).await.unwrap();
    let live = semaphore
        .clone()
        .lease(Duration::from_secs(30))
        .try_acquire()
        .await
        .unwrap();
    let dead = semaphore
        .clone()
        .lease(Duration::from_millis(50))
        .try_acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;

    let seen = found(&c, &name).await;
    let permits = of(&seen, LeftoverKind::ExpiredPermits);
    assert_eq!(permits.len(), 1, "{seen:?}");
    assert_eq!(permits[0].key, layout::permits_key(&name));
    assert_eq!(
        (permits[0].entries, permits[0].expired, permits[0].dead),
        (2, 1, 1)
    );

    let done = collect(&c, &name).await;
    assert_eq!(of(&done, LeftoverKind::ExpiredPermits)[0].removed, 1);
    assert_eq!(semaphore.available_permits().await.unwrap(), 1);
    assert_eq!(
        semaphore.acquired_permits().await.unwrap(),
        1,
        "the live one"
    );
    live.release().await.unwrap();
    assert!(dead.release().await.is_err(), "its permit was given back");
    assert_eq!(semaphore.available_permits().await.unwrap(), 2);
}

/// A reader removed by a forced unlock leaves its timeout key; gc removes
/// it, and a live reader's key of another lock stays.
#[tokio::test]
async fn issue_40_gc_removes_timeout_keys_of_readers_gone() {
    let c = client().await;
    let name = unique("gc:rwlock");
    let gone = c.read_write_lock(&name).read().try_lock().await.unwrap();
    let live_name = format!("{name}:live");
    let live = c
        .read_write_lock(&live_name)
        .read()
        .try_lock()
        .await
        .unwrap();
    let before = found(&c, &name).await;
    assert!(
        of(&before, LeftoverKind::ReadTimeout).is_empty(),
        "a live reader's key is no leftover: {before:?}"
    );
    admin::force_unlock(&c, &name).await.unwrap();
    let dead_key = format!("{}:1", layout::read_timeout_prefix(&name, gone.owner()));
    assert!(exists(RedisServer::shared(), &dead_key));

    let seen = found(&c, &name).await;
    let timeouts = of(&seen, LeftoverKind::ReadTimeout);
    assert_eq!(timeouts.len(), 1, "{seen:?}");
    assert_eq!(timeouts[0].key, dead_key);
    assert_eq!(timeouts[0].owner.as_deref(), Some(gone.owner()));

    let done = collect(&c, &name).await;
    assert_eq!(of(&done, LeftoverKind::ReadTimeout)[0].removed, 1);
    assert!(!exists(RedisServer::shared(), &dead_key));
    let live_key = format!(
        "{}:1",
        layout::read_timeout_prefix(&live_name, live.owner())
    );
    assert!(
        exists(RedisServer::shared(), &live_key),
        "the live reader's"
    );
    live.unlock().await.unwrap();
    drop(gone);
}

/// A leader that died without resigning leaves its record; gc removes it,
/// and a live leader's record stays.
#[tokio::test]
async fn issue_40_gc_removes_records_of_leaders_gone() {
    let c = client().await;
    let name = unique("gc:election");
    let gone = c.election(&name).try_campaign("gone").await.unwrap();
    let live_name = format!("{name}:live");
    let live = c.election(&live_name).try_campaign("live").await.unwrap();
    // Its process died: the lock expired (here removed), the record stayed.
    admin::force_unlock(&c, &name).await.unwrap();
    let record = layout::leader_key(&name);
    assert!(exists(RedisServer::shared(), &record));

    let seen = found(&c, &name).await;
    let records = of(&seen, LeftoverKind::LeaderRecord);
    assert_eq!(records.len(), 1, "the live one is no leftover: {seen:?}");
    assert_eq!(records[0].key, record);

    let done = collect(&c, &name).await;
    assert_eq!(of(&done, LeftoverKind::LeaderRecord)[0].removed, 1);
    assert!(!exists(RedisServer::shared(), &record));
    assert!(exists(
        RedisServer::shared(),
        &layout::leader_key(&live_name)
    ));
    let leader = c.election(&live_name).leader().await.unwrap().unwrap();
    assert_eq!(leader.value.as_deref(), Some("live"));
    live.resign().await.unwrap();
    drop(gone);
}

/// A fencing counter outlives its lock and gc leaves it: the next token
/// still goes up. It is shown, with its size.
#[tokio::test]
async fn issue_40_fencing_counters_are_shown_and_never_collected() {
    let c = client().await;
    let name = unique("gc:counter");
    let lock = c.lock(&name);
    let first = lock.try_lock().await.unwrap();
    let token = first.fencing_token().unwrap();
    assert!(
        of(&found(&c, &name).await, LeftoverKind::FencingCounter).is_empty(),
        "a held lock's counter is no leftover"
    );
    first.unlock().await.unwrap();

    let done = collect(&c, &name).await;
    let counters = of(&done, LeftoverKind::FencingCounter);
    assert_eq!(counters.len(), 1, "{done:?}");
    assert_eq!((counters[0].dead, counters[0].removed), (0, 0));
    assert!(counters[0].bytes.is_some_and(|b| b > 0));
    assert!(
        counters[0].ttl_ms > 0,
        "redlease's counter expires in a day"
    );
    let latches = of(&done, LeftoverKind::UnlockLatch);
    assert!(latches.iter().all(|l| l.removed == 0 && l.ttl_ms > 0));
    let next = lock.try_lock().await.unwrap();
    assert!(next.fencing_token().unwrap() > token);
    next.unlock().await.unwrap();
}
