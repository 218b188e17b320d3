//! Which Redis the demo runs against, and the private `redis-server` it
//! starts when there is none.

use std::io;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout};

use crate::DEFAULT_URL;
use crate::connect::Target;

/// How long a private server has to answer PING after it was started.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// How long the default address has to answer PING before the demo decides
/// that nothing runs there: a local server answers in well under a
/// millisecond, and a silent address should not make the demo feel stuck.
const PROBE_WITHIN: Duration = Duration::from_millis(500);

/// Said when a private server is needed and `redis-server` is not on PATH.
pub(crate) const INSTALL_HINT: &str = "install one (apt-get install redis-server, \
     dnf install redis, brew install redis) or point the demo at a running server \
     with --url or REDIS_URL";

/// The Redis the demo talks to, and the private server behind it, if any.
#[derive(Debug)]
pub(crate) struct Redis {
    /// The URL to connect to; may hold a password, so it is never printed.
    pub(crate) url: String,
    /// Stopped by [`Redis::stop`], or failing that when dropped.
    private: Option<PrivateServer>,
}

/// A `redis-server` started for this run; dropping it kills the process.
#[derive(Debug)]
struct PrivateServer {
    /// Spawned with `kill_on_drop`, so every way out of the demo that runs
    /// destructors (an error, Ctrl-C or SIGTERM caught by the demo, a panic
    /// unwinding) stops the server.
    server: Child,
    /// A shell that kills the server once the demo is gone, for the ways
    /// out that run no destructors (SIGKILL, a test harness's time-out);
    /// `None` when there is no `/bin/sh`.
    watcher: Option<Child>,
}

impl Redis {
    /// Stops the private server, if any, and waits for it to exit, so that
    /// it is reaped here rather than left to an init process that may not
    /// reap (as in some containers).
    pub(crate) async fn stop(self) {
        let Some(mut private) = self.private else {
            return;
        };
        let _ = private.server.kill().await;
        if let Some(watcher) = &mut private.watcher {
            let _ = watcher.kill().await;
        }
    }
}

/// Picks the Redis for the run: a private server when `private` is set,
/// otherwise `url` (from `--url` or `REDIS_URL`), otherwise whatever
/// answers on the default address, otherwise a private server. Says on
/// stderr which one it picked.
///
/// # Errors
///
/// A message for the user when a private server is needed but cannot be
/// started, with [`INSTALL_HINT`] when `redis-server` is not on PATH.
pub(crate) async fn choose(url: Option<String>, private: bool) -> Result<Redis, String> {
    if !private {
        if let Some(url) = url {
            let shown = Target::new(url.clone()).redacted();
            eprintln!("using the redis at {shown} (from --url or REDIS_URL)");
            return Ok(Redis { url, private: None });
        }
        if answers_ping(DEFAULT_URL, PROBE_WITHIN).await {
            eprintln!("using the redis that answers on 127.0.0.1:6379");
            return Ok(Redis {
                url: DEFAULT_URL.to_owned(),
                private: None,
            });
        }
    }
    let (server, port) = start_private().await?;
    eprintln!("started a private redis-server on 127.0.0.1:{port} for this run");
    Ok(Redis {
        url: format!("redis://127.0.0.1:{port}"),
        private: Some(server),
    })
}

/// Starts `redis-server` on a free loopback port with no persistence and
/// waits until it answers.
async fn start_private() -> Result<(PrivateServer, u16), String> {
    let mut last_error = String::new();
    // Another process can take the port between our probe and the server's
    // bind; a fresh port on a second try makes that race irrelevant.
    for _ in 0..3 {
        let port = free_port().map_err(|e| format!("cannot find a free port: {e}"))?;
        let mut server = spawn(port)?;
        let watcher = server.id().and_then(watch);
        match wait_ready(&mut server, port).await {
            Ok(()) => {
                let private = PrivateServer { server, watcher };
                return Ok((private, port));
            }
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

fn spawn(port: u16) -> Result<Child, String> {
    let port_arg = port.to_string();
    Command::new("redis-server")
        .args(["--port", &port_arg, "--bind", "127.0.0.1"])
        // No snapshots and no append-only file: the demo's data is
        // throwaway, and the server must not write into the current
        // directory.
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => format!(
                "no redis-server on PATH to start a private redis for the demo; {INSTALL_HINT}"
            ),
            _ => format!("cannot start redis-server: {e}"),
        })
}

/// Starts a shell that checks every second whether this process is still
/// there, and kills `server` (a pid) when it is not. It also ends when the
/// server does, and it is killed with its [`PrivateServer`].
fn watch(server: u32) -> Option<Child> {
    let script = format!(
        "while kill -0 {demo} && kill -0 {server}; do sleep 1; done 2>/dev/null; \
         kill -9 {server} 2>/dev/null",
        demo = std::process::id(),
    );
    Command::new("/bin/sh")
        .args(["-c", &script])
        // Wherever the user's PATH points, `sleep` must be the real one: a
        // missing one would turn the loop into a busy wait.
        .env("PATH", "/bin:/usr/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()
}

async fn wait_ready(child: &mut Child, port: u16) -> Result<(), String> {
    let url = format!("redis://127.0.0.1:{port}");
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "redis-server on port {port} exited at once ({status}); \
                 run `redis-server --port {port}` to see why"
            ));
        }
        if answers_ping(&url, Duration::from_millis(200)).await {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "redis-server on port {port} did not answer within {} s",
                READY_WITHIN.as_secs()
            ));
        }
        sleep(Duration::from_millis(20)).await;
    }
}

/// Returns true if and only if a server at `url` answers PING with PONG
/// within `within`. A server that wants a password does not count: the demo
/// could not use it.
pub(crate) async fn answers_ping(url: &str, within: Duration) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let ping = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await
    };
    matches!(timeout(within, ping).await, Ok(Ok(pong)) if pong == "PONG")
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
