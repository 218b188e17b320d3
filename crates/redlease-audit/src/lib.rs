//! Lists every `#[distributed_lock]` declared in a codebase.
#![forbid(unsafe_code)]
