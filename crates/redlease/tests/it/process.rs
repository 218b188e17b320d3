//! Fair waiters in separate processes, one killed with SIGKILL, and the
//! child process that the process-level tests (here and in `chaos`) run.
//!
//! A child is this test binary re-run with `--ignored --exact` on
//! [`child_process`], with its instructions in the environment.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{RedisServer, client_with_watchdog, eventually, unique};

const CHILD_ENV: &str = "REDLEASE_TEST_CHILD";

/// Starts a child process with `spec` (see [`child_process`]).
pub(crate) fn spawn_child(spec: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "process::child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until the child prints a line ending in `word`.
pub(crate) async fn child_says(child: &mut Child, word: &'static str) {
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let said = tokio::task::spawn_blocking(move || {
        // libtest prints "test <name> ... " before the test's own output on
        // the same line.
        stdout
            .lines()
            .map_while(Result::ok)
            .any(|l| l.ends_with(word))
    });
    let said = tokio::time::timeout(Duration::from_secs(30), said)
        .await
        .unwrap()
        .unwrap();
    assert!(said, "child exited without saying {word}");
}

fn queue_len(server: &RedisServer, name: &str) -> i64 {
    redis::cmd("LLEN")
        .arg(format!("redisson_lock_queue:{{{name}}}"))
        .query(&mut server.connection())
        .unwrap()
}

/// Fair waiters in four processes, started one after another, acquire in
/// that order; a fifth waiter process killed while queued (SIGKILL: no
/// clean-up) holds the queue up by at most one watchdog timeout.
#[tokio::test]
async fn fair_waiters_in_processes_keep_order_and_a_dead_one_is_dropped() {
    let server = RedisServer::shared();
    let timeout = Duration::from_millis(600);
    let name = unique("fair-processes");
    let holder = client_with_watchdog(server, timeout).await;
    let held = holder.fair_lock(&name).try_lock().await.unwrap();
    let mut children = Vec::new();
    for i in 0..5 {
        let child = spawn_child(&format!(
            "fair {} {name} {} {i}",
            server.url(),
            timeout.as_millis()
        ));
        children.push(child);
        let queued = eventually(Duration::from_secs(30), || {
            queue_len(server, &name) == i + 1
        })
        .await;
        assert!(queued.is_some(), "waiter process {i} did not queue");
    }
    // The second in line dies without leaving the queue.
    let mut dead = children.remove(1);
    dead.kill().unwrap();
    dead.wait().unwrap();
    let released = Instant::now();
    held.unlock().await.unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let took = released.elapsed();
    let order: Vec<i64> = redis::cmd("LRANGE")
        .arg(format!("{name}:order"))
        .arg(0)
        .arg(-1)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(order, vec![0, 2, 3, 4]);
    // Four 10 ms holds, plus at most one timeout (and a refresh period) for
    // the dead waiter's deadline to pass.
    assert!(
        took < timeout * 2 + Duration::from_millis(500),
        "took {took:?}"
    );
    assert_eq!(queue_len(server, &name), 0);
}

/// Not a test: the child process for the tests above. Its instructions, in
/// the environment: `hold URL NAME TIMEOUT_MS` takes the lock and keeps it
/// until killed; `fair URL NAME TIMEOUT_MS INDEX` waits for the fair lock,
/// records INDEX in the list `NAME:order`, holds 10 ms and releases;
/// `writer ...` is [`crate::chaos::writer`]; `replica ...` is
/// [`crate::once_per_tick::replica_child`].
#[tokio::test]
#[ignore = "helper process, started by the tests in this module"]
async fn child_process() {
    let spec = std::env::var(CHILD_ENV).expect("started by a parent test");
    let parts: Vec<&str> = spec.split(' ').collect();
    if parts[0] == "writer" {
        return crate::chaos::writer(&parts[1..]).await;
    }
    if parts[0] == "replica" {
        return crate::once_per_tick::replica_child(&parts[1..]).await;
    }
    let (mode, url, name, timeout_ms) = (parts[0], parts[1], parts[2], parts[3]);
    let c = redlease::Client::builder(url)
        .watchdog_timeout(Duration::from_millis(timeout_ms.parse().unwrap()))
        .build()
        .await
        .unwrap();
    match mode {
        "leader" => {
            // `leader URL NAME TIMEOUT_MS VALUE`: leads, says so, and says
            // LOST when the leadership is.
            let leadership = c.election(name).campaign(parts[4]).await.unwrap();
            println!("LEADING");
            tokio::select! {
                _ = leadership.lost() => println!("LOST"),
                () = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
        }
        "hold" => {
            let _g = c.lock(name).try_lock().await.unwrap();
            println!("ACQUIRED");
            // Bounded, in case the parent dies without killing us.
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        "fair" => {
            let g = c
                .fair_lock(name)
                .try_lock_for(Duration::from_secs(30))
                .await
                .unwrap();
            let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
            redis::cmd("RPUSH")
                .arg(format!("{name}:order"))
                .arg(parts[4])
                .exec(&mut conn)
                .unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            g.unlock().await.unwrap();
        }
        other => panic!("unknown child mode {other}"),
    }
}
