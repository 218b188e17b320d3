//! The client: every public method of [`Client`] (connecting, its options,
//! the handles it makes) and its builder. The parts its primitives share
//! (connection, owner ids, watchdog, subscriptions) are in `shared.rs`;
//! no protocol code here: that is in the primitives' modules.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::connection::{self, Connection, PubSubMode, SentinelAuth, Timeouts, TlsOptions};
use crate::election::Election;
use crate::error::Error;
use crate::expirable::ExpirableSemaphore;
use crate::kind::Kind;
use crate::latch::CountDownLatch;
use crate::layout::Layout;
use crate::lock::Lock;
use crate::multi::MultiLock;
use crate::name;
use crate::pubsub::Subscriptions;
use crate::replicas::Replicas;
use crate::rwlock::ReadWriteLock;
use crate::scripts::Fencing;
use crate::semaphore::Semaphore;
use crate::shared::{Handle, Inner, Shared};
use crate::watchdog::Watchdog;
use crate::watchdog::schedule::{DEFAULT_WATCHDOG_TIMEOUT, MIN_TIMEOUT as MIN_WATCHDOG_TIMEOUT};

/// How long a lock's fencing counter outlives its last acquisition when no
/// other time is configured; see [`ClientBuilder::fencing_counter_ttl`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
///
/// // A week instead of a day, for names taken rarely.
/// let client = redlease::Client::builder(&url)
///     .fencing_counter_ttl(redlease::DEFAULT_FENCING_COUNTER_TTL * 7)
///     .build()
///     .await?;
/// assert_eq!(redlease::DEFAULT_FENCING_COUNTER_TTL, Duration::from_secs(24 * 3600));
/// # Ok(())
/// # }
/// ```
pub const DEFAULT_FENCING_COUNTER_TTL: Duration = Duration::from_secs(24 * 3600);

/// The longest [`ClientBuilder::retry_writes_for`] takes: a day, far past
/// any failover, and records of answers that stay well within memory.
const MAX_RETRY_WRITES_FOR: Duration = Duration::from_secs(24 * 3600);

/// A handle to one Redis server for taking locks.
///
/// Cheap to clone: clones share one multiplexed connection (which reconnects
/// by itself), one client id and one watchdog task. Build it once at start-up
/// and pass clones around.
///
/// The connection and the watchdog run on the Tokio runtime that built the
/// client; use the client on that runtime.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// // Clones share the connection and the watchdog: hand them to tasks.
/// let worker = client.clone();
/// let job = tokio::spawn(async move {
///     let guard = worker.lock("doc:client:worker").try_lock().await?;
///     // ... the critical section ...
///     guard.unlock().await
/// });
/// job.await.expect("the task ran to the end")?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    /// What the client's primitives hold of it (they are made here, and
    /// hold this rather than a `Client`, so that the layers import one way).
    shared: Shared,
}

