//! A master under Redis Sentinel: the connection follows the master the
//! sentinels name, and never writes to an old one once a switch is known.
//!
//! redis-rs's `ConnectionManager` cannot be pointed at another address,
//! and after a failover the old master keeps accepting writes for seconds
//! (about 11 s here) until the sentinels turn it into a replica: a lock
//! written there would be a second holder. So the connection is a
//! generation of managers, one per master: the [`Monitor`] publishes each
//! new master as soon as the sentinels agree on it; from that moment every
//! command waits for the new generation (at most the connect timeout, then
//! an `Unavailable` error that waiting acquires and the watchdog retry)
//! instead of going to the old one. Commands already in flight when the
//! switch is learned may still reach the old master: the fencing token
//! and `require_replicas` are the answer to that window, as to the
//! asynchronous replication that makes a failover lose locks at all.
//!
//! The new generation checks `ROLE` before it is used (a sentinel may name
//! a node that has not finished its promotion), its pushes replace the old
//! one's, and a synthetic disconnection push makes the subscriptions
//! re-subscribe on the new master and every waiter re-check. The watchdog
//! renews at once after a switch ([`SentinelConn::switches`]), so a lock
//! that did not reach the promoted replica is reported lost within one
//! round trip.

mod address;
mod monitor;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ConnectionInfo, PushInfo, PushKind, RedisError};
use tokio::sync::{mpsc, watch};

pub(crate) use address::{SentinelAuth, Target, parse};
pub(crate) use monitor::Said;
use monitor::{Master, Monitor};

use super::pushes::Pushes;
use super::timeouts::Timeouts;
use super::tls::Certificates;
use crate::error::Error;

/// The connection to whichever node the sentinels name master. Cheap to
/// clone.
#[derive(Clone)]
pub(super) struct SentinelConn {
    inner: Arc<Inner>,
}

struct Inner {
    monitor: Arc<Monitor>,
    template: ConnectionInfo,
    certs: Option<Certificates>,
    timeouts: Timeouts,
    current: RwLock<Arc<Generation>>,
    /// One switch at a time.
    switching: tokio::sync::Mutex<()>,
    /// The epoch whose pushes pass: an old generation's are dropped.
    live: Arc<AtomicU64>,
    pushes: Option<mpsc::UnboundedSender<PushInfo>>,
    /// The epoch of the generation in use.
    switched: watch::Sender<u64>,
}

/// The connection to one master.
struct Generation {
    epoch: u64,
    manager: ConnectionManager,
}

impl SentinelConn {
    /// Finds the master through the sentinels and connects to it.
    pub(super) async fn open(
        target: &Arc<Target>,
        timeouts: Timeouts,
        pushes: bool,
    ) -> Result<(SentinelConn, Option<Pushes>), Error> {
        let monitor = target
            .monitor
            .get_or_try_init(|| {
                Monitor::start(target.sentinels.clone(), target.name.clone(), timeouts)
            })
            .await?
            .clone();
        let (tx, rx) = match pushes {
            true => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(Pushes::new(rx)))
            }
            false => (None, None),
        };
        let live = Arc::new(AtomicU64::new(0));
        let master = monitor.known();
        let manager = connect(
            &target.template,
            target.certs.as_ref(),
            &master,
            timeouts,
            &live,
            tx.as_ref(),
        )
        .await?;
        live.store(master.epoch, Ordering::Release);
        let inner = Arc::new(Inner {
            monitor,
            template: target.template.clone(),
            certs: target.certs.clone(),
            timeouts,
            current: RwLock::new(Arc::new(Generation {
                epoch: master.epoch,
                manager,
            })),
            switching: tokio::sync::Mutex::new(()),
            live,
            pushes: tx,
            switched: watch::channel(master.epoch).0,
        });
        tokio::spawn(follow(Arc::downgrade(&inner), inner.monitor.watch()));
        Ok((SentinelConn { inner }, rx))
    }

    /// The manager of the master as last known: waits (at most the connect
    /// timeout) for the switch when the sentinels named a new one, and
    /// never answers with the old one then.
    /// What each sentinel says of the master ([`Monitor::survey`]), and
    /// the master's `host:port` as last agreed.
    pub(super) async fn survey(&self) -> (String, Vec<Said>) {
        let master = self.inner.monitor.known();
        let said = self.inner.monitor.survey().await;
        (format!("{}:{}", master.host, master.port), said)
    }

    pub(super) async fn manager(&self) -> Result<ConnectionManager, RedisError> {
        let wanted = self.inner.monitor.known().epoch;
        let current = self.current();
        if current.epoch >= wanted {
            return Ok(current.manager.clone());
        }
        let mut switched = self.inner.switched.subscribe();
        let waited = tokio::time::timeout(
            self.inner.timeouts.connect,
            switched.wait_for(|e| *e >= wanted),
        )
        .await;
        match waited {
            Ok(Ok(_)) => Ok(self.current().manager.clone()),
            _ => Err(switch_in_progress()),
        }
    }

    fn current(&self) -> Arc<Generation> {
        self.inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// After an error: a connection error or `READONLY` may mean the master
    /// changed, so the sentinels are asked again now. Returns whether the
    /// command may be retried once on a new master (`READONLY`: it did not
    /// run), after waiting for the switch up to the response timeout.
    async fn after_error(&self, err: &RedisError) -> bool {
        let read_only = err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly);
        if read_only || err.is_io_error() || err.is_connection_dropped() || err.is_timeout() {
            self.inner.monitor.nudge();
        }
        if !read_only {
            return false;
        }
        let epoch = self.current().epoch;
        let mut switched = self.inner.switched.subscribe();
        tokio::time::timeout(
            self.inner.timeouts.response,
            switched.wait_for(|e| *e > epoch),
        )
        .await
        .is_ok()
    }

    /// Runs `op` on the master's manager; after an error that may mean a
    /// switch, asks the sentinels again, and retries once on the new
    /// master when the command cannot have run (`READONLY`). A `READONLY`
    /// that stays is a switch still under way: `Unavailable`, which
    /// waiting acquires and the watchdog retry, not the hard `ReadOnly` of
    /// a URL naming a replica.
    pub(super) async fn with<T, F, Fut>(&self, op: F) -> Result<T, RedisError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        match op(self.manager().await?).await {
            Err(e) if self.after_error(&e).await => op(self.manager().await?)
                .await
                .map_err(read_only_is_a_switch),
            Err(e) => Err(read_only_is_a_switch(e)),
            ok => ok,
        }
    }

    /// The epochs of the masters used, changing at each switch.
    pub(super) fn switches(&self) -> watch::Receiver<u64> {
        self.inner.switched.subscribe()
    }
}

