//! What a client does when it finds its server restarted empty: it seeds
//! the fencing counters of the locks it holds (#37).
//!
//! redlease issues fencing tokens from the server's clock whenever it
//! finds a counter lost, so its own tokens keep growing across a restart.
//! Redisson's `RFencedLock` counts by `INCR` alone: first after a restart,
//! it gets token 1, which every fence holding a clock token refuses, until
//! a redlease acquire of that name seeds the counter. A client cannot know
//! every name, but it knows the ones it holds, and those are the names
//! most likely to be taken next (their locks vanished with the data). So
//! after each reconnection it asks the server's run id (`INFO server`);
//! when the id changed, it seeds each held name's counter from the clock
//! ([`scripts::lock::seed`], which leaves a
//! counter that is seeded already). The window left is the reconnection's
//! (the first Java acquire may come before it) and the names this client
//! does not hold; a Sentinel failover also changes the run id, and there
//! the promoted replica has the counters, which the script leaves.
//!
//! One task per client on one server or under Sentinel, with fencing on;
//! none on a Cluster, whose nodes restart one at a time and whose
//! replicas take over their slots.

use std::time::Duration;

use tokio::sync::watch;

use crate::backoff;
use crate::connection::Connection;
use crate::count;
use crate::error::Error;
use crate::scripts;
use crate::shared::{Shared, WeakShared};

/// How long a reconnection's run id is asked for before the check waits
/// for the next one.
const ASK_FOR: Duration = Duration::from_secs(30);

/// Follows `client`'s reconnections until the client is dropped; seeds
/// with counters living `fencing_ttl_ms` (`0`: for ever).
pub(crate) fn start(client: &Shared, fencing_ttl_ms: u64) {
    let reconnected = client.disconnections();
    let weak = client.downgrade();
    let conn = client.conn().clone();
    tokio::spawn(follow(weak, conn, reconnected, fencing_ttl_ms));
}

async fn follow(
    client: WeakShared,
    conn: Connection,
    mut reconnected: watch::Receiver<u64>,
    fencing_ttl_ms: u64,
) {
    let mut known = run_id(&conn).await.ok();
    // Closed with the client's subscriptions, which end with the client.
    while reconnected.changed().await.is_ok() {
        let asked = backoff::retry_transient(ASK_FOR, || run_id(&conn)).await;
        let Ok(now) = asked else {
            // Not answered: the next reconnection asks again.
            continue;
        };
        let restarted = known.as_ref().is_some_and(|k| *k != now);
        known = Some(now);
        if !restarted {
            continue;
        }
        // Upgraded only now, for the seeding: between reconnections the
        // task must not keep the client alive.
        let Some(client) = client.upgrade() else {
            return;
        };
        let names = client.watchdog().names();
        tracing::info!(
            locks = names.len(),
            "redis restarted (a new run id): seeding the fencing counters of the locks held"
        );
        for name in names {
            // The script leaves a seeded counter: safe to send again.
            let call = scripts::lock::seed(&name, fencing_ttl_ms);
            let seeded = count::send_until_answered::<i64>(&conn, &call, ASK_FOR).await;
            if let Err(e) = seeded {
                tracing::warn!(key = %name, error = %e, "could not seed the fencing counter");
            }
        }
    }
}

/// The server's `run_id`, from `INFO server`.
async fn run_id(conn: &Connection) -> Result<String, Error> {
    let info: String = conn
        .query(redis::cmd("INFO").arg("server"))
        .await
        .map_err(Error::from)?;
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
        .ok_or_else(|| Error::invalid("the server's INFO names no run_id"))
}
