//! `redlease acl`: the least-privilege `ACL SETUSER` line for a service.

use std::process::ExitCode;

use redlease::acl::{self, Access};

/// Prints one `ACL SETUSER` line granting exactly what redlease needs for
/// locks whose names start with the given prefixes: the lock keys, the keys
/// and channels Redisson's layout derives from their names, the commands
/// redlease's scripts run and the few it sends. No `~*`, `&*` or `+@all`.
///
/// Paste it into `redis-cli` (or run `redis-cli <line>` from a shell: the
/// quoting suits both), then give the user a password with `ACL SETUSER
/// NAME '>password'`; running the line again later keeps the password.
/// Needs no server.
#[derive(Debug, clap::Args)]
pub(crate) struct AclArgs {
    /// A lock name prefix the user may lock (`orders:` covers `orders:1`);
    /// repeat for several.
    #[arg(long = "prefix", value_name = "PREFIX", required = true)]
    prefixes: Vec<String>,
    /// The ACL user's name.
    #[arg(long, default_value = "redlease")]
    user: String,
    /// Also what `redlease inspect` and `redlease unlock --force` need
    /// (SCAN, TYPE, HGETALL, ... and the read-write lock channel): for an
    /// operators' user, not a service's.
    #[arg(long)]
    admin: bool,
}

pub(crate) fn main(args: AclArgs) -> ExitCode {
    let access = if args.admin {
        Access::Admin
    } else {
        Access::Locks
    };
    match acl::setuser(&args.user, &args.prefixes, access) {
        Ok(rules) => {
            println!("{rules}");
            ExitCode::SUCCESS
        }
        Err(e) => crate::usage_error("acl", e.to_string()),
    }
}
