//! What the servers' answers mean for locks: pure functions of `INFO`
//! text and replies (errors as their messages), so that every threshold is
//! tested without a server configured each way.

use std::collections::HashMap;
use std::time::Duration;

use super::Severity;

/// A server's version: major, minor, patch.
pub(super) type Version = (u32, u32, u32);

/// A node's server name (`redis`, `valkey`) and version.
pub(super) type Server = (String, Option<Version>);

/// A check's answer before it is put on a node.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    pub(super) severity: Severity,
    pub(super) found: String,
    pub(super) advice: Option<String>,
}

fn ok(found: impl Into<String>) -> Verdict {
    Verdict {
        severity: Severity::Ok,
        found: found.into(),
        advice: None,
    }
}

fn warning(found: impl Into<String>, advice: impl Into<String>) -> Verdict {
    Verdict {
        severity: Severity::Warning,
        found: found.into(),
        advice: Some(advice.into()),
    }
}

fn danger(found: impl Into<String>, advice: impl Into<String>) -> Verdict {
    Verdict {
        severity: Severity::Danger,
        found: found.into(),
        advice: Some(advice.into()),
    }
}

/// A clock further from ours than this is a warning: Redisson's fair lock
/// writes its waiters' deadlines with the client's clock (redlease's
/// scripts read the server's `TIME`), and a once-per-tick job's replicas
/// decide the tick by their own clocks.
pub(super) const CLOCK_LIMIT: Duration = Duration::from_secs(1);

/// A round trip longer than this is a warning: every acquire and release
/// is at least one, and a waiter's wake-up two.
pub(super) const ROUND_TRIP_LIMIT: Duration = Duration::from_millis(100);

/// Memory in use above this share of `maxmemory` is a warning: under
/// `noeviction`, a full server refuses every acquire with `OOM`.
const MEMORY_LIMIT: f64 = 0.9;

/// `INFO`'s `field:value` lines.
pub(super) struct Info<'a>(HashMap<&'a str, &'a str>);

impl<'a> Info<'a> {
    pub(super) fn parse(text: &'a str) -> Info<'a> {
        Info(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.trim_end_matches('\r').split_once(':'))
                .collect(),
        )
    }

    fn get(&self, field: &str) -> Option<&'a str> {
        self.0.get(field).copied()
    }

    fn number(&self, field: &str) -> Option<u64> {
        self.get(field)?.parse().ok()
    }

    /// The server's name and version: `("valkey", (9, 0, 0))`,
    /// `("redis", (7, 0, 15))`. Valkey also reports a `redis_version` of
    /// the Redis it is compatible with, so its own field comes first.
    pub(super) fn server(&self) -> (&'a str, Option<Version>) {
        let (name, version) = match self.get("valkey_version") {
            Some(v) => ("valkey", Some(v)),
            None => (
                self.get("server_name").unwrap_or("redis"),
                self.get("redis_version"),
            ),
        };
        (name, version.and_then(parse_version))
    }

    pub(super) fn is_master(&self) -> bool {
        self.get("role") == Some("master")
    }

    pub(super) fn connected_replicas(&self) -> Option<u64> {
        self.number("connected_slaves")
    }
}

