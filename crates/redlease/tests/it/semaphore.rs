//! `Semaphore`: Redisson's `RSemaphore` layout, the limit under load, waking
//! by releases, cancel safety and bad input. A real Redisson on the same
//! names: `java/semaphore.rs`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redlease::{Semaphore, layout};

use crate::support::{
    RedisServer, across_a_stall, client, evalsha_calls, eventually, exists, impatient_client,
    listen_until, publish, subscribers, taken, unique, until_subscribed,
};

fn get(server: &RedisServer, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

fn set(server: &RedisServer, key: &str, value: &str) {
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .exec(&mut server.connection())
        .unwrap();
}

/// What a spawned waiter returns: whether it acquired, and when it came.
type Timed = (Result<bool, redlease::Error>, Instant);

fn spawn_waiter(sem: Semaphore, permits: u64, wait: Duration) -> tokio::task::JoinHandle<Timed> {
    tokio::spawn(async move {
        let r = taken(sem.try_acquire_for(permits, wait).await);
        (r, Instant::now())
    })
}

/// The key is a string of the available count, and every change that frees
/// permits publishes the new count on `redisson_sc:{name}`, as Redisson.
#[tokio::test]
async fn layout_and_messages_are_redissons() {
    let server = RedisServer::shared();
    let c = client().await;
    for name in [
        unique("sem-layout"),
        format!("{{{}}}:jobs", unique("sem-layout")),
    ] {
        let channel = layout::semaphore_channel(&name);
        if name.contains('{') {
            assert_eq!(channel, format!("redisson_sc:{name}"));
        } else {
            assert_eq!(channel, format!("redisson_sc:{{{name}}}"));
        }
        let messages = listen_until(server, channel.clone(), "end");
        let sem = c.semaphore(&name);
        assert!(sem.try_set_available(3).await.unwrap());
        assert_eq!(get(server, &name).as_deref(), Some("3"));
        let kind: String = redis::cmd("TYPE")
            .arg(&name)
            .query(&mut server.connection())
            .unwrap();
        assert_eq!(kind, "string");
        assert!(!sem.try_set_available(5).await.unwrap(), "set twice");
        sem.try_acquire(2).await.unwrap().forget();
        assert_eq!(get(server, &name).as_deref(), Some("1"));
        sem.release(1).await.unwrap();
        assert_eq!(get(server, &name).as_deref(), Some("2"));
        sem.add_permits(-1).await.unwrap();
        sem.set_available(4).await.unwrap();
        assert_eq!(get(server, &name).as_deref(), Some("4"));
        assert_eq!(sem.available_permits().await.unwrap(), 4);
        publish(server, &channel, "end");
        // An acquire publishes nothing; everything else the new count.
        assert_eq!(messages.await.unwrap(), ["3", "2", "1", "4"], "{name}");
    }
}

/// A one-shot acquire of more than is available answers false and takes
/// nothing; a timed one gives up at its deadline.
#[tokio::test]
async fn busy_semaphore_answers_false() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("sem-busy");
    let sem = c.semaphore(&name);
    assert!(
        sem.try_acquire(1).await.unwrap_err().is_busy(),
        "a missing key has no permits"
    );
    assert!(!exists(server, &name), "a failed acquire wrote");
    assert!(sem.try_set_available(1).await.unwrap());
    assert!(sem.try_acquire(2).await.unwrap_err().is_busy());
    sem.try_acquire(1).await.unwrap().forget();
    assert!(sem.try_acquire(1).await.unwrap_err().is_busy());
    let started = Instant::now();
    assert!(
        sem.try_acquire_for(1, Duration::from_millis(150))
            .await
            .unwrap_err()
            .is_busy()
    );
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(sem.available_permits().await.unwrap(), 0);
}

