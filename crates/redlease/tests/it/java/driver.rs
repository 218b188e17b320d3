//! A real `RedissonClient` in a JVM, driven over the line protocol of
//! `interop/redisson/` (its README has the contract): one request per line,
//! `<id> <owner> <op> [args...]`, one reply per line,
//! `<id> ok|err <start_us> <end_us> <value or Class message>`. Each owner
//! is a Java thread of its own, so Redisson's per-thread ownership holds.
//!
//! `scripts/redisson` builds the driver for each tested Redisson version
//! into `target/interop/redisson/<version>/run` (scripts/test runs it).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

/// The Redisson versions CI runs: the newest release, and the last 3.x.
pub(crate) const VERSIONS: [&str; 2] = ["4.7.0", "3.52.0"];

/// How long a JVM has to start and connect, under a parallel build.
const START_WITHIN: Duration = Duration::from_secs(90);

/// How long any single request may take before the test fails: longer
/// than every wait the tests ask Java for.
const REPLY_WITHIN: Duration = Duration::from_secs(60);

/// Where `scripts/redisson` builds the drivers; `REDLEASE_REDISSON_DIR`
/// overrides it.
fn drivers_dir() -> PathBuf {
    std::env::var_os("REDLEASE_REDISSON_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/interop/redisson"),
        PathBuf::from,
    )
}

/// How to start a driver: the client configuration a Java service would
/// give Redisson.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    /// `redis://host:port`, or for a cluster its nodes, comma-separated.
    pub(crate) url: String,
    pub(crate) cluster: bool,
    /// `shardedSubscriptionMode` on a cluster: `on`, `off` or `auto`.
    pub(crate) sharded: Option<&'static str>,
    /// `lockWatchdogTimeout` in ms (Redisson's default is 30 000).
    pub(crate) watchdog_ms: Option<u64>,
    /// `lockWatchdogBatchSize` (Redisson's default is 100).
    pub(crate) watchdog_batch: Option<u32>,
}

/// One reply.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub(crate) ok: bool,
    /// Unix time in µs right before Redisson was called.
    pub(crate) start_us: u64,
    /// Unix time in µs right after Redisson returned.
    pub(crate) end_us: u64,
    /// The value (`ok`), or `Class message` (`err`).
    pub(crate) text: String,
}

impl Reply {
    /// The value, failing the test on an error reply.
    pub(crate) fn value(&self) -> &str {
        assert!(self.ok, "Redisson answered an error: {}", self.text);
        &self.text
    }

    pub(crate) fn bool(&self) -> bool {
        match self.value() {
            "true" => true,
            "false" => false,
            other => panic!("not a boolean: {other}"),
        }
    }

    pub(crate) fn number(&self) -> i64 {
        let value = self.value();
        value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {value}"))
    }

    /// The exception's class (`Outer/RootCause`) of an error reply.
    pub(crate) fn error_class(&self) -> &str {
        assert!(
            !self.ok,
            "expected an error, Redisson answered {}",
            self.text
        );
        self.text.split(' ').next().unwrap_or("")
    }
}

/// Unix time in µs, the clock the driver's replies use.
pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Replies waited for, by request id.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

/// A running driver with one `RedissonClient`. Killed when dropped; a
/// `static` one ends when the test process does (its stdin closes, and the
/// driver shuts the client down and exits).
#[derive(Debug)]
pub(crate) struct Java {
    version: &'static str,
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    next: AtomicU64,
    /// Everything the JVM printed on stderr (Redisson's own warnings and
    /// errors, uncaught exceptions), and stdout lines that were no reply.
    log: Arc<Mutex<Vec<String>>>,
    /// The client's id, the first half of its owner fields.
    id: String,
}

