//! `RReadWriteLock` and redlease's read-write lock on one name: a Java
//! reader and a redlease reader share the read lock, and a writer from
//! either side waits for both; a redlease writer's downgrade publishes `1`
//! (Redisson publishes nothing there), which Java must take as "readers,
//! try again".

use std::time::Duration;

use super::side::{Side, WAIT, WAIT_MS, braced, everywhere};

everywhere!(readers_share_and_a_writer_of_either_side_waits_for_both);
everywhere!(a_redlease_downgrade_wakes_java_readers);

/// `redisson_rwlock:{name}`: both sides' waiters' channel.
fn channel(name: &str) -> String {
    format!("redisson_rwlock:{}", braced(name))
}

async fn readers_share_and_a_writer_of_either_side_waits_for_both(side: Side) {
    let (java, name) = (side.java, side.name("rw"));
    let (reader, writer) = (format!("{name}/reader"), format!("{name}/writer"));
    let rw = side.rust.read_write_lock(&name);

    // A Java writer waits for a Java reader and a redlease reader.
    assert!(
        java.call(&reader, &format!("trylock read {name} 0 -1"))
            .await
            .bool()
    );
    let rust_read = rw.read().try_lock().await.expect("readers share");
    assert!(
        !java
            .call(&writer, &format!("trylock write {name} 0 -1"))
            .await
            .bool()
    );
    let (got, _) = side
        .java_woken_by_redlease(
            &channel(&name),
            &writer,
            &format!("trylock write {name} {WAIT_MS} -1"),
            async {
                java.call(&reader, &format!("unlock read {name}"))
                    .await
                    .value();
                tokio::time::sleep(Duration::from_millis(300)).await;
                let mode: String = side.query(&name, redis::cmd("HGET").arg(&name).arg("mode"));
                assert_eq!(mode, "read", "the Java writer waits for redlease's reader");
                rust_read.unlock().await
            },
        )
        .await;
    assert!(
        got.bool(),
        "the Java writer gets the lock once both readers left"
    );
    let busy = rw.read().try_lock().await.unwrap_err();
    assert!(
        busy.is_busy(),
        "a Java writer excludes redlease readers: {busy}"
    );
    java.call(&writer, &format!("unlock write {name}"))
        .await
        .value();

    // A redlease writer waits for a redlease reader and a Java reader.
    let rust_read = rw.read().try_lock().await.unwrap();
    assert!(
        java.call(&reader, &format!("trylock read {name} 0 -1"))
            .await
            .bool()
    );
    let busy = rw.write().try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{busy}");
    rust_read.unlock().await.unwrap();
    let write = rw.write();
    let (guard, _) = side
        .redlease_woken_by_java(
            &channel(&name),
            async move { write.try_lock_for(WAIT).await },
            &reader,
            &format!("unlock read {name}"),
        )
        .await;
    assert!(
        !java
            .call(&reader, &format!("trylock read {name} 0 -1"))
            .await
            .bool()
    );
    guard.unlock().await.unwrap();
}

/// A redlease writer that also reads (a downgrade, in an owner scope)
/// releases the write side: redlease publishes `1` on the channel, where
/// Redisson would publish nothing, and Java's waiting reader, woken by it,
/// gets the read lock at once instead of at its next timed retry. The JVM
/// logs no complaint about the message.
async fn a_redlease_downgrade_wakes_java_readers(side: Side) {
    let (java, name) = (side.java, side.name("downgrade"));
    let reader = format!("{name}/reader");
    let mark = java.log_mark();
    let rw = side.rust.read_write_lock(&name);
    let (write, read) = redlease::scope(async {
        let write = rw.write().try_lock().await.unwrap();
        let read = rw.read().try_lock().await.expect("a writer may read");
        (write, read)
    })
    .await;
    let (got, _) = side
        .java_woken_by_redlease(
            &channel(&name),
            &reader,
            &format!("trylock read {name} {WAIT_MS} -1"),
            write.unlock(),
        )
        .await;
    assert!(got.bool(), "Java's reader joins the downgraded reader");
    java.call(&reader, &format!("unlock read {name}"))
        .await
        .value();
    read.unlock().await.unwrap();
    let complaints = java.complaints_since(mark);
    assert!(complaints.is_empty(), "the JVM complained: {complaints:?}");
}
