//! `RLock` and the non-reentrant lock against redlease's `Lock`: each side
//! excludes the other, a release on either side wakes a waiter on the
//! other, and a force-unlock on either side frees the lock for both.

use std::time::Duration;

use super::driver::now_us;
use super::side::{
    Side, WAIT, WAIT_MS, WOKEN_WITHIN_US, after, everywhere, lock_channel, spawn_woken,
};

everywhere!(rlock_and_lock_exclude_and_wake_each_other);
everywhere!(non_reentrant_lock_and_lock_exclude_and_wake_each_other);
everywhere!(force_unlock_on_either_side_frees_the_other);
everywhere!(java_lock_forever_and_fixed_leases_meet_redlease);
everywhere!(issue_40_an_rlock_holder_leads_an_election);

/// Java holds `kind`'s lock on a name: redlease is busy on it, waits, and
/// is woken by Java's unlock. Then redlease holds it: Java is refused,
/// waits, and is woken by redlease's unlock.
async fn both_ways(side: &Side, kind: &str) {
    let (java, name) = (side.java, side.name(kind));
    let (a, b) = (format!("{name}/a"), format!("{name}/b"));

    assert!(
        java.call(&a, &format!("trylock {kind} {name} 0 -1"))
            .await
            .bool()
    );
    let busy = side.rust.lock(&name).try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    let lock = side.rust.lock(&name);
    let (guard, _) = side
        .redlease_woken_by_java(
            &lock_channel(&name),
            async move { lock.try_lock_for(WAIT).await },
            &a,
            &format!("unlock {kind} {name}"),
        )
        .await;

    assert!(
        !java
            .call(&b, &format!("trylock {kind} {name} 0 -1"))
            .await
            .bool()
    );
    let (got, _) = side
        .java_woken_by_redlease(
            &lock_channel(&name),
            &b,
            &format!("trylock {kind} {name} {WAIT_MS} -1"),
            guard.unlock(),
        )
        .await;
    assert!(got.bool(), "Java acquires after redlease's unlock");
    assert!(java.call(&b, &format!("held {kind} {name}")).await.bool());
    java.call(&b, &format!("unlock {kind} {name}"))
        .await
        .value();
    let exists: bool = side.query(&name, redis::cmd("EXISTS").arg(&name));
    assert!(!exists, "the last unlock leaves no key");
}

async fn rlock_and_lock_exclude_and_wake_each_other(side: Side) {
    both_ways(&side, "lock").await;
}

/// Redisson 4.4's non-reentrant lock keeps `RLock`'s layout (the count is
/// always 1), so redlease's lock excludes it the same way. 3.x has none.
async fn non_reentrant_lock_and_lock_exclude_and_wake_each_other(side: Side) {
    if !side.java.has_non_reentrant() {
        let name = side.name("nonreentrant");
        let reply = side
            .java
            .call(&name, &format!("trylock nonreentrant {name} 0 -1"))
            .await;
        assert_eq!(reply.error_class(), "Unsupported", "{}", reply.text);
        return;
    }
    both_ways(&side, "nonreentrant").await;
}

/// `forceUnlock()` in Java deletes a lock redlease holds and publishes 0:
/// a redlease waiter acquires at once, and the holder's guard learns at its
/// next renewal that the lock is another's (`lost()`). redlease's `admin::force_unlock` does
/// the same to a lock Java holds, and wakes a Java waiter.
async fn force_unlock_on_either_side_frees_the_other(side: Side) {
    let (java, name) = (side.java, side.name("force"));
    let (a, b) = (format!("{name}/a"), format!("{name}/b"));

    // The holder's client renews every 100 ms, to learn of the loss soon.
    let holder = side
        .deploy
        .rust_builder()
        .watchdog_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let held = holder.lock(&name).try_lock().await.unwrap();
    let lock = side.rust.lock(&name);
    let (guard, _) = side
        .redlease_woken_by_java(
            &lock_channel(&name),
            async move { lock.try_lock_for(WAIT).await },
            &a,
            &format!("forceunlock lock {name}"),
        )
        .await;
    // The first guard is told, and its release is refused: the lock is
    // someone else's now.
    let reason = tokio::time::timeout(Duration::from_secs(2), held.lost())
        .await
        .expect("the holder learns of the loss at its next renewal");
    assert_eq!(reason, redlease::LostReason::OwnerChanged);
    let refused = held.unlock().await.unwrap_err();
    assert!(refused.is_not_owner(), "{refused}");
    guard.unlock().await.unwrap();

    assert!(
        java.call(&a, &format!("trylock lock {name} 0 -1"))
            .await
            .bool()
    );
    let pending = java.send(&b, &format!("trylock lock {name} {WAIT_MS} -1"));
    side.until_subscribed(&lock_channel(&name), 1).await;
    let forced_at = now_us();
    let found = redlease::admin::force_unlock(&side.rust, &name)
        .await
        .unwrap();
    assert!(found.removed, "redlease's force_unlock deletes Java's lock");
    let field = format!("{}:", java.id());
    assert!(
        found.owners()[0].field.starts_with(&field),
        "it was Java's: {found:?}"
    );
    let got = java.reply(pending).await;
    assert!(
        got.bool(),
        "a Java waiter acquires after redlease's force_unlock"
    );
    let woke = after(forced_at, got.end_us);
    assert!(
        woke < WOKEN_WITHIN_US,
        "Java woke {woke} µs after force_unlock"
    );
    let stale = java.call(&a, &format!("unlock lock {name}")).await;
    assert_eq!(
        stale.error_class(),
        "IllegalMonitorStateException",
        "{}",
        stale.text
    );
    java.call(&b, &format!("unlock lock {name}")).await.value();
}

