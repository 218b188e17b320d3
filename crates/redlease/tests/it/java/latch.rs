//! `RCountDownLatch` and redlease's latch: one count, and a latch opened by
//! one side frees the other's waiters. redlease's `try_set_count`
//! publishes `1` as Redisson's does; Java's waiters must not take it for
//! an opening.

use super::driver::now_us;
use super::side::{Side, WAIT, WAIT_MS, WOKEN_WITHIN_US, after, everywhere, spawn_woken};

everywhere!(a_latch_opened_by_one_side_frees_the_others_waiters);
everywhere!(a_latch_deleted_by_redlease_frees_java_waiters);

/// `redisson_countdownlatch__channel__{name}`: the braces always added.
fn channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

async fn a_latch_opened_by_one_side_frees_the_others_waiters(side: Side) {
    let (java, name) = (side.java, side.name("latch"));
    let owner = format!("{name}/a");
    let latch = side.rust.count_down_latch(&name);

    // Java sets 2; a redlease waiter is freed by Java's second count-down.
    assert!(
        java.call(&owner, &format!("latch.trysetcount {name} 2"))
            .await
            .bool()
    );
    assert_eq!(latch.count().await.unwrap(), 2);
    let waiting = side.rust.count_down_latch(&name);
    let waiter = spawn_woken(async move { waiting.wait_for(WAIT).await });
    side.until_subscribed(&channel(&name), 1).await;
    latch.count_down().await.unwrap();
    assert!(
        !waiter.is_finished(),
        "one count left: the redlease waiter still waits"
    );
    let opened = java.call(&owner, &format!("latch.countdown {name}")).await;
    opened.value();
    let (open, at) = waiter.await.unwrap();
    assert!(
        open.unwrap(),
        "redlease's waiter is freed by Java's count-down"
    );
    let woke = after(opened.start_us, at);
    assert!(
        woke < WOKEN_WITHIN_US,
        "redlease woke {woke} µs after Java opened the latch"
    );

    // redlease sets 1 (publishing `1`, as Redisson's trySetCount does);
    // a Java waiter keeps waiting, and is freed by redlease's count-down.
    let waiter_owner = format!("{name}/waiter");
    assert!(latch.try_set_count(1).await.unwrap());
    let pending = java.send(&waiter_owner, &format!("latch.await {name} {WAIT_MS}"));
    side.until_subscribed(&channel(&name), 1).await;
    // A second latch set while Java waits publishes `1` again.
    assert!(!latch.try_set_count(1).await.unwrap());
    assert_eq!(
        java.call(&owner, &format!("latch.count {name}"))
            .await
            .number(),
        1
    );
    let opened = now_us();
    latch.count_down().await.unwrap();
    let got = java.reply(pending).await;
    assert!(
        got.bool(),
        "Java's waiter is freed by redlease's count-down"
    );
    let woke = after(opened, got.end_us);
    assert!(
        woke < WOKEN_WITHIN_US,
        "Java woke {woke} µs after redlease opened the latch"
    );
}

/// A deleted latch reads as count 0, open. Redisson's `delete` publishes
/// `1` ("new count"), which leaves its waiters asleep until their wait
/// runs out; redlease's publishes `0`, which frees them at once.
async fn a_latch_deleted_by_redlease_frees_java_waiters(side: Side) {
    let (java, name) = (side.java, side.name("latch-delete"));
    let owner = format!("{name}/waiter");
    let latch = side.rust.count_down_latch(&name);
    assert!(latch.try_set_count(3).await.unwrap());
    let pending = java.send(&owner, &format!("latch.await {name} {WAIT_MS}"));
    side.until_subscribed(&channel(&name), 1).await;
    let deleted = now_us();
    assert!(latch.delete().await.unwrap());
    let got = java.reply(pending).await;
    assert!(got.bool(), "Java's waiter sees the deleted latch open");
    let woke = after(deleted, got.end_us);
    assert!(
        woke < WOKEN_WITHIN_US,
        "Java woke {woke} µs after the delete"
    );
}
