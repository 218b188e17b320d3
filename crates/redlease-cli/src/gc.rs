//! `redlease gc` and `redlease inspect --leftovers`: what locks leave
//! behind, and its removal. The finding and the removing are the
//! library's ([`redlease::admin::leftovers`], [`redlease::admin::gc`]);
//! this module renders them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use comfy_table::Table;
use comfy_table::presets::NOTHING;
use redlease::admin::{self, Leftover, LeftoverKind, Leftovers};
use serde::Serialize;

use crate::connect::{LayoutArg, Target, admin_hint, fail};

/// Removes what locks leave behind once it is provably dead.
///
/// Walks the keys matching --pattern with SCAN (never KEYS), at most
/// --limit per call (it prints the --cursor to go on with), and removes,
/// each with one script that checks again in the same step: fair-queue
/// entries at the head of a queue whose waiter is gone (its deadline
/// passed: the rule every fair acquire applies; the new head is told when
/// the lock is free), an expirable semaphore's permits whose lease passed
/// (given back to the pool, as every acquire would), a read-write lock's
/// timeout keys of readers that hold it no more, and election records of
/// leaders that hold the lock no more. It is safe beside live Java and
/// Rust clients. Fencing counters are kept (a later lock of the name goes
/// on from them; a Redisson RFencedLock would restart at 1), as are unlock
/// latches and request records (they expire in seconds). With --dry-run it
/// only shows what it would remove, as `inspect --leftovers` does. Keys are
/// known by their names, as Redisson names them: a zset `{NAME}:timeout`
/// beside an integer `NAME` is an expirable semaphore's permits, so where
/// the application keeps keys of its own that look so, give a --pattern
/// of the lock names.
#[derive(Debug, clap::Args)]
pub(crate) struct GcArgs {
    /// Shows what would be removed; changes nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    scan: ScanArgs,
}

/// Where to look: shared by `gc` and `inspect --leftovers`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScanArgs {
    /// SCAN MATCH pattern (glob) of the keys to look at, for example
    /// '*orders:*' (a lock's keys put prefixes before its name).
    #[arg(long, short = 'p', default_value = "*")]
    pub(crate) pattern: String,
    /// How many keys SCAN may look at in this call.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) limit: u64,
    /// Goes on from where an earlier call stopped.
    #[arg(long, default_value_t = 0)]
    pub(crate) cursor: u64,
    /// Prints JSON for tools instead of the tables.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) async fn main(target: Target, args: GcArgs) -> ExitCode {
    let client = match args.dry_run {
        true => target.reader().await,
        // The layout only matters to locks taken, and this takes none.
        false => target.client(None, LayoutArg::default()).await,
    };
    let client = match client {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    let scan = &args.scan;
    let page = match args.dry_run {
        true => admin::leftovers(&client, &scan.pattern, scan.cursor, scan.limit).await,
        false => admin::gc(&client, &scan.pattern, scan.cursor, scan.limit).await,
    };
    match page {
        Ok(page) => print(scan, &page, Mode::of(args.dry_run)),
        Err(e) => {
            let hint = admin_hint(&e);
            fail(&target.scrub(&format!("cannot collect: {e}{hint}")))
        }
    }
}

/// `inspect --leftovers`.
pub(crate) async fn inspect(target: Target, scan: &ScanArgs) -> ExitCode {
    let client = match target.reader().await {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    match admin::leftovers(&client, &scan.pattern, scan.cursor, scan.limit).await {
        Ok(page) => print(scan, &page, Mode::Inspect),
        Err(e) => {
            let hint = admin_hint(&e);
            fail(&target.scrub(&format!("cannot inspect: {e}{hint}")))
        }
    }
}

/// Which command renders: the words differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Inspect,
    DryRun,
    Collect,
}

impl Mode {
    fn of(dry_run: bool) -> Mode {
        match dry_run {
            true => Mode::DryRun,
            false => Mode::Collect,
        }
    }
}

