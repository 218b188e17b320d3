//! The other lock libraries, run as subprocesses.
//!
//! `scripts/bench-peers` installs each peer from its registry into
//! `target/bench-peers/` and writes `peers.json` there: for each peer its
//! name, language, installed version, how it is driven, and the command
//! (`argv`) of its driver, a small program in `peers/` that uses the library
//! as its users would. A driver is called as
//! `argv... uncontended URL TASKS SECONDS` or `argv... handoff URL WORKERS
//! SECONDS` (and rslock's and redsync's also as `argv... redlock
//! URL,URL,... TASKS SECONDS`) and prints one JSON line: the same
//! measurement as redlease's, with the same definitions (see
//! `peers/python/driver.py`).
//!
//! What a driver reports ([`Pairs`], [`Latencies`]) is also the shape of
//! redlease's own side of each measurement, and [`blocking`] runs a driver
//! from async code: both live here, with the drivers, so that every
//! measurement that runs a peer imports this file and this file imports
//! none of them (#38: `Latencies` in `redlock.rs` made a ring of
//! `cluster.rs`, `compare.rs`, `peer.rs` and `redlock.rs`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::handoff::Handoffs;

/// The manifest `scripts/bench-peers` writes, relative to the workspace.
pub(crate) const MANIFEST: &str = "target/bench-peers/peers.json";

/// One installed peer library.
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) language: String,
    pub(crate) version: String,
    pub(crate) driven: String,
    argv: Vec<String>,
}

/// The peers in `path`, or why there are none.
pub(crate) fn load(path: &Path) -> Result<Vec<Peer>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read {} ({e}): run scripts/bench-peers",
            path.display()
        )
    })?;
    let manifest: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries = manifest
        .as_array()
        .ok_or_else(|| format!("{}: expected a JSON array", path.display()))?;
    entries
        .iter()
        .map(|entry| {
            let field = |name: &str| {
                entry[name]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{}: a peer without {name:?}", path.display()))
            };
            let argv: Vec<String> = entry["argv"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            if argv.is_empty() {
                return Err(format!("{}: a peer without \"argv\"", path.display()));
            }
            Ok(Peer {
                name: field("name")?,
                language: field("language")?,
                version: field("version")?,
                driven: field("driven")?,
                argv,
            })
        })
        .collect()
}

/// Uncontended lock+unlock pairs, as a driver reports them.
#[derive(Clone, Copy)]
pub(crate) struct Pairs {
    pub(crate) per_sec: f64,
    /// How long the pairs took.
    pub(crate) seconds: f64,
    pub(crate) errors: u64,
    /// The server's CPU time per pair in microseconds, filled in by the
    /// caller, which can see the server.
    pub(crate) server_us: f64,
    /// The server's read events per pair (`total_reads_processed`): the
    /// fewer, the more commands each `read` brought in, and the less
    /// server CPU each costs (#28). Filled in as `server_us`.
    pub(crate) server_reads: f64,
    /// The client's own CPU time (user and system, every thread) per pair
    /// in microseconds; NaN from a driver that does not report it.
    pub(crate) client_us: f64,
}

/// Timed lock+release pairs, from either side: as a driver reports them
/// ([`Peer::redlock`]), and as [`crate::redlock`] times redlease's.
pub(crate) struct Latencies {
    pub(crate) pairs: u64,
    /// How long the pairs took.
    pub(crate) seconds: f64,
    /// Acquires or releases that failed (not counted as pairs).
    pub(crate) errors: u64,
    /// The client process's user+sys CPU seconds over the pairs.
    pub(crate) client_cpu: f64,
    /// The 0th to 100th percentile of a pair's time.
    pub(crate) quantiles: Vec<Duration>,
}

impl Latencies {
    pub(crate) fn quantile(&self, q: usize) -> Duration {
        self.quantiles.get(q).copied().unwrap_or_default()
    }
}

impl Peer {
    /// The driver's command line, for a caller that runs it itself (as
    /// [`crate::redisson`] does, to read the server while it runs).
    pub(crate) fn argv(&self) -> &[String] {
        &self.argv
    }