impl Java {
    /// Starts the driver of Redisson `version` and waits until its client
    /// is connected. Blocks (up to a minute and a half).
    pub(crate) fn start(version: &'static str, options: &Options) -> Java {
        let run = drivers_dir().join(version).join("run");
        assert!(
            run.exists(),
            "{} is missing: the Java side is not built; run `bash scripts/redisson` \
             (scripts/test does), or set REDLEASE_REDISSON_DIR",
            run.display()
        );
        let mut command = Command::new(&run);
        command.args(["serve", "--url", &options.url]);
        if options.cluster {
            command.arg("--cluster");
        }
        if let Some(mode) = options.sharded {
            command.args(["--sharded", mode]);
        }
        if let Some(ms) = options.watchdog_ms {
            command.args(["--watchdog-ms", &ms.to_string()]);
        }
        if let Some(n) = options.watchdog_batch {
            command.args(["--watchdog-batch", &n.to_string()]);
        }
        // A driver starts in about a second with the C1 compiler alone and a
        // small heap; the tests measure wake-ups, not Java's throughput.
        let java_opts = std::env::var("REDLEASE_JAVA_OPTS").unwrap_or_else(|_| {
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m -Xss512k".to_owned()
        });
        let mut child = command
            .env("REDLEASE_JAVA_OPTS", java_opts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", run.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in stderr.lines().map_while(Result::ok) {
                    log.lock().unwrap().push(line);
                }
            });
        }
        let pending: Pending = Arc::default();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        {
            let (pending, log) = (Arc::clone(&pending), Arc::clone(&log));
            std::thread::spawn(move || read_replies(stdout, &pending, &log, ready_tx));
        }
        let ready = ready_rx.recv_timeout(START_WITHIN);
        let Ok(ready) = ready else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the Redisson {version} driver did not start within {START_WITHIN:?}: {}",
                log.lock().unwrap().join("\n")
            );
        };
        // `ready <client-id> <version>`
        let words: Vec<&str> = ready.split(' ').collect();
        assert_eq!(words.len(), 3, "unexpected first line: {ready}");
        assert_eq!(words[2], version, "the driver runs another Redisson");
        Java {
            version,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            pending,
            next: AtomicU64::new(1),
            log,
            id: words[1].to_owned(),
        }
    }

    /// The Redisson version it runs.
    pub(crate) fn version(&self) -> &'static str {
        self.version
    }

    /// Whether this version has the non-reentrant locks (4.4.0+).
    pub(crate) fn has_non_reentrant(&self) -> bool {
        !self.version.starts_with("3.")
    }

    /// The client id (`RedissonClient.getId()`).
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Sends `op` (the op and its arguments, space-separated) to `owner`'s
    /// thread; the reply comes on the receiver. For a call that blocks in
    /// Java (a waiter) while the test goes on.
    pub(crate) fn send(&self, owner: &str, op: &str) -> oneshot::Receiver<Reply> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut stdin = self.stdin.lock().unwrap();
        writeln!(stdin, "{id} {owner} {op}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("the Redisson driver is gone ({e}): {}", self.log()));
        rx
    }

    /// Sends `op` to `owner`'s thread and waits for the reply.
    pub(crate) async fn call(&self, owner: &str, op: &str) -> Reply {
        self.reply(self.send(owner, op)).await
    }

    /// Waits for the reply of a [`send`](Java::send).
    pub(crate) async fn reply(
        &self,
        rx: impl Future<Output = Result<Reply, oneshot::error::RecvError>>,
    ) -> Reply {
        match tokio::time::timeout(REPLY_WITHIN, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => panic!("the Redisson driver ended: {}", self.log()),
            Err(_) => panic!("no reply from Redisson within {REPLY_WITHIN:?}"),
        }
    }

    /// Everything the JVM has said on stderr so far, one line each.
    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// How many lines the JVM has said on stderr so far: a mark for
    /// [`said_since`](Java::said_since).
    pub(crate) fn log_mark(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// What the JVM said on stderr since `mark` that names `channel` or
    /// reports a failure to decode or an uncaught exception: Redisson's
    /// reaction to a message it could not handle.
    pub(crate) fn complaints_since(&self, mark: usize) -> Vec<String> {
        self.log.lock().unwrap()[mark..]
            .iter()
            .filter(|line| {
                line.contains("Unable to decode")
                    || line.contains("uncaught")
                    || line.contains("Exception")
                    || line.contains("ERROR")
            })
            .cloned()
            .collect()
    }

    /// Kills the JVM with SIGKILL: no unlock, no shutdown, as a crash.
    pub(crate) fn kill(&self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Java {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads the driver's stdout: the `ready` line goes to `ready`, replies to
/// their waiters, anything else into the log.
fn read_replies(
    stdout: impl BufRead,
    pending: &Pending,
    log: &Mutex<Vec<String>>,
    ready: std::sync::mpsc::Sender<String>,
) {
    for line in stdout.lines().map_while(Result::ok) {
        if line.starts_with("ready ") {
            let _ = ready.send(line);
            continue;
        }
        match parse(&line) {
            Some((id, reply)) => match pending.lock().unwrap().remove(&id) {
                Some(tx) => {
                    let _ = tx.send(reply);
                }
                None => log.lock().unwrap().push(format!("stdout: {line}")),
            },
            None => log.lock().unwrap().push(format!("stdout: {line}")),
        }
    }
    // The driver ended: waiters see their senders dropped.
    pending.lock().unwrap().clear();
}

/// `<id> ok|err <start_us> <end_us> <rest>`.
fn parse(line: &str) -> Option<(u64, Reply)> {
    let mut words = line.splitn(5, ' ');
    let id = words.next()?.parse().ok()?;
    let ok = match words.next()? {
        "ok" => true,
        "err" => false,
        _ => return None,
    };
    let start_us = words.next()?.parse().ok()?;
    let end_us = words.next()?.parse().ok()?;
    let text = words.next().unwrap_or("").to_owned();
    Some((
        id,
        Reply {
            ok,
            start_us,
            end_us,
            text,
        },
    ))
}
