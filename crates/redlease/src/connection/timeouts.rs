//! [`Timeouts`]: how long a connection waits, for a reply and for a
//! connection attempt; the client's builder sets them, every backend obeys
//! them.

use std::time::Duration;

/// How a connection waits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// For any one reply.
    pub(crate) response: Duration,
    /// For one connection attempt.
    pub(crate) connect: Duration,
}