/// Java's `lock()`, which waits with no limit, is woken by a redlease
/// release; a fixed lease on either side is never renewed, and the other
/// side's waiter takes the lock when it runs out (no message comes then).
async fn java_lock_forever_and_fixed_leases_meet_redlease(side: Side) {
    let (java, name) = (side.java, side.name("forever"));
    let (a, b) = (format!("{name}/a"), format!("{name}/b"));
    let lease = Duration::from_millis(1000);
    let slack = Duration::from_millis(1500);

    let guard = side.rust.lock(&name).try_lock().await.unwrap();
    let (got, _) = side
        .java_woken_by_redlease(
            &lock_channel(&name),
            &a,
            &format!("lock lock {name} -1"),
            guard.unlock(),
        )
        .await;
    got.value();
    java.call(&a, &format!("unlock lock {name}")).await.value();

    // Java holds with a fixed lease and never unlocks.
    let taken = java
        .call(&b, &format!("trylock lock {name} 0 {}", lease.as_millis()))
        .await;
    assert!(taken.bool());
    let pttl: i64 = side.query(&name, redis::cmd("PTTL").arg(&name));
    assert!(pttl > 0 && pttl <= 1000, "Java's fixed lease: pttl {pttl}");
    let lock = side.rust.lock(&name);
    let waiter = spawn_woken(async move { lock.try_lock_for(WAIT).await });
    let (guard, at) = waiter.await.unwrap();
    let guard = guard.expect("redlease takes the lock when Java's lease runs out");
    let took = Duration::from_micros(after(taken.start_us, at));
    assert!(
        took >= lease - Duration::from_millis(50),
        "Java's lease ended early: {took:?}"
    );
    assert!(
        took <= lease + slack,
        "redlease took {took:?} for a {lease:?} lease"
    );
    guard.unlock().await.unwrap();

    // redlease holds with a fixed lease and never unlocks.
    let started = now_us();
    let guard = side.rust.lock(&name).lease(lease).try_lock().await.unwrap();
    let got = java
        .call(&b, &format!("trylock lock {name} {WAIT_MS} -1"))
        .await;
    assert!(
        got.bool(),
        "Java takes the lock when redlease's lease runs out"
    );
    let took = Duration::from_micros(after(started, got.end_us));
    assert!(
        took <= lease + slack,
        "Java took {took:?} for a {lease:?} lease"
    );
    java.call(&b, &format!("unlock lock {name}")).await.value();
    assert!(guard.is_lost() || guard.unlock().await.unwrap_err().is_not_owner());
}

/// #40: a Java service holding the election's name with `RLock` leads: it
/// shows with its owner and no value, redlease campaigners are refused and
/// woken by its unlock; then the redlease leader excludes Java.
async fn issue_40_an_rlock_holder_leads_an_election(side: Side) {
    let (java, name) = (side.java, side.name("election"));
    let (a, b) = (format!("{name}/a"), format!("{name}/b"));
    assert!(
        java.call(&a, &format!("trylock lock {name} 0 -1"))
            .await
            .bool()
    );
    let election = side.rust.election(&name);
    let leader = election.leader().await.unwrap().expect("Java leads");
    assert_eq!(
        (leader.value, leader.epoch),
        (None, None),
        "{}",
        leader.owner
    );
    assert!(election.try_campaign("rust").await.unwrap_err().is_busy());
    let campaign = election.clone();
    let (leadership, _) = side
        .redlease_woken_by_java(
            &lock_channel(&name),
            async move { campaign.campaign_for("rust", WAIT).await },
            &a,
            &format!("unlock lock {name}"),
        )
        .await;
    let leader = election.leader().await.unwrap().expect("redlease leads");
    assert_eq!(leader.value.as_deref(), Some("rust"));
    assert!(
        !java
            .call(&b, &format!("trylock lock {name} 0 -1"))
            .await
            .bool(),
        "Java is refused while redlease leads"
    );
    leadership.resign().await.unwrap();
    assert!(
        java.call(&b, &format!("trylock lock {name} 0 -1"))
            .await
            .bool()
    );
    java.call(&b, &format!("unlock lock {name}")).await.value();
}
