//! `RFairLock` and redlease's fair lock on one queue: waiters of both
//! sides are served in arrival order, each woken on its own channel.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::driver::Reply;
use super::side::{Side, WAIT, everywhere};
use crate::support::eventually;

everywhere!(fair_waiters_keep_their_places_across_clients);

/// A queued waiter of either side.
enum Waiter {
    Java(String, oneshot::Receiver<Reply>),
    Rust(JoinHandle<Result<redlease::LockGuard, redlease::Error>>),
}

impl Waiter {
    fn is_done(&mut self) -> bool {
        match self {
            Waiter::Java(_, rx) => {
                !matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
            }
            Waiter::Rust(task) => task.is_finished(),
        }
    }
}

/// A Java holder; behind it, in this order, Java `lock()` callers and
/// redlease waiters alternating: Java, Rust, Java, Rust. Each release hands
/// the lock to the next in that order, never to a later one.
async fn fair_waiters_keep_their_places_across_clients(side: Side) {
    let (java, name) = (side.java, side.name("fair"));
    let queue = format!("redisson_lock_queue:{{{name}}}");
    let queued = |n: i64| {
        let side = &side;
        let queue = queue.clone();
        let name = name.clone();
        async move {
            let reached = eventually(Duration::from_secs(10), || {
                side.query::<i64>(&name, redis::cmd("LLEN").arg(&queue)) >= n
            })
            .await;
            assert!(reached.is_some(), "{n} waiters never queued");
        }
    };
    let holder = format!("{name}/holder");
    assert!(
        java.call(&holder, &format!("trylock fair {name} 0 -1"))
            .await
            .bool()
    );
    let mut waiters = Vec::new();
    for i in 0..4 {
        if i % 2 == 0 {
            let owner = format!("{name}/j{i}");
            let rx = java.send(&owner, &format!("lock fair {name} -1"));
            waiters.push(Waiter::Java(owner, rx));
        } else {
            let lock = side.rust.fair_lock(&name);
            waiters.push(Waiter::Rust(tokio::spawn(async move {
                lock.try_lock_for(WAIT).await
            })));
        }
        queued(i + 1).await;
    }
    java.call(&holder, &format!("unlock fair {name}"))
        .await
        .value();
    for turn in 0..waiters.len() {
        let (current, later) = waiters[turn..].split_first_mut().unwrap();
        match current {
            Waiter::Java(owner, rx) => {
                let got = java.reply(rx).await;
                got.value();
                for other in later.iter_mut() {
                    assert!(
                        !other.is_done(),
                        "a later waiter got the lock before waiter {turn}"
                    );
                }
                java.call(owner, &format!("unlock fair {name}"))
                    .await
                    .value();
            }
            Waiter::Rust(task) => {
                let guard = task
                    .await
                    .unwrap()
                    .expect("the redlease waiter gets its turn");
                for other in later.iter_mut() {
                    assert!(
                        !other.is_done(),
                        "a later waiter got the lock before waiter {turn}"
                    );
                }
                guard.unlock().await.unwrap();
            }
        }
    }
    let left: i64 = side.query(&name, redis::cmd("LLEN").arg(&queue));
    assert_eq!(left, 0, "no waiter is left in the queue");
}
