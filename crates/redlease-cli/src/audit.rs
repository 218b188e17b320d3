//! `redlease audit`: the declared-lock audit of `redlease-audit`, with the
//! same output and exit codes.

use std::io::Write;
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
    let audit = match redlease_audit::audit_paths(&args.paths) {
        Ok(audit) => audit,
        Err(err) => {
            eprintln!("redlease: {err}");
            return ExitCode::from(2);
        }
    };
    let report = if args.json {
        match serde_json::to_string_pretty(&audit) {
            Ok(json) => json + "\n",
            Err(err) => {
                eprintln!("redlease: cannot write json: {err}");
                return ExitCode::from(2);
            }
        }
    } else {
        redlease_audit::render_table(&audit)
    };
    // A closed pipe (`| head`) is not worth a panic; the exit code still
    // tells CI what was found.
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    if args.deny_warnings && !audit.is_clean() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