fn parse_version(v: &str) -> Option<Version> {
    let mut parts = v.split('.').map(|p| p.parse::<u32>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().and_then(Result::ok).unwrap_or(0);
    let patch = parts.next().and_then(Result::ok).unwrap_or(0);
    Some((major, minor, patch))
}

fn version_text((a, b, c): Version) -> String {
    format!("{a}.{b}.{c}")
}

/// Master or replica. A read-only replica refuses lock writes (`READONLY`):
/// loud. A writable one (`replica-read-only no`) takes them, and nobody
/// else sees them: its master and the other replicas grant the same lock.
pub(super) fn role(info: &Info, replica_read_only: &Result<Option<String>, String>) -> Verdict {
    if info.is_master() {
        return ok("master");
    }
    let of = match (info.get("master_host"), info.get("master_port")) {
        (Some(h), Some(p)) => format!("replica of {h}:{p}"),
        _ => format!(
            "{} (not a master)",
            info.get("role").unwrap_or("unknown role")
        ),
    };
    match replica_read_only.as_ref().map(|v| v.as_deref()) {
        Ok(Some("no")) => danger(
            format!("{of}, replica-read-only no"),
            "a lock written on a writable replica is seen by no one else: its master grants \
             the same lock to another; point the url at the master (or at the sentinels, \
             redis-sentinel://), and set replica-read-only yes",
        ),
        Ok(_) => warning(
            of,
            "lock calls fail with READONLY here: point the url at the master, or at the \
             sentinels (redis-sentinel://) or the cluster (redis-cluster://)",
        ),
        Err(e) => warning(
            format!("{of}, replica-read-only unknown ({e})"),
            "lock calls fail with READONLY on a read-only replica, and a writable one grants \
             locks its master does not see: point the url at the master",
        ),
    }
}

/// `maxmemory-policy`: every lock key has a time to live, so the
/// `volatile-*` policies pick locks first, and the `allkeys-*` policies
/// any key; an evicted lock is taken by the next caller while its holder
/// still works, and nothing reports it. With `maxmemory 0` nothing is
/// evicted yet, but one `CONFIG SET maxmemory` (or a managed service's
/// default) starts it: the policy is the setting to fix.
pub(super) fn eviction(info: &Info) -> Verdict {
    let Some(policy) = info.get("maxmemory_policy") else {
        return warning(
            "unknown (INFO has no maxmemory_policy)",
            "check that maxmemory-policy is noeviction: any other policy can evict a held lock",
        );
    };
    if policy == "noeviction" {
        return ok(policy);
    }
    let limit = match info.number("maxmemory") {
        Some(0) => " (maxmemory 0: no limit yet)".to_owned(),
        Some(bytes) => format!(" (maxmemory {})", bytes_text(bytes)),
        None => String::new(),
    };
    danger(
        format!("{policy}{limit}"),
        format!(
            "set maxmemory-policy noeviction: under {policy} a held lock can be evicted, and \
             another caller takes it while its holder still works, with no error anywhere \
             (keep lock keys on a Redis of their own if the cache beside them needs eviction)"
        ),
    )
}

/// Memory in use against `maxmemory`; `None` with no limit.
pub(super) fn memory(info: &Info) -> Option<Verdict> {
    let max = info.number("maxmemory").filter(|&m| m > 0)?;
    let used = info.number("used_memory")?;
    let found = format!("{} of {}", bytes_text(used), bytes_text(max));
    Some(if used as f64 > MEMORY_LIMIT * max as f64 {
        warning(
            found,
            "nearly full: under noeviction a full server refuses every acquire with OOM; \
             raise maxmemory or free memory",
        )
    } else {
        ok(found)
    })
}

fn bytes_text(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} B")
    }
}

/// What a restart keeps. Without the append-only file, a restart loses
/// the locks taken since the last snapshot (all of them without
/// snapshots): their holders go on, and others take them. redlease seeds
/// its fencing counters after a restart (DESIGN.md, "Restarts"), so a
/// fenced write stays safe; the lock itself is gone. A warning, not a
/// danger: it takes a restart.
pub(super) fn persistence(
    info: &Info,
    appendfsync: &Result<Option<String>, String>,
    save: &Result<Option<String>, String>,
) -> Verdict {
    if info.get("aof_enabled") == Some("1") {
        return match appendfsync.as_ref().map(|v| v.as_deref()) {
            Ok(Some(policy @ ("always" | "everysec"))) => {
                ok(format!("appendonly yes, appendfsync {policy}"))
            }
            Ok(Some(policy)) => warning(
                format!("appendonly yes, appendfsync {policy}"),
                "appendfsync no leaves writing to the disk to the system (about 30 s): a crash \
                 loses the locks taken in that time; set appendfsync everysec (at most 1 s) or \
                 always",
            ),
            Ok(None) => ok("appendonly yes"),
            Err(e) => warning(
                format!("appendonly yes, appendfsync unknown ({e})"),
                "check appendfsync: everysec or always; with no, a crash loses the locks of \
                 the last 30 s",
            ),
        };
    }
    let snapshots = match save.as_ref().map(|v| v.as_deref()) {
        Ok(Some("")) => "no snapshots".to_owned(),
        Ok(Some(rules)) => format!("save \"{rules}\""),
        Ok(None) => "snapshots unknown".to_owned(),
        Err(e) => format!("snapshots unknown ({e})"),
    };
    let advice = if snapshots == "no snapshots" {
        "a restart empties the server and every held lock with it, while the holders go on: \
         set appendonly yes with appendfsync everysec, or delay restarts past the longest \
         lease"
    } else {
        "a restart loses the locks taken since the last snapshot, while their holders go on: \
         set appendonly yes with appendfsync everysec, or delay restarts past the longest \
         lease"
    };
    warning(format!("appendonly no, {snapshots}"), advice)
}

