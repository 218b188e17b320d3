//! Leader election (#40): one leader among campaigners, epochs that only
//! grow, observers woken by releases and announcements, a Redisson-style
//! holder that leads with no value, a leader paused, killed, or lost with
//! a Redis restarted empty, and the same on a cluster and under Sentinel.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redlease::{Election, Leader};
use redlease_testkit::SentinelGroup;

use crate::cluster_support::{cluster_client, shared_cluster};
use crate::process::{child_says, spawn_child};
use crate::support::{RedisServer, client, client_with_watchdog, publish, unique};

const LIMIT: Duration = Duration::from_secs(10);

/// The next item of an observer, within [`LIMIT`].
async fn next<S>(changes: &mut S) -> Option<Leader>
where
    S: futures_util::Stream<Item = Result<Option<Leader>, redlease::Error>> + Unpin,
{
    tokio::time::timeout(LIMIT, changes.next())
        .await
        .expect("a change within the limit")
        .expect("the stream never ends")
        .expect("the read succeeded")
}

/// The next redlease leader an observer reports with its value, past what
/// it may see first when a leader changes: a moment of nobody, and the new
/// leader between its acquire and its announcement (no value yet).
async fn next_leader<S>(changes: &mut S) -> Leader
where
    S: futures_util::Stream<Item = Result<Option<Leader>, redlease::Error>> + Unpin,
{
    for _ in 0..3 {
        if let Some(leader) = next(changes).await.filter(|l| l.value.is_some()) {
            return leader;
        }
    }
    panic!("no leader with a value in three changes");
}

#[tokio::test]
async fn one_leader_among_campaigners_and_epochs_only_grow() {
    let name = unique("election");
    let clients = [client().await, client().await, client().await];
    let elections: Vec<Election> = clients.iter().map(|c| c.election(&name)).collect();
    let mut campaigns = Vec::new();
    for (i, e) in elections.iter().enumerate() {
        let e = e.clone();
        campaigns.push(tokio::spawn(async move {
            e.campaign(&format!("node-{i}")).await.unwrap()
        }));
    }
    let mut epochs = Vec::new();
    for _ in 0..3 {
        // Exactly one campaign has returned at a time.
        let leadership = loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let done: Vec<usize> = (0..campaigns.len())
                .filter(|&i| campaigns[i].is_finished())
                .collect();
            if let Some(&i) = done.first() {
                assert_eq!(done.len(), 1, "two leaders at once");
                break campaigns.remove(i).await.unwrap();
            }
        };
        let leader = elections[0].leader().await.unwrap().expect("someone leads");
        assert_eq!(leader.value.as_deref(), Some(leadership.value()));
        assert_eq!(leader.epoch, leadership.epoch());
        assert_eq!(leader.owner, leadership.owner());
        assert!(leader.ttl.is_some_and(|t| t <= Duration::from_secs(30)));
        epochs.push(leadership.epoch().unwrap());
        // A leader holds it for a moment: nobody else returns meanwhile.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(campaigns.iter().all(|c| !c.is_finished()));
        leadership.resign().await.unwrap();
    }
    assert!(epochs.windows(2).all(|w| w[0] < w[1]), "{epochs:?}");
    assert_eq!(elections[1].leader().await.unwrap(), None);
    assert!(
        !crate::support::exists(RedisServer::shared(), &redlease::layout::leader_key(&name)),
        "a resignation removes its record"
    );
}

