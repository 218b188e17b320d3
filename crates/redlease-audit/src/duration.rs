//! Durations in the audit's output. They are parsed, and written back, by
//! `redlease-grammar`, as the attribute and the command line read them.

use std::time::Duration;

pub(crate) use redlease_grammar::duration::format;

/// Serializes a duration as whole milliseconds: one number is easier for
/// tools than serde's default `{secs, nanos}` pair, and the attribute's
/// smallest unit is the millisecond anyway.
pub(crate) fn serialize_ms<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}
