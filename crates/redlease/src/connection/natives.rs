//! The server's own owner-checked commands ([`Natives`]), which a
//! connection learns once and its clones share ([`NativesCell`]), so that
//! a string-layout release sends them instead of a script where it can.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// The owner-checked delete a server has besides scripts (#17); each has
/// `SET ... IFEQ` too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Natives {
    /// Not asked yet.
    Unknown,
    /// None: scripts only (Redis before 8.4, Valkey before 9).
    None,
    /// Valkey 9's `DELIFEQ key value`.
    DelIfEq,
    /// Redis 8.4's `DELEX key IFEQ value`.
    DelEx,
}

/// A connection's [`Natives`], shared by its clones.
#[derive(Clone, Default)]
pub(crate) struct NativesCell(Arc<AtomicU8>);

impl NativesCell {
    pub(crate) fn get(&self) -> Natives {
        match self.0.load(Ordering::Relaxed) {
            1 => Natives::None,
            2 => Natives::DelIfEq,
            3 => Natives::DelEx,
            _ => Natives::Unknown,
        }
    }

    pub(crate) fn set(&self, natives: Natives) {
        let n = match natives {
            Natives::Unknown => 0,
            Natives::None => 1,
            Natives::DelIfEq => 2,
            Natives::DelEx => 3,
        };
        self.0.store(n, Ordering::Relaxed);
    }
}
