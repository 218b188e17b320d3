//! `redlease unlock --force`: removes a lock whatever its owner.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use redlease::admin;
use redlease::layout::{self, LockState, StateKind};

use crate::connect::{LayoutArg, Target, admin_hint, fail};
use crate::duration;

/// Removes the lock KEY whatever its owner, and wakes its waiters.
///
/// Shows the lock (owners, hold counts, time to live, fair-lock waiters)
/// and asks for confirmation on the terminal unless --yes; without a
/// terminal it refuses. A lock is a hash (Redisson's layout) or a string
/// that is no integer (the string layout: `run --layout string`, or a SET
/// NX lock of another library), its value the owner. The removal is one
/// atomic script, and only of what was shown: a lock taken by another
/// owner meanwhile (other hash fields, another string value) is left
/// alone. The lock key is deleted, the unlock message is published on its
/// channel so waiters try at once, and fair-queue entries of gone waiters
/// are dropped. A holder that is still alive loses the lock (redlease
/// holders notice at their next renewal); use it for locks whose holder is
/// gone. Exits 1 when nothing was removed.
#[derive(Debug, clap::Args)]
pub(crate) struct UnlockArgs {
    /// Required: removes the lock without checking its owner.
    #[arg(long, required = true)]
    force: bool,
    /// Does not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also deletes KEY when it is not a lock (a string integer such as a
    /// semaphore's permits, a list, a set, a string with no expiry), still
    /// only as it was shown.
    #[arg(long)]
    any_type: bool,
    /// The lock's name, which is its Redis key.
    #[arg(value_name = "KEY")]
    key: String,
}

pub(crate) async fn main(target: Target, args: UnlockArgs) -> ExitCode {
    // The layout only matters to locks taken, and this takes none.
    let client = match target.client(None, LayoutArg::default()).await {
        Ok(client) => client,
        Err(message) => return fail(&message),
    };
    let scrubbed = |e: redlease::Error| {
        let hint = admin_hint(&e);
        target.scrub(&format!("cannot read {:?}: {e}{hint}", args.key))
    };
    let before = match admin::lock_state(&client, &args.key).await {
        Ok(state) => state,
        Err(e) => return fail(&scrubbed(e)),
    };
    if before.is_empty() {
        return fail(&format!("{:?} does not exist; nothing removed", args.key));
    }
    if !before.is_lock() && before.key_type != "none" && !args.any_type {
        return fail(&format!(
            "{:?} holds {}, not a lock; nothing removed (--any-type deletes it anyway)",
            args.key,
            holds(&before)
        ));
    }
    // Every lock has an expiry: a string without one is most likely the
    // application's own value, which only looks like a string-layout
    // lock (#40).
    if before.kind() == StateKind::StringLock && before.pttl_ms == -1 && !args.any_type {
        return fail(&format!(
            "{:?} holds a string with no expiry: every lock has one, so it is most likely \
             data, not a lock; nothing removed (--any-type deletes it anyway)",
            args.key
        ));
    }
    if !args.yes {
        eprint!("{}", describe(&before, "found"));
        if let Err(refusal) = confirm(&args.key) {
            return fail(&refusal);
        }
    }
    // Only what was shown: if the lock changed hands while the operator
    // read it, the new holder's lock stays.
    let removal = admin::force_unlock_if_unchanged(&client, &before, args.any_type).await;
    let removed = match removal {
        Ok(state) => state,
        Err(e) => {
            let hint = admin_hint(&e);
            return fail(&target.scrub(&format!("cannot unlock {:?}: {e}{hint}", args.key)));
        }
    };
    if removed.changed {
        eprint!("{}", describe(&removed, "now found"));
        return fail(&format!(
            "{:?} changed since it was read (another owner, value or type); nothing removed, run again to see it",
            args.key
        ));
    }
    let stale = removed.waiters.iter().filter(|w| w.stale).count();
    if !removed.removed && stale == 0 {
        // Released or expired between the look and the removal.
        return fail(&format!(
            "{:?} was gone before it could be removed; nothing removed",
            args.key
        ));
    }
    print!("{}", describe(&removed, "removed"));
    ExitCode::SUCCESS
}

/// What a key that is no lock holds, for the refusal.
fn holds(state: &LockState) -> String {
    match state.key_type.as_str() {
        "string" if state.is_counter() => {
            "a string integer (a semaphore's permits, a latch's count or another counter)"
                .to_owned()
        }
        "hash" | "string" => format!("a {} of another shape", state.key_type),
        other => format!("a {other}"),
    }
}

/// Asks on the terminal; anything but `y` or `yes` (or no terminal) refuses.
fn confirm(key: &str) -> Result<(), String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(format!(
            "refusing to force-unlock {key:?} without confirmation: stdin is not a terminal (pass --yes)"
        ));
    }
    eprint!("remove it whatever its owner? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    match stdin.lock().read_line(&mut answer) {
        Ok(n) if n > 0 && matches!(answer.trim(), "y" | "Y" | "yes") => Ok(()),
        _ => Err(format!("not confirmed; {key:?} left alone")),
    }
}

/// What a lock state shows an operator, `verb` being "found" or "removed".
fn describe(state: &LockState, verb: &str) -> String {
    let mut out = String::new();
    let ttl = match state.pttl_ms {
        -1 => "no ttl: never expires".to_owned(),
        ms if ms >= 0 => format!("ttl {}", duration::human(Duration::from_millis(ms as u64))),
        _ => "absent".to_owned(),
    };
    let string_lock = state.kind() == StateKind::StringLock;
    let what = match (&state.mode, state.key_type.as_str()) {
        (Some(mode), _) => format!("read-write lock ({mode} mode)"),
        (None, "hash") => "lock".to_owned(),
        (None, "string") if string_lock => "lock (string layout)".to_owned(),
        (None, "none") => "no lock key".to_owned(),
        (None, other) => format!("{other} key, not a lock"),
    };
    let removing = verb == "removed";
    let verb = if state.removed || !removing {
        verb
    } else {
        "found"
    };
    out.push_str(&format!("{verb} {what} {:?} ({ttl})\n", state.name));
    for holder in &state.holders {
        out.push_str(&format!(
            "  owner {}  count {}\n",
            holder.field, holder.value
        ));
    }
    // A string lock's owner is its value (escaped); it keeps no count.
    if let Some(owner) = state.string_owner() {
        out.push_str(&format!("  owner {owner}\n"));
    }
    if state.removed {
        out.push_str(&format!(
            "published unlock on {}\n",
            layout::channel(&state.name)
        ));
    }
    for waiter in &state.waiters {
        let status = if waiter.stale { "gone" } else { "waiting" };
        out.push_str(&format!(
            "  fair-queue waiter {} ({status})\n",
            waiter.owner
        ));
    }
    let stale = state.waiters.iter().filter(|w| w.stale).count();
    if stale > 0 && removing {
        out.push_str(&format!(
            "removed {stale} gone waiter(s) from the fair queue\n"
        ));
    }
    out
}