/// The replicas a master has, against those this client requires
/// (`require_replicas`); a replica has none to count.
pub(super) fn replicas(info: &Info, required: Option<u32>) -> Option<Verdict> {
    if !info.is_master() {
        return None;
    }
    let connected = info.connected_replicas().unwrap_or(0);
    let found = format!("{connected} connected");
    Some(match required {
        Some(n) if u64::from(n) > connected => warning(
            format!("{found}, this client requires {n}"),
            format!(
                "this client waits for {n} replicas to acknowledge each acquire, and only \
                 {connected} are connected: every acquire fails as not replicated"
            ),
        ),
        Some(n) => ok(format!("{found}, this client requires {n}")),
        None => ok(found),
    })
}

/// Whether `WAIT` answers: `require_replicas` sends it after each acquire.
pub(super) fn wait(reply: &Result<i64, String>, required: Option<u32>) -> Verdict {
    match (reply, required) {
        (Ok(_), _) => ok("answers"),
        (Err(e), Some(_)) => warning(
            format!("refused ({e})"),
            "this client requires replicas (require_replicas), which sends WAIT: every \
             acquire fails here; allow WAIT, or build the client without require_replicas",
        ),
        (Err(e), None) => warning(
            format!("refused ({e})"),
            "require_replicas, which makes an acquire wait for replicas, cannot work here: \
             it sends WAIT",
        ),
    }
}

/// Whether `WAITAOF` answers. redlease does not send it; whether a
/// service can wait for its own writes to reach the disk is worth
/// knowing, so a refusal is shown, not warned.
pub(super) fn waitaof(reply: &Result<(), String>) -> Verdict {
    match reply {
        Ok(()) => ok("answers"),
        Err(e) if e.to_ascii_lowercase().contains("unknown command") => {
            ok("not on this server (Redis 7.2 and later)")
        }
        Err(e) => ok(format!("refused ({e})")),
    }
}

/// Whether Lua scripts run: every lock call is one (or, for a release in
/// the string layout, the server's own compare-and-delete).
pub(super) fn scripting(reply: &Result<i64, String>) -> Verdict {
    match reply {
        Ok(1) => ok("EVAL answers"),
        Ok(n) => warning(
            format!("EVAL \"return 1\" answered {n}"),
            "scripts do not run as written here; every lock call is a script",
        ),
        Err(e) => warning(
            format!("refused ({e})"),
            "every lock call runs a Lua script: allow EVAL and EVALSHA (redlease acl \
             --prefix PREFIX prints the rules)",
        ),
    }
}

/// The server and its version: the client speaks RESP3 (Redis 6).
pub(super) fn version(info: &Info) -> Verdict {
    match info.server() {
        (name, Some(v)) if name != "redis" || v.0 >= 6 => ok(format!("{name} {}", version_text(v))),
        (name, Some(v)) => warning(
            format!("{name} {}", version_text(v)),
            "redlease needs Redis 6 or later (it speaks RESP3); sharded pub/sub needs 7",
        ),
        (name, None) => warning(
            format!("{name}, version unknown"),
            "redlease needs Redis 6 or later, or Valkey",
        ),
    }
}

/// The server's own compare-and-delete: Redis 8.4's `DELEX key IFEQ`,
/// Valkey 9's `DELIFEQ`. A string-layout release sends it instead of a
/// script; without it the script does the same.
pub(super) fn native_release(info: &Info) -> Verdict {
    match info.server() {
        ("valkey", Some(v)) if v >= (9, 0, 0) => ok("DELIFEQ (string-layout releases send it)"),
        ("redis", Some(v)) if v >= (8, 4, 0) => ok("DELEX IFEQ (string-layout releases send it)"),
        _ => ok("none: releases run a script (Redis 8.4 has DELEX, Valkey 9 DELIFEQ)"),
    }
}

/// Sharded pub/sub on a cluster: Redis 7's `SSUBSCRIBE`, which the
/// client uses in [`PubSubMode::Sharded`](crate::PubSubMode). Plain
/// pub/sub on a cluster broadcasts every release to every node.
pub(super) fn sharded_pubsub(versions: &[Server], sharded: bool) -> Verdict {
    let all = versions
        .iter()
        .all(|(name, v)| name == "valkey" || v.is_some_and(|v| v.0 >= 7));
    let mode = if sharded {
        "this client uses it"
    } else {
        "this client uses plain pub/sub"
    };
    if all {
        ok(format!("available, {mode}"))
    } else if sharded {
        warning(
            format!("not on every node, {mode}"),
            "sharded pub/sub needs Redis 7 on every node: waiters on the others are not woken \
             by releases; upgrade, or build the client with PubSubMode::Plain",
        )
    } else {
        ok(format!("not on every node (Redis 7), {mode}"))
    }
}

