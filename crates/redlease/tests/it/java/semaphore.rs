//! `RSemaphore` and `RPermitExpirableSemaphore` against redlease's
//! semaphores: one count of permits for both sides, and a release on
//! either side wakes a waiter on the other.

use super::driver::now_us;
use super::side::{
    Side, WAIT, WAIT_MS, WOKEN_WITHIN_US, after, braced, everywhere, semaphore_channel,
};

everywhere!(semaphore_permits_are_counted_once_across_both_sides);
everywhere!(expirable_permits_are_counted_once_across_both_sides);
everywhere!(a_count_at_or_below_zero_is_not_announced_to_java);

async fn semaphore_permits_are_counted_once_across_both_sides(side: Side) {
    let (java, name) = (side.java, side.name("sem"));
    let owner = format!("{name}/a");
    let semaphore = side.rust.semaphore(&name);
    assert!(
        java.call(&owner, &format!("sem.trysetpermits {name} 2"))
            .await
            .bool()
    );
    assert!(
        !semaphore.try_set_available(5).await.unwrap(),
        "Java set them first"
    );
    semaphore.try_acquire(1).await.unwrap().forget();
    assert!(
        java.call(&owner, &format!("sem.tryacquire {name} 1 0"))
            .await
            .bool()
    );
    assert_eq!(semaphore.available_permits().await.unwrap(), 0);
    assert_eq!(
        java.call(&owner, &format!("sem.available {name}"))
            .await
            .number(),
        0
    );
    assert!(semaphore.try_acquire(1).await.unwrap_err().is_busy());
    assert!(
        !java
            .call(&owner, &format!("sem.tryacquire {name} 1 0"))
            .await
            .bool()
    );

    // A redlease release wakes a Java waiter.
    let (got, _) = side
        .java_woken_by_redlease(
            &semaphore_channel(&name),
            &owner,
            &format!("sem.tryacquire {name} 1 {WAIT_MS}"),
            semaphore.release(1),
        )
        .await;
    assert!(
        got.bool(),
        "Java's waiter gets the permit redlease released"
    );

    // A Java release wakes a redlease waiter.
    let waiting = side.rust.semaphore(&name);
    let (got, _) = side
        .redlease_woken_by_java(
            &semaphore_channel(&name),
            async move { waiting.try_acquire_for(1, WAIT).await },
            &owner,
            &format!("sem.release {name} 1"),
        )
        .await;
    // Kept taken: released by count below.
    got.forget();

    // Both hold one again: two releases give back exactly two.
    semaphore.release(1).await.unwrap();
    java.call(&owner, &format!("sem.release {name} 1"))
        .await
        .value();
    assert_eq!(semaphore.available_permits().await.unwrap(), 2);
}

async fn expirable_permits_are_counted_once_across_both_sides(side: Side) {
    let (java, name) = (side.java, side.name("xsem"));
    let owner = format!("{name}/a");
    let semaphore = side.rust.expirable_semaphore(&name);
    assert!(semaphore.try_set_total(1).await.unwrap());
    assert!(
        !java
            .call(&owner, &format!("xsem.trysetpermits {name} 3"))
            .await
            .bool()
    );

    // Java takes the only permit (30 s lease); redlease waits for it.
    let id = java
        .call(&owner, &format!("xsem.tryacquire {name} 0 30000"))
        .await;
    let id = id.value().to_owned();
    assert_ne!(id, "null");
    let busy = semaphore.try_acquire().await.unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    assert_eq!(semaphore.acquired_permits().await.unwrap(), 1);
    let waiting = side.rust.expirable_semaphore(&name);
    let (permit, _) = side
        .redlease_woken_by_java(
            &semaphore_channel(&name),
            async move { waiting.try_acquire_for(WAIT).await },
            &owner,
            &format!("xsem.release {name} {id}"),
        )
        .await;

    // redlease holds it; Java waits, and gets it on redlease's release.
    let refused = java
        .call(&owner, &format!("xsem.tryacquire {name} 0 30000"))
        .await;
    assert_eq!(refused.value(), "null");
    let (got, _) = side
        .java_woken_by_redlease(
            &semaphore_channel(&name),
            &owner,
            &format!("xsem.tryacquire {name} {WAIT_MS} 30000"),
            permit.release(),
        )
        .await;
    let id = got.value().to_owned();
    assert_ne!(
        id, "null",
        "Java's waiter gets the permit redlease released"
    );
    // redlease can release Java's permit by its id (Redisson's cross-process use).
    semaphore.release_by_id(&id).await.unwrap();
    assert_eq!(semaphore.available_permits().await.unwrap(), 1);
    let timeout: i64 = side.query(
        &name,
        redis::cmd("ZCARD").arg(format!("{}:timeout", braced(&name))),
    );
    assert_eq!(timeout, 0, "no permit is left in the timeout set");
}

/// Redisson's semaphore handler hands the published count to
/// `java.util.concurrent.Semaphore.release`, which throws on a negative
/// number: uncaught on Redisson's executor thread (observed: `uncaught
/// redisson-... java.lang.IllegalArgumentException`). A count at or below
/// zero frees nobody, so redlease announces a new count only when it is
/// above zero; Java's waiter still wakes when permits come back.
async fn a_count_at_or_below_zero_is_not_announced_to_java(side: Side) {
    let (java, name) = (side.java, side.name("negative"));
    let owner = format!("{name}/a");
    let mark = java.log_mark();
    let semaphore = side.rust.semaphore(&name);
    assert!(semaphore.try_set_available(0).await.unwrap());
    let pending = java.send(&owner, &format!("sem.tryacquire {name} 1 {WAIT_MS}"));
    side.until_subscribed(&semaphore_channel(&name), 1).await;
    semaphore.add_permits(-2).await.unwrap();
    semaphore.release(1).await.unwrap();
    assert_eq!(semaphore.available_permits().await.unwrap(), -1);
    let released = now_us();
    semaphore.release(2).await.unwrap();
    let got = java.reply(pending).await;
    assert!(got.bool(), "Java's waiter gets the permit");
    let woke = after(released, got.end_us);
    assert!(
        woke < WOKEN_WITHIN_US,
        "Java woke {woke} µs after the count rose above zero"
    );

    // The same for expirable permits: a release into a negative count.
    let xname = format!("{name}:x");
    let expirable = side.rust.expirable_semaphore(&xname);
    assert!(expirable.try_set_total(1).await.unwrap());
    let permit = expirable.try_acquire().await.unwrap();
    expirable.add_permits(-2).await.unwrap();
    let pending = java.send(&owner, &format!("xsem.tryacquire {xname} {WAIT_MS} 30000"));
    side.until_subscribed(&semaphore_channel(&xname), 1).await;
    permit.release().await.unwrap();
    assert_eq!(expirable.available_permits().await.unwrap(), -1);
    expirable.add_permits(2).await.unwrap();
    let id = java.reply(pending).await;
    assert_ne!(
        id.value(),
        "null",
        "Java's waiter gets the expirable permit"
    );
    let complaints = java.complaints_since(mark);
    assert!(complaints.is_empty(), "the JVM complained: {complaints:?}");
}
