use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, across_a_stall, client, client_with_watchdog, evalsha_calls, eventually, exists,
    impatient_client, unique,
};

/// The hold count of `field` in the lock hash (0 when absent).
fn count(server: &RedisServer, name: &str, field: &str) -> i64 {
    redis::cmd("HGET")
        .arg(name)
        .arg(field)
        .query::<Option<i64>>(&mut server.connection())
        .unwrap()
        .unwrap_or(0)
}

/// In one scope, a nested acquisition of a held lock re-enters it at once:
/// same owner field, count up by one per level and down on each release,
/// the key deleted only after the outermost release. The re-entered guards
/// carry the first acquisition's fencing token.
#[tokio::test]
async fn nested_acquisition_in_a_scope_reenters() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("reenter");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let field = outer.owner().to_owned();
        let started = Instant::now();
        let middle = c.lock(&name).try_lock().await.unwrap();
        let inner = c
            .lock(&name)
            .try_lock_for(Duration::from_secs(5))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "re-entry waited"
        );
        assert_eq!(middle.owner(), field);
        assert_eq!(inner.owner(), field);
        assert_eq!(
            inner.fencing_token().unwrap(),
            outer.fencing_token().unwrap()
        );
        assert_eq!(count(server, &name, &field), 3);
        inner.unlock().await.unwrap();
        assert_eq!(count(server, &name, &field), 2);
        middle.unlock().await.unwrap();
        assert_eq!(count(server, &name, &field), 1);
        assert!(exists(server, &name));
        outer.unlock().await.unwrap();
        assert!(!exists(server, &name));
    })
    .await;
}

/// A re-entry is one script call: no subscription, no waiting.
#[tokio::test]
async fn reentry_costs_one_call() {
    let server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("reenter-calls");
    redlease::scope(async {
        let outer = c.lock(&name).lock().await.unwrap();
        // The first re-entry loads the script (NOSCRIPT, SCRIPT LOAD, retry).
        c.lock(&name).lock().await.unwrap().unlock().await.unwrap();
        let before = evalsha_calls(&server);
        let inner = c.lock(&name).lock().await.unwrap();
        assert_eq!(evalsha_calls(&server), before + 1);
        assert_eq!(
            c.renewing(),
            1,
            "the re-entry registered a renewal of its own"
        );
        inner.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
}

/// Outside a scope, and across tasks (a task spawned in a scope is not in
/// it), acquisitions of one lock still exclude each other.
#[tokio::test]
async fn tasks_and_unscoped_calls_still_exclude() {
    let c = client().await;
    let name = unique("reenter-exclude");
    let held = c.lock(&name).try_lock().await.unwrap();
    assert!(c.lock(&name).try_lock().await.unwrap_err().is_busy());
    held.unlock().await.unwrap();

    redlease::scope(async {
        let held = c.lock(&name).try_lock().await.unwrap();
        let other = tokio::spawn({
            let lock = c.lock(&name);
            async move { lock.try_lock().await.map(drop) }
        });
        assert!(other.await.unwrap().unwrap_err().is_busy());
        let other_scope = tokio::spawn({
            let lock = c.lock(&name);
            async move { redlease::scope(lock.try_lock()).await.map(drop) }
        });
        assert!(other_scope.await.unwrap().unwrap_err().is_busy());
        // Another client is another owner, scope or not.
        let other_client = client().await;
        assert!(
            other_client
                .lock(&name)
                .try_lock()
                .await
                .unwrap_err()
                .is_busy()
        );
        held.unlock().await.unwrap();
    })
    .await;
}

/// Guards may be released in any order: while any guard of the hold lives,
/// the watchdog keeps renewing it.
#[tokio::test]
async fn outer_released_first_keeps_the_inner_hold_renewed() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(300);
    let c = client_with_watchdog(server, timeout).await;
    let name = unique("reenter-order");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let inner = c.lock(&name).try_lock().await.unwrap();
        outer.unlock().await.unwrap();
        tokio::time::sleep(timeout * 3).await;
        assert!(inner.is_held().await.unwrap(), "the inner hold expired");
        assert!(!inner.is_lost());
        inner.unlock().await.unwrap();
        assert!(!exists(server, &name));
        assert_eq!(c.renewing(), 0);
    })
    .await;
}

