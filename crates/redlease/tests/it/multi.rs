//! `MultiLock` (#16): all or none, no deadlock between opposite orders,
//! Redisson's layout per member, waking on a member's release, cancel
//! safety and loss.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, client, client_with_watchdog, evalsha_calls, eventually, exists, pttl, unique,
};

/// Overlapping multi-locks exclude each other, and a refused one leaves
/// none of its keys behind (not even those it could have taken).
#[tokio::test]
async fn overlapping_multi_locks_exclude_and_a_refused_one_leaves_nothing() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let (x, y, z) = (unique("multi-x"), unique("multi-y"), unique("multi-z"));
    let held = a
        .multi_lock([y.clone(), x.clone()])
        .try_lock()
        .await
        .unwrap();
    let names: Vec<&str> = held.guards().iter().map(|g| g.name()).collect();
    let mut sorted = vec![x.as_str(), y.as_str()];
    sorted.sort();
    assert_eq!(names, sorted, "taken in sorted order");
    let refused = b
        .multi_lock([z.clone(), y.clone()])
        .try_lock_for(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(refused.is_busy(), "{refused}");
    assert_eq!(refused.key(), Some(y.as_str()));
    assert!(!exists(server, &z), "a refused multi-lock left {z} held");
    assert!(a.lock(&z).try_lock().await.unwrap().unlock().await.is_ok());
    held.unlock().await.unwrap();
    assert!(!exists(server, &x) && !exists(server, &y));
    let both = b
        .multi_lock([z.clone(), y.clone()])
        .try_lock()
        .await
        .unwrap();
    assert!(both.fencing_token_of(&y).unwrap() > 0);
    assert!(both.fencing_token_of(&x).is_none());
    both.unlock().await.unwrap();
}

/// {a, b} and {b, a} from two clients, many rounds each: every round
/// completes (no deadlock), and the two never hold at once.
#[tokio::test]
async fn opposite_orders_never_deadlock() {
    let (c1, c2) = (client().await, client().await);
    let (a, b) = (unique("multi-a"), unique("multi-b"));
    let inside = Arc::new(AtomicU32::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (client, names) in [(c1, [a.clone(), b.clone()]), (c2, [b.clone(), a.clone()])] {
        let multi = client.multi_lock(names);
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..40 {
                let g = multi.try_lock_for(Duration::from_secs(5)).await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "both inside");
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                g.unlock().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .expect("deadlocked")
            .unwrap();
    }
    println!("80 rounds in {:?}", started.elapsed());
}

/// Dropping acquires at any point leaves no member held.
#[tokio::test]
async fn cancelled_multi_acquires_leave_nothing_behind() {
    let server = RedisServer::shared();
    let c = client().await;
    let names: Vec<String> = (0..3)
        .map(|i| unique(&format!("multi-cancel-{i}")))
        .collect();
    let multi = c.multi_lock(names.clone());
    for i in 0..40u64 {
        let limit = Duration::from_micros(i * 60);
        if let Ok(Ok(g)) = tokio::time::timeout(limit, multi.try_lock()).await {
            g.unlock().await.unwrap();
        }
    }
    let clear = eventually(Duration::from_secs(2), || {
        names.iter().all(|n| !exists(server, n))
    });
    assert!(clear.await.is_some(), "a member was left held");
}

/// A member lost behind the guard is reported with its name.
#[tokio::test]
async fn a_lost_member_is_reported_by_name() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(server, Duration::from_millis(300)).await;
    let (x, y) = (unique("multi-lost-x"), unique("multi-lost-y"));
    let g = c
        .multi_lock([x.clone(), y.clone()])
        .try_lock()
        .await
        .unwrap();
    redis::cmd("DEL")
        .arg(&y)
        .exec(&mut server.connection())
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), g.lost())
        .await
        .unwrap();
    assert_eq!(reason, redlease::LostReason::OwnerChanged);
    let lost: Vec<&str> = g
        .guards()
        .iter()
        .filter(|m| m.is_lost())
        .map(|m| m.name())
        .collect();
    assert_eq!(lost, [y.as_str()]);
    assert!(g.is_lost());
    let e = g.unlock().await.unwrap_err();
    assert!(e.is_not_owner(), "{e}");
    assert!(!exists(server, &x), "the other member was not released");
}

/// No names, or a bad one, is refused before anything is held.
#[tokio::test]
async fn bad_names_are_invalid_arguments() {
    let server = RedisServer::shared();
    let c = client().await;
    let e = c
        .multi_lock(Vec::<String>::new())
        .try_lock()
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let ok = unique("multi-bad");
    // Checked before anything is taken (on one node, one script call; on a
    // cluster an earlier slot's members may be taken, then released).
    let too_long = "z".repeat(redlease::MAX_NAME_LEN + 1);
    let e = c
        .multi_lock([too_long, ok.clone()])
        .try_lock()
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let released = eventually(Duration::from_secs(1), || !exists(server, &ok));
    assert!(released.await.is_some(), "{ok} was left held");
}

