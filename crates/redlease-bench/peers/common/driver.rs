//! What the Rust peer drivers share (rslock's and the redisson crate's):
//! the `hold` mode's event lines, the CPU time and percentiles of the bench
//! lines, and the hand-off's bookkeeping. Each driver includes this file
//! with `#[path]`; scripts/bench-peers copies it beside them.

use std::process::exit;
use std::time::{Duration, Instant};

/// Prints `{fields}` as one line and flushes it: the test reads the events
/// as they come.
pub(crate) fn event(fields: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{{{fields}}}");
    let _ = out.flush();
}

pub(crate) fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

pub(crate) fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| {
        eprintln!("bad number {s:?}");
        exit(2)
    })
}

/// This process's user+sys CPU seconds so far (all threads), from
/// /proc/self/stat, so that the bench can set the client's work per pair
/// beside the servers'.
pub(crate) fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces, so find its
    // closing parenthesis): utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<f64>().ok())
        .sum();
    let per_second = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(100.0);
    ticks / per_second
}

/// The 0th..100th percentile of `samples` in microseconds: the sample at
/// index (len - 1) * q / 100 of the sorted list; none without samples.
pub(crate) fn quantiles_us(samples: &mut [Duration]) -> Vec<String> {
    samples.sort();
    if samples.is_empty() {
        return Vec::new();
    }
    (0..=100)
        .map(|q| samples[(samples.len() - 1) * q / 100])
        .map(|d| format!("{:.1}", d.as_secs_f64() * 1e6))
        .collect()
}

#[derive(Default)]
pub(crate) struct Board {
    /// The worker that released last, and when its release returned.
    pub(crate) last_release: Option<(usize, Instant)>,
    /// Acquisitions so far.
    pub(crate) seq: u64,
    pub(crate) samples: Vec<Duration>,
    pub(crate) errors: u64,
}
