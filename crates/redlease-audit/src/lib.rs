//! Lists every `#[distributed_lock]` declared in a codebase, for review.
//!
//! The audit reads source with `syn` (no build, no running program, so it
//! fits in CI) and, for each attribute written as `#[distributed_lock(..)]`,
//! `#[redlease::distributed_lock(..)]` or `#[::redlease::distributed_lock(..)]`
//! on a free function, a method in an `impl` or trait `impl`, a trait's
//! default method, in inline modules or nested in function bodies, lists:
//!
//! - its location, `file:line` (the file relative to the audited root);
//! - the function, `name` or `Type::method`, after any inline modules;
//! - the key template (`sales:receipt:lock:{bill_id}`) and its prefix;
//! - the mode: `plain` (the lock), or `read` / `write` (a side of the
//!   read-write lock named by the key, `mode = ".."`);
//! - the wait (as written and parsed; none means one attempt);
//! - the lease (as written and parsed; none means watchdog mode, a
//!   [`WATCHDOG_LEASE`] lease renewed while the function runs);
//! - `at_least`, the least time the lock is held, if any;
//! - the `client = ..` expression, if any.
//!
//! # Warnings
//!
//! | kind | fires when | why |
//! | --- | --- | --- |
//! | `wait_near_lease` | wait ≥ lease / [`WAIT_LEASE_DIVISOR`] (the watchdog lease in watchdog mode) | a waiter can outwait the holder's lease, and busy errors come late |
//! | `key_without_prefix` | the literal text before the first `{..}` has no `:` | no namespace: unrelated locks can collide |
//! | `lease_outlier` | a fixed lease ≥ [`LEASE_OUTLIER_FACTOR`] × the median of the other fixed leases with the same prefix | likely a unit slip; a crashed holder blocks that long |
//! | `short_lease` | a fixed lease < [`MIN_FIXED_LEASE`] | likely `ms` for `s`; expires mid-work |
//! | `at_least_over_lease` | `at_least` ≥ the fixed lease | the lease bounds a holder that dies, `at_least` one that finishes early: the lease should be the longer, as ShedLock's `lockAtMostFor` |
//!
//! The prefix is the key up to its last `:` before the first placeholder:
//! `sales:receipt:lock` for `sales:receipt:lock:{bill_id}`.
//!
//! # Problems
//!
//! A file that does not parse, or an attribute whose arguments the attribute
//! would reject (unknown or repeated argument, missing key, bad duration or
//! format spec, zero lease or one over 100 years, placeholder naming no
//! argument), is reported as a [`Problem`] with every such mistake, and the
//! audit goes on; the locks it hides are missing from the list. Arguments
//! are read by `redlease-grammar`, the parser the attribute itself uses, so
//! every lock that compiles is listed.
//!
//! # Output
//!
//! [`render_table`] for people; the [`Audit`] serializes (serde) to JSON for
//! tools, e.g. with `serde_json::to_string_pretty`. The `redlease-audit`
//! binary prints either.
//!
//! # Features
//!
//! - `cli` (default): the `redlease-audit` binary and its command line,
//!   `cli::AuditArgs` (clap), which `redlease audit` shares. Without it the
//!   library does not depend on clap.
//!
//! ```
//! let audit = redlease_audit::audit_source(
//!     "src/sales.rs",
//!     r#"#[redlease::distributed_lock(key = "sales:receipt:lock:{bill_id}", wait = "15s", lease = "120s")]
//!        async fn issue_receipt(bill_id: u64) {}"#,
//! );
//! assert_eq!(audit.locks[0].function, "issue_receipt");
//! assert!(audit.is_clean());
//! ```
#![forbid(unsafe_code)]

mod attr;
#[cfg(feature = "cli")]
pub mod cli;
mod duration;
mod error;
mod model;
mod render;
mod scan;
mod walk;
mod warnings;

use std::path::Path;

pub use error::AuditError;
pub use model::{Audit, Declared, Mode, Problem, ProblemKind, Timing, Warning, WarningKind};
pub use render::render_table;
pub use warnings::{LEASE_OUTLIER_FACTOR, MIN_FIXED_LEASE, WAIT_LEASE_DIVISOR, WATCHDOG_LEASE};

/// Audits `path`: a `.rs` file, or a directory walked recursively for `.rs`
/// files (sorted; `target/` and hidden directories skipped). Files are
/// reported relative to `path`.
///
/// Fails only when a file or directory cannot be read; source that does not
/// parse is a [`Problem`] in the result.
pub fn audit_path(path: &Path) -> Result<Audit, AuditError> {
    audit_paths(&[path])
}

/// Audits several roots as one codebase, so the lease comparison spans all
/// of them. With one root, files are relative to it; with more, each file
/// keeps its root in front so two `src/lib.rs` stay apart.
pub fn audit_paths<P: AsRef<Path>>(roots: &[P]) -> Result<Audit, AuditError> {
    let mut locks = Vec::new();
    let mut problems = Vec::new();
    for root in roots {
        let root = root.as_ref();
        for file in walk::rust_files(root)? {
            let label = if roots.len() == 1 {
                walk::display_path(root, &file)
            } else {
                walk::display_path(Path::new(""), &file)
            };
            let bytes = std::fs::read(&file).map_err(|e| AuditError::io(&file, e))?;
            match String::from_utf8(bytes) {
                Ok(source) => {
                    let (found, trouble) = scan::scan_source(&label, &source);
                    locks.extend(found);
                    problems.extend(trouble);
                }
                Err(_) => problems.push(Problem {
                    file: label,
                    line: None,
                    kind: ProblemKind::UnparsableFile,
                    message: "file is not utf-8, its locks are not listed".to_owned(),
                }),
            }
        }
    }
    Ok(finish(locks, problems))
}

/// What both command lines (`redlease-audit` and `redlease audit`) do with
/// their parsed options: audits `paths`, prints the table (or JSON) on
/// stdout, errors on stderr after `prefix`, and returns the exit code: 0,
/// 1 with `deny_warnings` and a warning or problem, 2 when a path could not
/// be read.
pub fn run_command<P: AsRef<Path>>(
    paths: &[P],
    json: bool,
    deny_warnings: bool,
    prefix: &str,
) -> std::process::ExitCode {
    use std::io::Write;
    use std::process::ExitCode;
    let audit = match audit_paths(paths) {
        Ok(audit) => audit,
        Err(err) => {
            eprintln!("{prefix}: {err}");
            return ExitCode::from(2);
        }
    };
    let report = if json {
        match serde_json::to_string_pretty(&audit) {
            Ok(json) => json + "\n",
            Err(err) => {
                eprintln!("{prefix}: cannot write json: {err}");
                return ExitCode::from(2);
            }
        }
    } else {
        render_table(&audit)
    };
    // A closed pipe (`| head`) is not worth a panic; the exit code still
    // tells CI what was found.
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    if deny_warnings && !audit.is_clean() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Audits one file's source text; `file` is the name to report. For
/// editors, tests and sources that are not on disk.
pub fn audit_source(file: &str, source: &str) -> Audit {
    let (locks, problems) = scan::scan_source(file, source);
    finish(locks, problems)
}

fn finish(locks: Vec<Declared>, problems: Vec<Problem>) -> Audit {
    Audit {
        warnings: warnings::check(&locks),
        locks,
        problems,
    }
}