    /// Lock+unlock pairs per second with `tasks` workers on one client.
    pub(crate) fn uncontended(
        &self,
        url: &str,
        tasks: usize,
        seconds: u64,
    ) -> Result<Pairs, String> {
        let out = self.drive("uncontended", url, tasks, seconds)?;
        let seconds = number(&out, "seconds")?;
        let pairs = number(&out, "pairs")?;
        Ok(Pairs {
            per_sec: pairs / seconds,
            seconds,
            errors: number(&out, "errors")? as u64,
            server_us: f64::NAN,
            server_reads: f64::NAN,
            client_us: number(&out, "cpu_seconds").map_or(f64::NAN, |s| s * 1e6 / pairs.max(1.0)),
        })
    }

    /// Hand-offs among `workers` workers on one key, as redlease's are
    /// measured in [`crate::handoff`].
    pub(crate) fn handoff(
        &self,
        url: &str,
        workers: usize,
        seconds: u64,
    ) -> Result<Handoffs, String> {
        let out = self.drive("handoff", url, workers, seconds)?;
        Ok(Handoffs {
            acquisitions: number(&out, "acquisitions")? as u64,
            handoffs: number(&out, "handoffs")? as usize,
            seconds: number(&out, "seconds")?,
            quantiles: quantiles(&out)?,
            commands_per_handoff: f64::NAN,
        })
    }

    /// Timed lock+release pairs with `tasks` workers on one RedLock over
    /// the masters at `urls`, as [`crate::redlock`] times redlease's (rslock
    /// only).
    pub(crate) fn redlock(
        &self,
        urls: &[String],
        tasks: usize,
        seconds: u64,
    ) -> Result<Latencies, String> {
        let out = self.drive("redlock", &urls.join(","), tasks, seconds)?;
        Ok(Latencies {
            pairs: number(&out, "pairs")? as u64,
            seconds: number(&out, "seconds")?,
            errors: number(&out, "errors")? as u64,
            client_cpu: number(&out, "cpu_seconds")?,
            quantiles: quantiles(&out)?,
        })
    }

    /// Runs the driver, killing it if it overruns by far, and returns its
    /// JSON line.
    fn drive(&self, mode: &str, url: &str, n: usize, seconds: u64) -> Result<Value, String> {
        let child = Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .args([mode, url, &n.to_string(), &seconds.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.argv[0]))?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let limit = Duration::from_secs(seconds + 30);
        let out = match rx.recv_timeout(limit) {
            Ok(out) => out.map_err(|e| e.to_string())?,
            Err(_) => {
                redlease_testkit::signal("KILL", pid);
                return Err(format!("the driver did not finish within {limit:?}"));
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        if !out.status.success() || last.is_empty() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr.lines().last().unwrap_or("no output");
            return Err(format!("the driver failed ({}): {why}", out.status));
        }
        serde_json::from_str(last).map_err(|e| format!("bad driver output {last:?}: {e}"))
    }
}

fn number(out: &Value, field: &str) -> Result<f64, String> {
    out[field]
        .as_f64()
        .ok_or_else(|| format!("no number {field:?} in the driver's output"))
}

/// Runs a peer's driver, which blocks this thread for seconds, without
/// holding up the runtime's other tasks (the client's connection).
pub(crate) fn blocking<T>(run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    tokio::task::block_in_place(run).map_err(|why| why.replace('|', "/"))
}

/// The 0th to 100th percentile the driver reports in `quantiles_us`.
fn quantiles(out: &Value) -> Result<Vec<Duration>, String> {
    out["quantiles_us"]
        .as_array()
        .ok_or("no \"quantiles_us\" in the driver's output")?
        .iter()
        // Clamped at zero: a driver's clocks cannot go backwards, but a
        // bad line must not stop the run.
        .map(|q| {
            q.as_f64()
                .map(|us| Duration::from_secs_f64((us / 1e6).max(0.0)))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "a quantile that is not a number".to_owned())
}
