//! `redlease leader`: who leads an election, its changes, and a command
//! run only while leading.

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use futures_util::StreamExt;
use redlease::{Election, Leader, Leadership};
use redlease_grammar::limits::quoted;
use serde::Serialize;
use tokio::process::Command;

use crate::connect::{LayoutArg, Target, fail, warn};
use crate::duration;
use crate::run::{exit_code, supervise};
use crate::signals::{self, Caught};

/// Shows who leads the election NAME, follows its changes, or runs CMD
/// only while leading it.
///
/// Who leads is who holds the lock NAME: a redlease leader shows the value
/// it campaigned with and its epoch (its fencing token, greater for every
/// later leadership); any other holder (a Java service with Redisson's
/// RLock on NAME) shows with its owner only.
///
/// With --campaign VALUE and CMD, campaigns (waiting as long as it takes),
/// runs CMD while leading with REDLEASE_EPOCH (also
/// REDLEASE_FENCING_TOKEN), REDLEASE_LEADER (VALUE) and REDLEASE_KEY
/// (NAME), and resigns when CMD exits, exiting with its status. If the
/// leadership is lost while CMD runs, CMD is stopped (SIGTERM, then SIGKILL
/// after --grace) and redlease campaigns again, and runs CMD again once it
/// leads. SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to CMD, which
/// then is not run again.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct LeaderArgs {
    /// The election's name: the name of its lock, a Redis key.
    name: String,
    /// Prints who leads now, then each change as it happens (a line each),
    /// until interrupted.
    #[arg(long, conflicts_with = "campaign")]
    watch: bool,
    /// Campaigns with VALUE (what the others see: an address, a host name)
    /// and runs CMD while leading.
    #[arg(long, value_name = "VALUE", requires = "command")]
    campaign: Option<String>,
    /// Prints JSON for tools (a line per change with --watch).
    #[arg(long)]
    json: bool,
    /// How the lock holds its owner (see `redlease run --layout`).
    #[arg(long, value_enum, value_name = "LAYOUT", default_value_t = LayoutArg::Redisson)]
    layout: LayoutArg,
    /// The watchdog's lease (default 30s), renewed every third of it: a
    /// leader that crashes is replaced within it.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    watchdog_timeout: Option<Duration>,
    /// How long CMD may take to exit after SIGTERM, when the leadership was
    /// lost, before it gets SIGKILL.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "10s")]
    grace: Duration,
    /// The command to run while leading, and its arguments (after `--`).
    #[arg(
        value_name = "CMD",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        requires = "campaign"
    )]
    command: Vec<OsString>,
}

const AFTER_HELP: &str = "\
examples:
  redlease leader svc:scheduler
  redlease leader svc:scheduler --watch
  redlease leader svc:scheduler --campaign \"$(hostname)\" -- ./run-scheduler";

