//! Which Redis the demo runs against, and the private `redis-server` it
//! starts when there is none.

use std::time::Duration;

use redlease_testkit::{RedisServer, ServerOptions, StartError};
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

/// The Redis the demo talks to, and the private server behind it, if any.
#[derive(Debug)]
pub(crate) struct Redis {
    /// The URL to connect to; may hold a password, so it is never printed.
    pub(crate) url: String,
    /// A server started for this run. Dropping it kills and reaps it, so
    /// every way out of the demo that runs destructors (an error, Ctrl-C or
    /// SIGTERM caught by the demo, a panic unwinding) stops it; its watcher
    /// stops it on the ways out that run none (SIGKILL, a test harness's
    /// time-out).
    private: Option<RedisServer>,
}

impl Redis {
    /// Stops the private server, if any, and waits for it to exit.
    pub(crate) async fn stop(self) {
        if let Some(server) = self.private {
            // Killing and reaping blocks for a moment: not on a runtime thread.
            let _ = spawn_blocking(move || drop(server)).await;
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
    // Starting waits (up to seconds) for the server to answer.
    let started = spawn_blocking(|| RedisServer::try_start_with(ServerOptions::default()))
        .await
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let server = started.map_err(|e| match e {
        StartError::NotInstalled => {
            format!("no redis-server on PATH to start a private redis for the demo; {INSTALL_HINT}")
        }
        e => e.to_string(),
    })?;
    eprintln!(
        "started a private redis-server on 127.0.0.1:{} for this run",
        server.port()
    );
    Ok(Redis {
        url: server.url(),
        private: Some(server),
    })
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