impl Client {
    /// Connects with default settings (watchdog timeout 30 s).
    ///
    /// `url` is a redis-rs connection URL for one node,
    /// `redis://[user:password@]host:port[/db]`, or
    /// `redis-cluster://[user:password@]host:port[,host:port...]` for a
    /// Redis Cluster (feature `cluster`, on by default). With the
    /// `tls-rustls` feature, `rediss://` and `rediss-cluster://` are the
    /// same over TLS, verified against the system's CAs, or a CA of your
    /// own given to [`ClientBuilder::tls_ca`].
    ///
    /// # Errors
    ///
    /// An invalid URL gives an error for which
    /// [`is_invalid_argument`](Error::is_invalid_argument) is true; an
    /// unreachable server one for which [`is_connection`](Error::is_connection)
    /// is true; rejected credentials one for which [`is_auth`](Error::is_auth)
    /// is true.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the half-made connection, and
    /// nothing has been written to Redis.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:client:connect").try_lock().await?;
    /// // ... the critical section ...
    /// guard.unlock().await?;
    ///
    /// // Nothing listens on port 1.
    /// let e = redlease::Client::connect("redis://127.0.0.1:1").await.unwrap_err();
    /// assert!(e.is_connection());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<Client, Error> {
        Client::builder(url).build().await
    }

    /// Starts configuring a client for `url`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::builder(&url)
    ///     .watchdog_timeout(Duration::from_secs(10))
    ///     .response_timeout(Duration::from_millis(500))
    ///     .build()
    ///     .await?;
    /// assert_eq!(client.watchdog_timeout(), Duration::from_secs(10));
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(url: &str) -> ClientBuilder {
        ClientBuilder {
            url: url.to_owned(),
            watchdog_timeout: DEFAULT_WATCHDOG_TIMEOUT,
            retry_writes_for: crate::backoff::RETRY_FOR,
            response_timeout: Duration::from_secs(1),
            connection_timeout: Duration::from_secs(1),
            layout: Layout::default(),
            fencing_counter_ttl: DEFAULT_FENCING_COUNTER_TTL,
            fencing: true,
            redisson_fenced_interop: false,
            redisson_fair_wait: Duration::from_millis(crate::scripts::fair::REDISSON_FAIR_WAIT_MS),
            replicas: None,
            pubsub_mode: PubSubMode::Auto,
            tls: TlsOptions::default(),
            sentinel_auth: SentinelAuth::default(),
        }
    }

    /// This client's random id, the first part of every owner field it
    /// writes into lock hashes (`<id>:<n>`): a UUID of version 8 (RFC
    /// 9562's vendor-specific version, with 122 random bits), where
    /// Redisson's ids are of version 4, so that the fair lock's scripts can
    /// tell redlease's waiters from Redisson's (DESIGN.md).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let guard = client.lock("doc:client:id").try_lock().await?;
    /// // The guard's owner field is `<client id>:<n>`.
    /// assert!(guard.owner().starts_with(&format!("{}:", client.id())));
    /// assert_eq!(&client.id()[14..15], "8", "a UUID of version 8");
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        self.shared.id()
    }

    /// The lease of watchdog-mode locks; the watchdog renews them every third
    /// of it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// assert_eq!(client.watchdog_timeout(), redlease::DEFAULT_WATCHDOG_TIMEOUT);
    /// # Ok(())
    /// # }
    /// ```
    pub fn watchdog_timeout(&self) -> Duration {
        self.shared.watchdog_timeout()
    }

    /// How many locks this client's watchdog is renewing now: its held
    /// watchdog-mode locks, less any already reported lost.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let watched = client.lock("doc:client:renewing").try_lock().await?;
    /// // A fixed lease is never renewed, so the watchdog does not count it.
    /// let fixed = client
    ///     .lock("doc:client:renewing:fixed")
    ///     .lease(Duration::from_secs(5))
    ///     .try_lock()
    ///     .await?;
    /// assert_eq!(client.renewing(), 1);
    /// watched.unlock().await?;
    /// assert_eq!(client.renewing(), 0);
    /// fixed.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn renewing(&self) -> usize {
        self.shared.watchdog().len()
    }

    // The handles a client makes: each holds the client's parts, its name
    // and the name's metrics label ([`Handle`]), made here once.

    /// Returns a handle to the lock called `name`. Nothing is sent to Redis
    /// until the handle is used, and the name is checked then.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:lock:handle");
    /// let guard = lock.try_lock().await?;
    /// guard.unlock().await?;
    ///
    /// // The name is checked when the handle is used.
    /// let e = client.lock("").try_lock().await.unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(self.handle(name), Kind::plain(self.shared.layout()))
    }

    /// Returns a handle to the **fair** lock called `name`: waiters acquire in
    /// the order they started waiting, across processes, and each release
    /// wakes only the next waiter in line.
    ///
    /// Same API as [`lock`](Client::lock), same lock hash (a fair and a plain
    /// handle on one name exclude each other, but a release by one kind does
    /// not wake waiters of the other: use one kind per name), plus Redisson's `RFairLock`
    /// queue (`redisson_lock_queue:{name}`, a list) and waiter deadlines
    /// (`redisson_lock_timeout:{name}`, a zset). Waiters in
    /// [`try_lock_for`](Lock::try_lock_for) and [`lock`](Lock::lock) join the
    /// queue; [`try_lock`](Lock::try_lock) acquires only when nobody is
    /// queued and leaves no trace. A waiter that gives up leaves the queue at
    /// once; one that dies (or loses its connection) stops refreshing its
    /// deadline and is dropped from the queue within one
    /// [watchdog timeout](crate::ClientBuilder::watchdog_timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.fair_lock("doc:lock:fair");
    /// let first = lock.try_lock().await?;
    /// // The next owner joins the queue, and is handed the lock on release.
    /// let next = tokio::spawn({
    ///     let lock = lock.clone();
    ///     async move { lock.try_lock_for(Duration::from_secs(5)).await }
    /// });
    /// first.unlock().await?;
    /// let second = next.await.expect("the task ran to the end")?;
    /// second.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        let redisson_wait_ms = self.shared.redisson_fair_wait_ms();
        Lock::new(self.handle(name), Kind::Fair { redisson_wait_ms })
    }

    /// Returns a handle to the read-write lock called `name`. Nothing is
    /// sent to Redis until one of its sides is used, and the name is checked
    /// then.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let rw = client.read_write_lock("doc:rwlock:handle");
    /// let writing = rw.write().try_lock().await?;
    /// writing.unlock().await?;
    ///
    /// // The name is checked when a side is used.
    /// let e = client.read_write_lock("").read().try_lock().await.unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        ReadWriteLock::new(self.handle(name))
    }

    /// Returns a handle to the semaphore called `name`. Nothing is sent to
    /// Redis until the handle is used, and the name is checked then.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let imports = client.semaphore("doc:semaphore:handle");
    /// assert_eq!(imports.name(), "doc:semaphore:handle");
    ///
    /// // A bad name is refused when the handle is used, not when it is made.
    /// let nameless = client.semaphore("");
    /// assert!(nameless.available_permits().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore::new(self.handle(name))
    }

    /// Returns a handle to the expirable semaphore called `name`
    /// (Redisson's `RPermitExpirableSemaphore`). Nothing is sent to Redis
    /// until the handle is used, and the name is checked then.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.expirable_semaphore("doc:expirable:handle");
    /// assert_eq!(exports.name(), "doc:expirable:handle");
    ///
    /// // A bad name is refused when the handle is used, not when it is made.
    /// let nameless = client.expirable_semaphore("");
    /// assert!(nameless.available_permits().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a semaphore handle does nothing until it is used"]
    pub fn expirable_semaphore(&self, name: impl Into<String>) -> ExpirableSemaphore {
        ExpirableSemaphore::new(self.handle(name))
    }

    /// Returns a handle to the count-down latch called `name`. Nothing is
    /// sent to Redis until the handle is used, and the name is checked then.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let shards = client.count_down_latch("doc:latch:handle");
    /// assert_eq!(shards.name(), "doc:latch:handle");
    ///
    /// // A bad name is refused when the handle is used, not when it is made.
    /// let nameless = client.count_down_latch("");
    /// assert!(nameless.count().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a latch handle does nothing until it is used"]
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch::new(self.handle(name))
    }

    /// A handle to the leader election `name`: who holds the lock `name`
    /// leads. See [`Election`] for campaigning, asking who leads, and
    /// observing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let election = client.election("doc:client:election");
    /// let leadership = election.try_campaign("me").await?;
    /// assert!(election.try_campaign("another").await.unwrap_err().is_busy());
    /// leadership.resign().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "an election handle does nothing until it is used"]
    pub fn election(&self, name: impl Into<String>) -> Election {
        Election::new(self.shared.clone(), name.into())
    }

    /// Returns a handle to the locks called `names`, taken together, all or
    /// none (see [`MultiLock`]). Nothing is sent to Redis until the handle
    /// is used; the names are checked then (at least one, each a valid lock
    /// name).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let accounts = vec!["doc:multi:handle:b".to_owned(), "doc:multi:handle:a".to_owned()];
    /// let multi = client.multi_lock(accounts);
    /// let both = multi.try_lock().await?;
    /// both.unlock().await?;
    ///
    /// // The names are checked when the handle is used.
    /// let none = client.multi_lock(Vec::<String>::new());
    /// assert!(none.try_lock().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a lock handle does nothing until an acquire is called on it"]
    pub fn multi_lock<I, S>(&self, names: I) -> MultiLock
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names = names.into_iter().map(Into::into).collect();
        MultiLock::new(self.shared.clone(), names)
    }

    /// A handle's common part, on `name`.
    fn handle(&self, name: impl Into<String>) -> Handle {
        Handle::new(self.shared.clone(), name.into().into())
    }

    /// What the client's primitives hold of it.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shared.fmt(f)
    }
}

