//! The history: every operation of every client, one JSON object per line.
//!
//! Each operation is two events, as in Jepsen: an `invoke` written before
//! the call and its completion written after it, `ok`, `fail` (it certainly
//! did not happen: busy, refused) or `info` (unknown: an error, a time-out).
//! A process killed in the middle of an operation leaves its `invoke`
//! alone, and the checker treats it as `info`. Every client process
//! appends to a file of its own and flushes each line, so a `SIGKILL` loses
//! nothing written before it. The Python client writes the same lines.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub(crate) use crate::workload::Workload;

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Op {
    /// Take `name` (a lock, a read or write side, one permit, or a
    /// multi-lock's members, `name` then being their names joined by
    /// `,`); `ok` carries the fencing token where there is one.
    Acquire,
    /// The fenced read-modify-write of `name`'s row: claim with the token,
    /// read, write read + 1; `ok` says whether it was accepted.
    Write,
    /// The unfenced read-modify-write of `name`'s row, the baseline.
    Unfenced,
    /// Under a read lock: the unfenced counter of `name`'s row read twice,
    /// `read` and `read2`, with the work between; a writer inside meanwhile
    /// would change it.
    Read,
    /// Release what the last acquire took; `fail`: it was no longer ours.
    Release,
    /// Count a latch down once.
    CountDown,
    /// Wait for a latch; `ok` with `open` true when it opened, false when
    /// the wait ran out.
    Await,
}

/// An event's place in its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Type {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// One line of the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event {
    /// The process: `<client kind>-<n>.<incarnation>`.
    pub(crate) p: String,
    /// The client kind, e.g. `redlease-async-redisson`, `redis-py`.
    pub(crate) c: String,
    /// What the operation works on (see [`Workload`]); the plain lock when
    /// missing.
    #[serde(default)]
    pub(crate) w: Workload,
    pub(crate) f: Op,
    #[serde(rename = "type")]
    pub(crate) ty: Type,
    pub(crate) name: String,
    /// Wall-clock Unix time in µs, comparable across processes.
    pub(crate) t: u64,
    /// The fencing token (`acquire` ok, `write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<u64>,
    /// The value read (`write`, `unfenced` and `read` ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) read: Option<i64>,
    /// The second value read (`read` ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) read2: Option<i64>,
    /// Whether the fenced write was accepted (`write` ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) accepted: Option<bool>,
    /// Whether the client had been told its hold was lost, asked right
    /// before the operation (`write`, `unfenced`, `read` and `release`
    /// invokes); absent where the client cannot tell (Java, redis-py).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<bool>,
    /// Whether the latch had opened (`await` ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) open: Option<bool>,
    /// Each member's token (a multi-lock's `acquire` ok), in `name`'s
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tokens: Vec<Option<u64>>,
    /// Why it failed, for `fail` and `info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) err: Option<String>,
    /// `unavailable` for a redlease error saying the server could not
    /// serve it for now (a redirection, a cluster or master down, a node
    /// loading: `Error::is_unavailable`), which did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
}

/// Wall-clock Unix time in µs.
pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A client's history file, appended to and flushed line by line.
#[derive(Debug)]
pub(crate) struct Log {
    file: File,
    process: String,
    client: String,
}

impl Log {
    /// Opens (creating) `path` for process `process` of kind `client`.
    pub(crate) fn open(path: &Path, process: &str, client: &str) -> std::io::Result<Log> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Log {
            file,
            process: process.to_owned(),
            client: client.to_owned(),
        })
    }

    /// A new event of this process on workload `w`, timed now.
    pub(crate) fn event(&self, w: Workload, f: Op, ty: Type, name: &str) -> Event {
        Event {
            p: self.process.clone(),
            c: self.client.clone(),
            w,
            f,
            ty,
            name: name.to_owned(),
            t: now_us(),
            token: None,
            read: None,
            read2: None,
            accepted: None,
            lost: None,
            open: None,
            tokens: Vec::new(),
            err: None,
            kind: None,
        }
    }

    /// Appends `event` and flushes it.
    pub(crate) fn write(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // One write per line: a line is never split by a kill between two
        // writes.
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// Reads every `*.jsonl` history file in `dir` (the nemesis's own file
/// excepted), in no particular order. A last line cut short by a kill is
/// skipped.
pub(crate) fn read_dir(dir: &Path) -> std::io::Result<Vec<Event>> {
    let mut events = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && p.file_name().is_some_and(|n| n != "nemesis.jsonl")
        })
        .collect();
    paths.sort();
    for path in paths {
        for line in BufReader::new(File::open(&path)?).lines() {
            let line = line?;
            if let Ok(event) = serde_json::from_str::<Event>(&line) {
                events.push(event);
            }
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_a_torn_line_is_skipped() {
        let dir = std::env::temp_dir().join(format!("judge-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let mut log = Log::open(&path, "p-1.1", "kind").unwrap();
        let mut ok = log.event(Workload::Lock, Op::Acquire, Type::Ok, "n");
        ok.token = Some(7);
        log.write(&ok).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"p\":\"p-1.1\",\"c\"")
            .unwrap();
        let events = read_dir(&dir).unwrap();
        assert_eq!(events, [ok]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
