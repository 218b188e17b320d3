//! `redlease-judge`: a Jepsen-style check of redlease (#29, #36).
//!
//! Many clients, each a process of its own and of several kinds (redlease's
//! async and blocking APIs in both layouts, Java Redisson, redis-py's
//! `Lock`), work on a few shared names of every primitive of the lock
//! family (a plain lock, the fair lock, a read-write lock, both semaphores,
//! latches, a multi-lock): acquire, a fenced read-modify-write of a row in
//! PostgreSQL and an unfenced one beside it, release. Meanwhile a nemesis
//! injects faults on a schedule drawn from a seed. Every operation is
//! logged with its start, end and result, and a checker reads the whole
//! history afterwards.
//!
//! * [`history`]: the events and the per-process log files;
//! * [`workload`]: the primitives the clients work on, and their names;
//! * [`client`]: the client processes (redlease's and Java's);
//! * [`db`]: the fenced and unfenced rows;
//! * [`gc`]: the collector that runs beside the workload (`--gc-ms`);
//! * [`nemesis`]: the faults;
//! * [`netns`]: real network partitions, with network namespaces;
//! * [`run`]: the phases, the processes, the recovery probe;
//! * [`check`]: the checker, which reads the histories and what the run
//!   read at the end;
//! * [`report`]: the Markdown report and the chart.
//!
//! `redlease-judge run --seconds 10` is the short form CI runs;
//! `scripts/judge` the long form, whose report is in docs/JUDGE.md.

mod check;
mod client;
mod db;
mod gc;
mod history;
mod nemesis;
mod netns;
mod report;
mod rng;
mod run;
mod workload;

use std::path::{Path, PathBuf};
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
    /// The collector process of `run --gc-ms` (started by `run`).
    Gc(gc::GcArgs),
    /// Judges a run again from its histories (in `dir`, a run's `--out`)
    /// and what its report.json recorded beside them (faults, final rows
    /// and permits, exits, recovery), and writes report.json, report.md
    /// and chart.svg again; exits 1 on a violation.
    Report { dir: PathBuf },
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
        Command::Gc(args) => match gc::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("redlease-judge gc: {e}");
                ExitCode::from(2)
            }
        },
        Command::Run(args) => match run::run(&args) {
            Ok(report) => finish(&args.out, &report),
            Err(e) => {
                eprintln!("redlease-judge: {e}");
                ExitCode::from(2)
            }
        },
        Command::Report { dir } => match rejudge(&dir) {
            Ok(report) => finish(&dir, &report),
            Err(e) => {
                eprintln!("redlease-judge: {}: {e}", dir.display());
                ExitCode::from(2)
            }
        },
    }
}

/// Reads a run's report.json and judges each phase again from its
/// histories.
fn rejudge(dir: &Path) -> Result<run::RunReport, Box<dyn std::error::Error>> {
    let json = std::fs::read_to_string(dir.join("report.json"))?;
    let mut report: run::RunReport = serde_json::from_str(&json)?;
    let (params, wait_ms) = (report.params(), report.wait_ms);
    for phase in &mut report.phases {
        let events = history::read_dir(&dir.join(phase.fault.as_str()))?;
        phase.judge(&events, params, wait_ms);
    }
    report.judge_run();
    Ok(report)
}

/// Writes report.json, report.md and chart.svg into `dir`, prints the
/// Markdown, and exits 1 on a violation.
fn finish(dir: &Path, report: &run::RunReport) -> ExitCode {
    let md = report::markdown(report);
    let written = std::fs::write(dir.join("report.md"), &md)
        .and_then(|()| std::fs::write(dir.join("chart.svg"), report::svg(report)))
        .and_then(|()| {
            let json = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
            std::fs::write(dir.join("report.json"), json)
        });
    if let Err(e) = written {
        eprintln!("redlease-judge: cannot write the report: {e}");
        return ExitCode::from(2);
    }
    println!("{md}");
    if report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
