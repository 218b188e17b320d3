//! The signals `redlease run` catches and passes on to its command.

use std::io;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT, caught from creation on: once
/// registered they no longer end this process, so the lock is always
/// released after the command has stopped.
pub(crate) struct Caught {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Caught {
    pub(crate) fn new() -> io::Result<Caught> {
        Ok(Caught {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            quit: signal(SignalKind::quit())?,
        })
    }

    /// The next signal to arrive. Cancel safe: a signal that arrives while
    /// nobody waits is kept for the next call.
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.hup.recv() => Signal::SIGHUP,
            _ = self.quit.recv() => Signal::SIGQUIT,
        }
    }
}

/// Whether `sig` has reached the command already: SIGINT, SIGQUIT and
/// SIGHUP come from the terminal to its whole foreground process group,
/// which the command shares with us when we are in the foreground.
/// Forwarding them then would deliver a second Ctrl-C, which many tools
/// (terraform, docker) take as "quit now, skip the clean-up". SIGTERM is
/// never sent by a terminal, so it is always forwarded.
pub(crate) fn reached_command(sig: Signal) -> bool {
    if !matches!(sig, Signal::SIGINT | Signal::SIGQUIT | Signal::SIGHUP) {
        return false;
    }
    nix::unistd::tcgetpgrp(std::io::stdin()).is_ok_and(|fg| fg == nix::unistd::getpgrp())
}

/// Sends `sig` to process `pid`; a process that is already gone is fine.
pub(crate) fn send(pid: Option<u32>, sig: Signal) {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
}

/// The shell's exit status for death by `sig`: 128 + its number.
pub(crate) fn exit_status(sig: Signal) -> u8 {
    u8::try_from(128 + sig as i32).unwrap_or(u8::MAX)
}
