//! Both sides on one deployment: a shared Redisson driver and a redlease
//! client of the same server or cluster, with the pub/sub mode of each
//! matched as a Java shop and a Rust shop would configure them.

use std::sync::OnceLock;
use std::time::Duration;

use redlease::PubSubMode;
use tokio::task::JoinHandle;

use super::driver::{Java, Options, Reply, VERSIONS, now_us};
use crate::cluster_support::{RedisCluster, shared_cluster};
use crate::support::{RedisServer, eventually, unique};

/// Where both sides run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deploy {
    /// The shared `redis-server`.
    Single,
    /// The shared 3-master cluster; Redisson with
    /// `shardedSubscriptionMode = ON`, redlease with
    /// [`PubSubMode::Sharded`] (both sides' default on Redis 7).
    ClusterSharded,
    /// The shared cluster; Redisson with `shardedSubscriptionMode = OFF`,
    /// redlease with [`PubSubMode::Plain`].
    ClusterPlain,
}

impl Deploy {
    const ALL: [Deploy; 3] = [Deploy::Single, Deploy::ClusterSharded, Deploy::ClusterPlain];

    fn index(self) -> usize {
        Deploy::ALL.iter().position(|d| *d == self).unwrap()
    }

    /// The driver options for this deployment.
    pub(crate) fn java_options(self) -> Options {
        match self {
            Deploy::Single => Options {
                url: RedisServer::shared().url(),
                ..Options::default()
            },
            Deploy::ClusterSharded | Deploy::ClusterPlain => Options {
                url: cluster_nodes(shared_cluster()),
                cluster: true,
                sharded: Some(match self {
                    Deploy::ClusterSharded => "on",
                    _ => "off",
                }),
                ..Options::default()
            },
        }
    }

    /// A redlease client builder for this deployment.
    pub(crate) fn rust_builder(self) -> redlease::ClientBuilder {
        match self {
            Deploy::Single => redlease::Client::builder(&RedisServer::shared().url()),
            Deploy::ClusterSharded => {
                redlease::Client::builder(&shared_cluster().url()).pubsub_mode(PubSubMode::Sharded)
            }
            Deploy::ClusterPlain => {
                redlease::Client::builder(&shared_cluster().url()).pubsub_mode(PubSubMode::Plain)
            }
        }
    }
}

