//! `redlease audit`: the declared-lock audit of `redlease-audit`, with the
//! same command line, output and exit codes.

use std::process::ExitCode;

use redlease_audit::cli::AuditArgs;

pub(crate) fn main(args: AuditArgs) -> ExitCode {
    redlease_audit::run_command(&args.paths, args.json, args.deny_warnings, "redlease")
}
