//! `RCountDownLatch` and redlease's latch: one count, and a latch opened by
//! one side frees the other's waiters. redlease's `try_set_count`
//! publishes `1` as Redisson's does; Java's waiters must not take it for
//! an opening.

use std::time::Duration;

use super::side::{Side, WAIT, WAIT_MS, everywhere};

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
    latch.count_down().await.unwrap();
    assert!(
        latch
            .wait_for(Duration::from_millis(100))
            .await
            .unwrap_err()
            .is_busy(),
        "one count left: a redlease waiter still waits"
    );
    let waiting = side.rust.count_down_latch(&name);
    // Freed by Java's count-down: an error (busy at WAIT) would fail it.
    side.redlease_woken_by_java(
        &channel(&name),
        async move { waiting.wait_for(WAIT).await },
        &owner,
        &format!("latch.countdown {name}"),
    )
    .await;

    // redlease sets 1 (publishing `1`, as Redisson's trySetCount does);
    // a Java waiter keeps waiting, and is freed by redlease's count-down.
    let waiter_owner = format!("{name}/waiter");
    assert!(latch.try_set_count(1).await.unwrap());
    let (got, _) = side
        .java_woken_by_redlease(
            &channel(&name),
            &waiter_owner,
            &format!("latch.await {name} {WAIT_MS}"),
            async {
                // Armed again while Java waits: refused, and Java still
                // counts 1.
                assert!(!latch.try_set_count(1).await?);
                let count = java.call(&owner, &format!("latch.count {name}")).await;
                assert_eq!(count.number(), 1);
                latch.count_down().await
            },
        )
        .await;
    assert!(
        got.bool(),
        "Java's waiter is freed by redlease's count-down"
    );
}

/// A deleted latch reads as count 0, open. Redisson's `delete` publishes
/// `1` ("new count"), which leaves its waiters asleep until their wait
/// runs out; redlease's publishes `0`, which frees them at once.
async fn a_latch_deleted_by_redlease_frees_java_waiters(side: Side) {
    let name = side.name("latch-delete");
    let owner = format!("{name}/waiter");
    let latch = side.rust.count_down_latch(&name);
    assert!(latch.try_set_count(3).await.unwrap());
    let (got, _) = side
        .java_woken_by_redlease(
            &channel(&name),
            &owner,
            &format!("latch.await {name} {WAIT_MS}"),
            latch.delete(),
        )
        .await;
    assert!(got.bool(), "Java's waiter sees the deleted latch open");
}