pub(crate) async fn main(target: Target, args: LeaderArgs) -> ExitCode {
    if args.name.is_empty() || args.name.len() > redlease::MAX_NAME_LEN {
        return crate::usage_error(
            "leader",
            format!(
                "NAME must be 1 to {} bytes, but found {}",
                redlease::MAX_NAME_LEN,
                args.name.len()
            ),
        );
    }
    let client = match target.client(args.watchdog_timeout, args.layout).await {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    let election = client.election(args.name.as_str());
    match (&args.campaign, args.watch) {
        (Some(value), _) => lead(&target, &election, value, &args).await,
        (None, true) => watch(&target, &election, args.json).await,
        (None, false) => match election.leader().await {
            Ok(leader) => {
                print(&render(&election, leader.as_ref(), args.json));
                ExitCode::SUCCESS
            }
            Err(e) => {
                fail(&target.scrub(&format!("cannot read election {}: {e}", quoted(&args.name))))
            }
        },
    }
}

/// Follows the changes until a signal.
async fn watch(target: &Target, election: &Election, json: bool) -> ExitCode {
    let mut caught = match Caught::new() {
        Ok(caught) => caught,
        Err(e) => return fail(&format!("cannot catch signals: {e}")),
    };
    let mut changes = Box::pin(election.observe());
    loop {
        tokio::select! {
            sig = caught.recv() => return ExitCode::from(signals::exit_status(sig)),
            change = changes.next() => match change {
                Some(Ok(leader)) => print(&render(election, leader.as_ref(), json)),
                Some(Err(e)) => warn(&target.scrub(&format!("cannot read the election: {e}"))),
                None => return ExitCode::SUCCESS,
            },
        }
    }
}

/// Campaigns, runs CMD while leading, and campaigns again after a loss.
async fn lead(target: &Target, election: &Election, value: &str, args: &LeaderArgs) -> ExitCode {
    let mut caught = match Caught::new() {
        Ok(caught) => caught,
        Err(e) => return fail(&format!("cannot catch signals: {e}")),
    };
    let what = format!("leadership of {}", quoted(election.name()));
    loop {
        let leadership: Leadership = tokio::select! {
            won = election.campaign(value) => match won {
                Ok(leadership) => leadership,
                Err(e) => return fail(&target.scrub(&format!("cannot campaign for {}: {e}", quoted(election.name())))),
            },
            sig = caught.recv() => {
                // The dropped campaign releases what it may have taken in
                // the background; give it a moment before the runtime stops.
                tokio::time::sleep(Duration::from_millis(200)).await;
                return ExitCode::from(signals::exit_status(sig));
            }
        };
        let mut command = Command::new(&args.command[0]);
        command
            .args(&args.command[1..])
            .env("REDLEASE_KEY", election.name())
            .env("REDLEASE_LEADER", value);
        if let Some(epoch) = leadership.epoch() {
            command
                .env("REDLEASE_EPOCH", epoch.to_string())
                .env("REDLEASE_FENCING_TOKEN", epoch.to_string());
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                let code = if e.kind() == io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                eprintln!(
                    "redlease: cannot run {:?}: {e}",
                    args.command[0].to_string_lossy()
                );
                let _ = leadership.resign().await;
                return ExitCode::from(code);
            }
        };
        let supervised = supervise(
            &mut child,
            leadership.lost(),
            &mut caught,
            &what,
            Some(args.grace),
        )
        .await;
        if supervised.status.is_err() {
            let _ = child.start_kill();
        }
        match (supervised.lost, supervised.signalled) {
            // Lost and stopped, and no one asked us to stop: lead again.
            (Some(_), false) => {
                drop(leadership);
                warn(&format!(
                    "campaigning again for {}",
                    quoted(election.name())
                ));
                continue;
            }
            (Some(_), true) => drop(leadership),
            (None, _) => {
                if let Err(e) = leadership.resign().await
                    && !e.is_not_owner()
                {
                    warn(&target.scrub(&format!(
                        "cannot resign {what} ({e}); it expires after its lease"
                    )));
                }
            }
        }
        return match supervised.status {
            Ok(status) => ExitCode::from(exit_code(status)),
            Err(e) => fail(&format!("cannot wait for the command: {e}")),
        };
    }
}

/// `leader --json`: the field names are the tool's interface.
#[derive(Serialize)]
struct LeaderJson<'a> {
    election: &'a str,
    /// `null` when nobody leads.
    leader: Option<HolderJson<'a>>,
}

#[derive(Serialize)]
struct HolderJson<'a> {
    owner: &'a str,
    value: Option<&'a str>,
    epoch: Option<u64>,
    ttl_ms: Option<u128>,
}

fn render(election: &Election, leader: Option<&Leader>, json: bool) -> String {
    if json {
        let out = LeaderJson {
            election: election.name(),
            leader: leader.map(|l| HolderJson {
                owner: &l.owner,
                value: l.value.as_deref(),
                epoch: l.epoch,
                ttl_ms: l.ttl.map(|t| t.as_millis()),
            }),
        };
        return serde_json::to_string(&out).unwrap_or_default() + "\n";
    }
    let name = quoted(election.name());
    match leader {
        None => format!("{name}: nobody leads\n"),
        Some(l) => {
            let value = l.value.as_deref().map_or_else(
                || "no value (not a redlease leader: a Redisson RLock, or a plain lock)".to_owned(),
                quoted,
            );
            let epoch = l.epoch.map_or_else(|| "-".to_owned(), |e| e.to_string());
            let ttl = l.ttl.map_or_else(|| "none".to_owned(), duration::human);
            format!(
                "{name}: led by {value}, epoch {epoch}, owner {}, ttl {ttl}\n",
                l.owner
            )
        }
    }
}

fn print(text: &str) {
    // A closed pipe (`| head`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