#[tokio::test]
async fn try_campaign_and_campaign_for_are_busy_while_another_leads() {
    let c = client().await;
    let election = c.election(unique("election-busy"));
    let leadership = election.try_campaign("a").await.unwrap();
    assert!(election.try_campaign("b").await.unwrap_err().is_busy());
    let started = Instant::now();
    let e = election
        .campaign_for("b", Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(e.is_busy() && started.elapsed() >= Duration::from_millis(190));
    // The waiter takes over as soon as the leader resigns.
    let waiter = {
        let election = election.clone();
        tokio::spawn(async move { election.campaign_for("c", LIMIT).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let resigned = Instant::now();
    leadership.resign().await.unwrap();
    let next = waiter.await.unwrap().unwrap();
    assert!(resigned.elapsed() < Duration::from_millis(500));
    assert_eq!(next.value(), "c");
    next.resign().await.unwrap();
    // A value is bounded as a name is.
    let long = "x".repeat(redlease::MAX_NAME_LEN + 1);
    assert!(
        election
            .try_campaign(&long)
            .await
            .unwrap_err()
            .is_invalid_argument()
    );
}

/// Observers see every change at once, woken by messages: well under the
/// idle look of 2 s.
#[tokio::test]
async fn observers_are_woken_by_announcements_and_releases() {
    let (a, b) = (client().await, client().await);
    let name = unique("election-observe");
    let watching = a.election(&name);
    let mut changes = Box::pin(watching.observe());
    assert_eq!(next(&mut changes).await, None);

    let election = b.election(&name);
    let started = Instant::now();
    let first = election.campaign("first").await.unwrap();
    let seen = next_leader(&mut changes).await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(seen.value.as_deref(), Some("first"));
    assert_eq!(seen.epoch, first.epoch());

    // The observer shares the lock's channel with a campaigner of its own
    // client; the release reaches both.
    let waiting = {
        let election = a.election(&name);
        tokio::spawn(async move { election.campaign("second").await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let released = Instant::now();
    first.resign().await.unwrap();
    let second = tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap();
    assert!(released.elapsed() < Duration::from_millis(500));
    // Nobody for a moment, or at once the next leader: whichever the
    // observer read, it ends at "second".
    let seen = next_leader(&mut changes).await;
    assert_eq!(seen.value.as_deref(), Some("second"));
    assert!(released.elapsed() < Duration::from_millis(1000));
    second.resign().await.unwrap();
    assert_eq!(next(&mut changes).await, None);
}

/// A holder of the lock that is no redlease leader (Redisson's `RLock`
/// layout, written here as Redisson writes it) leads with no value, and
/// excludes; its release message wakes observers and campaigners.
#[tokio::test]
async fn a_redisson_holder_leads_with_no_value() {
    let server = RedisServer::shared();
    let name = unique("election-redisson");
    let c = client().await;
    let election = c.election(&name);
    let mut changes = Box::pin(election.observe());
    assert_eq!(next(&mut changes).await, None);

    let mut conn = server.connection();
    let java = "8743c9c0-0795-4907-87fd-6c719a6cb586:1";
    redis::cmd("HSET")
        .arg(&name)
        .arg(java)
        .arg(1)
        .exec(&mut conn)
        .unwrap();
    redis::cmd("PEXPIRE")
        .arg(&name)
        .arg(30_000)
        .exec(&mut conn)
        .unwrap();
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(
        (leader.owner.as_str(), leader.value, leader.epoch),
        (java, None, None)
    );
    assert!(election.try_campaign("rust").await.unwrap_err().is_busy());
    // It announced nothing: seen at the observer's next look.
    let seen = next(&mut changes).await.unwrap();
    assert_eq!(seen.owner, java);

    let waiting = {
        let election = election.clone();
        tokio::spawn(async move { election.campaign("rust").await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Redisson's unlock: delete, publish 0.
    redis::cmd("DEL").arg(&name).exec(&mut conn).unwrap();
    let released = Instant::now();
    publish(server, &redlease::layout::channel(&name), "0");
    let rust = tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap();
    assert!(released.elapsed() < Duration::from_millis(500));
    let seen = next_leader(&mut changes).await;
    assert_eq!(seen.value.as_deref(), Some("rust"));
    rust.resign().await.unwrap();
}

/// A leader process stopped (SIGSTOP) past its lease loses; another leads
/// with a greater epoch; the stopped one, continued, learns it lost. A
/// leader killed (SIGKILL) is replaced once its lease runs out, and
/// observers see it go without a message.
#[tokio::test]
async fn a_paused_leader_loses_and_a_killed_one_is_replaced() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(900);
    let name = unique("election-pause");
    let c = client_with_watchdog(server, timeout).await;
    let election = c.election(&name);

    let mut child = spawn_child(&format!(
        "leader {} {name} {} paused",
        server.url(),
        timeout.as_millis()
    ));
    let said = lines(&mut child);
    assert!(says(&said, "LEADING").await);
    let first = election.leader().await.unwrap().unwrap();
    assert_eq!(first.value.as_deref(), Some("paused"));
    redlease_testkit::signal("STOP", child.id());
    let taken = Instant::now();
    let second = election.campaign_for("here", LIMIT).await.unwrap();
    assert!(taken.elapsed() < timeout + Duration::from_millis(500));
    assert!(second.epoch() > first.epoch);
    let second_epoch = second.epoch();
    redlease_testkit::signal("CONT", child.id());
    // The child prints LOST once its watchdog finds the lock another's.
    assert!(
        says(&said, "LOST").await,
        "the continued leader did not learn it lost"
    );
    second.resign().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();

    let mut changes = Box::pin(election.observe());
    assert_eq!(next(&mut changes).await, None);
    let mut child = spawn_child(&format!(
        "leader {} {name} {} killed",
        server.url(),
        timeout.as_millis()
    ));
    child_says(&mut child, "LEADING").await;
    assert_eq!(
        next(&mut changes).await.unwrap().value.as_deref(),
        Some("killed")
    );
    redlease_testkit::signal("KILL", child.id());
    let _ = child.wait();
    let killed = Instant::now();
    assert_eq!(
        next(&mut changes).await,
        None,
        "seen gone at the lock's expiry"
    );
    assert!(killed.elapsed() < timeout + Duration::from_millis(500));
    let third = election.try_campaign("after").await.unwrap();
    assert!(third.epoch() > second_epoch);
    third.resign().await.unwrap();
}

/// The child's output lines, read in a thread (its pipe blocks).
fn lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::{BufRead, BufReader};
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits for a line ending in `word`; false if none came within [`LIMIT`].
async fn says(lines: &std::sync::mpsc::Receiver<String>, word: &str) -> bool {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        match lines.try_recv() {
            Ok(line) if line.ends_with(word) => return true,
            Ok(_) => {}
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return false,
        }
    }
    false
}

/// Redis restarted empty: the leader learns it lost, another leads, and
/// its epoch is still greater (counters are seeded from the clock).
#[tokio::test]
async fn a_redis_restarted_empty_ends_the_leadership_and_epochs_still_grow() {
    let mut server = RedisServer::start();
    let timeout = Duration::from_millis(900);
    let name = unique("election-restart");
    let a = client_with_watchdog(&server, timeout).await;
    let b = client_with_watchdog(&server, timeout).await;
    let leadership = a.election(&name).campaign("a").await.unwrap();
    let epoch = leadership.epoch().unwrap();
    server.restart();
    let lost = tokio::time::timeout(LIMIT, leadership.lost()).await;
    assert!(lost.is_ok(), "the leader did not learn it lost");
    let next = b.election(&name).campaign_for("b", LIMIT).await.unwrap();
    assert!(
        next.epoch().unwrap() > epoch,
        "{:?} after {epoch}",
        next.epoch()
    );
    next.resign().await.unwrap();
    drop(leadership);
}

#[tokio::test]
async fn on_a_cluster() {
    let cluster = shared_cluster();
    let a = cluster_client(cluster, Duration::from_secs(3)).await;
    let b = cluster_client(cluster, Duration::from_secs(3)).await;
    let name = unique("election-cluster");
    let mut changes = Box::pin(b.election(&name).observe());
    assert_eq!(next(&mut changes).await, None);
    let first = a.election(&name).campaign("a").await.unwrap();
    let first_epoch = first.epoch();
    assert_eq!(
        next(&mut changes).await.unwrap().value.as_deref(),
        Some("a")
    );
    let waiting = {
        let election = b.election(&name);
        tokio::spawn(async move { election.campaign("b").await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    first.resign().await.unwrap();
    let second = tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap();
    assert!(second.epoch() > first_epoch);
    let seen = next_leader(&mut changes).await;
    assert_eq!(seen.value.as_deref(), Some("b"));
    second.resign().await.unwrap();
}

/// Under Sentinel: a leader, a failover, and a new leader with a greater
/// epoch on the promoted master.
#[tokio::test]
async fn under_sentinel_through_a_failover() {
    let group = SentinelGroup::start(1, 3);
    let url = group.url();
    let name = unique("election-sentinel");
    let a = redlease::Client::connect(&url).await.unwrap();
    let leadership = a.election(&name).campaign("a").await.unwrap();
    let epoch = leadership.epoch().unwrap();
    let leader = a.election(&name).leader().await.unwrap().unwrap();
    assert_eq!(leader.value.as_deref(), Some("a"));
    leadership.resign().await.unwrap();
    let group = tokio::task::spawn_blocking(move || {
        let mut group = group;
        group.failover();
        group
    })
    .await
    .unwrap();
    let b = redlease::Client::connect(&url).await.unwrap();
    let next = b.election(&name).campaign_for("b", LIMIT).await.unwrap();
    assert!(next.epoch().unwrap() > epoch);
    let leader = b.election(&name).leader().await.unwrap().unwrap();
    assert_eq!(leader.value.as_deref(), Some("b"));
    next.resign().await.unwrap();
    drop(group);
}
