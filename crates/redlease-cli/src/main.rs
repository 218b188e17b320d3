//! `redlease`: the operator's tool for redlease and Redisson locks.
//!
//! * `run.rs`: `redlease run`, a `flock` for a fleet of machines.
//! * `inspect.rs`: `redlease inspect`, a bounded SCAN for lock keys and
//!   their problems (`inspect/`: reading, judging, the table).
//! * `unlock.rs`: `redlease unlock --force`.
//! * `leader.rs`: `redlease leader`, an election's leader, its changes, and
//!   a command run only while leading.
//! * `doctor.rs`: `redlease doctor`, the deployment's settings checked.
//! * `audit.rs`: `redlease audit`, the declared-lock audit.
//! * `acl.rs`: `redlease acl`, a service user's least-privilege ACL line.
//! * `demo.rs`: `redlease demo`, the stock-deduction demonstration
//!   (`demo/`: the Redis to use, the shop, the recorder, the summary).
//! * `connect.rs`: connections from `--url` and the `--tls-*` files, and
//!   keeping its password out of messages.
//! * `duration.rs`: `250ms`, `5s`, `1m30s`, `1h30m`, `0` on the command
//!   line, in the attribute's grammar.
//! * `signals.rs`: the signals `run` catches and passes on.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod acl;
mod audit;
mod connect;
mod demo;
mod doctor;
mod duration;
mod gc;
mod inspect;
mod leader;
mod run;
mod signals;
mod unlock;

/// The address used when neither `--url` nor `REDIS_URL` is given.
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Distributed locks on Redis, compatible with Redisson: run a command under
/// a lock, run a command while leading an election, inspect and
/// force-unlock locks, check the server's settings,
/// audit declared locks, print a service's ACL rules, and a demo.
#[derive(Debug, Parser)]
#[command(name = "redlease", version, after_help = EXIT_CODES)]
struct Cli {
    /// Redis to talk to: `redis://[user:password@]host:port[/db]`, or
    /// `rediss://` for TLS, verified against the system's CAs (or
    /// SSL_CERT_FILE), or --tls-ca; `rediss://host:port/#insecure` skips
    /// verification. A cluster by its seed nodes:
    /// `redis-cluster://[user:password@]host:port[,host:port...]`, or
    /// `rediss-cluster://` for TLS. A master under Sentinel:
    /// `redis-sentinel://[user:password@]host:port[,host:port...][/db]#name`
    /// (the password is the master's), or `rediss-sentinel://` for TLS.
    /// Defaults to REDIS_URL, else redis://127.0.0.1:6379. The password is
    /// never printed.
    // REDIS_URL is read by `main`, not by clap: clap would count it as
    // given and print `--url <URL>` in every usage error (issue #18).
    #[arg(long, global = true)]
    url: Option<String>,
    #[command(flatten)]
    tls: connect::TlsArgs,
    /// Password of the Redis Sentinels themselves (their requirepass), for
    /// redis-sentinel:// and rediss-sentinel:// URLs; the URL's password
    /// stays the master's. Never printed.
    #[arg(
        long,
        env = "REDLEASE_SENTINEL_PASSWORD",
        global = true,
        hide_env_values = true,
        value_name = "PASSWORD"
    )]
    sentinel_password: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Run(run::RunArgs),
    Inspect(inspect::InspectArgs),
    Unlock(unlock::UnlockArgs),
    Doctor(doctor::DoctorArgs),
    Gc(gc::GcArgs),
    Leader(leader::LeaderArgs),
    Audit(redlease_audit::cli::AuditArgs),
    Acl(acl::AclArgs),
    Demo(demo::DemoArgs),
}

