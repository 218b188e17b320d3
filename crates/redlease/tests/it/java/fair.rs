//! `RFairLock` and redlease's fair lock on one queue: waiters of both
//! sides are served in arrival order, each woken on its own channel, and
//! neither side's acquire drops the other's live waiters (#36).

use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::driver::{Reply, now_us};
use super::side::{Side, everywhere};
use crate::support::eventually;

everywhere!(every_order_of_java_and_redlease_waiters_keeps_its_places);

/// Which side a waiter is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Java,
    Rust,
}

/// How the Java waiters wait: `tryLock` with a wait (Redisson takes that
/// wait as the waiter's own), or `lock()` (Redisson's
/// `fairLockWaitTimeout`, 5 minutes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JavaWait {
    TryLock,
    Lock,
}

/// One run of the matrix: a holder, then three waiters queued in `order`,
/// each keeping the lock for `hold` once it gets it.
#[derive(Clone, Copy, Debug)]
struct Scenario {
    order: [Who; 3],
    java_wait: JavaWait,
    hold: Duration,
}

/// The redlease clients' watchdog timeout, which is also a redlease
/// waiter's liveness lease in the queue: a long hold outlasts it, so that a
/// Java waiter whose deadline was cut down to a liveness lease is dropped.
const WATCHDOG: Duration = Duration::from_secs(3);

/// A short hold, and a long one: longer than [`WATCHDOG`].
const SHORT: Duration = Duration::from_millis(50);
const LONG: Duration = Duration::from_secs(4);

/// How long every waiter waits: longer than the three holds before it.
const WAIT: Duration = Duration::from_secs(30);

/// Redisson's unlock wakes the head waiter on its own channel: a waiter
/// that gets the lock later than this after the release was not woken
/// (its own timed retry came first), or was dropped and queued again.
const HANDED_WITHIN_US: u64 = 1_500_000;

