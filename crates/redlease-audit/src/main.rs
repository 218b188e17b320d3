//! `redlease-audit [--json] [--deny-warnings] PATH...`: lists every
//! `#[distributed_lock]` under the given paths, with warnings for review.

use std::process::ExitCode;

use clap::Parser;
use redlease_audit::cli::AuditArgs;

#[derive(Debug, Parser)]
#[command(name = "redlease-audit", version)]
struct Cli {
    #[command(flatten)]
    args: AuditArgs,
}

fn main() -> ExitCode {
    // Usage errors exit 2 and `--help` 0, as clap does.
    let Cli { args } = Cli::parse();
    redlease_audit::run_command(&args.paths, args.json, args.deny_warnings, "error")
}
