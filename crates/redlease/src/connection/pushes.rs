//! What a connection's pushes mean to the client's subscriptions.

use redis::{PushInfo, PushKind, Value};
use tokio::sync::mpsc;

/// A message for the client's subscriptions.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// A message arrived on this channel (plain or sharded), with its
    /// payload if it is an integer (every Redisson message is).
    Message {
        channel: String,
        payload: Option<i64>,
    },
    /// The server dropped the sharded subscription to this channel: our
    /// own unsubscribe's confirmation, or, unasked, the slot moved away
    /// from the node (a failover or a migration).
    ShardUnsubscribed(String),
    /// The connection dropped: messages may have been lost.
    Disconnected,
}

/// The pushes of a connection opened with pushes.
pub(crate) struct Pushes {
    rx: mpsc::UnboundedReceiver<PushInfo>,
}

impl Pushes {
    pub(super) fn new(rx: mpsc::UnboundedReceiver<PushInfo>) -> Pushes {
        Pushes { rx }
    }

    /// Pushes that never come, for unit tests of the subscriptions.
    #[cfg(test)]
    pub(crate) fn none() -> Pushes {
        // The sender is dropped: `next` answers `None` at once.
        Pushes::new(mpsc::unbounded_channel().1)
    }

    /// The next push the subscriptions care about; `None` once the
    /// connection is gone for good.
    pub(crate) async fn next(&mut self) -> Option<Push> {
        loop {
            let push = self.rx.recv().await?;
            let channel = || match push.data.first() {
                Some(Value::BulkString(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
                _ => None,
            };
            let decoded = match push.kind {
                PushKind::Message | PushKind::SMessage => channel().map(|channel| {
                    let payload = match push.data.get(1) {
                        Some(Value::BulkString(bytes)) => std::str::from_utf8(bytes)
                            .ok()
                            .and_then(|text| text.trim().parse().ok()),
                        Some(Value::Int(n)) => Some(*n),
                        _ => None,
                    };
                    Push::Message { channel, payload }
                }),
                PushKind::SUnsubscribe => channel().map(Push::ShardUnsubscribed),
                PushKind::Disconnection => Some(Push::Disconnected),
                _ => None,
            };
            if let Some(push) = decoded {
                return Some(push);
            }
        }
    }
}
