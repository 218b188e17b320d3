//! `redlease-judge`: a Jepsen-style check of redlease (#29).
//!
//! Many clients, each a process of its own and of several kinds (redlease's
//! async and blocking APIs in both layouts, redis-py's `Lock`), work on a
//! few shared lock names: acquire, a fenced read-modify-write of a row in
//! PostgreSQL, an unfenced one beside it, release. Meanwhile a nemesis
//! injects faults on a schedule drawn from a seed. Every operation is
//! logged with its start, end and result, and a checker reads the whole
//! history afterwards.
//!
//! * [`history`]: the events and the per-process log files;
//! * [`client`]: the redlease client processes (and the planted bugs);
//! * [`db`]: the fenced and unfenced rows;
//! * [`nemesis`]: the faults;
//! * [`netns`]: real network partitions, with network namespaces;
//! * [`run`]: the phases, the processes, the recovery probe;
//! * [`check`]: the checker, which reads only the history;
//! * [`report`]: the Markdown report and the chart.
//!
//! `redlease-judge run --seconds 10` is the short form CI runs;
//! `scripts/judge` the long form, whose report is in docs/JUDGE.md.

mod check;
mod client;
mod db;
mod history;
mod nemesis;
mod netns;
mod report;
mod rng;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "redlease-judge",
    about = "A Jepsen-style history check of redlease"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs the phases and judges them; exits 1 on a violation.
    Run(run::RunArgs),
    /// One client process (started by `run`).
    Client(client::ClientArgs),
    /// Judges a run again from its histories (in `dir`, a run's `--out`)
    /// and the final rows and recovery times in its report.json, and
    /// writes report.json, report.md and chart.svg again; exits 1 on a
    /// violation.
    Report { dir: PathBuf },
    /// Judges a phase's history directory again (histories and
    /// `nemesis.jsonl`); the final rows are not re-read, so only the checks
    /// of the history are made.
    Check { dir: PathBuf },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Client(args) => match client::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("redlease-judge client {}: {e}", args.process);
                ExitCode::from(2)
            }
        },
        Command::Run(args) => match run::run(&args) {
            Ok(report) => {
                let md = report::markdown(&report);
                let written = std::fs::write(args.out.join("report.md"), &md)
                    .and_then(|()| std::fs::write(args.out.join("chart.svg"), report::svg(&report)))
                    .and_then(|()| {
                        let json =
                            serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?;
                        std::fs::write(args.out.join("report.json"), json)
                    });
                if let Err(e) = written {
                    eprintln!("redlease-judge: cannot write the report: {e}");
                    return ExitCode::from(2);
                }
                println!("{md}");
                let failed = report
                    .phases
                    .iter()
                    .any(|p| !p.violations(report.lease_ms).is_empty());
                if failed {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => {
                eprintln!("redlease-judge: {e}");
                ExitCode::from(2)
            }
        },
        Command::Report { dir } => {
            let read = std::fs::read_to_string(dir.join("report.json")).map_err(|e| e.to_string());
            let report = read.and_then(|json| {
                serde_json::from_str::<run::RunReport>(&json).map_err(|e| e.to_string())
            });
            let written = report.and_then(|mut report| {
                for phase in &mut report.phases {
                    let phase_dir = dir.join(phase.fault.as_str());
                    let events = history::read_dir(&phase_dir).map_err(|e| e.to_string())?;
                    let faults = nemesis::read(&phase_dir.join("nemesis.jsonl"))
                        .map_err(|e| e.to_string())?;
                    phase.check = check::check(&events, &faults, &phase.rows);
                }
                let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                std::fs::write(dir.join("report.json"), json)
                    .and_then(|()| std::fs::write(dir.join("report.md"), report::markdown(&report)))
                    .and_then(|()| std::fs::write(dir.join("chart.svg"), report::svg(&report)))
                    .map_err(|e| e.to_string())?;
                Ok(report
                    .phases
                    .iter()
                    .any(|p| !p.violations(report.lease_ms).is_empty()))
            });
            match written {
                Ok(false) => ExitCode::SUCCESS,
                Ok(true) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("redlease-judge: {}: {e}", dir.display());
                    ExitCode::from(2)
                }
            }
        }
        Command::Check { dir } => {
            let events = match history::read_dir(&dir) {
                Ok(events) => events,
                Err(e) => {
                    eprintln!("redlease-judge: cannot read {}: {e}", dir.display());
                    return ExitCode::from(2);
                }
            };
            let faults = nemesis::read(&dir.join("nemesis.jsonl")).unwrap_or_default();
            let mut verdict = check::check(&events, &faults, &[]);
            // Without the final rows, the totals mean nothing.
            verdict.fenced.lost = 0;
            verdict.unfenced.lost = 0;
            let violations = verdict.violations();
            println!(
                "{} operations, {} holds, {} overlaps, {} violations",
                verdict.ops,
                verdict.holds.len(),
                verdict.overlaps.len(),
                violations.len()
            );
            for v in &violations {
                println!("{v}");
            }
            if violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}
