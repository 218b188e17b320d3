//! Which pub/sub carries release messages: [`PubSubMode`], what the client
//! asks for, and [`Publish`], what a connection settled on (and so the
//! command its scripts publish with).

/// How release messages travel, as Redisson's `shardedSubscriptionMode`;
/// set with [`ClientBuilder::pubsub_mode`](crate::ClientBuilder::pubsub_mode).
///
/// Redis Cluster has two kinds of pub/sub that do not hear each other:
/// plain (`SUBSCRIBE`/`PUBLISH`, broadcast to every node over the cluster
/// bus) and sharded (`SSUBSCRIBE`/`SPUBLISH`, kept on the shard that owns
/// the channel's slot, Redis 7 and later). Waiters and releasers must use
/// the same kind to wake each other, across redlease and Redisson alike.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::PubSubMode;
///
/// // Beside Redisson clients configured with `shardedSubscriptionMode = OFF`:
/// let client = redlease::Client::builder(&url)
///     .pubsub_mode(PubSubMode::Plain)
///     .build()
///     .await?;
/// client.lock("doc:pubsub-mode").try_lock().await?.unlock().await?;
///
/// // Sharded pub/sub is a cluster's only.
/// let single = redlease::Client::builder(&url).pubsub_mode(PubSubMode::Sharded);
/// assert!(single.build().await.unwrap_err().is_invalid_argument());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PubSubMode {
    /// Sharded on a cluster that answers `PUBSUB SHARDNUMSUB` (Redis 7 and
    /// later), plain otherwise and on a single node: what Redisson does by
    /// default, so the two wake each other.
    #[default]
    Auto,
    /// Always sharded; only on a cluster.
    Sharded,
    /// Always plain, for example beside Redisson clients configured with
    /// `shardedSubscriptionMode = OFF`.
    Plain,
}

/// The kind of pub/sub a connection settled on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Publish {
    Plain,
    Sharded,
}

impl Publish {
    /// The command a script publishes a release with.
    pub(crate) fn command(self) -> &'static str {
        match self {
            Publish::Plain => "publish",
            Publish::Sharded => "spublish",
        }
    }
}
