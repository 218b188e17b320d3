//! `RedissonMultiLock` over `RLock`s and redlease's multi-lock: all or
//! none on both sides, so a multi-lock on either side excludes the other's
//! multi-lock and plain locks on any member, and a release wakes the other.

use super::driver::now_us;
use super::side::{
    Side, WAIT, WAIT_MS, WOKEN_WITHIN_US, after, everywhere, lock_channel, spawn_woken,
};

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
    let waiter = spawn_woken(async move { multi.try_lock_for(WAIT).await });
    side.until_subscribed(&lock_channel(&names[1]), 1).await;
    let unlock = java.call(&a, &format!("multi.unlock {first_two}")).await;
    unlock.value();
    let (guard, at) = waiter.await.unwrap();
    let guard = guard.expect("redlease's multi-lock acquires after Java's unlock");
    let woke = after(unlock.start_us, at);
    assert!(
        woke < WOKEN_WITHIN_US,
        "redlease woke {woke} µs after Java's unlock"
    );

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
    let pending = java.send(&b, &format!("multi.trylock {WAIT_MS} -1 {first_two}"));
    side.until_subscribed(&lock_channel(&names[1]), 1).await;
    let released = now_us();
    guard.unlock().await.unwrap();
    let got = java.reply(pending).await;
    assert!(
        got.bool(),
        "Java's multi-lock acquires after redlease's unlock"
    );
    let woke = after(released, got.end_us);
    assert!(
        woke < WOKEN_WITHIN_US,
        "Java woke {woke} µs after redlease's unlock"
    );
    java.call(&b, &format!("multi.unlock {first_two}"))
        .await
        .value();
}