/// Configures a [`Client`]; made by [`Client::builder`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use std::time::Duration;
///
/// let builder = redlease::Client::builder(&url).watchdog_timeout(Duration::from_secs(15));
/// // A builder is a value: build several clients from it.
/// let a = builder.clone().build().await?;
/// let b = builder.build().await?;
/// assert_eq!(a.watchdog_timeout(), b.watchdog_timeout());
/// // Each has an id of its own, so their locks exclude each other.
/// assert_ne!(a.id(), b.id());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build().await` is called"]
pub struct ClientBuilder {
    url: String,
    watchdog_timeout: Duration,
    /// See `retry_writes_for`.
    retry_writes_for: Duration,
    response_timeout: Duration,
    connection_timeout: Duration,
    layout: Layout,
    fencing_counter_ttl: Duration,
    /// Issue fencing tokens; see `fencing`.
    fencing: bool,
    /// Keep fencing counters for ever; see `redisson_fenced_interop`.
    redisson_fenced_interop: bool,
    /// Redisson's `fairLockWaitTimeout`; see `redisson_fair_wait`.
    redisson_fair_wait: Duration,
    /// Replicas that must acknowledge an acquire, and for how long to wait.
    replicas: Option<(u32, Duration)>,
    pubsub_mode: PubSubMode,
    /// Its `Debug` never shows the PEM bytes.
    tls: TlsOptions,
    /// The sentinels' own credentials; its `Debug` never shows the password.
    sentinel_auth: SentinelAuth,
}

