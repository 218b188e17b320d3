//! One Redis node, through redis-rs's `ConnectionManager`.

use std::time::Duration;

use redis::RedisError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;

use super::pushes::Pushes;
use super::timeouts::Timeouts;

fn config(timeouts: Timeouts) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_response_timeout(Some(timeouts.response))
        .set_connection_timeout(Some(timeouts.connect))
        // Few, quick reconnect attempts: a lock call should fail fast while
        // Redis is down, and the next call tries again anyway.
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500))
}

/// Connects; with `pushes`, release messages arrive as RESP3 pushes on this
/// same connection and are re-subscribed after a reconnect.
pub(super) async fn open(
    client: &redis::Client,
    timeouts: Timeouts,
    pushes: bool,
) -> Result<(ConnectionManager, Option<Pushes>), RedisError> {
    if !pushes {
        let manager = ConnectionManager::new_with_config(client.clone(), config(timeouts)).await?;
        return Ok((manager, None));
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let config = config(timeouts)
        .set_push_sender(tx)
        .set_automatic_resubscription();
    let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
    Ok((manager, Some(Pushes::new(rx))))
}

/// A manager that connects on first use, for unit tests.
#[cfg(test)]
pub(super) fn lazy(url: &str, timeouts: Timeouts) -> ConnectionManager {
    let client = redis::Client::open(url).unwrap();
    let config = config(timeouts).set_number_of_retries(0);
    ConnectionManager::new_lazy_with_config(client, config).unwrap()
}
