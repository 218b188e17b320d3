//! `ClientBuilder::require_replicas`: acquires that must reach replicas
//! before they count.

use std::time::Duration;

use tokio::time::Instant;

use crate::connection::url::Target;
use crate::connection::{Connection, PubSubMode, Timeouts};
use crate::error::Error;
use crate::kind::Kind;
use crate::release;
use crate::scripts::commands;

/// How many replicas must acknowledge an acquire, and the connection the
/// acquires and their `WAIT`s go through.
pub(crate) struct Replicas {
    count: u32,
    wait: Duration,
    /// Separate from the main connection because `WAIT` blocks the
    /// connection it runs on: on the main one, a replica that stops
    /// answering would hold up renewals and releases behind each `WAIT`, and
    /// then locks would be lost. `WAIT` counts acknowledgements of the
    /// writes made on its own connection, so the acquire script runs here too.
    conn: Connection,
}

impl Replicas {
    pub(crate) async fn connect(
        target: &Target,
        timeouts: Timeouts,
        mode: PubSubMode,
        count: u32,
        wait: Duration,
    ) -> Result<Replicas, Error> {
        // The reply to `WAIT` comes after up to `wait`.
        let timeouts = Timeouts {
            response: timeouts.response + wait,
            ..timeouts
        };
        Ok(Replicas {
            count,
            wait,
            conn: Connection::open(target, timeouts, mode, false).await?.0,
        })
    }

    /// How many replicas must acknowledge each acquire.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Waits for the replicas to acknowledge the acquisition of `name` by
    /// `field` just made on [`conn`](Replicas::conn); if too few do, or a
    /// fixed lease ends at `lease_end` before they do, withdraws it and
    /// fails with an error for which `is_not_replicated` is true.
    pub(crate) async fn acknowledge(
        &self,
        kind: Kind,
        name: &str,
        field: &str,
        lease_ms: u64,
        lease_end: Option<Instant>,
    ) -> Result<(), Error> {
        // On a cluster, `WAIT` must go to the node the acquire went to: it
        // counts the acknowledgements of that connection's writes.
        let acked: i64 = self
            .conn
            .query_at_key(
                &commands::wait(self.count, self.wait.as_millis() as u64),
                name,
            )
            .await
            .map_err(|e| Error::from(e).with_key(name))?;
        // Acknowledged after a fixed lease ran out, the lock may be someone
        // else's already: as good as not acknowledged.
        let in_time = lease_end.is_none_or(|end| Instant::now() < end);
        if acked >= i64::from(self.count) && in_time {
            return Ok(());
        }
        tracing::warn!(key = %name, acked, required = self.count, "acquire not acknowledged by enough replicas; releasing it");
        match release::withdraw(&self.conn, kind, name, field, lease_ms).await {
            // Not ours any more means gone already (a lease shorter than the
            // wait): withdrawn all the same.
            Err(e) if !e.is_not_owner() => return Err(e),
            _ => {}
        }
        Err(Error::not_replicated(name, acked, self.count, self.wait))
    }
}
