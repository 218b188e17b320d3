//! The collector beside the workload (#40): with `run --gc-ms N`, a process
//! of its own runs `redlease::admin::gc` over the phase's keys every N ms
//! while the clients work, as an operator's cron job would, and logs what
//! each run removed. The checks then say whether it took anything a live
//! client still used (a permit held twice, a fair waiter passed over, a
//! leader's record lost); the report says what it removed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::history::now_us;

/// `redlease-judge gc`: one collector process (started by `run`).
#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    /// The phase's Redis, as its clients reach it.
    #[arg(long)]
    redis: String,
    /// The SCAN pattern of the phase's keys.
    #[arg(long)]
    pattern: String,
    /// How long between the start of one run and the next.
    #[arg(long)]
    every_ms: u64,
    /// When to stop (Unix µs).
    #[arg(long)]
    until_us: u64,
    /// Where each run's line goes.
    #[arg(long)]
    log: PathBuf,
}

/// One run's line in the log.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Line {
    t: u64,
    /// Keys the run looked at.
    #[serde(default)]
    keys: u64,
    /// Leftover keys it found, by kind (`LeftoverKind::name`).
    #[serde(default)]
    found: BTreeMap<String, u64>,
    /// Entries removed, by kind.
    removed: BTreeMap<String, u64>,
    /// Why the run failed (a fault: the server down, a failover), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    err: Option<String>,
}

/// What the collector did in a phase, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct GcTally {
    pub(crate) every_ms: u64,
    /// Runs that went through every key.
    pub(crate) runs: u64,
    /// Runs an error stopped.
    pub(crate) failed: u64,
    /// Entries removed, by kind.
    pub(crate) removed: BTreeMap<String, u64>,
    /// The most keys one run looked at.
    #[serde(default)]
    pub(crate) most_keys: u64,
}

pub(crate) fn run(args: &GcArgs) -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut log = File::create(&args.log)?;
    rt.block_on(async {
        let mut client = None;
        while now_us() < args.until_us {
            let started = now_us();
            let mut line = Line {
                t: started,
                ..Line::default()
            };
            if client.is_none() {
                client = redlease::Client::connect(&args.redis).await.ok();
            }
            match &client {
                Some(c) => {
                    if let Err(e) = collect(c, &args.pattern, &mut line).await {
                        line.err = Some(e.to_string());
                    }
                }
                None => line.err = Some("cannot connect".to_owned()),
            }
            writeln!(log, "{}", serde_json::to_string(&line)?)?;
            let next = started + args.every_ms * 1_000;
            tokio::time::sleep(Duration::from_micros(next.saturating_sub(now_us()))).await;
        }
        Ok(())
    })
}

/// One run: the whole keyspace matching `pattern`, page after page.
async fn collect(
    client: &redlease::Client,
    pattern: &str,
    line: &mut Line,
) -> Result<(), redlease::Error> {
    let mut cursor = 0;
    loop {
        let page = redlease::admin::gc(client, pattern, cursor, 1_000).await?;
        line.keys += page.keys_seen as u64;
        for left in &page.leftovers {
            let kind = left.kind.name().to_owned();
            *line.found.entry(kind.clone()).or_default() += 1;
            if left.removed > 0 {
                *line.removed.entry(kind).or_default() += left.removed;
            }
        }
        cursor = page.cursor;
        if cursor == 0 {
            return Ok(());
        }
    }
}

/// The tally of a collector's log (a missing or cut log counts what it
/// has).
pub(crate) fn tally(log: &Path, every_ms: u64) -> GcTally {
    let mut tally = GcTally {
        every_ms,
        ..GcTally::default()
    };
    let Ok(file) = File::open(log) else {
        return tally;
    };
    for line in BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(line) = serde_json::from_str::<Line>(&line) else {
            continue;
        };
        match line.err {
            Some(_) => tally.failed += 1,
            None => tally.runs += 1,
        }
        tally.most_keys = tally.most_keys.max(line.keys);
        for (kind, n) in line.removed {
            *tally.removed.entry(kind).or_default() += n;
        }
    }
    tally
}