/// The cluster's masters as Redisson takes them: `redis://host:port`,
/// comma-separated.
pub(crate) fn cluster_nodes(cluster: &RedisCluster) -> String {
    cluster
        .masters()
        .map(|node| format!("redis://{}", node.address()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The driver of Redisson `VERSIONS[version]` on `deploy`, shared by the
/// tests that only touch their own keys and owners (a JVM takes a second
/// or two to start). Never dropped: it exits when the test process does.
pub(crate) fn shared_java(version: usize, deploy: Deploy) -> &'static Java {
    static JVMS: [OnceLock<Java>; 6] = [const { OnceLock::new() }; 6];
    JVMS[version * Deploy::ALL.len() + deploy.index()]
        .get_or_init(|| Java::start(VERSIONS[version], &deploy.java_options()))
}

/// A Redisson driver and a redlease client on one deployment.
pub(crate) struct Side {
    pub(crate) java: &'static Java,
    pub(crate) rust: redlease::Client,
    pub(crate) deploy: Deploy,
}

impl Side {
    /// The shared driver of Redisson `VERSIONS[version]` on `deploy`, and
    /// a new redlease client there with default settings.
    pub(crate) async fn new(version: usize, deploy: Deploy) -> Side {
        let java = tokio::task::spawn_blocking(move || shared_java(version, deploy))
            .await
            .unwrap();
        let rust = deploy.rust_builder().build().await.unwrap();
        Side { java, rust, deploy }
    }

    /// A name no other test uses, and the Java owner threads' prefix.
    pub(crate) fn name(&self, prefix: &str) -> String {
        unique(&format!("java-{prefix}"))
    }

    /// A raw connection to the node that holds `key`.
    pub(crate) fn connection_for(&self, key: &str) -> redis::Connection {
        match self.deploy {
            Deploy::Single => RedisServer::shared().connection(),
            _ => shared_cluster().connection_for_key(key),
        }
    }

    /// `cmd` on the node that holds `key`.
    pub(crate) fn query<T: redis::FromRedisValue>(&self, key: &str, cmd: &redis::Cmd) -> T {
        cmd.query(&mut self.connection_for(key)).unwrap()
    }

    /// Subscribers to `channel`, Java's and redlease's, counted where
    /// they subscribe: the one server; on a cluster, sharded subscribers
    /// on the channel's node, plain ones on every node.
    pub(crate) fn subscribers(&self, channel: &str) -> i64 {
        let count = |conn: &mut redis::Connection, sub: &str| -> i64 {
            let reply: (String, i64) = redis::cmd("PUBSUB")
                .arg(sub)
                .arg(channel)
                .query(conn)
                .unwrap();
            reply.1
        };
        match self.deploy {
            Deploy::Single => count(&mut RedisServer::shared().connection(), "NUMSUB"),
            Deploy::ClusterSharded => count(
                &mut shared_cluster().connection_for_key(channel),
                "SHARDNUMSUB",
            ),
            Deploy::ClusterPlain => shared_cluster()
                .masters()
                .map(|node| count(&mut node.connection(), "NUMSUB"))
                .sum(),
        }
    }

    /// Waits until `channel` has at least `n` subscribers (at most 10 s),
    /// failing the test otherwise: a waiter is then asleep on its channel,
    /// and a release must wake it.
    pub(crate) async fn until_subscribed(&self, channel: &str, n: i64) {
        let subscribed =
            eventually(Duration::from_secs(10), || self.subscribers(channel) >= n).await;
        assert!(
            subscribed.is_some(),
            "no {n} subscribers on {channel} ({:?})",
            self.deploy
        );
    }
}

impl Side {
    /// Spawns redlease's `acquire`, waits until it sleeps on `channel`,
    /// runs Java's `op` as `owner` (a release), and returns what the waiter
    /// got and how long after the release's start it returned, failing the
    /// test unless the release message woke it (in under
    /// [`WOKEN_WITHIN_US`]).
    pub(crate) async fn redlease_woken_by_java<T, F>(
        &self,
        channel: &str,
        acquire: F,
        owner: &str,
        op: &str,
    ) -> (T, u64)
    where
        F: Future<Output = Result<T, redlease::Error>> + Send + 'static,
        T: Send + 'static,
    {
        let waiter = spawn_woken(acquire);
        self.until_subscribed(channel, 1).await;
        let release = self.java.call(owner, op).await;
        release.value();
        let (got, at) = waiter.await.unwrap();
        let got = got.unwrap_or_else(|e| panic!("redlease's waiter, after Java's {op}: {e}"));
        let woke = after(release.start_us, at);
        assert!(
            woke < WOKEN_WITHIN_US,
            "redlease woke {woke} µs after Java's {op} ({:?})",
            self.deploy
        );
        (got, woke)
    }

    /// Sends Java's waiting `op` as `owner`, waits until it sleeps on
    /// `channel`, runs redlease's `release`, and returns Java's reply and
    /// how long after the release's start it came, failing the test unless
    /// the release message woke it (in under [`WOKEN_WITHIN_US`]).
    pub(crate) async fn java_woken_by_redlease<R>(
        &self,
        channel: &str,
        owner: &str,
        op: &str,
        release: impl Future<Output = Result<R, redlease::Error>>,
    ) -> (Reply, u64) {
        let pending = self.java.send(owner, op);
        self.until_subscribed(channel, 1).await;
        let released = now_us();
        if let Err(e) = release.await {
            panic!("redlease's release, for Java's {op}: {e}");
        }
        let got = self.java.reply(pending).await;
        let woke = after(released, got.end_us);
        assert!(
            woke < WOKEN_WITHIN_US,
            "Java's {op} returned {woke} µs after redlease's release ({:?})",
            self.deploy
        );
        (got, woke)
    }
}

/// Redisson's lock channel for `name`: `redisson_lock__channel:{name}`,
/// the braces left out when the name has a hash tag.
pub(crate) fn lock_channel(name: &str) -> String {
    format!("redisson_lock__channel:{}", braced(name))
}

/// Redisson's semaphore channel for `name`.
pub(crate) fn semaphore_channel(name: &str) -> String {
    format!("redisson_sc:{}", braced(name))
}

/// `{name}`, or `name` when it already has a hash tag.
pub(crate) fn braced(name: &str) -> String {
    if name.contains('{') {
        name.to_owned()
    } else {
        format!("{{{name}}}")
    }
}

/// What a redlease waiter got, and when (Unix µs, the driver's clock).
pub(crate) type Woken<T> = (Result<T, redlease::Error>, u64);

/// Runs `acquire` in a task, noting when it returned.
pub(crate) fn spawn_woken<T, F>(acquire: F) -> JoinHandle<Woken<T>>
where
    F: Future<Output = Result<T, redlease::Error>> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(async move {
        let got = acquire.await;
        (got, now_us())
    })
}

/// How long after `since_us` a wake-up at `at_us` came, in µs (0 when it
/// came first: the waiter's own attempt can beat the releaser's reply).
pub(crate) fn after(since_us: u64, at_us: u64) -> u64 {
    at_us.saturating_sub(since_us)
}

/// A wake-up across the two clients must come from the release message,
/// not from a waiter's timed retry: well under a second, where the
/// holder's lease (30 s) bounds the retry.
pub(crate) const WOKEN_WITHIN_US: u64 = 2_000_000;

/// How long the waiters in these tests wait.
pub(crate) const WAIT: Duration = Duration::from_secs(15);

/// [`WAIT`] in ms, for the driver.
pub(crate) const WAIT_MS: u128 = WAIT.as_millis();

/// Generates one test per Redisson version and deployment that runs
/// `scenario(side)`: Redis alone, the cluster with sharded pub/sub, and the
/// cluster with plain pub/sub, each with Redisson 4.x and 3.x.
macro_rules! everywhere {
    ($scenario:ident) => {
        mod $scenario {
            use crate::java::side::{Deploy, Side};

            async fn run(version: usize, deploy: Deploy) {
                super::$scenario(Side::new(version, deploy).await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn single_v4() {
                run(0, Deploy::Single).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn single_v3() {
                run(1, Deploy::Single).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster_sharded_v4() {
                run(0, Deploy::ClusterSharded).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster_sharded_v3() {
                run(1, Deploy::ClusterSharded).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster_plain_v4() {
                run(0, Deploy::ClusterPlain).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster_plain_v3() {
                run(1, Deploy::ClusterPlain).await;
            }
        }
    };
}
pub(crate) use everywhere;