/// A re-entry cancelled at any point leaves the count as it was: the outer
/// hold is neither raised for good nor taken away.
#[tokio::test]
async fn cancelled_reentry_leaves_the_count_as_it_was() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("reenter-cancel");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let field = outer.owner().to_owned();
        // Dropped at once, the reply is still on its way (the task undoes
        // it); dropped after a pause, it has arrived and not been taken (the
        // dropped receiver undoes it).
        for (polls, pause) in (0..6).flat_map(|p| [(p, false), (p, true)]) {
            let lock = c.lock(&name);
            let mut fut = Box::pin(lock.try_lock());
            for _ in 0..polls {
                // Done early (a fast reply): its guard is dropped, and so
                // released, like any other.
                if futures_poll_once(fut.as_mut()).await.is_some() {
                    break;
                }
            }
            if pause {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            drop(fut);
            let settled =
                eventually(Duration::from_secs(2), || count(server, &name, &field) == 1).await;
            assert!(
                settled.is_some(),
                "count after cancelling at poll {polls}: {}",
                count(server, &name, &field)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(count(server, &name, &field), 1, "poll {polls}");
        }
        outer.unlock().await.unwrap();
        assert!(!exists(server, &name));
    })
    .await;
}

/// Polls a future once, yielding to the runtime after.
async fn futures_poll_once<F: std::future::Future + Unpin>(fut: F) -> Option<F::Output> {
    let mut fut = fut;
    let out = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut fut).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await;
    tokio::task::yield_now().await;
    out
}

/// When the scope's hold was lost (here: deleted behind its back), a nested
/// acquisition does not re-enter a hold that is gone: it acquires anew, as
/// a separate owner.
#[tokio::test]
async fn a_lost_hold_is_not_reentered() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("reenter-lost");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let _: () = redis::cmd("DEL")
            .arg(&name)
            .query(&mut server.connection())
            .unwrap();
        let again = c.lock(&name).try_lock().await.unwrap();
        assert_ne!(again.owner(), outer.owner());
        assert!(again.fencing_token().unwrap() > outer.fencing_token().unwrap());
        assert!(outer.unlock().await.unwrap_err().is_not_owner());
        again.unlock().await.unwrap();
        assert!(!exists(server, &name));
    })
    .await;
}

/// A re-entry inherits the hold's lease mode: a short fixed lease asked for
/// inside a watchdog hold does not shorten it.
#[tokio::test]
async fn reentry_keeps_the_holds_lease_mode() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(server, Duration::from_millis(600)).await;
    let name = unique("reenter-mode");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let inner = c
            .lock(&name)
            .lease(Duration::from_millis(50))
            .try_lock()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!inner.is_lost());
        assert!(inner.is_held().await.unwrap());
        inner.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
}

/// A hold that the library considers lost is not re-entered even while its
/// key is still in Redis: here a fixed lease ran out by our clock while its
/// key was kept alive behind our back. The nested acquisition is a new
/// owner, and finds the lock busy.
#[tokio::test]
async fn a_hold_lost_by_our_clock_is_not_reentered() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("reenter-expired");
    redlease::scope(async {
        let lease = Duration::from_millis(200);
        let outer = c.lock(&name).lease(lease).try_lock().await.unwrap();
        let _: () = redis::cmd("PEXPIRE")
            .arg(&name)
            .arg(10_000)
            .query(&mut server.connection())
            .unwrap();
        tokio::time::sleep(lease + Duration::from_millis(20)).await;
        assert!(outer.is_lost());
        let err = c.lock(&name).try_lock().await.unwrap_err();
        assert!(err.is_busy(), "{err:?}");
        outer.unlock().await.unwrap();
        assert!(!exists(server, &name));
    })
    .await;
}