fn print(scan: &ScanArgs, page: &Leftovers, mode: Mode) -> ExitCode {
    let out = match scan.json {
        true => match serde_json::to_string_pretty(&json(scan, page, mode)) {
            Ok(json) => json + "\n",
            Err(e) => return fail(&format!("cannot write json: {e}")),
        },
        false => table(scan, page, mode),
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

/// What each kind is, in a word, for the summary's last column.
fn note(kind: LeftoverKind) -> &'static str {
    match kind {
        LeftoverKind::FencingCounter => "kept: the next lock of the name goes on from it",
        LeftoverKind::FairQueue => "waiters gone; gc removes those at the head",
        LeftoverKind::ExpiredPermits => "leases passed; gc gives them back",
        LeftoverKind::ReadTimeout => "readers gone; gc removes them",
        LeftoverKind::LeaderRecord => "leaders gone; gc removes them",
        LeftoverKind::UnlockLatch => "kept: expires in seconds",
        LeftoverKind::RequestRecord => "kept: expires in seconds",
        _ => "",
    }
}

const KINDS: [LeftoverKind; 7] = [
    LeftoverKind::FencingCounter,
    LeftoverKind::FairQueue,
    LeftoverKind::ExpiredPermits,
    LeftoverKind::ReadTimeout,
    LeftoverKind::LeaderRecord,
    LeftoverKind::UnlockLatch,
    LeftoverKind::RequestRecord,
];

/// The totals of one kind.
#[derive(Default, Serialize)]
struct Totals {
    kind: &'static str,
    keys: u64,
    expired: u64,
    dead: u64,
    removed: u64,
    /// `None` when the size of some key could not be read.
    bytes: Option<u64>,
}

fn totals(page: &Leftovers, kind: LeftoverKind) -> Totals {
    let of: Vec<&Leftover> = page.leftovers.iter().filter(|l| l.kind == kind).collect();
    Totals {
        kind: kind.name(),
        keys: of.len() as u64,
        expired: of.iter().map(|l| l.expired).sum(),
        dead: of.iter().map(|l| l.dead).sum(),
        removed: of.iter().map(|l| l.removed).sum(),
        bytes: of.iter().map(|l| l.bytes).sum(),
    }
}

fn table(scan: &ScanArgs, page: &Leftovers, mode: Mode) -> String {
    let mut out = String::new();
    let removes = match mode {
        Mode::Collect => "REMOVED",
        Mode::DryRun | Mode::Inspect => "GC REMOVES",
    };
    if !page.leftovers.is_empty() {
        let mut summary = Table::new();
        summary
            .load_style(NOTHING)
            .set_header(vec!["KIND", "KEYS", "EXPIRED", removes, "BYTES", "NOTE"]);
        for kind in KINDS {
            let t = totals(page, kind);
            if t.keys == 0 {
                continue;
            }
            let removed = match mode {
                Mode::Collect => t.removed,
                Mode::DryRun | Mode::Inspect => t.dead,
            };
            summary.add_row(vec![
                kind.name().to_owned(),
                t.keys.to_string(),
                t.expired.to_string(),
                removed.to_string(),
                t.bytes.map_or_else(|| "-".to_owned(), |b| b.to_string()),
                note(kind).to_owned(),
            ]);
        }
        push(&mut out, summary);
        let dead: Vec<&Leftover> = page.leftovers.iter().filter(|l| l.dead > 0).collect();
        if !dead.is_empty() {
            out.push('\n');
            let nodes = dead.iter().any(|l| l.node.is_some());
            let mut keys = Table::new();
            let mut header = vec!["KEY", "KIND", "ENTRIES", "EXPIRED", removes];
            if nodes {
                header.push("NODE");
            }
            keys.load_style(NOTHING).set_header(header);
            for l in dead {
                let mut row = vec![
                    l.key.clone(),
                    l.kind.name().to_owned(),
                    l.entries.to_string(),
                    l.expired.to_string(),
                    match mode {
                        Mode::Collect => l.removed,
                        Mode::DryRun | Mode::Inspect => l.dead,
                    }
                    .to_string(),
                ];
                if nodes {
                    row.push(l.node.clone().unwrap_or_else(|| "-".to_owned()));
                }
                keys.add_row(row);
            }
            push(&mut out, keys);
        }
        out.push('\n');
    }
    let removable: u64 = page.leftovers.iter().map(|l| l.dead).sum();
    let removed: u64 = page.leftovers.iter().map(|l| l.removed).sum();
    let _ = write!(
        out,
        "{} leftover key(s) in {} key(s) scanned matching {:?}",
        page.leftovers.len(),
        page.keys_seen,
        scan.pattern
    );
    let _ = match mode {
        Mode::Collect => writeln!(out, "; {} removed", entries(removed)),
        Mode::DryRun => writeln!(out, "; gc would remove {}", entries(removable)),
        Mode::Inspect => writeln!(out, "; `redlease gc` removes {}", entries(removable)),
    };
    if page.cursor != 0 {
        let _ = writeln!(
            out,
            "more keys to scan: go on with --cursor {}",
            page.cursor
        );
    }
    out
}

fn entries(n: u64) -> String {
    match n {
        1 => "1 entry".to_owned(),
        n => format!("{n} entries"),
    }
}

/// A borderless table, columns two spaces apart, no trailing spaces.
fn push(out: &mut String, mut table: Table) {
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    out.push_str(&table.trim_fmt());
    out.push('\n');
}

#[derive(Serialize)]
struct PageJson<'a> {
    pattern: &'a str,
    /// `0` when the scan went through every key, else the `--cursor` to go
    /// on with.
    cursor: u64,
    complete: bool,
    keys_seen: usize,
    /// `inspect`, `dry-run` or `gc`.
    mode: &'static str,
    /// Per kind found.
    totals: Vec<Totals>,
    leftovers: Vec<LeftoverJson<'a>>,
}

#[derive(Serialize)]
struct LeftoverJson<'a> {
    key: &'a str,
    kind: &'static str,
    names: &'a [String],
    owner: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    entries: u64,
    expired: u64,
    dead: u64,
    removed: u64,
    /// Milliseconds to live; `None` when the key never expires.
    ttl_ms: Option<i64>,
    bytes: Option<u64>,
}

fn json<'a>(scan: &'a ScanArgs, page: &'a Leftovers, mode: Mode) -> PageJson<'a> {
    PageJson {
        pattern: &scan.pattern,
        cursor: page.cursor,
        complete: page.cursor == 0,
        keys_seen: page.keys_seen,
        mode: match mode {
            Mode::Inspect => "inspect",
            Mode::DryRun => "dry-run",
            Mode::Collect => "gc",
        },
        totals: KINDS
            .iter()
            .map(|&k| totals(page, k))
            .filter(|t| t.keys > 0)
            .collect(),
        leftovers: page
            .leftovers
            .iter()
            .map(|l| LeftoverJson {
                key: &l.key,
                kind: l.kind.name(),
                names: &l.names,
                owner: l.owner.as_deref(),
                node: l.node.as_deref(),
                entries: l.entries,
                expired: l.expired,
                dead: l.dead,
                removed: l.removed,
                ttl_ms: (l.ttl_ms >= 0).then_some(l.ttl_ms),
                bytes: l.bytes,
            })
            .collect(),
    }
}