/// `CLUSTER INFO`: every slot served. A lock whose slot no node serves
/// cannot be taken (`CLUSTERDOWN`).
pub(super) fn cluster_slots(text: &str) -> Verdict {
    let info = Info::parse(text);
    let state = info.get("cluster_state").unwrap_or("unknown");
    let assigned = info.number("cluster_slots_assigned").unwrap_or(0);
    let failing = info.number("cluster_slots_fail").unwrap_or(0);
    let found = format!("state {state}, {assigned} of 16384 slots assigned, {failing} failing");
    if state == "ok" && assigned == 16384 && failing == 0 {
        ok(found)
    } else {
        warning(
            found,
            "locks whose slots are not served cannot be taken or released (CLUSTERDOWN): \
             assign every slot, and give each master a replica to take over",
        )
    }
}

/// What one sentinel said, as the judges read it.
pub(super) struct Sentinel<'a> {
    pub(super) address: &'a str,
    pub(super) fields: Result<&'a HashMap<String, String>, String>,
    pub(super) quorum: Result<&'a str, String>,
}

/// Whether the sentinels can agree on a failover, and whether there are
/// enough of them that losing one does not stop that.
pub(super) fn sentinel_quorum(said: &[Sentinel]) -> Verdict {
    let answering = said.iter().filter(|s| s.fields.is_ok()).count();
    let known = said
        .iter()
        .filter_map(|s| s.fields.as_ref().ok())
        .filter_map(|f| f.get("num-other-sentinels")?.parse::<usize>().ok())
        .max()
        .map(|others| others + 1);
    let quorum = said
        .iter()
        .filter_map(|s| s.fields.as_ref().ok())
        .find_map(|f| f.get("quorum").cloned())
        .unwrap_or_else(|| "unknown".to_owned());
    let total = known.unwrap_or(answering);
    let silent: Vec<String> = said
        .iter()
        .filter_map(|s| {
            s.fields
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", s.address))
        })
        .collect();
    let mut found = format!(
        "{total} sentinels, quorum {quorum}, {answering} of {} in the url answer",
        said.len()
    );
    if !silent.is_empty() {
        found.push_str(&format!(" ({})", silent.join("; ")));
    }
    let ck = said.iter().find_map(|s| s.quorum.as_ref().ok().copied());
    match ck {
        Some(message) if message.starts_with("OK") && total >= 3 => ok(found),
        Some(message) if message.starts_with("OK") => warning(
            found,
            "fewer than 3 sentinels: with one of them lost, no failover can be authorized; \
             run at least 3, on separate machines",
        ),
        _ => {
            let why = said
                .iter()
                .find_map(|s| s.quorum.as_ref().err().cloned())
                .unwrap_or_else(|| "no sentinel answered CKQUORUM".to_owned());
            warning(
                format!("{found}; CKQUORUM: {why}"),
                "the sentinels cannot agree on a failover: a lost master stops every lock \
                 until it is back",
            )
        }
    }
}

/// Whether the sentinels have a replica to promote, and whether they see
/// the master as down.
pub(super) fn sentinel_replicas(said: &[Sentinel]) -> Option<Verdict> {
    let fields = said.iter().find_map(|s| s.fields.as_ref().ok())?;
    let replicas = fields
        .get("num-slaves")
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    let flags = fields.get("flags").map(String::as_str).unwrap_or("");
    let found = format!("{replicas} replicas, master flags {flags}");
    Some(if flags.contains("s_down") || flags.contains("o_down") {
        warning(found, "the sentinels see the master as down")
    } else if replicas == 0 {
        warning(
            found,
            "no replica to promote: a lost master stops every lock until it is back",
        )
    } else {
        ok(found)
    })
}

/// The server's clock against this machine's: `skew_ms` is the server's
/// time minus ours (at the middle of the round trip).
pub(super) fn clock(skew_ms: i64) -> Verdict {
    let found = match skew_ms {
        0 => "0 ms (within a millisecond of ours)".to_owned(),
        1.. => format!("{skew_ms:+} ms (the server's clock ahead)"),
        _ => format!("{skew_ms:+} ms (the server's clock behind)"),
    };
    if skew_ms.unsigned_abs() > CLOCK_LIMIT.as_millis() as u64 {
        warning(
            found,
            "synchronize the clocks (NTP): Redisson's fair lock writes its waiters' deadlines \
             with the client's clock, and once-per-tick jobs decide the tick by theirs",
        )
    } else {
        ok(found)
    }
}

/// The median of a few `PING`s.
pub(super) fn round_trip(median: Duration) -> Verdict {
    let found = format!("{:.2} ms", median.as_secs_f64() * 1000.0);
    if median > ROUND_TRIP_LIMIT {
        warning(
            found,
            "every acquire and release is at least one round trip, a waiter's wake-up two: \
             run the service near its Redis",
        )
    } else {
        ok(found)
    }
}

#[cfg(test)]
mod tests;