/// Every order of three waiters of either side, with Java's `tryLock`
/// (with a wait) and `lock()`, and short and long holds: 32 runs on one
/// deployment, all at once on names of their own. After each hand-off,
/// the queue in Redis is exactly the waiters still waiting, in arrival
/// order, each with a deadline that outlives the hold (a Java waiter does
/// not refresh its own), and the lock was handed over by the release's
/// message, not by a retry. The holder is of the side the first waiter is
/// not, so that both kinds of holder are served too.
async fn every_order_of_java_and_redlease_waiters_keeps_its_places(side: Side) {
    let rust = side
        .deploy
        .rust_builder()
        .watchdog_timeout(WATCHDOG)
        .build()
        .await
        .unwrap();
    let mut scenarios = Vec::new();
    for bits in 0..8u8 {
        let order = [0, 1, 2].map(|i| match bits >> i & 1 {
            0 => Who::Java,
            _ => Who::Rust,
        });
        for java_wait in [JavaWait::TryLock, JavaWait::Lock] {
            for hold in [SHORT, LONG] {
                scenarios.push(Scenario {
                    order,
                    java_wait,
                    hold,
                });
            }
        }
    }
    let runs = scenarios.iter().enumerate().map(|(i, s)| {
        let name = side.name(&format!("fair{i}"));
        let (side, rust) = (&side, &rust);
        async move { (s, run(side, rust, &name, *s).await) }
    });
    let failed: Vec<String> = join_all(runs)
        .await
        .into_iter()
        .filter_map(|(s, r)| r.err().map(|e| format!("{s:?}: {e}")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 32 runs failed ({:?}):\n{}",
        failed.len(),
        side.deploy,
        failed.join("\n")
    );
}

/// A queued waiter of either side.
enum Waiter {
    Java {
        owner: String,
        rx: oneshot::Receiver<Reply>,
    },
    Rust(JoinHandle<(Result<redlease::LockGuard, redlease::Error>, u64)>),
}

impl Waiter {
    fn is_done(&mut self) -> bool {
        match self {
            Waiter::Java { rx, .. } => {
                !matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
            }
            Waiter::Rust(task) => task.is_finished(),
        }
    }
}

/// A holder taken by either side, to release.
enum Holder {
    Java(String),
    Rust(redlease::LockGuard),
}

impl Holder {
    /// Releases it; returns when the release began (Unix µs).
    async fn release(self, side: &Side, name: &str) -> Result<u64, String> {
        let at = now_us();
        match self {
            Holder::Java(owner) => {
                let reply = side.java.call(&owner, &format!("unlock fair {name}")).await;
                if !reply.ok {
                    return Err(format!("Java's unlock: {}", reply.text));
                }
                Ok(reply.start_us)
            }
            Holder::Rust(guard) => {
                guard.unlock().await.map_err(|e| format!("unlock: {e}"))?;
                Ok(at)
            }
        }
    }
}

/// One scenario on `name`; `Err` says what went wrong.
async fn run(side: &Side, rust: &redlease::Client, name: &str, s: Scenario) -> Result<(), String> {
    let queue = format!("redisson_lock_queue:{{{name}}}");
    let timeouts = format!("redisson_lock_timeout:{{{name}}}");
    let java_wait = || match s.java_wait {
        JavaWait::TryLock => format!("trylock fair {name} {} -1", WAIT.as_millis()),
        JavaWait::Lock => format!("lock fair {name} -1"),
    };
    // The holder, of the side the first waiter is not.
    let mut holder = match s.order[0] {
        Who::Rust => {
            let owner = format!("{name}/holder");
            let got = side
                .java
                .call(&owner, &format!("trylock fair {name} 0 -1"))
                .await;
            if got.text != "true" {
                return Err(format!("the Java holder got {}", got.text));
            }
            Holder::Java(owner)
        }
        Who::Java => Holder::Rust(
            rust.fair_lock(name)
                .try_lock()
                .await
                .map_err(|e| format!("the holder: {e}"))?,
        ),
    };
    // The waiters, queued one at a time; each one's field is the queue's
    // new tail.
    let mut waiters = Vec::new();
    let mut fields = Vec::new();
    for (i, who) in s.order.iter().enumerate() {
        waiters.push(match who {
            Who::Java => {
                let owner = format!("{name}/j{i}");
                let rx = side.java.send(&owner, &java_wait());
                Waiter::Java { owner, rx }
            }
            Who::Rust => {
                let lock = rust.fair_lock(name);
                Waiter::Rust(tokio::spawn(async move {
                    let got = lock.try_lock_for(WAIT).await;
                    (got, now_us())
                }))
            }
        });
        let joined = eventually(Duration::from_secs(10), || {
            side.query::<i64>(name, redis::cmd("LLEN").arg(&queue)) > i as i64
        })
        .await;
        if joined.is_none() {
            return Err(format!("waiter {i} ({who:?}) never queued"));
        }
        let tail: String = side.query(name, redis::cmd("LINDEX").arg(&queue).arg(-1));
        fields.push(tail);
    }
    for turn in 0..waiters.len() {
        // Everyone still waiting is queued, in order, alive long enough.
        check_queue(
            side,
            name,
            &queue,
            &timeouts,
            &fields[turn..],
            &s.order[turn..],
            s.hold,
        )
        .map_err(|e| format!("before hand-off {turn}: {e}"))?;
        let released = holder.release(side, name).await?;
        let (current, later) = waiters[turn..].split_first_mut().unwrap();
        let (next, at) = match current {
            Waiter::Java { owner, rx } => {
                let got = side.java.reply(rx).await;
                if got.text != "true" && got.text != "-" {
                    return Err(format!("Java waiter {turn} got {}", got.text));
                }
                (Holder::Java(owner.clone()), got.end_us)
            }
            Waiter::Rust(task) => {
                let (got, at) = task.await.unwrap();
                let guard = got.map_err(|e| format!("redlease waiter {turn}: {e}"))?;
                (Holder::Rust(guard), at)
            }
        };
        let handed = at.saturating_sub(released);
        if handed > HANDED_WITHIN_US {
            return Err(format!(
                "waiter {turn} ({:?}) got the lock {handed} µs after the release",
                s.order[turn]
            ));
        }
        if later.iter_mut().any(Waiter::is_done) {
            return Err(format!("a later waiter finished before waiter {turn}"));
        }
        check_queue(
            side,
            name,
            &queue,
            &timeouts,
            &fields[turn + 1..],
            &s.order[turn + 1..],
            s.hold,
        )
        .map_err(|e| format!("after hand-off {turn}: {e}"))?;
        tokio::time::sleep(s.hold).await;
        holder = next;
    }
    holder.release(side, name).await?;
    let left: (i64, i64) = (
        side.query(name, redis::cmd("LLEN").arg(&queue)),
        side.query(name, redis::cmd("ZCARD").arg(&timeouts)),
    );
    if left != (0, 0) {
        return Err(format!("left in the queue and its deadlines: {left:?}"));
    }
    Ok(())
}

/// The queue holds exactly `fields`, in order, and each deadline outlives
/// a hold of `hold` from now: a Java waiter's, which it never refreshes,
/// by its whole length; a redlease waiter's, which it refreshes every
/// third of [`WATCHDOG`], by a third of it.
fn check_queue(
    side: &Side,
    name: &str,
    queue: &str,
    timeouts: &str,
    fields: &[String],
    who: &[Who],
    hold: Duration,
) -> Result<(), String> {
    let queued: Vec<String> = side.query(name, redis::cmd("LRANGE").arg(queue).arg(0).arg(-1));
    if queued != fields {
        return Err(format!("the queue is {queued:?}, not {fields:?}"));
    }
    let (s, us): (u64, u64) = side.query(name, &redis::cmd("TIME"));
    let now = (s * 1000 + us / 1000) as f64;
    for (field, who) in fields.iter().zip(who) {
        let deadline: f64 = side.query(name, redis::cmd("ZSCORE").arg(timeouts).arg(field));
        let needed = match who {
            Who::Java => hold + Duration::from_millis(500),
            Who::Rust => WATCHDOG / 3,
        };
        let left = deadline - now;
        if left < needed.as_millis() as f64 {
            return Err(format!(
                "{who:?} waiter {field}'s deadline is {left} ms away, under {needed:?}"
            ));
        }
    }
    Ok(())
}
