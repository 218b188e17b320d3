//! What the server and this process report about themselves: Redis's
//! `INFO commandstats` and `INFO memory`, and this process's CPU time and
//! resident memory from `/proc` (Linux), read without `unsafe`.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// Commands a client sends that a script cannot run. Every other command in
/// `INFO commandstats` was run by redlease's scripts inside Redis: redlease
/// sends nothing but scripts, (un)subscriptions and its connection set-up.
const SENT: [&str; 20] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "script|load",
    "script|exists",
    "subscribe",
    "unsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "psubscribe",
    "punsubscribe",
    "hello",
    "client|setinfo",
    "client|setname",
    "select",
    "auth",
    "ping",
    "wait",
    "readonly",
];

/// Calls per command, from `INFO commandstats`.
pub(crate) type Calls = BTreeMap<String, u64>;

/// Calls per command since the server started, from `INFO commandstats`.
pub(crate) fn command_calls(conn: &mut redis::Connection) -> Calls {
    command_stats(conn, "calls")
}

/// One field (`calls`, `usec`, ...) of every command's line of `INFO
/// commandstats`, by command.
pub(crate) fn command_stats(conn: &mut redis::Connection, field: &str) -> Calls {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(conn)
        .expect("INFO commandstats");
    let prefix = format!("{field}=");
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(name, rest)| {
            let value = rest
                .split(',')
                .find_map(|f| f.strip_prefix(prefix.as_str()))?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The calls made between two [`command_calls`] snapshots, leaving out the
/// `INFO` commands that took the snapshots.
pub(crate) fn delta(before: &Calls, after: &Calls) -> Calls {
    after
        .iter()
        .filter(|(name, _)| name.as_str() != "info")
        .map(|(name, &n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// Splits calls into those a client sent and those scripts ran in Redis.
pub(crate) fn split(calls: &Calls) -> (Calls, Calls) {
    calls
        .iter()
        .map(|(k, &v)| (k.clone(), v))
        .partition(|(name, _)| SENT.contains(&name.as_str()))
}

/// The sum of all calls.
pub(crate) fn total(calls: &Calls) -> u64 {
    calls.values().sum()
}

/// `name × n` per command, each count divided by `per`, for a table cell.
pub(crate) fn breakdown(calls: &Calls, per: u64) -> String {
    if calls.is_empty() {
        return "none".to_owned();
    }
    calls
        .iter()
        .map(|(name, &n)| format!("{name} {}", fmt_ratio(n, per)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `n / per`, as an integer when it is one.
pub(crate) fn fmt_ratio(n: u64, per: u64) -> String {
    if n.is_multiple_of(per) {
        (n / per).to_string()
    } else {
        format!("{:.2}", n as f64 / per as f64)
    }
}

/// A field of `INFO <section>` as a number.
pub(crate) fn info_field(conn: &mut redis::Connection, section: &str, field: &str) -> f64 {
    let info: String = redis::cmd("INFO").arg(section).query(conn).expect("INFO");
    parse_field(&info, section, field)
}

/// `field` in the text of `INFO <section>`.
fn parse_field(info: &str, section: &str, field: &str) -> f64 {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
}

/// The server's user plus system CPU time so far, in seconds, from one
/// `INFO cpu`.
pub(crate) fn server_cpu(conn: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).expect("INFO");
    cpu_seconds(&info)
}

/// User plus system CPU seconds in the text of `INFO` (with its `cpu`
/// section).
fn cpu_seconds(info: &str) -> f64 {
    parse_field(info, "cpu", "used_cpu_user") + parse_field(info, "cpu", "used_cpu_sys")
}

/// What the server has done so far: CPU seconds and read events.
#[derive(Clone, Copy)]
pub(crate) struct Work {
    pub(crate) cpu_s: f64,
    /// `total_reads_processed`: reads of client sockets, each bringing in
    /// one or more commands.
    pub(crate) reads: f64,
}

impl std::ops::Sub for Work {
    type Output = Work;

    fn sub(self, earlier: Work) -> Work {
        Work {
            cpu_s: self.cpu_s - earlier.cpu_s,
            reads: self.reads - earlier.reads,
        }
    }
}

/// The server's [`Work`] so far, from one `INFO` (its default sections
/// hold both).
pub(crate) fn server_work(conn: &mut redis::Connection) -> Work {
    let info: String = redis::cmd("INFO").query(conn).expect("INFO");
    Work {
        cpu_s: cpu_seconds(&info),
        reads: parse_field(&info, "stats", "total_reads_processed"),
    }
}

/// User plus system CPU time of this process so far, all threads, from
/// `/proc/self/stat` (`utime` and `stime`, in clock ticks).
pub(crate) fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    stat_cpu_time(&stat).expect("stat format")
}

/// [`cpu_time`] of another process, `pid` (a peer's driver); `None` once
/// it is gone.
pub(crate) fn process_cpu_time(pid: u32) -> Option<Duration> {
    stat_cpu_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `utime` plus `stime` of a `/proc/<pid>/stat` line.
fn stat_cpu_time(stat: &str) -> Option<Duration> {
    // The command name, in parentheses, may contain spaces: count fields
    // after it. Field 3 (state) is the first, utime is 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(
        ticks as f64 / clock_ticks_per_second(),
    ))
}

/// `sysconf(_SC_CLK_TCK)`, asked of `getconf` (100 on Linux in practice).
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A `/proc/self/status` memory field (`VmRSS`, `VmHWM`) in bytes.
pub(crate) fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("/proc/self/status has no {field}"))
}

/// Loads every script the library runs, so that no measured call meets
/// `NOSCRIPT` (and pays a reload round trip).
pub(crate) fn load_scripts(conn: &mut redis::Connection) {
    for (_, _, source) in redlease::lua_scripts() {
        load_script(conn, source);
    }
}

/// Loads `source` (`SCRIPT LOAD`) and returns its SHA1, for `EVALSHA`.
pub(crate) fn load_script(conn: &mut redis::Connection, source: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query(conn)
        .expect("SCRIPT LOAD")
}

/// Takes and releases `name` once: the client's connections are up and the
/// acquire and release scripts are loaded before anything is measured.
pub(crate) async fn warm_up(client: &redlease::Client, name: &str) {
    client
        .lock(name)
        .try_lock()
        .await
        .expect("warm-up lock")
        .unlock()
        .await
        .expect("warm-up unlock");
}
