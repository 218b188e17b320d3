//! `redlease-audit [--json] [--deny-warnings] PATH...`: lists every
//! `#[distributed_lock]` under the given paths, with warnings for review.

use std::process::ExitCode;

const USAGE: &str = "\
usage: redlease-audit [--json] [--deny-warnings] PATH...

lists every #[distributed_lock] in the .rs files under each PATH (a file or a
directory, walked recursively, skipping target/ and hidden directories) with
its location, function, key, wait and lease, then warnings for review: wait
not much shorter than the lease, key without a `prefix:` namespace, lease far
above the others under the same prefix, lease under 1s. files that do not
parse and malformed attributes are listed as problems.

options:
  --json            print json for tools instead of the table
  --deny-warnings   exit 1 when there is any warning or problem
  -h, --help        print this help

exit codes:
  0  the audit ran (and, with --deny-warnings, found nothing)
  1  --deny-warnings and at least one warning or problem
  2  usage error, or a path could not be read
";

struct Options {
    json: bool,
    deny_warnings: bool,
    paths: Vec<String>,
}

/// `Ok(None)` means `--help` was asked for.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
    let mut options = Options {
        json: false,
        deny_warnings: false,
        paths: Vec::new(),
    };
    let mut only_paths = false;
    for arg in args {
        match arg.as_str() {
            _ if only_paths => options.paths.push(arg),
            "--" => only_paths = true,
            "-h" | "--help" => return Ok(None),
            "--json" => options.json = true,
            "--deny-warnings" => options.deny_warnings = true,
            option if option.starts_with('-') && option != "-" => {
                return Err(format!("unknown option `{option}`"));
            }
            _ => options.paths.push(arg),
        }
    }
    if options.paths.is_empty() {
        return Err("no PATH given".to_owned());
    }
    Ok(Some(options))
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n(see redlease-audit --help)");
            return ExitCode::from(2);
        }
    };
    redlease_audit::run_command(&options.paths, options.json, options.deny_warnings, "error")
}
