//! The string layout against the real peers on one key, both ways (#17):
//! redis-py's `Lock`, rslock and redsync (Go), each run by its bench
//! driver's `hold` mode (installed by `scripts/bench-peers`), and the first
//! seed's Java lock, played here with its raw commands. Each excludes the
//! other, and each release lets the other acquire.
//!
//! The peers publish nothing on release, so a redlease waiter on a key a
//! peer holds sleeps until the key's expiry (30 s here) or the end of its
//! wait, whichever comes first, and acquires then.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlease::Client;
use redlease::layout::Layout;
use tokio::sync::mpsc;

use crate::support::{RedisServer, exists, unique};

/// How long a peer holds the key in the tests where it holds first.
const HOLD: Duration = Duration::from_secs(1);
/// redlease's wait for a key a peer holds.
const WAIT: Duration = Duration::from_secs(10);
/// Time for a driver to start (an interpreter, under a parallel build) and
/// report its first event.
const START: Duration = Duration::from_secs(10);

/// The first seed's Java lock: `SET key <uuid> NX EX 30` to acquire, this
/// script to release.
const JAVA_RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
     return redis.call('del', KEYS[1]) else return 0 end";

#[derive(Clone, Copy, Debug)]
enum Peer {
    RedisPy,
    Rslock,
    /// redsync on go-redis, whose value is base64 text.
    Redsync,
    /// The first seed's Java lock, played with raw commands in a thread.
    JavaSeed,
}

/// Where `scripts/bench-peers` installs the peers; `REDLEASE_PEERS_DIR`
/// overrides it.
fn peers_dir() -> PathBuf {
    std::env::var_os("REDLEASE_PEERS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-peers"),
        PathBuf::from,
    )
}

/// `path`, which `scripts/bench-peers` installs: a failure, not a skip,
/// when it is missing (scripts/test installs the peers).
fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: the peers are not installed; run `bash scripts/bench-peers` \
         (or set REDLEASE_PEERS_DIR to where they are)",
        path.display()
    );
    path
}

/// What a peer reports.
#[derive(Debug)]
enum Event {
    /// It holds the key, with this value under it.
    Acquired(Stored),
    Busy,
    /// About to release.
    Releasing,
    Released,
    /// It ended, with this exit status.
    Exit(Option<i32>),
    /// A line that is none of the above.
    Other(String),
}

/// The value a peer reports it stored: text, or bytes given in hex.
#[derive(Debug, Clone, PartialEq)]
enum Stored {
    Text(String),
    Hex(String),
}

impl Stored {
    /// Whether `bytes`, read from the key, are this value.
    fn is(&self, bytes: &[u8]) -> bool {
        match self {
            Stored::Text(text) => text.as_bytes() == bytes,
            Stored::Hex(hex) => {
                *hex == bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
            }
        }
    }
}

impl Event {
    /// Reads one line of a driver's `hold` mode.
    fn parse(line: &str) -> Event {
        match field(line, "event").as_deref() {
            Some("acquired") => match (field(line, "value"), field(line, "encoding")) {
                (Some(value), None) => Event::Acquired(Stored::Text(value)),
                (Some(value), Some(e)) if e == "hex" => Event::Acquired(Stored::Hex(value)),
                _ => Event::Other(line.to_owned()),
            },
            Some("busy") => Event::Busy,
            Some("releasing") => Event::Releasing,
            Some("released") => Event::Released,
            _ => Event::Other(line.to_owned()),
        }
    }
}

/// The string value of `"name": "..."` in a flat JSON line (the drivers'
/// values need no escapes).
fn field(line: &str, name: &str) -> Option<String> {
    let after = &line[line.find(&format!("\"{name}\""))? + name.len() + 2..];
    let value = after
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// A peer holding (or trying to hold) one key: its events as they come,
/// each with when it was read. A driver process is killed when this is
/// dropped.
struct Holding {
    peer: Peer,
    events: mpsc::UnboundedReceiver<(Event, Instant)>,
    child: Option<Arc<Mutex<Child>>>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            let mut child = child.lock().unwrap_or_else(|e| e.into_inner());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Peer {
    /// Starts the peer on `key`: it waits up to `wait` for it, holds it for
    /// `hold`, releases it.
    fn hold(self, server: &RedisServer, key: &str, hold: Duration, wait: Duration) -> Holding {
        let (tx, events) = mpsc::unbounded_channel();
        let mut command = match self {
            Peer::RedisPy => {
                let mut command = Command::new(installed(peers_dir().join("venv/bin/python")));
                command
                    .arg(
                        Path::new(env!("CARGO_MANIFEST_DIR"))
                            .join("../redlease-bench/peers/python/driver.py"),
                    )
                    .arg("redis-py");
                command
            }
            Peer::Rslock => Command::new(installed(
                peers_dir().join("rslock/target/release/rslock-peer"),
            )),
            Peer::Redsync => Command::new(installed(peers_dir().join("go/redsync-peer"))),
            Peer::JavaSeed => {
                let (url, key) = (server.url(), key.to_owned());
                std::thread::spawn(move || java_hold(&url, &key, hold, wait, &tx));
                return Holding {
                    peer: self,
                    events,
                    child: None,
                };
            }
        };
        let mut child = command
            .arg("hold")
            .arg(server.url())
            .arg(key)
            .arg(hold.as_millis().to_string())
            .arg(wait.as_millis().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the {self:?} driver: {e}"));
        let stdout = child.stdout.take().unwrap();
        let child = Arc::new(Mutex::new(child));
        let waited = child.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Event::parse(&line), Instant::now())).is_err() {
                    return;
                }
            }
            // Its stdout closed: it has ended, or is about to.
            let status = loop {
                match waited.lock().unwrap_or_else(|e| e.into_inner()).try_wait() {
                    Ok(Some(status)) => break status.code(),
                    Ok(None) => {}
                    Err(_) => break None,
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let _ = tx.send((Event::Exit(status), Instant::now()));
        });
        Holding {
            peer: self,
            events,
            child: Some(child),
        }
    }
}

