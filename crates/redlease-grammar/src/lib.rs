//! The grammar of `#[distributed_lock]`, in one place for every reader of
//! it: the attribute (`redlease-macros`), the audit (`redlease-audit`) and
//! the `redlease` command line, so that what one accepts the others accept
//! too (issue #12).
//!
//! * [`duration`]: `"15s"`, `"1m30s"`, `"0"`; parsing and writing back.
//! * [`key`]: key templates, `"orders:{order.id}:{line:>04}"`.
//! * [`args`]: the attribute's argument list, with spanned errors.
//! * [`limits`]: the numbers the core enforces (longest lease, default
//!   watchdog timeout, longest name), and how a long name is quoted in
//!   messages.
//!
//! `key` and `args` need the default `parse` feature (`syn`, `proc-macro2`,
//! `quote`, `unicode-ident`); without it the crate is `duration` and
//! `limits` alone and has no dependencies, for the core library.
//!
//! ```
//! use std::time::Duration;
//! use redlease_grammar::duration;
//!
//! assert_eq!(duration::parse("1h30m"), Ok(Duration::from_secs(5_400)));
//! assert!(duration::parse("30s1m").is_err());
//! assert_eq!(duration::format(Duration::from_secs(90)), "1m30s");
//! ```
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod cases;
pub mod duration;
pub mod limits;

#[cfg(feature = "parse")]
pub mod args;
#[cfg(feature = "parse")]
pub mod key;
