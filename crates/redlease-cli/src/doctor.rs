//! `redlease doctor`: the library's checks ([`redlease::doctor`]) as a
//! table for people or JSON for CI, and their worst as the exit status.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use comfy_table::Table;
use comfy_table::presets::NOTHING;
use redlease::doctor::{self, Finding, Report, Severity};
use serde::Serialize;

use crate::connect::{LayoutArg, Target, fail};

/// Checks the Redis that locks depend on and says what to change.
///
/// On each master (every master of a cluster, the one the sentinels name):
/// maxmemory-policy (any policy but noeviction can evict a held lock), memory
/// against maxmemory, persistence (appendonly, appendfsync, snapshots), the
/// role (a replica refuses locks; a writable one grants locks its master
/// does not see), the replicas, whether WAIT and WAITAOF answer, whether
/// scripts run, the version and its native compare-and-delete, the clock
/// against this machine's, and the round trip. On a cluster: every slot
/// served, and sharded pub/sub. Under Sentinel: the quorum, how many
/// sentinels, and a replica to promote. And this user's rights: it takes,
/// fences and releases the lock --name (a 10 s fixed lease) and subscribes
/// to its channel.
///
/// Exit status: 0 nothing to change, 1 warnings (or the doctor could not
/// connect), 2 a setting that can lose a held lock with no fault at all.
#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// The lock the rights check takes and releases: a name the user may
    /// lock (under its `redlease acl --prefix`) that nothing else uses.
    #[arg(long, default_value = "redlease:doctor")]
    name: String,
    /// The layout the rights check takes the lock in: `redisson` (a hash,
    /// Redisson's RLock) or `string` (SET NX).
    #[arg(long, value_enum, default_value_t = LayoutArg::Redisson)]
    layout: LayoutArg,
    /// Prints JSON for tools instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn main(target: Target, args: DoctorArgs) -> ExitCode {
    let client = match target.client(None, args.layout).await {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    let report = match doctor::examine(&client, &args.name).await {
        Ok(report) => report,
        Err(e) => return fail(&target.scrub(&format!("cannot examine: {e}"))),
    };
    let out = if args.json {
        match json(&report) {
            Ok(json) => json + "\n",
            Err(e) => return fail(&format!("cannot write json: {e}")),
        }
    } else {
        table(&report)
    };
    // Any password a server quoted back stays hidden.
    let out = target.scrub(&out);
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::from(report.worst().exit_code())
}

/// The table: a row per check and node, then what to change, then the
/// verdict.
fn table(report: &Report) -> String {
    let mut table = Table::new();
    let nodes = report.findings.iter().any(|f| f.node.is_some());
    let mut header = vec!["STATUS", "CHECK"];
    if nodes {
        header.push("NODE");
    }
    header.push("FOUND");
    table.load_style(NOTHING).set_header(header);
    for f in &report.findings {
        let mut row = vec![
            f.severity.as_str().to_uppercase(),
            f.check.name().to_owned(),
        ];
        if nodes {
            row.push(f.node.clone().unwrap_or_else(|| "-".to_owned()));
        }
        row.push(f.found.clone());
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let mut out = table.trim_fmt();
    out.push('\n');
    let to_change: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .collect();
    if !to_change.is_empty() {
        out.push_str("\nto change:\n");
        for f in &to_change {
            let at = f
                .node
                .as_deref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default();
            let advice = f.advice.as_deref().unwrap_or("");
            let _ = writeln!(out, "  {} {}{at}: {advice}", f.severity, f.check);
        }
    }
    let _ = writeln!(out, "\n{}", verdict(report));
    out
}

/// The last line: the worst finding, and how many of each.
fn verdict(report: &Report) -> String {
    let count = |s| report.findings.iter().filter(|f| f.severity == s).count();
    let (dangers, warnings) = (count(Severity::Danger), count(Severity::Warning));
    match report.worst() {
        Severity::Ok => "verdict: ok, nothing to change".to_owned(),
        Severity::Warning => format!("verdict: {warnings} warning(s), no setting that loses locks"),
        Severity::Danger => format!(
            "verdict: {dangers} setting(s) that can lose a held lock, {warnings} warning(s)"
        ),
    }
}

/// `doctor --json`. The field names are the tool's interface; keep them
/// stable.
#[derive(Serialize)]
struct ReportJson<'a> {
    /// `ok`, `warning` or `danger`: the worst finding.
    status: &'static str,
    /// The exit status it gives.
    exit_code: u8,
    findings: Vec<FindingJson<'a>>,
}

#[derive(Serialize)]
struct FindingJson<'a> {
    check: &'static str,
    status: &'static str,
    /// `host:port`; absent for the URL's one node or the deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    found: &'a str,
    advice: Option<&'a str>,
}

fn json(report: &Report) -> Result<String, serde_json::Error> {
    let worst = report.worst();
    serde_json::to_string_pretty(&ReportJson {
        status: worst.as_str(),
        exit_code: worst.exit_code(),
        findings: report
            .findings
            .iter()
            .map(|f| FindingJson {
                check: f.check.name(),
                status: f.severity.as_str(),
                node: f.node.as_deref(),
                found: &f.found,
                advice: f.advice.as_deref(),
            })
            .collect(),
    })
}
