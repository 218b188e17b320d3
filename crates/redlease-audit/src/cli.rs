//! The command line of `redlease-audit` and of `redlease audit`: one
//! definition, so the two cannot drift apart.

use std::path::PathBuf;

/// Lists every `#[distributed_lock]` in the .rs files under each PATH, with
/// warnings for review.
///
/// Each PATH is a file or a directory, walked recursively (skipping target/
/// and hidden directories). For each lock: its location, function, key,
/// mode (plain, or read / write for a read-write lock), wait and lease; then warnings (wait not much shorter than the lease, key
/// without a `prefix:` namespace, lease far above the others under the same
/// prefix, lease under 1s). Files that do not parse and malformed
/// attributes are listed as problems.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct AuditArgs {
    /// Files or directories to audit.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Prints JSON for tools instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exits 1 when there is any warning or problem.
    #[arg(long)]
    pub deny_warnings: bool,
}

/// What the exit status says, shown after the options in `--help`.
pub const EXIT_CODES: &str = "\
exit codes:
  0  the audit ran (and, with --deny-warnings, found nothing)
  1  --deny-warnings and at least one warning or problem
  2  usage error, or a path could not be read";