/// 30 tasks over three clients share 3 permits: never more than 3 holders
/// at once, and every task gets its turn well within its wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_holders_than_permits_across_clients() {
    let clients = [client().await, client().await, client().await];
    let name = unique("sem-limit");
    assert!(
        clients[0]
            .semaphore(&name)
            .try_set_available(3)
            .await
            .unwrap()
    );
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..30 {
        let sem = clients[i % 3].semaphore(&name);
        let (holders, most) = (holders.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                assert!(
                    taken(sem.try_acquire_for(1, Duration::from_secs(8)).await).unwrap(),
                    "waited 8 s for a permit"
                );
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                sem.release(1).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= 3, "{most} holders of 3 permits");
    assert!(most >= 2, "the permits were never shared ({most} at most)");
    assert_eq!(
        clients[1]
            .semaphore(&name)
            .available_permits()
            .await
            .unwrap(),
        3,
        "permits lost or made"
    );
    let took = started.elapsed();
    println!("90 acquisitions of 3 permits by 30 tasks in 3 clients: {took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

/// A waiter for 2 permits, asleep first, does not keep a waiter for 1
/// behind it asleep when a single permit is released: it passes the
/// wake-up on.
#[tokio::test]
async fn a_large_request_does_not_starve_a_small_one() {
    let server = RedisServer::shared();
    let (a, b) = (client().await, client().await);
    let name = unique("sem-short");
    let channel = layout::semaphore_channel(&name);
    let large = spawn_waiter(b.semaphore(&name), 2, Duration::from_secs(6));
    until_subscribed(server, &channel, 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let small = spawn_waiter(b.semaphore(&name), 1, Duration::from_secs(6));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let released = Instant::now();
    a.semaphore(&name).release(1).await.unwrap();
    let (acquired, at) = tokio::time::timeout(Duration::from_secs(7), small)
        .await
        .unwrap()
        .unwrap();
    assert!(acquired.unwrap());
    let after = at - released;
    assert!(
        after < Duration::from_secs(1),
        "the small waiter slept {after:?}"
    );
    assert!(
        !large.is_finished(),
        "the large waiter gave up or acquired 1 permit"
    );
    a.semaphore(&name).release(2).await.unwrap();
    let (acquired, _) = tokio::time::timeout(Duration::from_secs(7), large)
        .await
        .unwrap()
        .unwrap();
    assert!(acquired.unwrap());
    assert_eq!(get(server, &name).as_deref(), Some("0"));
}

/// Drives `fut` for `polls` polls; returns its output if it finished.
async fn poll_n<F: Future>(fut: &mut Pin<Box<F>>, polls: usize) -> Option<F::Output> {
    for _ in 0..polls {
        tokio::select! {
            biased;
            out = fut.as_mut() => return Some(out),
            _ = std::future::ready(()) => {}
        }
        tokio::task::yield_now().await;
    }
    None
}

/// How many `SCRIPT LOAD`s the server has run (`INFO commandstats`).
fn script_loads(server: &RedisServer) -> u64 {
    command_calls(server, "cmdstat_script|load:calls=")
}

fn command_calls(server: &RedisServer, stat: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(stat))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn flush_scripts(server: &RedisServer) {
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .exec(&mut server.connection())
        .unwrap();
}

/// Acquires dropped after any number of polls, with free permits (an
/// attempt may run after the drop, and its permits must come back: the
/// dropped acquire withdraws its request), and releases dropped after
/// their first poll (which must still release): the number of permits is
/// conserved. The scripts are flushed before each round, so each script
/// needs a `SCRIPT LOAD` and a second `EVALSHA`.
#[tokio::test]
async fn cancelled_acquires_and_releases_conserve_permits() {
    // Its own server: its scripts are flushed.
    let server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("sem-cancel");
    let sem = c.semaphore(&name);
    assert!(sem.try_set_available(1).await.unwrap());
    let mut cancelled = 0;
    for polls in 0..30 {
        flush_scripts(&server);
        let loads = script_loads(&server);
        let mut acquire = Box::pin(sem.acquire(1));
        match poll_n(&mut acquire, polls).await {
            Some(r) => {
                r.unwrap().forget();
                sem.release(1).await.unwrap();
            }
            None => cancelled += 1,
        }
        drop(acquire);
        // Once polled, the permit is taken (or not: a dropped attempt may
        // never have run) and comes back, by the release above or by the
        // withdrawal of the dropped request, whose script is loaded: a
        // value read before that reached Redis would prove nothing.
        let expected = if polls == 0 { loads } else { loads + 1 };
        let back = eventually(Duration::from_secs(2), || {
            script_loads(&server) >= expected && get(&server, &name).as_deref() == Some("1")
        });
        assert!(
            back.await.is_some(),
            "after {polls} polls: {:?}, {} script loads of {expected}",
            get(&server, &name),
            script_loads(&server)
        );
    }
    assert!(cancelled > 1, "no acquire was cancelled after it was sent");

    for polls in 1..4 {
        sem.try_acquire(1).await.unwrap().forget();
        flush_scripts(&server);
        let mut release = Box::pin(sem.release(1));
        if poll_n(&mut release, polls).await.is_none() {
            drop(release);
        }
        let back = eventually(Duration::from_secs(2), || {
            get(&server, &name).as_deref() == Some("1")
        });
        assert!(
            back.await.is_some(),
            "release dropped after {polls} polls was lost"
        );
    }
}

/// A sleeping waiter woken by a release and dropped after 0 to 3 more
/// polls: at 1 its acquire is on its way (the script then takes the
/// permit for nobody, and must give it back). The released permit is never
/// lost, and the waiters leave the channel.
#[tokio::test]
async fn cancelled_woken_waiters_conserve_permits() {
    // Its own server: its EVALSHAs are counted.
    let server = &RedisServer::start();
    let (a, b) = (
        redlease::Client::connect(&server.url()).await.unwrap(),
        redlease::Client::connect(&server.url()).await.unwrap(),
    );
    let name = unique("sem-cancel-wait");
    let channel = layout::semaphore_channel(&name);
    let (sem, releaser) = (b.semaphore(&name), a.semaphore(&name));
    let mut took = 0;
    for polls in 0..4 {
        assert!(sem.try_acquire(1).await.unwrap_err().is_busy(), "not empty");
        let mut waiter =
            Box::pin(async { taken(sem.try_acquire_for(1, Duration::from_secs(5)).await) });
        // Polled (not spawned), so that it runs only when polled here:
        // subscribed, then retried, then asleep on the channel.
        let started = Instant::now();
        while subscribers(server, &channel) < 1 {
            assert!(poll_n(&mut waiter, 1).await.is_none());
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(started.elapsed() < Duration::from_secs(2), "not subscribed");
        }
        for _ in 0..10 {
            assert!(poll_n(&mut waiter, 1).await.is_none());
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        releaser.release(1).await.unwrap();
        let calls = evalsha_calls(server);
        // The message reaches the client, which wakes the waiter; it runs
        // only when polled.
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Some(r) = poll_n(&mut waiter, polls).await {
            assert!(r.unwrap());
            took += 1;
            sem.release(1).await.unwrap();
        }
        drop(waiter);
        // Polled after its wake-up, the waiter's acquire runs and takes
        // the permit, which comes back by the release above or by the
        // give-back: a value read before both reached Redis would prove
        // nothing.
        let expected = if polls == 0 { calls } else { calls + 2 };
        let back = eventually(Duration::from_secs(2), || {
            evalsha_calls(server) >= expected && get(server, &name).as_deref() == Some("1")
        });
        assert!(
            back.await.is_some(),
            "dropped after {polls} polls: {:?}",
            get(server, &name)
        );
        sem.try_acquire(1).await.unwrap().forget();
    }
    assert!(took < 3, "no waiter was dropped after it woke");
    let left = eventually(Duration::from_secs(2), || {
        subscribers(server, &channel) == 0
    });
    assert!(left.await.is_some(), "subscription left on {channel}");
}

/// Zero or too many permits are refused before anything is sent; a key of
/// another type, a string that is not an integer and a negative count are
/// typed errors, and nothing is written over them.
#[tokio::test]
async fn bad_input_gives_typed_errors() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("sem-bad");
    let sem = c.semaphore(&name);
    // Redisson reads a semaphore's counts as a Java int (#27: one limit
    // for both semaphores).
    let too_many = redlease::MAX_PERMITS + 1;
    for e in [
        sem.try_acquire(0).await.unwrap_err(),
        sem.try_acquire_for(0, Duration::from_secs(1))
            .await
            .unwrap_err(),
        sem.acquire(0).await.unwrap_err(),
        sem.release(0).await.unwrap_err(),
        sem.try_acquire(too_many).await.unwrap_err(),
        sem.release(u64::MAX).await.unwrap_err(),
        sem.try_set_available(too_many).await.unwrap_err(),
        sem.set_available(too_many).await.unwrap_err(),
        sem.add_permits(i64::MIN).await.unwrap_err(),
        c.semaphore("").try_acquire(1).await.unwrap_err(),
    ] {
        assert!(e.is_invalid_argument(), "{e}");
    }
    assert_eq!(
        sem.try_acquire(0).await.unwrap_err().to_string(),
        "permits must be between 1 and 2147483647 (a java int, as Redisson reads it), but found 0"
    );
    assert!(!exists(server, &name), "a refused call wrote");

    // Another type: left as it is.
    redis::cmd("HSET")
        .arg(&name)
        .arg("f")
        .arg("v")
        .exec(&mut server.connection())
        .unwrap();
    for e in [
        sem.try_acquire(1).await.unwrap_err(),
        sem.try_acquire_for(1, Duration::from_secs(5))
            .await
            .unwrap_err(),
        sem.release(1).await.unwrap_err(),
        sem.add_permits(1).await.unwrap_err(),
        sem.set_available(1).await.unwrap_err(),
        sem.try_set_available(1).await.unwrap_err(),
        sem.available_permits().await.unwrap_err(),
    ] {
        assert!(e.is_wrong_type(), "{e}");
        // What the key holds, read when the error came (#27).
        assert!(
            e.to_string()
                .contains("holds a hash, not a string holding the number of available permits"),
            "{e}"
        );
    }
    let field: Option<String> = redis::cmd("HGET")
        .arg(&name)
        .arg("f")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(field.as_deref(), Some("v"));

    // A string that is not an integer: left as it is.
    for value in ["abc", "1.5", " 2", "+3"] {
        set(server, &name, value);
        let started = Instant::now();
        for e in [
            sem.try_acquire(1).await.unwrap_err(),
            sem.try_acquire_for(1, Duration::from_secs(5))
                .await
                .unwrap_err(),
            sem.release(1).await.unwrap_err(),
            sem.add_permits(1).await.unwrap_err(),
            sem.set_available(1).await.unwrap_err(),
            sem.try_set_available(1).await.unwrap_err(),
            sem.available_permits().await.unwrap_err(),
        ] {
            assert!(e.is_wrong_type(), "{value:?}: {e}");
            assert_eq!(e.key(), Some(name.as_str()));
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a bad value was waited on"
        );
        assert_eq!(get(server, &name).as_deref(), Some(value));
    }

    // A negative count, as Redisson's `addPermits` may leave.
    set(server, &name, "3");
    sem.add_permits(-5).await.unwrap();
    assert_eq!(get(server, &name).as_deref(), Some("-2"));
    assert_eq!(sem.available_permits().await.unwrap(), -2);
    assert!(sem.try_acquire(1).await.unwrap_err().is_busy());
    sem.release(3).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
}

/// #36 (found by the judge's partition phase): an acquire whose attempts'
/// replies are lost after their scripts ran takes no permit for good. The
/// server is frozen across a `try_acquire_for` with a 200 ms response
/// timeout, so that its attempts (and, for the one that gives up, the
/// withdrawal) queue up unanswered and run when it thaws: before, the first
/// to run took the permit and nobody gave it back (the caller was told the
/// attempt timed out, or that the semaphore was busy). Now every attempt of
/// one acquire carries one request id: the first takes the permit and
/// records it, the rest find the record, and the withdrawal gives it back.
/// Also for a `try_acquire` dropped while its reply is late.
#[tokio::test]
async fn issue_36_a_lost_reply_takes_no_permit_for_good() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    for case in ["a wait", "a dropped try"] {
        let sem = c.semaphore(unique("sem-lost-reply"));
        assert!(sem.try_set_available(1).await.unwrap());
        server.pause();
        match case {
            "a wait" => {
                let err = sem
                    .try_acquire_for(1, Duration::from_millis(700))
                    .await
                    .unwrap_err();
                assert!(err.is_timeout() || err.is_busy(), "{case}: {err:?}");
            }
            _ => {
                let try_once = sem.try_acquire(1);
                assert!(
                    tokio::time::timeout(Duration::from_millis(100), try_once)
                        .await
                        .is_err()
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.resume();
        let back = eventually(Duration::from_secs(5), || {
            get(&server, sem.name()).as_deref() == Some("1")
        })
        .await;
        assert!(
            back.is_some(),
            "{case}: the permit was taken for good: {:?} available",
            get(&server, sem.name())
        );
        let permit = sem.try_acquire(1).await.unwrap();
        permit.release().await.unwrap();
    }
}

/// The ways a semaphore's count is changed by a write that #37 sends again
/// until answered.
const CHANGES: [&str; 4] = ["release", "add_permits", "permit.release", "dropped permit"];

/// Issue #37: a release whose reply was lost (the server stalled past the
/// response time-out) failed with a time-out, though it had given the
/// permits back or was about to, and sending it again would have given
/// them back twice. Now each change is sent again, under one request id,
/// until answered: the caller is told it worked, and the count moved once.
#[tokio::test]
async fn issue_37_a_change_whose_reply_is_lost_is_sent_again_and_counts_once() {
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    for change in CHANGES {
        let sem = c.semaphore(unique("sem-lost-release"));
        assert!(sem.try_set_available(1).await.unwrap());
        let permit = sem.try_acquire(1).await.unwrap();
        let stalled = sem.clone();
        let answered = across_a_stall(&server, async move {
            match change {
                "release" => stalled.release(permit.forget()).await,
                "add_permits" => stalled.add_permits(permit.forget() as i64).await,
                "permit.release" => permit.release().await,
                _ => {
                    drop(permit);
                    Ok(())
                }
            }
        })
        .await;
        assert!(answered.is_ok(), "{change}: {answered:?}");
        let once = eventually(Duration::from_secs(5), || {
            get(&server, sem.name()).as_deref() == Some("1")
        })
        .await;
        assert!(once.is_some(), "{change}: {:?}", get(&server, sem.name()));
        // Every attempt has reached the server by now: none counted again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            get(&server, sem.name()).as_deref(),
            Some("1"),
            "{change} counted twice"
        );
    }
}

/// Issue #37: many tasks acquire and release one semaphore while the
/// server stalls past the response time-out and every client connection is
/// cut, again and again. Before, permits leaked (a semaphore of 4 ended
/// with 0 available and nobody holding one) or were given back twice; now
/// no more than the total are ever held, and all are available at the end.
#[tokio::test]
async fn issue_37_permits_are_conserved_through_stalls_and_cut_connections() {
    const TOTAL: usize = 4;
    let server = RedisServer::start();
    let c = impatient_client(&server).await;
    let sem = c.semaphore(unique("sem-conserved"));
    assert!(sem.try_set_available(TOTAL as u64).await.unwrap());
    let held = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let taken = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + Duration::from_secs(6);
    let mut tasks = Vec::new();
    for i in 0..8usize {
        let (sem, held, most) = (sem.clone(), held.clone(), most.clone());
        let (taken, refused) = (taken.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0usize;
            while Instant::now() < until {
                n += 1;
                let Ok(permit) = sem.try_acquire_for(1, Duration::from_secs(2)).await else {
                    continue;
                };
                let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                taken.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5 + (n * 7 + i) as u64 % 20)).await;
                held.fetch_sub(1, Ordering::SeqCst);
                if (n + i).is_multiple_of(3) {
                    drop(permit);
                } else if permit.release().await.is_err() {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    let mut faults = 0;
    while Instant::now() + Duration::from_secs(1) < until {
        tokio::time::sleep(Duration::from_millis(250)).await;
        server.pause();
        tokio::time::sleep(Duration::from_millis(350)).await;
        server.resume();
        tokio::time::sleep(Duration::from_millis(250)).await;
        let _: redis::Value = redis::cmd("CLIENT")
            .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"][..])
            .query(&mut server.connection())
            .unwrap();
        faults += 1;
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("every task ends")
            .unwrap();
    }
    let total = TOTAL.to_string();
    let conserved = eventually(Duration::from_secs(10), || {
        get(&server, sem.name()).as_deref() == Some(total.as_str())
    })
    .await;
    assert!(
        conserved.is_some(),
        "{:?} available of {TOTAL} after {faults} stalls and cuts",
        get(&server, sem.name())
    );
    assert!(
        most.load(Ordering::SeqCst) <= TOTAL,
        "more held than the semaphore has"
    );
    assert_eq!(
        refused.load(Ordering::SeqCst),
        0,
        "releases failed though Redis came back within the retries"
    );
    assert!(
        taken.load(Ordering::SeqCst) > 20,
        "too few acquisitions to judge"
    );
}
