//! Starting one `redis-server` process: its arguments and scratch
//! directory, the watcher that outlives a crashed owner, and the wait until
//! it answers.

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::StartError;

/// How long a started server has to answer PING.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// The file in the scratch directory that takes the server's output: its
/// log, and the configuration errors it prints before it has a log.
pub(crate) const LOG: &str = "redis.log";

/// Spawns `program` (`redis-server`, or Valkey's `valkey-server`, which
/// takes the same arguments) on `port` of 127.0.0.1 with no persistence,
/// its files in `dir`, and `extra_args`; with `config`, that file first, as
/// the server takes a configuration file only as its first argument.
pub(crate) fn spawn(
    program: &Path,
    config: Option<&Path>,
    port: u16,
    extra_args: &[String],
    dir: &Path,
) -> Result<Child, StartError> {
    let log = File::create(dir.join(LOG))
        .and_then(|out| Ok((out.try_clone()?, out)))
        .map_err(|e| StartError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    Command::new(program)
        .args(config)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        // No snapshots and no append-only file: the data is throwaway.
        .args(["--save", "", "--appendonly", "no"])
        // A replica syncs at once instead of after Redis's default 5 s.
        .args(["--repl-diskless-sync-delay", "0"])
        .args(["--daemonize", "no", "--dir"])
        .arg(dir)
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(log.0)
        .stderr(log.1)
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound if program == Path::new("redis-server") => {
                StartError::NotInstalled
            }
            _ => StartError::Failed(format!("cannot start {}: {e}", program.display())),
        })
}

/// Starts a shell that checks every second whether this process is still
/// there, and kills `server` (a pid) when it is not: for the ways out that
/// run no destructors. It also ends when the server does. `None` when there
/// is no `/bin/sh`.
///
/// The server must be reaped only after the watcher is killed: a reaped
/// pid can be reused, and the watcher would then kill a stranger.
pub(crate) fn watch(server: u32) -> Option<Child> {
    let script = format!(
        "while kill -0 {owner} && kill -0 {server}; do sleep 1; done 2>/dev/null; \
         kill -9 {server} 2>/dev/null",
        owner = std::process::id(),
    );
    Command::new("/bin/sh")
        .args(["-c", &script])
        // Wherever the caller's PATH points, `sleep` must be the real one: a
        // missing one would turn the loop into a busy wait.
        .env("PATH", "/bin:/usr/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// Waits until the server on `port` answers PING, or says why it did not,
/// with the end of its log from `dir`.
pub(crate) fn wait_ready(server: &mut Child, port: u16, dir: &Path) -> Result<(), StartError> {
    let failed = |what: String| {
        let log = std::fs::read_to_string(dir.join(LOG)).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        StartError::Failed(format!(
            "redis-server on port {port} {what}; its log:\n{}",
            tail.join("\n")
        ))
    };
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .map_err(|e| StartError::Failed(e.to_string()))?;
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if let Ok(Some(status)) = server.try_wait() {
            return Err(failed(format!("exited at once ({status})")));
        }
        let ready = client
            .get_connection_with_timeout(Duration::from_millis(200))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        match ready {
            Ok(_) => return Ok(()),
            // With requirepass the server answers NOAUTH: it is up.
            Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(failed(format!(
                    "did not answer within {} s ({e})",
                    READY_WITHIN.as_secs()
                )));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A loopback port nobody listens on, as the kernel picks them.
pub(crate) fn free_port() -> Result<u16, StartError> {
    // Ports handed out stay reserved in this process until their server is
    // dropped, killed or not: a killed node keeps its port for a restart
    // (and its scratch directory, keyed by port), and a server started by
    // another test in the meantime must not take either.
    let mut reserved = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| StartError::Failed(format!("cannot find a free port: {e}")))?;
        if reserved.insert(port) {
            return Ok(port);
        }
    }
    Err(StartError::Failed(
        "cannot find a free port that this process has not handed out".to_owned(),
    ))
}

/// Ports [`free_port`] handed out whose server has not been dropped.
static RESERVED: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Gives `ports` back to [`free_port`]: their server is gone for good.
pub(crate) fn release_ports(ports: impl IntoIterator<Item = u16>) {
    let mut reserved = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    for port in ports {
        reserved.remove(&port);
    }
}

/// The server's working directory: where a replica keeps its copy, a
/// cluster node its `nodes.conf`, and where the log goes. One per port, so
/// a restart finds its own.
///
/// Emptied first: a directory left behind by an owner killed without
/// destructors would otherwise hand a fresh server that owner's data (a
/// replica's `dump.rdb` is loaded at start-up even with `--save ''`) or,
/// worse, its cluster configuration.
pub(crate) fn scratch_dir(port: u16) -> Result<PathBuf, StartError> {
    let dir = std::env::temp_dir().join(format!("redlease-redis-{port}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| StartError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}
