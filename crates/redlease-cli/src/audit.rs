//! `redlease audit`: the declared-lock audit of `redlease-audit`, with the
//! same output and exit codes.

use std::path::PathBuf;
use std::process::ExitCode;

/// Lists every `#[distributed_lock]` in the .rs files under each PATH, with
/// warnings for review.
///
/// Each PATH is a file or a directory, walked recursively (skipping target/
/// and hidden directories). For each lock: its location, function, key,
/// wait and lease; then warnings (wait not much shorter than the lease, key
/// without a `prefix:` namespace, lease far above the others under the same
/// prefix, lease under 1s). Files that do not parse and malformed
/// attributes are listed as problems. Exit codes: 0 the audit ran (and,
/// with --deny-warnings, found nothing); 1 --deny-warnings and at least one
/// warning or problem; 2 a path could not be read.
#[derive(Debug, clap::Args)]
pub(crate) struct AuditArgs {
    /// Files or directories to audit.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// Prints JSON for tools instead of the table.
    #[arg(long)]
    json: bool,
    /// Exits 1 when there is any warning or problem.
    #[arg(long)]
    deny_warnings: bool,
}

pub(crate) fn main(args: AuditArgs) -> ExitCode {
    redlease_audit::run_command(&args.paths, args.json, args.deny_warnings, "redlease")
}