/// Issue #37: a re-entered guard's `unlock()` whose reply was lost (the
/// server stalled past the response time-out) failed with a time-out, and
/// its Drop sent the release again: when the first had run, the repeat
/// took back the outer guard's hold too, and the lock was free while the
/// outer guard still held it. Now the release carries a request id and
/// Redisson 4's unlock latch (`redisson_unlock_latch:{name}:<id>`), is sent
/// again until answered, and a repeat answers from the latch: one hold
/// taken back, and the caller told it worked. For every kind that counts
/// re-entry in Redis, and for a re-entered guard dropped in the stall.
#[tokio::test]
async fn issue_37_a_reentered_release_whose_reply_is_lost_takes_back_one_hold() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    for kind in ["lock", "fair", "write", "read"] {
        for how in ["unlock", "drop"] {
            let name = unique("reentry-lost-reply");
            let lock = match kind {
                "lock" => c.lock(&name),
                "fair" => c.fair_lock(&name),
                "write" => c.read_write_lock(&name).write(),
                _ => c.read_write_lock(&name).read(),
            };
            redlease::scope(async {
                let outer = lock.try_lock().await.unwrap();
                let inner = lock.try_lock().await.unwrap();
                assert_eq!(inner.owner(), outer.owner());
                assert_eq!(count(&server, &name, outer.owner()), 2, "{kind}");
                let answered = across_a_stall(&server, async move {
                    match how {
                        "unlock" => inner.unlock().await,
                        _ => {
                            drop(inner);
                            Ok(())
                        }
                    }
                })
                .await;
                let one = eventually(Duration::from_secs(5), || {
                    count(&server, &name, outer.owner()) <= 1
                })
                .await;
                assert!(
                    one.is_some(),
                    "{kind} {how}: the inner hold was not taken back"
                );
                // Every attempt has reached the server by now.
                tokio::time::sleep(Duration::from_millis(300)).await;
                assert_eq!(
                    count(&server, &name, outer.owner()),
                    1,
                    "{kind} {how}: the outer guard's hold was taken back too"
                );
                assert!(answered.is_ok(), "{kind} {how}: {answered:?}");
                assert!(outer.is_held().await.unwrap(), "{kind} {how}");
                outer.unlock().await.unwrap();
            })
            .await;
            assert!(!exists(&server, &name), "{kind} {how}");
        }
    }
}

/// Issue #37: the latch a release leaves is Redisson 4's, named and valued
/// as its `unlockInnerAsync` writes it (`0`: holds remain; `1`: deleted),
/// and gone within the answers' records' 40 s.
#[tokio::test]
async fn issue_37_a_release_leaves_redissons_unlock_latch() {
    let server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("reentry-latch");
    redlease::scope(async {
        let outer = c.lock(&name).try_lock().await.unwrap();
        let inner = c.lock(&name).try_lock().await.unwrap();
        inner.unlock().await.unwrap();
        outer.unlock().await.unwrap();
    })
    .await;
    let mut conn = server.connection();
    let latches: Vec<String> = redis::cmd("KEYS")
        .arg(format!("redisson_unlock_latch:{{{name}}}:*"))
        .query(&mut conn)
        .unwrap();
    assert_eq!(latches.len(), 2, "{latches:?}");
    let mut answers = Vec::new();
    for latch in &latches {
        let value: String = redis::cmd("GET").arg(latch).query(&mut conn).unwrap();
        let ttl: i64 = redis::cmd("PTTL").arg(latch).query(&mut conn).unwrap();
        assert!(ttl > 0 && ttl <= 40_000, "{latch}: {ttl} ms");
        answers.push(value);
    }
    answers.sort();
    assert_eq!(answers, ["0", "1"]);
}