fn read_only_is_a_switch(e: RedisError) -> RedisError {
    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly) {
        switch_in_progress()
    } else {
        e
    }
}

/// The error for a command that found a switch under way.
fn switch_in_progress() -> RedisError {
    RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::MasterDown),
        "the redis master is being switched over",
        "waiting for the new master the sentinels named".to_owned(),
    ))
}

/// A manager for `master`, once it says it is a master. Its pushes go to
/// `pushes` while its epoch is the live one.
async fn connect(
    template: &ConnectionInfo,
    certs: Option<&Certificates>,
    master: &Master,
    timeouts: Timeouts,
    live: &Arc<AtomicU64>,
    pushes: Option<&mpsc::UnboundedSender<PushInfo>>,
) -> Result<ConnectionManager, RedisError> {
    let client = address::client(address::at(template, &master.host, master.port), certs)?;
    let mut config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(timeouts.response))
        .set_connection_timeout(Some(timeouts.connect))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500));
    if let Some(tx) = pushes {
        let (tx, live, epoch) = (tx.clone(), live.clone(), master.epoch);
        config = config
            .set_push_sender(move |push: PushInfo| {
                if live.load(Ordering::Acquire) == epoch {
                    tx.send(push).map_err(|_| ())
                } else {
                    Ok(())
                }
            })
            .set_automatic_resubscription();
    }
    let mut manager = ConnectionManager::new_with_config(client, config).await?;
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut manager).await?;
    match role.first() {
        Some(redis::Value::BulkString(r)) if r.as_slice() == b"master" => Ok(manager),
        _ => Err(RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
            "the node the sentinels named is not a master yet",
            format!("{}:{}", master.host, master.port),
        ))),
    }
}

/// Switches to each master the monitor publishes; ends with the
/// connection.
async fn follow(inner: Weak<Inner>, mut known: watch::Receiver<Master>) {
    while known.changed().await.is_ok() {
        let master = known.borrow_and_update().clone();
        let Some(inner) = inner.upgrade() else { return };
        switch_to(&inner, master).await;
    }
}

/// Connects to `master` and makes it the generation in use, retrying while
/// it is still the one the sentinels name.
async fn switch_to(inner: &Inner, master: Master) {
    let _one = inner.switching.lock().await;
    let mut pause = Duration::from_millis(100);
    loop {
        let current = inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .epoch;
        if current >= master.epoch || inner.monitor.known().epoch != master.epoch {
            return;
        }
        match connect(
            &inner.template,
            inner.certs.as_ref(),
            &master,
            inner.timeouts,
            &inner.live,
            inner.pushes.as_ref(),
        )
        .await
        {
            Ok(manager) => {
                inner.live.store(master.epoch, Ordering::Release);
                *inner.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Generation {
                    epoch: master.epoch,
                    manager,
                });
                if let Some(tx) = &inner.pushes {
                    // Everyone re-checks, every channel is subscribed on the
                    // new master: messages on the old one are lost.
                    let _ = tx.send(PushInfo {
                        kind: PushKind::Disconnection,
                        data: Vec::new(),
                    });
                }
                inner.switched.send_replace(master.epoch);
                tracing::info!(master = %format!("{}:{}", master.host, master.port), "connected to the new redis master");
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot use the new redis master yet; retrying");
                inner.monitor.nudge();
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}