impl ClientBuilder {
    /// The lease of watchdog-mode locks (default 30 s). The watchdog renews
    /// every held lock every third of this, and a lock whose holder died
    /// frees within this time. At least 30 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::builder(&url)
    ///     .watchdog_timeout(Duration::from_secs(10))
    ///     .build()
    ///     .await?;
    /// assert_eq!(client.watchdog_timeout(), Duration::from_secs(10));
    ///
    /// let too_short = redlease::Client::builder(&url).watchdog_timeout(Duration::from_millis(10));
    /// assert!(too_short.build().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn watchdog_timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.watchdog_timeout = timeout;
        self
    }

    /// How long to wait for any one reply from Redis (default 1 s), so that
    /// no lock operation hangs on a silent server. One operation may need a
    /// few replies (a script reload after `NOSCRIPT` takes three), and a
    /// broken connection adds up to two reconnect attempts of
    /// [`connection_timeout`](ClientBuilder::connection_timeout) each; a
    /// `try_lock_for` may overrun its wait by the last attempt's round trip.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let server = redlease_testkit::RedisServer::start();
    /// let client = redlease::Client::builder(&server.url())
    ///     .response_timeout(Duration::from_millis(100))
    ///     .build()
    ///     .await?;
    /// server.pause(); // connected, but silent: a frozen VM
    /// let e = client.lock("doc:builder:response-timeout").try_lock().await.unwrap_err();
    /// assert!(e.is_timeout());
    /// # server.resume();
    /// # Ok(())
    /// # }
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.response_timeout = timeout;
        self
    }

    /// How long a write that is safe to repeat is sent again after a
    /// time-out or a lost connection (default 30 s): a lock's release (at
    /// most for its lease), a semaphore's release, `add_permits` and a
    /// dropped permit's give-back, an expirable permit's release, a latch's
    /// count-down. Each carries a request id whose record in Redis makes a
    /// repeat answer as the first attempt did; the records last this and
    /// 10 s more. Zero sends each once. After it the caller gets the last
    /// error, and an attempt still on its way may yet be applied, once.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// // A service that would rather hear of an outage within 5 s.
    /// let client = redlease::Client::builder(&url)
    ///     .retry_writes_for(Duration::from_secs(5))
    ///     .build()
    ///     .await?;
    /// client.count_down_latch("doc:builder:retry-writes-for").count_down().await?;
    /// // At most a day.
    /// let week = redlease::Client::builder(&url).retry_writes_for(Duration::from_secs(7 * 86_400));
    /// assert!(week.build().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn retry_writes_for(mut self, retry_for: Duration) -> ClientBuilder {
        self.retry_writes_for = retry_for;
        self
    }

    /// How long one connection attempt may take (default 1 s).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::builder(&url)
    ///     .connection_timeout(Duration::from_millis(250))
    ///     .build()
    ///     .await?;
    /// // A server that is not there fails fast.
    /// let e = redlease::Client::builder("redis://127.0.0.1:1")
    ///     .connection_timeout(Duration::from_millis(250))
    ///     .build()
    ///     .await
    ///     .unwrap_err();
    /// assert!(e.is_connection());
    /// # Ok(())
    /// # }
    /// ```
    pub fn connection_timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.connection_timeout = timeout;
        self
    }

    /// How [`Client::lock`](crate::Client::lock)'s locks are kept in Redis
    /// (default [`Layout::Redisson`], shared with Java services on
    /// Redisson). [`Layout::String`] keeps each lock as a string holding its
    /// owner, as the hand-written `SET key value NX PX` lock and redis-py,
    /// rslock, redsync and node-redlock do: choose it to share lock keys
    /// with services using those.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use redlease::layout::Layout;
    ///
    /// let client = redlease::Client::builder(&url)
    ///     .layout(Layout::String)
    ///     .build()
    ///     .await?;
    /// let guard = client.lock("doc:builder:layout").try_lock().await?;
    /// // A plain `SET NX` lock on the same key is refused while it is held.
    /// let mut conn = redlease_testkit::RedisServer::shared().connection();
    /// let set: Option<String> = redis::cmd("SET")
    ///     .arg("doc:builder:layout")
    ///     .arg("someone-else")
    ///     .arg("NX")
    ///     .query(&mut conn)?;
    /// assert_eq!(set, None);
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn layout(mut self, layout: Layout) -> ClientBuilder {
        self.layout = layout;
        self
    }

    /// Whether acquires issue fencing tokens (default on).
    ///
    /// Each token is an `INCR` of a counter per lock name
    /// (`redisson_lock_token:{name}`), which stays in Redis for
    /// [`fencing_counter_ttl`](ClientBuilder::fencing_counter_ttl) after its
    /// start: about a hundred bytes per name. A service that locks millions
    /// of distinct names a day (one per order, per invoice) and never reads
    /// a token pays for both; turned off, an acquire writes no counter
    /// (in the string layout it is then one `SET NX PX`, with no
    /// transaction around it) and [`fencing_token`](crate::Guard::fencing_token)
    /// answers `None` on every guard of this client.
    ///
    /// What is lost: the token is the only thing that stops a holder that
    /// paused past its lease (a long GC or swap, a stopped process) from
    /// writing after the next holder started, when the resource checks it
    /// (see [`LockGuard::fencing_token`](crate::LockGuard::fencing_token)).
    /// Turn it off only where nothing reads tokens, or where the work is
    /// safe to do twice. Other clients' tokens for the same names are
    /// unaffected: their counters keep counting. Cannot be combined with
    /// [`redisson_fenced_interop`](ClientBuilder::redisson_fenced_interop),
    /// which exists to share the counters.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::builder(&url).fencing(false).build().await?;
    /// let guard = client.lock("doc:builder:fencing-off").try_lock().await?;
    /// assert_eq!(guard.fencing_token(), None);
    /// guard.unlock().await?;
    ///
    /// let both = redlease::Client::builder(&url)
    ///     .fencing(false)
    ///     .redisson_fenced_interop(true);
    /// assert!(both.build().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing(mut self, on: bool) -> ClientBuilder {
        self.fencing = on;
        self
    }

    /// How long a lock's fencing counter (`redisson_lock_token:{name}`) lives
    /// from its start (default 24 h), so that a service locking one name per
    /// order does not leave a key per order behind.
    ///
    /// Tokens stay increasing when the counter is gone, since a new one
    /// starts from the server's clock in microseconds (see
    /// [`LockGuard::fencing_token`](crate::LockGuard::fencing_token)); a
    /// name in constant use restarts its counter so once per time to live.
    /// Each token is one `INCR`, which keeps the time to live: refreshing it
    /// on every acquisition would cost Redis a write more per lock. While
    /// it lives, the counter also keeps tokens increasing across a step back
    /// of the server's clock, so keep it longer than any step you expect.
    /// At least 1 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::builder(&url)
    ///     .fencing_counter_ttl(Duration::from_secs(3600))
    ///     .build()
    ///     .await?;
    /// let lock = client.lock("doc:builder:fencing-ttl");
    /// let first = lock.try_lock().await?;
    /// let token = first.fencing_token();
    /// first.unlock().await?;
    /// let second = lock.try_lock().await?;
    /// assert!(second.fencing_token() > token);
    /// second.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_counter_ttl(mut self, ttl: Duration) -> ClientBuilder {
        self.fencing_counter_ttl = ttl;
        self
    }

    /// For a deployment where Java services take fencing tokens from the
    /// same counters with Redisson's `RFencedLock`: keeps every fencing
    /// counter for ever (no time to live; one a counter had is removed at
    /// the next acquisition), replacing
    /// [`fencing_counter_ttl`](ClientBuilder::fencing_counter_ttl).
    ///
    /// Redisson issues a token with `INCR`, which keeps a counter's time to
    /// live but never sets one: with the default 24 h, a lock that only
    /// Java takes for a day loses its counter, and Java's next token is 1,
    /// older than every token before. redlease's own tokens never go back
    /// (they start from the server's clock), but a database guard compares
    /// both. With this setting a counter ends only when Redis loses its
    /// data (a restart without persistence, a failover that lost it), and
    /// then Java's tokens restart at 1 whatever redlease does; the price is
    /// one small key per lock name, for ever, as with Redisson alone.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::builder(&url)
    ///     .redisson_fenced_interop(true)
    ///     .build()
    ///     .await?;
    /// let lock = client.lock("doc:builder:fenced-interop");
    /// let first = lock.try_lock().await?;
    /// let token = first.fencing_token().expect("fencing is on");
    /// first.unlock().await?;
    /// // One counter, kept for ever, counting up by one as Redisson's does.
    /// let second = lock.try_lock().await?;
    /// assert_eq!(second.fencing_token(), Some(token + 1));
    /// second.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn redisson_fenced_interop(mut self, on: bool) -> ClientBuilder {
        self.redisson_fenced_interop = on;
        self
    }

    /// The `fairLockWaitTimeout` of the Redisson clients that share fair
    /// locks with this one (default 5 minutes, Redisson's default). At least
    /// 1 ms.
    ///
    /// Redisson's fair acquire takes the acquirer's wait (this, for Java's
    /// `lock()`; the wait given to `tryLock`) off every waiter's deadline in
    /// `redisson_lock_timeout:{name}` when it leaves the queue with the
    /// lock, so a redlease fair waiter counts this wait in its own deadline
    /// once per Redisson waiter ahead of it: a Java neighbour then never
    /// drops a live redlease waiter from the queue. redlease waiters ahead
    /// count for nothing (they take nothing off). The price: a redlease
    /// waiter that dies behind Java waiters that took less off (a `tryLock`
    /// with a shorter wait) counts as alive for up to that much longer,
    /// blocking the queue meanwhile. Set it to what the Java services use
    /// (`Config.setFairLockWaitTimeout`); where no Java service uses fair
    /// locks, it changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// // The Java services on these fair locks set `setFairLockWaitTimeout(5000)`.
    /// let client = redlease::Client::builder(&url)
    ///     .redisson_fair_wait(Duration::from_secs(5))
    ///     .build()
    ///     .await?;
    /// let guard = client
    ///     .fair_lock("doc:builder:fair-wait")
    ///     .try_lock_for(Duration::from_secs(1))
    ///     .await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn redisson_fair_wait(mut self, wait: Duration) -> ClientBuilder {
        self.redisson_fair_wait = wait;
        self
    }

    /// Requires `count` replicas to acknowledge every acquisition within
    /// `wait` (Redis `WAIT count wait`), so that a failover right after an
    /// acquire does not silently hand the lock to a second holder (default:
    /// off, as for Redisson on a single server).
    ///
    /// When fewer replicas acknowledge in time, the lock is released again
    /// and the acquire fails with an error for which
    /// [`is_not_replicated`](Error::is_not_replicated) is true; a waiting
    /// acquire stops waiting. Acquires then take one more round trip (about
    /// one replication round trip while replicas keep up), and go through a
    /// connection of their own, because `WAIT` blocks the connection it runs
    /// on: renewals and releases are never held up behind it. Acquires of
    /// one client are acknowledged one after another.
    ///
    /// `WAIT` narrows the window, it does not close it: a replica that
    /// acknowledged may still lose the election, and Redis replication is
    /// asynchronous. The fencing token remains the guard that holds.
    ///
    /// `count` must be at least 1 and `wait` at least 1 ms (a `WAIT` of 0
    /// would block for ever).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// // This test server has no replicas, so no acquire can be acknowledged.
    /// let client = redlease::Client::builder(&url)
    ///     .require_replicas(1, Duration::from_millis(20))
    ///     .build()
    ///     .await?;
    /// let lock = client.lock("doc:builder:require-replicas");
    /// let e = lock.try_lock().await.unwrap_err();
    /// assert!(e.is_not_replicated());
    /// // ... and the lock was released again.
    /// let plain = redlease::Client::connect(&url).await?;
    /// plain.lock("doc:builder:require-replicas").try_lock().await?.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn require_replicas(mut self, count: u32, wait: Duration) -> ClientBuilder {
        self.replicas = Some((count, wait));
        self
    }

    /// How release messages travel on a cluster (default
    /// [`PubSubMode::Auto`]: sharded when the cluster has it, as Redisson
    /// does, so that the two wake each other). On a single node pub/sub is
    /// always plain, and [`PubSubMode::Sharded`] is refused when building.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use redlease::PubSubMode;
    ///
    /// // `Auto` suits a single node and a cluster alike.
    /// let client = redlease::Client::builder(&url)
    ///     .pubsub_mode(PubSubMode::Auto)
    ///     .build()
    ///     .await?;
    /// // Sharded pub/sub needs a cluster: refused on a single node.
    /// let sharded = redlease::Client::builder(&url).pubsub_mode(PubSubMode::Sharded);
    /// assert!(sharded.build().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn pubsub_mode(mut self, mode: PubSubMode) -> ClientBuilder {
        self.pubsub_mode = mode;
        self
    }

    /// Verifies the server's certificate against `pem` (one or more PEM CA
    /// certificates) instead of the system's CAs, on a `rediss://` or
    /// `rediss-cluster://` URL: for a private CA. The certificate must name
    /// the host of the URL (or of each cluster node, as the cluster reports
    /// them) as a subject alternative name.
    ///
    /// Needs the `tls-rustls` feature and a rustls crypto provider in the
    /// application (see the crate's features). redis-rs still loads the
    /// system's CAs first, and fails if they cannot be loaded at all.
    ///
    /// # Errors
    ///
    /// Nothing is checked here: [`build`](ClientBuilder::build) fails with
    /// an error for which [`is_invalid_argument`](Error::is_invalid_argument)
    /// is true when `pem` holds no certificate or does not parse, when the
    /// URL is not a TLS one (never a silent plaintext connection), or
    /// without the `tls-rustls` feature. A server whose certificate this CA
    /// did not sign fails to connect, with an error for which
    /// [`is_connection`](Error::is_connection) is true.
    ///
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(feature = "tls-rustls"))]
    /// # fn main() {}
    /// # #[cfg(feature = "tls-rustls")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server with a certificate from a CA of the test's own.
    /// # let certs = redlease_testkit::TestCerts::generate();
    /// # let server = redlease_testkit::RedisServer::start_with(certs.server_options(false));
    /// # let url = format!("rediss://127.0.0.1:{}", server.tls_port().unwrap());
    /// # let ca_pem = &certs.ca;
    /// // ca_pem: "/etc/redis/tls/ca.pem", say; url: "rediss://redis.internal:6380"
    /// let ca = std::fs::read(ca_pem)?;
    /// let client = redlease::Client::builder(&url).tls_ca(ca).build().await?;
    /// let guard = client.lock("doc:builder:tls-ca").try_lock().await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls_ca(mut self, pem: impl Into<Vec<u8>>) -> ClientBuilder {
        self.tls.set_ca(pem.into());
        self
    }

    /// Presents `cert_pem` (the client certificate, then any intermediate
    /// certificates, PEM) with the private key `key_pem` (PEM: PKCS#8,
    /// PKCS#1 RSA or SEC1 EC) to a server that asks for one
    /// (`tls-auth-clients yes`): mutual TLS, on a `rediss://` or
    /// `rediss-cluster://` URL. Combine with [`tls_ca`](ClientBuilder::tls_ca)
    /// for a private CA. The key is never printed (not in errors, not in
    /// this builder's `Debug`).
    ///
    /// # Errors
    ///
    /// Nothing is checked here: [`build`](ClientBuilder::build) fails with
    /// an error for which [`is_invalid_argument`](Error::is_invalid_argument)
    /// is true when either does not parse, when the URL is not a TLS one,
    /// or without the `tls-rustls` feature. A server that requires a client
    /// certificate and gets none it trusts closes the connection: an error
    /// for which [`is_connection`](Error::is_connection) is true.
    ///
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(feature = "tls-rustls"))]
    /// # fn main() {}
    /// # #[cfg(feature = "tls-rustls")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server with a certificate from a CA of the test's own.
    /// # let certs = redlease_testkit::TestCerts::generate();
    /// # // It requires clients to present a certificate that CA signed.
    /// # let server = redlease_testkit::RedisServer::start_with(certs.server_options(true));
    /// # let url = format!("rediss://127.0.0.1:{}", server.tls_port().unwrap());
    /// # let (ca_pem, cert_pem, key_pem) = (&certs.ca, &certs.client.cert, &certs.client.key);
    /// // ca_pem: "/etc/redis/tls/ca.pem", cert_pem: "/etc/orders/tls/client.pem", ...
    /// let client = redlease::Client::builder(&url)
    ///     .tls_ca(std::fs::read(ca_pem)?)
    ///     .tls_client_cert(std::fs::read(cert_pem)?, std::fs::read(key_pem)?)
    ///     .build()
    ///     .await?;
    /// let guard = client.lock("doc:builder:tls-client-cert").try_lock().await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls_client_cert(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> ClientBuilder {
        self.tls.set_client_cert(cert_pem.into(), key_pem.into());
        self
    }

    /// Authenticates to the sentinels of a `redis-sentinel://` or
    /// `rediss-sentinel://` URL with `password` (`AUTH password`): for
    /// sentinels started with `requirepass`. The URL's own credentials
    /// stay the master's (and its replicas'), and are never sent to the
    /// sentinels; this password is never sent to the master.
    ///
    /// # Errors
    ///
    /// [`build`](ClientBuilder::build) fails with an error for which
    /// [`is_invalid_argument`](Error::is_invalid_argument) is true when the
    /// URL is not a sentinel URL: the password is never silently ignored.
    /// Sentinels that refuse it, or that require a password when none is
    /// set, make `build` fail with an error for which
    /// [`is_auth`](Error::is_auth) is true and whose message names each
    /// sentinel and its answer.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # use redlease_testkit::{SentinelGroup, SentinelOptions};
    /// # let group = SentinelGroup::start_with(0, 1, SentinelOptions {
    /// #     password: Some("master-secret".to_owned()),
    /// #     sentinel_password: Some("sentinel-secret".to_owned()),
    /// #     ..SentinelOptions::default()
    /// # });
    /// # let url = group.url();
    /// // url: "redis-sentinel://:master-secret@10.0.0.1:26379,10.0.0.2:26379#mymaster"
    /// let client = redlease::Client::builder(&url)
    ///     .sentinel_password("sentinel-secret")
    ///     .build()
    ///     .await?;
    /// let guard = client.lock("doc:builder:sentinel-password").try_lock().await?;
    /// guard.unlock().await?;
    ///
    /// // Without it, the sentinels refuse.
    /// let e = redlease::Client::builder(&url).build().await.unwrap_err();
    /// assert!(e.is_auth());
    /// # Ok(())
    /// # }
    /// ```
    pub fn sentinel_password(mut self, password: impl Into<String>) -> ClientBuilder {
        self.sentinel_auth.password = Some(password.into());
        self
    }

    /// Authenticates to the sentinels as the ACL user `username` (`AUTH
    /// username password`), with
    /// [`sentinel_password`](ClientBuilder::sentinel_password).
    ///
    /// # Errors
    ///
    /// As [`sentinel_password`](ClientBuilder::sentinel_password).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # use redlease_testkit::{SentinelGroup, SentinelOptions};
    /// # let group = SentinelGroup::start_with(0, 1, SentinelOptions {
    /// #     password: Some("master-secret".to_owned()),
    /// #     sentinel_password: Some("sentinel-secret".to_owned()),
    /// #     ..SentinelOptions::default()
    /// # });
    /// # let url = group.url();
    /// // A sentinel's `requirepass` is the password of its user `default`.
    /// let client = redlease::Client::builder(&url)
    ///     .sentinel_username("default")
    ///     .sentinel_password("sentinel-secret")
    ///     .build()
    ///     .await?;
    /// let guard = client.lock("doc:builder:sentinel-username").try_lock().await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn sentinel_username(mut self, username: impl Into<String>) -> ClientBuilder {
        self.sentinel_auth.username = Some(username.into());
        self
    }

    /// The current master of this builder's sentinel URL, as
    /// [`url::sentinel_master`](crate::url::sentinel_master) returns it
    /// (a one-node URL with the URL's credentials and database), asked of
    /// the sentinels with this builder's TLS options and sentinel
    /// credentials; `None` when the URL is not a sentinel URL. For tools
    /// that open connections of their own.
    ///
    /// # Errors
    ///
    /// As [`build`](ClientBuilder::build) for a sentinel URL.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads; the sentinel connections it made close.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// # let group = redlease_testkit::SentinelGroup::start(0, 1);
    /// # let sentinel_url = group.url();
    /// // sentinel_url: "redis-sentinel://10.0.0.1:26379,10.0.0.2:26379#mymaster"
    /// let master = redlease::Client::builder(&sentinel_url).sentinel_master().await?;
    /// assert_eq!(master, Some(format!("redis://127.0.0.1:{}/0", group.master().port())));
    ///
    /// // Not a sentinel URL: no master to ask for.
    /// assert_eq!(redlease::Client::builder(&url).sentinel_master().await?, None);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn sentinel_master(&self) -> Result<Option<String>, Error> {
        connection::url::sentinel_master_with(&self.url, &self.tls, &self.sentinel_auth).await
    }

    /// Connects and starts the client's watchdog task on the current Tokio
    /// runtime.
    ///
    /// # Errors
    ///
    /// As [`Client::connect`]; a watchdog timeout under 30 ms or a zero
    /// timeout gives an error for which
    /// [`is_invalid_argument`](Error::is_invalid_argument) is true, and so
    /// do TLS options that cannot be used (see
    /// [`tls_ca`](ClientBuilder::tls_ca)).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: nothing has been written to Redis, and the watchdog task
    /// is only started once the connection is made.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// let client = redlease::Client::builder(&url).build().await?;
    /// let guard = client.lock("doc:builder:build").try_lock().await?;
    /// guard.unlock().await?;
    ///
    /// // Options are checked before anything is sent.
    /// let zero = redlease::Client::builder(&url).response_timeout(Duration::ZERO);
    /// assert!(zero.build().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn build(self) -> Result<Client, Error> {
        let fencing = self.validate()?;
        let redisson_fair_wait_ms =
            name::lease_millis("redisson fair wait", self.redisson_fair_wait)?;
        let target = connection::url::parse(&self.url, &self.tls, &self.sentinel_auth)?;
        let timeouts = Timeouts {
            response: self.response_timeout,
            connect: self.connection_timeout,
        };
        let (conn, pushes) = Connection::open(&target, timeouts, self.pubsub_mode, true).await?;
        let pushes = pushes.expect("a connection opened with pushes has them");
        let replicas = match self.replicas {
            Some((count, wait)) => {
                Some(Replicas::connect(&target, timeouts, self.pubsub_mode, count, wait).await?)
            }
            None => None,
        };
        let subscriptions = Subscriptions::start(conn.clone(), pushes);
        let (stop_tx, stop_rx) = oneshot::channel();
        let watchdog = Watchdog::start(conn.clone(), self.watchdog_timeout, stop_rx);
        // Version 8 (RFC 9562's vendor-specific version) with 122 random
        // bits: as unique as Redisson's version 4 ids, and told apart from
        // them by the fair lock's scripts (scripts/fair.rs).
        let id = uuid::Builder::from_custom_bytes(uuid::Uuid::new_v4().into_bytes())
            .into_uuid()
            .to_string();
        tracing::debug!(client_id = %id, "redlease client connected");
        crate::metrics::describe();
        let on_one_server = !conn.is_cluster();
        let client = Client {
            shared: Shared::new(Inner {
                conn,
                id,
                labels: Default::default(),
                next_owner: AtomicU64::new(1),
                watchdog_timeout: self.watchdog_timeout,
                retry_writes_for: self.retry_writes_for,
                layout: self.layout,
                fencing,
                redisson_fair_wait_ms,
                replicas,
                watchdog,
                subscriptions,
                _stop_watchdog: stop_tx,
            }),
        };
        if let (true, Fencing::Counter { ttl_ms }) = (on_one_server, fencing) {
            crate::restart::start(&client.shared, ttl_ms);
        }
        Ok(client)
    }

    /// Checks the options before anything is sent; returns whether
    /// acquires issue fencing tokens, and their counters' time to live.
    fn validate(&self) -> Result<Fencing, Error> {
        if self.watchdog_timeout < MIN_WATCHDOG_TIMEOUT {
            return Err(Error::invalid(format!(
                "watchdog timeout must be at least {MIN_WATCHDOG_TIMEOUT:?}, but found {:?}",
                self.watchdog_timeout
            )));
        }
        name::lease_millis("watchdog timeout", self.watchdog_timeout)?;
        if self.retry_writes_for > MAX_RETRY_WRITES_FOR {
            return Err(Error::invalid(format!(
                "write retries must last at most {MAX_RETRY_WRITES_FOR:?}, but found {:?}",
                self.retry_writes_for
            )));
        }
        let fencing = match (self.fencing, self.redisson_fenced_interop) {
            (false, true) => {
                return Err(Error::invalid(
                    "fencing(false) and redisson_fenced_interop(true) contradict each other: \
                     the interop keeps the counters that fencing(false) stops writing",
                ));
            }
            (false, false) => Fencing::Off,
            // No expiry: the scripts read 0 as none.
            (true, true) => Fencing::Counter { ttl_ms: 0 },
            (true, false) => Fencing::Counter {
                ttl_ms: name::lease_millis("fencing counter ttl", self.fencing_counter_ttl)?,
            },
        };
        if let Some((count, wait)) = self.replicas {
            if count == 0 {
                return Err(Error::invalid("required replica count must be at least 1"));
            }
            name::lease_millis("replica wait", wait)?;
        }
        for (what, t) in [
            ("response timeout", self.response_timeout),
            ("connection timeout", self.connection_timeout),
        ] {
            if t.is_zero() {
                return Err(Error::invalid(format!("{what} must not be zero")));
            }
        }
        Ok(fencing)
    }
}