const EXIT_CODES: &str = "\
exit codes:
  0    success
  1    an error (redis unreachable, refused, bad data, ...); the message
       says which. unlock: also nothing to remove, or not confirmed
  2    usage error (bad option, bad duration, missing CMD, a url that
       is none of the forms of --url, a --tls-* file that cannot be
       read, --tls-* with a plain url)
  run: the command's own exit status (128+N if it died of signal N),
       75 when the lock stayed busy for --wait (see --conflict-exit-code),
       76 when the lock was lost and the command stopped (see
       --lost-exit-code), 126 when CMD cannot be run, 127 when not found,
       128+N when redlease itself got signal N before CMD started
  doctor: 0 nothing to change, 1 warnings (or redis unreachable), 2 a
       setting that can lose a held lock (maxmemory-policy, a writable
       replica)
  leader: with --campaign, CMD's status as for run
  audit: 1 with --deny-warnings and a warning or problem; 2 when a PATH
       cannot be read";

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("redlease: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = cli.url.or_else(|| {
        std::env::var("REDIS_URL")
            .ok()
            .filter(|url| !url.is_empty())
    });
    let sentinel = cli.sentinel_password;
    // Read before anything connects, and only by the commands that do.
    let tls = match &cli.command {
        Command::Audit(_) | Command::Acl(_) => connect::Tls::default(),
        command => match cli.tls.read() {
            Ok(tls) => tls,
            Err(message) => return usage_error(command.name(), message),
        },
    };
    runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => match with_tls("run", url, tls, sentinel) {
                Ok(target) => run::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Inspect(args) => match with_tls("inspect", url, tls, sentinel) {
                Ok(target) => inspect::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Unlock(args) => match with_tls("unlock", url, tls, sentinel) {
                Ok(target) => unlock::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Doctor(args) => match with_tls("doctor", url, tls, sentinel) {
                Ok(target) => doctor::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Gc(args) => match with_tls("gc", url, tls, sentinel) {
                Ok(target) => gc::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Leader(args) => match with_tls("leader", url, tls, sentinel) {
                Ok(target) => leader::main(target, args).await,
                Err(usage) => usage,
            },
            Command::Audit(args) => audit::main(args),
            Command::Acl(args) => acl::main(args),
            Command::Demo(args) => demo::main(url, tls, sentinel, args).await,
        }
    })
}

impl Command {
    /// The subcommand's name, for its usage line.
    fn name(&self) -> &'static str {
        match self {
            Command::Run(_) => "run",
            Command::Inspect(_) => "inspect",
            Command::Unlock(_) => "unlock",
            Command::Doctor(_) => "doctor",
            Command::Gc(_) => "gc",
            Command::Leader(_) => "leader",
            Command::Audit(_) => "audit",
            Command::Acl(_) => "acl",
            Command::Demo(_) => "demo",
        }
    }
}

/// The target of `--url` (or the default) with the TLS files and the
/// sentinels' password; a URL the library would not read, TLS files with a URL that is not a TLS one, or a
/// sentinel password with one that is not a sentinel URL, are a usage
/// error, never ignored.
fn with_tls(
    subcommand: &str,
    url: Option<String>,
    tls: connect::Tls,
    sentinel_password: Option<String>,
) -> Result<connect::Target, ExitCode> {
    let url = url_or_default(url);
    let target = connect::Target::new(url);
    target
        .check()
        .map_err(|message| usage_error(subcommand, message))?;
    check_tls_url(subcommand, &target, &tls)?;
    if sentinel_password.is_some() && !target.is_sentinel() {
        return Err(usage_error(
            subcommand,
            format!(
                "--sentinel-password needs a redis-sentinel:// or rediss-sentinel:// url, but the \
                 url is {}",
                target.redacted()
            ),
        ));
    }
    Ok(target
        .with_tls(tls)
        .with_sentinel_password(sentinel_password))
}

/// Refuses TLS files for a URL they would not apply to.
fn check_tls_url(
    subcommand: &str,
    target: &connect::Target,
    tls: &connect::Tls,
) -> Result<(), ExitCode> {
    if tls.is_empty() || target.is_tls() {
        return Ok(());
    }
    Err(usage_error(
        subcommand,
        format!(
            "--tls-ca, --tls-cert and --tls-key need a rediss://, rediss-cluster:// or \
             rediss-sentinel:// url, but \
             the url is {}",
            target.redacted()
        ),
    ))
}

/// Prints `message` as clap prints a usage error of `subcommand` (with
/// its usage line) and returns clap's exit code for it, 2: for checks that
/// depend on more than one argument or on the environment.
pub(crate) fn usage_error(subcommand: &str, message: String) -> ExitCode {
    let mut cli = command();
    let command = match cli.find_subcommand_mut(subcommand) {
        Some(command) => command,
        None => &mut cli,
    };
    let error = command.error(clap::error::ErrorKind::ArgumentConflict, message);
    let _ = error.print();
    ExitCode::from(2)
}

/// The command line, built (which names the subcommands `redlease <name>`
/// for their usage lines), without the connection options on the
/// subcommands that connect to nothing: they would only be ignored there.
fn command() -> clap::Command {
    let mut cli = Cli::command();
    // Hidden copies first: clap gives a subcommand the global options it
    // does not define itself.
    let hidden: Vec<clap::Arg> = cli
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    for name in ["audit", "acl"] {
        cli = cli.mut_subcommand(name, |sub| sub.args(hidden.iter().cloned()));
    }
    cli.build();
    cli
}

/// The URL to use for commands that talk to an existing Redis.
fn url_or_default(url: Option<String>) -> String {
    url.unwrap_or_else(|| DEFAULT_URL.to_owned())
}

#[cfg(test)]
mod tests;
