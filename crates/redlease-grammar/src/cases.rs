//! The one table of inputs and expected results that every reader of the
//! grammar runs: this crate's unit tests, the macro's, the audit's and the
//! command line's. A reader that disagrees with a row fails its own tests,
//! so the copies cannot drift apart again (issue #12).
//!
//! Not a stable API: hidden from the docs, changed with the grammar.

mod args;
mod durations;
mod keys;

pub use args::{ARGS, ArgsCase, ArgsShape};
pub use durations::{DURATIONS, DurationCase};
pub use keys::{KEYS, KeyCase, KeyShape};

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect<T> {
    /// Accepted, with this result.
    Accept(T),
    /// Refused, with a message containing this text.
    Reject(&'static str),
}