/// On one node every member goes in one script call: one round trip to
/// take four locks, one to find the busy one (which is named), and nothing
/// written by the refused call.
#[tokio::test]
async fn members_on_one_node_are_taken_in_one_script_call() {
    let server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let names: Vec<String> = (0..4).map(|i| unique(&format!("multi-one-{i}"))).collect();
    let multi = c.multi_lock(names.clone()).lease(Duration::from_secs(30));
    // The first call may load the script (NOSCRIPT, then EVALSHA again).
    multi.try_lock().await.unwrap().unlock().await.unwrap();
    let before = evalsha_calls(&server);
    let held = multi.try_lock().await.unwrap();
    assert_eq!(evalsha_calls(&server) - before, 1, "one acquire call");
    let tokens: Vec<u64> = held
        .guards()
        .iter()
        .map(|g| g.fencing_token().unwrap())
        .collect();
    assert!(tokens.iter().all(|&t| t > 0), "{tokens:?}");
    for name in &names {
        assert!(pttl(&server, name) > 29_000, "{name} has the lease");
    }
    held.unlock().await.unwrap();
    let foreign = c.lock(&names[2]).try_lock().await.unwrap();
    let before = evalsha_calls(&server);
    let e = multi.try_lock().await.unwrap_err();
    assert_eq!(evalsha_calls(&server) - before, 1, "one refused call");
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.key(), Some(names[2].as_str()));
    for (i, name) in names.iter().enumerate() {
        assert_eq!(exists(&server, name), i == 2, "{name}");
    }
    foreign.unlock().await.unwrap();
}

/// A member whose key holds another type is named in the error, and the
/// call leaves nothing held; so does a member whose fencing counter is not
/// an integer.
#[tokio::test]
async fn a_member_of_another_type_is_named_and_nothing_is_held() {
    let server = RedisServer::shared();
    let c = client().await;
    let names: Vec<String> = (0..3).map(|i| unique(&format!("multi-type-{i}"))).collect();
    let mut conn = server.connection();
    redis::cmd("SET")
        .arg(&names[1])
        .arg("a string")
        .exec(&mut conn)
        .unwrap();
    let e = c.multi_lock(names.clone()).try_lock().await.unwrap_err();
    assert!(e.is_wrong_type(), "{e}");
    assert_eq!(e.key(), Some(names[1].as_str()));
    assert!(!exists(server, &names[0]) && !exists(server, &names[2]));
    redis::cmd("DEL").arg(&names[1]).exec(&mut conn).unwrap();
    let counter = format!("redisson_lock_token:{{{}}}", names[2]);
    redis::cmd("SET")
        .arg(&counter)
        .arg("not a number")
        .exec(&mut conn)
        .unwrap();
    let e = c.multi_lock(names.clone()).try_lock().await.unwrap_err();
    assert!(e.to_string().contains(&counter), "{e}");
    assert!(
        names.iter().all(|n| !exists(server, n)),
        "a member was held"
    );
    redis::cmd("DEL").arg(&counter).exec(&mut conn).unwrap();
}

/// Inside an owner scope, a member the scope holds is re-entered (same
/// token, one more hold) and the others are taken together; releasing the
/// multi-lock leaves the scope's hold.
#[tokio::test]
async fn a_member_held_by_the_scope_is_reentered() {
    let server = RedisServer::shared();
    let c = client().await;
    let names: Vec<String> = (0..3)
        .map(|i| unique(&format!("multi-scope-{i}")))
        .collect();
    redlease::scope(async {
        let outer = c.lock(&names[1]).try_lock().await.unwrap();
        let multi = c.multi_lock(names.clone()).try_lock().await.unwrap();
        assert_eq!(
            multi.fencing_token_of(&names[1]),
            Some(outer.fencing_token().unwrap()),
            "re-entered"
        );
        let names_taken: Vec<&str> = multi.guards().iter().map(|g| g.name()).collect();
        assert_eq!(
            names_taken,
            names.iter().map(String::as_str).collect::<Vec<_>>()
        );
        multi.unlock().await.unwrap();
        assert!(exists(server, &names[1]), "the scope's hold was released");
        assert!(!exists(server, &names[0]) && !exists(server, &names[2]));
        outer.unlock().await.unwrap();
    })
    .await;
    assert!(!exists(server, &names[1]));
}