/// The first seed's Java lock: `SET NX EX 30` every 100 ms until it is
/// taken or `wait` has passed, then the owner-checked release by script.
/// Reports as the drivers do.
fn java_hold(
    url: &str,
    key: &str,
    hold: Duration,
    wait: Duration,
    tx: &mpsc::UnboundedSender<(Event, Instant)>,
) {
    let send = |event| {
        let _ = tx.send((event, Instant::now()));
    };
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let value = uuid::Uuid::new_v4().to_string();
    let deadline = Instant::now() + wait;
    loop {
        let set: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(&value)
            .arg("NX")
            .arg("EX")
            .arg(30)
            .query(&mut con)
            .unwrap();
        if set.is_some() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            send(Event::Busy);
            send(Event::Exit(Some(3)));
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
    }
    send(Event::Acquired(Stored::Text(value.clone())));
    std::thread::sleep(hold);
    send(Event::Releasing);
    let deleted: i64 = redis::Script::new(JAVA_RELEASE)
        .key(key)
        .arg(&value)
        .invoke(&mut con)
        .unwrap();
    assert_eq!(deleted, 1, "the Java lock's release found another value");
    send(Event::Released);
    send(Event::Exit(Some(0)));
}

impl Holding {
    /// The next event, or `None` if none came within `limit`.
    async fn next(&mut self, limit: Duration) -> Option<(Event, Instant)> {
        match tokio::time::timeout(limit, self.events.recv()).await {
            Ok(Some((Event::Other(line), _))) => panic!("{:?} printed {line:?}", self.peer),
            Ok(Some(event)) => Some(event),
            Ok(None) => panic!("{:?}: no more events", self.peer),
            Err(_) => None,
        }
    }

    /// The next event, which must come within `limit`.
    async fn expect(&mut self, limit: Duration, what: &str) -> (Event, Instant) {
        let peer = self.peer;
        self.next(limit)
            .await
            .unwrap_or_else(|| panic!("{peer:?}: not {what} within {limit:?}"))
    }

    async fn acquired(&mut self, limit: Duration) -> (Stored, Instant) {
        match self.expect(limit, "acquired").await {
            (Event::Acquired(value), at) => (value, at),
            (other, _) => panic!("{:?}: {other:?}, not acquired", self.peer),
        }
    }

    async fn releasing(&mut self, limit: Duration) -> Instant {
        match self.expect(limit, "releasing").await {
            (Event::Releasing, at) => at,
            (other, _) => panic!("{:?}: {other:?}, not releasing", self.peer),
        }
    }

    async fn released(&mut self, limit: Duration) -> Instant {
        match self.expect(limit, "released").await {
            (Event::Released, at) => at,
            (other, _) => panic!("{:?}: {other:?}, not released", self.peer),
        }
    }

    async fn busy(&mut self, limit: Duration) {
        match self.expect(limit, "busy").await {
            (Event::Busy, _) => {}
            (other, _) => panic!("{:?}: {other:?}, not busy", self.peer),
        }
    }

    async fn exited(&mut self, status: i32) {
        match self.expect(Duration::from_secs(5), "ended").await {
            (Event::Exit(Some(s)), _) if s == status => {}
            (other, _) => panic!("{:?}: {other:?}, not exit status {status}", self.peer),
        }
    }
}

async fn string_client(server: &RedisServer) -> Client {
    Client::builder(&server.url())
        .layout(Layout::String)
        .build()
        .await
        .unwrap()
}

