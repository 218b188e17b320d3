//! `RedissonMultiLock` over `RLock`s and redlease's multi-lock: all or
//! none on both sides, so a multi-lock on either side excludes the other's
//! multi-lock and plain locks on any member, and a release wakes the other.

use super::side::{Side, WAIT, WAIT_MS, everywhere, lock_channel};

everywhere!(multi_locks_exclude_each_other_on_any_member);

async fn multi_locks_exclude_each_other_on_any_member(side: Side) {
    let (java, base) = (side.java, side.name("multi"));
    let names: Vec<String> = (0..3).map(|i| format!("{base}:{i}")).collect();
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let first_two = format!("{},{}", names[0], names[1]);

    // Java holds members 0 and 1: redlease's multi-lock over 1 and 2 is
    // refused, takes nothing, and acquires when Java lets go.
    assert!(
        java.call(&a, &format!("multi.trylock 0 -1 {first_two}"))
            .await
            .bool()
    );
    let busy = side
        .rust
        .multi_lock([&names[1], &names[2]])
        .try_lock()
        .await
        .unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    assert!(
        side.rust
            .lock(&names[2])
            .try_lock()
            .await
            .unwrap()
            .unlock()
            .await
            .is_ok()
    );
    let multi = side.rust.multi_lock([&names[1], &names[2]]);
    let (guard, _) = side
        .redlease_woken_by_java(
            &lock_channel(&names[1]),
            async move { multi.try_lock_for(WAIT).await },
            &a,
            &format!("multi.unlock {first_two}"),
        )
        .await;

    // redlease holds 1 and 2: Java's multi-lock over 0 and 1 is refused and
    // leaves member 0 free; it acquires when redlease lets go.
    assert!(
        !java
            .call(&b, &format!("multi.trylock 0 -1 {first_two}"))
            .await
            .bool()
    );
    let exists: bool = side.query(&names[0], redis::cmd("EXISTS").arg(&names[0]));
    assert!(!exists, "a refused Java multi-lock holds no member");
    let (got, _) = side
        .java_woken_by_redlease(
            &lock_channel(&names[1]),
            &b,
            &format!("multi.trylock {WAIT_MS} -1 {first_two}"),
            guard.unlock(),
        )
        .await;
    assert!(
        got.bool(),
        "Java's multi-lock acquires after redlease's unlock"
    );
    java.call(&b, &format!("multi.unlock {first_two}"))
        .await
        .value();
}

everywhere!(issue_37_a_java_multi_unlock_with_a_lost_member_frees_the_others);

/// Issue #37: Redis lost one member of a Java multi-lock (a restart, a
/// failover), and the multi-lock's unlock is refused for it; the other
/// member is unlocked all the same, so the name is free for the next
/// holder. The driver used `RedissonMultiLock.unlock()`, which stops at the
/// first member no longer held and left the rest held and renewed by the
/// watchdog for as long as the process lived (the judge's restart phase
/// found a name nobody could take again).
async fn issue_37_a_java_multi_unlock_with_a_lost_member_frees_the_others(side: Side) {
    let (java, base) = (side.java, side.name("multi-lost"));
    let names: Vec<String> = (0..2).map(|i| format!("{base}:{i}")).collect();
    let owner = format!("{base}/a");
    let both = format!("{},{}", names[0], names[1]);
    assert!(
        java.call(&owner, &format!("multi.trylock 0 -1 {both}"))
            .await
            .bool()
    );
    let _: i64 = side.query(&names[0], redis::cmd("DEL").arg(&names[0]));
    let refused = java.call(&owner, &format!("multi.unlock {both}")).await;
    assert!(
        refused.error_class().contains("IllegalMonitorState"),
        "{}",
        refused.error_class()
    );
    let exists: bool = side.query(&names[1], redis::cmd("EXISTS").arg(&names[1]));
    assert!(!exists, "the member still held was not unlocked");
    side.rust
        .lock(&names[1])
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}
