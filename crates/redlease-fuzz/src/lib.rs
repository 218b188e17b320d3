//! The fuzz harnesses of redlease (issue #29, "inputs nobody planned for"):
//! one function per parser that a user or a server feeds, each taking any
//! bytes and panicking only on a bug.
//!
//! * [`duration`]: the attribute's durations (`redlease-grammar`), parsed
//!   and written back.
//! * [`key_template`]: key templates, parsed, written back, and their paths
//!   turned into identifiers as the attribute does.
//! * [`lock_args`]: the attribute's whole argument list, as tokens.
//! * [`url`]: the URL forms [`redlease::url`] reads, and the password kept
//!   out of its messages.
//! * [`replies`]: every decoder of a script or command reply, through the
//!   public API, against a fake server (`server.rs`) that answers each
//!   command with a reply the bytes choose, possibly truncated.
//!
//! The cargo-fuzz targets in `fuzz/` (nightly, `scripts/fuzz`) call these
//! functions; this crate's tests call them with every input kept in
//! `fuzz/corpus/`, on stable, on every run of the tests. Not published, and
//! not an API.
#![forbid(unsafe_code)]

mod bytes;
mod grammar;
mod ops;
mod server;
mod url;

pub use grammar::{duration, key_template, lock_args};
pub use ops::replies;
pub use url::url;

use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Panics so far anywhere in the process, the ones in tasks that a runtime
/// swallows included (a panic hook, installed by the first call, counts
/// them and then prints them as before), less the known one of
/// [`UPSTREAM_PANIC`]. libFuzzer's own hook aborts on any panic; tests
/// compare this count before and after a harness.
pub fn panics() -> usize {
    counts().0.load(Ordering::SeqCst)
}

/// Panics so far at [`UPSTREAM_PANIC`] alone.
pub fn upstream_panics() -> usize {
    counts().1.load(Ordering::SeqCst)
}

/// Where redis-rs 1.8.1 panics on some replies (file, line), in builds
/// with overflow checks only: `seen_responses - 2` overflows when the
/// first reply of a transaction it reads is an error (`MULTI` refused by
/// an ACL or a proxy, or replies out of step after a cut connection). Its
/// connection task dies and the call gets an error; release builds, which
/// the fuzzers are, compute on. An upstream bug, found by the `replies`
/// fuzzer (issue #29): the corpus replay (tests, with overflow checks)
/// counts it apart, so that it checks redlease's code; the ignored test
/// `issue_29_a_refused_multi_panics_redis_rs` shows it.
pub const UPSTREAM_PANIC: (&str, u32) = ("redis-1.8.1/src/aio/multiplexed_connection.rs", 358);

fn counts() -> &'static (AtomicUsize, AtomicUsize) {
    static COUNTS: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let upstream = info.location().is_some_and(|at| {
                at.file().ends_with(UPSTREAM_PANIC.0) && at.line() == UPSTREAM_PANIC.1
            });
            match upstream {
                true => COUNTS.1.fetch_add(1, Ordering::SeqCst),
                false => COUNTS.0.fetch_add(1, Ordering::SeqCst),
            };
            print(info);
        }));
    });
    &COUNTS
}

/// A harness: any bytes, and a panic only on a bug.
pub type Harness = fn(&[u8]);

/// The harnesses by target name (the names of `fuzz/fuzz_targets/*.rs` and
/// of `fuzz/corpus/*`), for the corpus replay.
pub const TARGETS: [(&str, Harness); 5] = [
    ("duration", duration),
    ("key_template", key_template),
    ("lock_args", lock_args),
    ("url", url),
    ("replies", replies),
];