fn get(server: &RedisServer, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// (a) The peer holds first: redlease is busy while it holds, and a
/// redlease waiter started then acquires only after the peer's release.
async fn peer_holds_first(peer: Peer) {
    let server = RedisServer::shared();
    let client = string_client(server).await;
    let name = unique("peer-first");
    let mut holding = peer.hold(server, &name, HOLD, Duration::ZERO);
    let (value, held_at) = holding.acquired(START).await;
    let stored = get(server, &name).expect("the peer's key");
    assert!(
        value.is(&stored),
        "{peer:?} reported {value:?}, stored {stored:?}"
    );

    let busy = client.lock(&name).try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{peer:?}: {busy}");
    let lock = client.lock(&name);
    let waiter = tokio::spawn(async move {
        let result = lock.try_lock_for(WAIT).await;
        (result, Instant::now())
    });
    let releasing_at = holding.releasing(HOLD + START).await;
    let released_at = holding.released(START).await;
    let (guard, acquired_at) = tokio::time::timeout(WAIT + START, waiter)
        .await
        .expect("redlease still waiting")
        .unwrap();
    let guard = guard.unwrap_or_else(|e| panic!("{peer:?}: redlease waited in vain: {e}"));
    // The peer's lines are read a little after they are written, so the
    // waiter may be seen to acquire between "releasing" and "released";
    // never before the release began.
    assert!(
        acquired_at > releasing_at,
        "{peer:?}: redlease acquired {:?} before the peer began its release",
        releasing_at - acquired_at
    );
    // The peer announces nothing: the waiter looks again every 100 ms
    // instead of sleeping out the peer's 30 s lease or its own wait.
    assert!(
        acquired_at < released_at + Duration::from_secs(1),
        "{peer:?}: redlease acquired {:?} after the peer's release",
        acquired_at - released_at
    );
    eprintln!(
        "{peer:?} held first: redlease acquired {:?} after the peer's release ({:?} after it acquired)",
        acquired_at - released_at,
        acquired_at - held_at
    );
    assert_eq!(
        get(server, &name).as_deref(),
        Some(guard.owner().as_bytes()),
        "{peer:?}"
    );
    holding.exited(0).await;
    guard.unlock().await.unwrap();
    assert!(!exists(server, &name));
}

/// (b) redlease holds first: the peer cannot acquire, with a short wait
/// (busy) or a long one (nothing yet), and acquires after the unlock.
async fn redlease_holds_first(peer: Peer) {
    let server = RedisServer::shared();
    let client = string_client(server).await;
    let name = unique("redlease-first");
    let guard = client.lock(&name).try_lock().await.unwrap();

    let mut short = peer.hold(server, &name, HOLD, Duration::from_millis(300));
    short.busy(START).await;
    short.exited(3).await;

    let mut holding = peer.hold(server, &name, Duration::from_millis(300), WAIT + START);
    // Long enough for the driver to start and try a few times.
    if let Some(event) = holding.next(Duration::from_secs(1)).await {
        panic!("{peer:?} while redlease holds the key: {event:?}");
    }
    assert_eq!(
        get(server, &name).as_deref(),
        Some(guard.owner().as_bytes())
    );
    let owner = guard.owner().to_owned();
    let unlocked_at = Instant::now();
    guard.unlock().await.unwrap();
    let (value, acquired_at) = holding.acquired(START).await;
    assert!(acquired_at > unlocked_at);
    assert_ne!(value, Stored::Text(owner), "{peer:?}");
    let stored = get(server, &name).expect("the peer's key");
    assert!(
        value.is(&stored),
        "{peer:?} reported {value:?}, stored {stored:?}"
    );
    eprintln!(
        "{peer:?} after redlease: acquired {:?} after the unlock",
        acquired_at - unlocked_at
    );
    let busy = client.lock(&name).try_lock().await.unwrap_err();
    assert!(busy.is_busy(), "{peer:?}: {busy}");
    holding.releasing(START).await;
    holding.released(START).await;
    holding.exited(0).await;
    assert!(!exists(server, &name), "{peer:?} left its key");
}

#[tokio::test]
async fn a_redis_py_lock_excludes_redlease_until_released() {
    peer_holds_first(Peer::RedisPy).await;
}

#[tokio::test]
async fn redlease_excludes_a_redis_py_lock_until_unlocked() {
    redlease_holds_first(Peer::RedisPy).await;
}

#[tokio::test]
async fn an_rslock_lock_excludes_redlease_until_released() {
    peer_holds_first(Peer::Rslock).await;
}

#[tokio::test]
async fn redlease_excludes_an_rslock_lock_until_unlocked() {
    redlease_holds_first(Peer::Rslock).await;
}

#[tokio::test]
async fn a_redsync_lock_excludes_redlease_until_released() {
    peer_holds_first(Peer::Redsync).await;
}

#[tokio::test]
async fn redlease_excludes_a_redsync_lock_until_unlocked() {
    redlease_holds_first(Peer::Redsync).await;
}

#[tokio::test]
async fn the_seeds_java_lock_excludes_redlease_until_released() {
    peer_holds_first(Peer::JavaSeed).await;
}

#[tokio::test]
async fn redlease_excludes_the_seeds_java_lock_until_unlocked() {
    redlease_holds_first(Peer::JavaSeed).await;
}
