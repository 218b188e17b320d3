//! Private `redis-server` processes on free loopback ports, for redlease's
//! tests and benches, and for `redlease demo` when no Redis is running.
//!
//! Each [`RedisServer`] is a real `redis-server` with no persistence, bound to
//! 127.0.0.1 on a port nobody else uses, so a test can kill, restart, pause
//! and resume it without disturbing other tests. Servers are stopped (and
//! reaped) when the value drops; a small shell watcher also stops them when
//! the owning process dies without running destructors (SIGKILL, a panic
//! abort, a `static` server), so no run leaves `redis-server` processes
//! behind.
//!
//! A [`RedisCluster`] is a Redis Cluster of such servers, with the
//! failovers, kills and slot migrations (held half-way, to provoke `ASK`)
//! that cluster tests need.
//!
//! A [`SentinelGroup`] is a master with replicas and Redis Sentinels
//! watching it, with the failovers, kills, pauses and wrong Sentinels that
//! tests of a Sentinel-aware client need.
//!
//! [`TestCerts`] makes a CA and certificates with `openssl` for servers
//! that serve TLS ([`ServerOptions::tls`]), mutual TLS included.
//!
//! [`valkey_server`] finds Valkey 9's server program, which
//! [`ServerOptions::program`] runs instead of `redis-server`.
//!
//! A [`Proxy`] partitions a client from its server; [`signal`] stops,
//! resumes and kills other processes (test children).
//!
//! The test fixtures ([`RedisServer::start`], [`RedisServer::start_with`],
//! [`RedisServer::restart`], ...) panic on failure: a panic with a clear
//! message is the right report for a broken test environment. A program
//! uses [`RedisServer::try_start_with`], which returns a [`StartError`]
//! instead.

mod cluster;
mod error;
mod launch;
mod probe;
mod proxy;
mod sentinel;
mod server;
mod tls;

pub use cluster::{ClusterNode, RedisCluster, Role, SLOTS, key_slot};
pub use error::StartError;
pub use proxy::Proxy;
pub use sentinel::{SentinelGroup, SentinelOptions, WrongSentinel};
pub use server::{ClusterNodeOptions, RedisServer, ServerOptions, TlsFiles};
pub use tls::TestCerts;

use std::process::{Command, Stdio};

/// Sends signal `name` (`STOP`, `CONT`, `KILL`, ...) to process `pid`, as
/// `kill -<name> <pid>` does; a process that is gone is not an error.
pub fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// The Valkey 9 server program, for [`ServerOptions::program`]:
/// `REDLEASE_VALKEY_SERVER` if set, else the one `scripts/valkey` installs
/// under the workspace's `target/valkey/` (`scripts/test` runs it).
///
/// # Errors
///
/// [`StartError::Failed`], saying how to install it, when there is none.
pub fn valkey_server() -> Result<std::path::PathBuf, StartError> {
    if let Some(path) = std::env::var_os("REDLEASE_VALKEY_SERVER") {
        return Ok(path.into());
    }
    let installed =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/valkey/valkey-server");
    if installed.exists() {
        return Ok(installed);
    }
    Err(StartError::Failed(
        "no Valkey server: run scripts/valkey (scripts/test does), or set REDLEASE_VALKEY_SERVER"
            .to_owned(),
    ))
}
