//! The one error type of the crate.
//!
//! Callers branch on a few outcomes (the lock is busy, the lock was no
//! longer ours, the input was bad, Redis is unreachable), so [`Error`] is an
//! opaque struct queried through [`Error::kind`] and `is_*` predicates, in the
//! style of redis-rs and jiff. Keeping the representation private lets us add
//! context later without breaking anyone.

use std::fmt;
use std::time::Duration;

/// What went wrong, for callers that prefer a `match` over the `is_*`
/// predicates on [`Error`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// use redlease::ErrorKind;
///
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:error:kind");
/// let guard = lock.try_lock().await?;
/// match lock.try_lock().await {
///     Ok(other) => other.unlock().await?,
///     Err(e) => match e.kind() {
///         ErrorKind::Busy => println!("busy, try again later"),
///         ErrorKind::Timeout | ErrorKind::Connection => println!("Redis is unwell: {e}"),
///         _ => return Err(e),
///     },
/// }
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The lock is held by another owner and the wait (if any) ran out.
    Busy,
    /// The lock was released, expired or taken over before we released it.
    NotOwner,
    /// A lock name, lease or option was rejected before anything was sent.
    InvalidArgument,
    /// The key holds a Redis value that is not the structure asked for
    /// (`WRONGTYPE`): not a lock hash, or, for a semaphore or a latch, not
    /// a string holding an integer.
    WrongType,
    /// The server refused our credentials, demands them, or denies this
    /// user the lock commands (`WRONGPASS`, `NOAUTH`, ACL `NOPERM`).
    Auth,
    /// The server is a read-only replica (`READONLY`): locks must be taken on
    /// the master.
    ReadOnly,
    /// The lock was acquired on the master, but fewer replicas than the
    /// client requires acknowledged it in time, so it was released again
    /// (see [`ClientBuilder::require_replicas`](crate::ClientBuilder::require_replicas)).
    NotReplicated,
    /// Redis could not serve the command for now, and said so: a cluster
    /// that is down or re-electing a master (`CLUSTERDOWN`, `MASTERDOWN`),
    /// a slot in migration (`TRYAGAIN`, or a `MOVED`/`ASK` redirection
    /// still unresolved after the cluster client's retries), or a node
    /// loading its data (`LOADING`). The command did not run; waiting
    /// acquires retry it.
    Unavailable,
    /// Redis did not answer in time; the command may or may not have run.
    Timeout,
    /// The connection could not be made or was lost.
    Connection,
    /// Any other error reported by Redis or by the Redis client.
    Redis,
    /// The runtime would not serve the call: a call of the blocking API
    /// (feature `blocking`) made inside a Tokio runtime, where blocking
    /// would stall the runtime's thread, or the blocking API's own runtime
    /// could not start (nothing was sent then); or the runtime shut down
    /// while a script's task ran (its outcome unknown).
    Runtime,
}

/// An error from a lock operation.
///
/// Use the predicates ([`is_busy`](Error::is_busy),
/// [`is_not_owner`](Error::is_not_owner), ...) or [`kind`](Error::kind) to
/// branch; the `Display` output is for people and may change.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let lock = client.lock("doc:error:type");
/// let holder = lock.try_lock().await?;
/// match lock.try_lock().await {
///     Ok(guard) => guard.unlock().await?,
///     Err(e) if e.is_busy() => println!("{e}; try again later"),
///     Err(e) => return Err(e),
/// }
/// holder.unlock().await?;
/// # Ok(())
/// # }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Inner {
    kind: ErrorKind,
    /// The lock name, when the error is about one lock.
    key: Option<String>,
    /// How long the caller waited before a busy error.
    waited: Option<Duration>,
    message: String,
    #[source]
    source: Option<redis::RedisError>,
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                key: None,
                waited: None,
                message: message.into(),
                source: None,
            }),
        }
    }

    pub(crate) fn busy(key: &str, waited: Duration) -> Error {
        let mut e = Error::new(
            ErrorKind::Busy,
            format!("lock {} is busy (waited {})", quoted(key), human(waited)),
        );
        e.inner.key = Some(key.to_owned());
        e.inner.waited = Some(waited);
        e
    }

    pub(crate) fn not_owner(key: &str) -> Error {
        Error::new(
            ErrorKind::NotOwner,
            format!(
                "lock {} is not held by this guard (it expired, was released or was taken over)",
                quoted(key)
            ),
        )
        .with_key(key)
    }

    pub(crate) fn not_replicated(key: &str, acked: i64, required: u32, wait: Duration) -> Error {
        Error::new(
            ErrorKind::NotReplicated,
            if acked >= i64::from(required) {
                format!(
                    "lock {} was acquired on the master but its replicas acknowledged it \
                     only after its lease ran out, so it was released",
                    quoted(key)
                )
            } else {
                format!(
                    "lock {} was acquired on the master but only {acked} of {required} \
                     replicas acknowledged it within {}, so it was released",
                    quoted(key),
                    human(wait)
                )
            },
        )
        .with_key(key)
    }

    /// A blocking call made where it must not block (inside a Tokio
    /// runtime): `what` names the call.
    #[cfg(feature = "blocking")]
    pub(crate) fn inside_runtime(what: &str) -> Error {
        Error::new(
            ErrorKind::Runtime,
            format!(
                "redlease::blocking::{what} was called inside a tokio runtime, where blocking \
                 would stall the runtime's thread; use the async API there (redlease::Client), \
                 or call from a plain thread"
            ),
        )
    }

    /// The runtime shut down while the task running `what` was on it.
    pub(crate) fn runtime_stopped(what: &str) -> Error {
        Error::new(
            ErrorKind::Runtime,
            format!("the runtime shut down during {what}; its outcome is unknown"),
        )
    }

    /// The blocking API's runtime could not be started.
    #[cfg(feature = "blocking")]
    pub(crate) fn runtime_start(err: &std::io::Error) -> Error {
        Error::new(
            ErrorKind::Runtime,
            format!("cannot start the blocking API's runtime: {err}"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// Lock key `key` holds a value that is not a lock hash (its type not
    /// known), as a multi-lock's acquire reports it.
    pub(crate) fn not_a_lock(key: &str) -> Error {
        Error::new(
            ErrorKind::WrongType,
            wrong_type_message("lock", key, None, "a lock hash"),
        )
        .with_key(key)
    }

    /// The key holds a value that is not the structure asked for (a
    /// string that is not an integer where a count belongs): `message` says
    /// what it holds. Reported as [`ErrorKind::WrongType`].
    pub(crate) fn not_a_count(key: &str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::WrongType, message).with_key(key)
    }

    pub(crate) fn with_key(mut self, key: &str) -> Error {
        if self.inner.kind == ErrorKind::Auth && self.inner.key.is_none() {
            // The server's denial does not say which key or channel it
            // refused (Redis 7.0); the lock's name tells the operator
            // which prefix to grant.
            self.inner.message = format!(
                "{} (grant the user the rules `redlease acl --prefix PREFIX` prints for a prefix of {})",
                self.inner.message,
                quoted(key)
            );
        }
        self.inner.key = Some(key.to_owned());
        self
    }

    /// Returns the kind of this error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let e = client.lock("").try_lock().await.unwrap_err();
    /// assert_eq!(e.kind(), redlease::ErrorKind::InvalidArgument);
    /// # Ok(())
    /// # }
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// Returns true if and only if the lock was held by another owner for the
    /// whole wait. [`key`](Error::key) and [`waited`](Error::waited) say which
    /// lock and for how long.
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
    /// let lock = client.lock("doc:error:is-busy");
    /// let guard = lock.try_lock().await?;
    /// let e = lock.try_lock_for(Duration::from_millis(50)).await.unwrap_err();
    /// assert!(e.is_busy());
    /// assert_eq!(e.key(), Some("doc:error:is-busy"));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_busy(&self) -> bool {
        self.inner.kind == ErrorKind::Busy
    }

    /// Returns true if and only if an owner-checked operation found that the
    /// lock was no longer ours (expired, released, or taken by someone else).
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
    /// let lock = client.lock("doc:error:is-not-owner").lease(Duration::from_millis(50));
    /// let guard = lock.try_lock().await?;
    /// tokio::time::sleep(Duration::from_millis(100)).await; // past the lease
    /// assert!(guard.unlock().await.unwrap_err().is_not_owner());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_not_owner(&self) -> bool {
        self.inner.kind == ErrorKind::NotOwner
    }

    /// Returns true if and only if the input was rejected before anything was
    /// sent to Redis.
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
    /// assert!(client.lock("").try_lock().await.unwrap_err().is_invalid_argument());
    /// let no_lease = client.lock("doc:error:invalid").lease(Duration::ZERO);
    /// assert!(no_lease.try_lock().await.unwrap_err().is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_invalid_argument(&self) -> bool {
        self.inner.kind == ErrorKind::InvalidArgument
    }

    /// Returns true if and only if the key holds a value that is not the
    /// structure asked for: not a lock hash, or, for a semaphore or a
    /// latch, not a string holding an integer. Nothing was written.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// // A semaphore keeps a string where a lock keeps a hash.
    /// client.semaphore("doc:error:wrong-type").try_set_available(3).await?;
    /// let e = client.lock("doc:error:wrong-type").try_lock().await.unwrap_err();
    /// assert!(e.is_wrong_type());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_wrong_type(&self) -> bool {
        self.inner.kind == ErrorKind::WrongType
    }

    /// Returns true if and only if Redis rejected or demanded credentials,
    /// or its ACL denies this user the commands a lock needs (`NOPERM`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use redlease_testkit::{RedisServer, ServerOptions};
    ///
    /// let server = RedisServer::start_with(ServerOptions {
    ///     password: Some("s3cret".to_owned()),
    ///     ..ServerOptions::default()
    /// });
    /// let wrong = format!("redis://:wrong@127.0.0.1:{}", server.port());
    /// assert!(redlease::Client::connect(&wrong).await.unwrap_err().is_auth());
    /// let right = format!("redis://:s3cret@127.0.0.1:{}", server.port());
    /// let client = redlease::Client::connect(&right).await?;
    /// client.lock("doc:error:is-auth").try_lock().await?.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_auth(&self) -> bool {
        self.inner.kind == ErrorKind::Auth
    }

    /// Returns true if and only if the server is a read-only replica.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use redlease_testkit::{RedisServer, ServerOptions};
    ///
    /// let master = RedisServer::start();
    /// let replica = RedisServer::start_with(ServerOptions {
    ///     replica_of: Some(master.port()),
    ///     ..ServerOptions::default()
    /// });
    /// let client = redlease::Client::connect(&replica.url()).await?;
    /// let e = client.lock("doc:error:read-only").try_lock().await.unwrap_err();
    /// assert!(e.is_read_only());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_read_only(&self) -> bool {
        self.inner.kind == ErrorKind::ReadOnly
    }

    /// Returns true if and only if the lock was acquired on the master but
    /// not acknowledged by as many replicas as the client requires, and was
    /// released again.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use std::time::Duration;
    ///
    /// // This test server has no replicas to acknowledge anything.
    /// let client = redlease::Client::builder(&url)
    ///     .require_replicas(1, Duration::from_millis(20))
    ///     .build()
    ///     .await?;
    /// let e = client.lock("doc:error:not-replicated").try_lock().await.unwrap_err();
    /// assert!(e.is_not_replicated());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_not_replicated(&self) -> bool {
        self.inner.kind == ErrorKind::NotReplicated
    }

    /// Returns true if and only if Redis did not answer in time. The command
    /// may have run: an acquire that timed out is released in the background.
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
    /// server.pause(); // connected, but silent
    /// let e = client.lock("doc:error:timeout").try_lock().await.unwrap_err();
    /// assert!(e.is_timeout());
    /// # server.resume();
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == ErrorKind::Timeout
    }

    /// Returns true if and only if the connection to Redis could not be made
    /// or was lost.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// // Nothing listens on port 1.
    /// let e = redlease::Client::connect("redis://127.0.0.1:1").await.unwrap_err();
    /// assert!(e.is_connection());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_connection(&self) -> bool {
        self.inner.kind == ErrorKind::Connection
    }

    /// Returns true if and only if Redis could not serve the command for
    /// now and said so (a cluster that is down or re-electing a master, a
    /// slot in migration, a node loading its data); the command did not
    /// run.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use redlease_testkit::{ClusterNodeOptions, RedisServer, ServerOptions};
    ///
    /// // A cluster node that serves no hash slot yet: `CLUSTERDOWN`.
    /// let node = RedisServer::start_with(ServerOptions {
    ///     cluster: Some(ClusterNodeOptions::default()),
    ///     ..ServerOptions::default()
    /// });
    /// let client = redlease::Client::connect(&node.url()).await?;
    /// let e = client.lock("doc:error:unavailable").try_lock().await.unwrap_err();
    /// assert!(e.is_unavailable());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_unavailable(&self) -> bool {
        self.inner.kind == ErrorKind::Unavailable
    }

    /// Returns true if and only if a call of the blocking API was made
    /// inside a Tokio runtime, or its own runtime could not start (nothing
    /// was sent), or the runtime shut down during a call.
    pub fn is_runtime(&self) -> bool {
        self.inner.kind == ErrorKind::Runtime
    }

    /// A lost or late reply, or a server that cannot serve for now: trying
    /// again may work.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Timeout | ErrorKind::Connection | ErrorKind::Unavailable
        )
    }

    /// The server said the command did not run, for now (a redirection
    /// still unresolved, a cluster or master down, a node loading, a
    /// Sentinel switch): sending it again is safe for any command, whether
    /// or not a repeat of it would be (#37).
    pub(crate) fn did_not_run(&self) -> bool {
        self.inner.kind == ErrorKind::Unavailable
    }

    /// Why a request that failed with this error is sent again, as the
    /// [`RETRIES`](crate::metrics::RETRIES) metric's `reason` label says
    /// it: the server's code for a command that did not run, `timeout` or
    /// `connection` for a lost reply.
    pub(crate) fn retry_reason(&self) -> &'static str {
        use redis::{ErrorKind as K, ServerErrorKind as S};
        match self.inner.kind {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            _ => match self.inner.source.as_ref().map(redis::RedisError::kind) {
                Some(K::Server(S::Moved)) => "moved",
                Some(K::Server(S::Ask)) => "ask",
                Some(K::Server(S::TryAgain)) => "tryagain",
                Some(K::Server(S::ClusterDown)) => "clusterdown",
                Some(K::Server(S::MasterDown)) => "masterdown",
                Some(K::Server(S::BusyLoading)) => "loading",
                Some(K::Server(S::ReadOnly)) => "readonly",
                _ => "other",
            },
        }
    }

    /// The lock name this error is about, if it is about one lock.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let lock = client.lock("doc:error:key");
    /// let guard = lock.try_lock().await?;
    /// let e = lock.try_lock().await.unwrap_err();
    /// assert_eq!(e.key(), Some("doc:error:key"));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn key(&self) -> Option<&str> {
        self.inner.key.as_deref()
    }

    /// For a busy error, how long the caller waited before giving up.
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
    /// let lock = client.lock("doc:error:waited");
    /// let guard = lock.try_lock().await?;
    /// let e = lock.try_lock_for(Duration::from_millis(50)).await.unwrap_err();
    /// assert!(e.waited() >= Some(Duration::from_millis(50)));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn waited(&self) -> Option<Duration> {
        self.inner.waited
    }

    /// The same error (kind, key, source) with a clearer message, for a
    /// layer that knows more about the cause than the mapping above (the
    /// TLS certificate behind a connection error).
    pub(crate) fn reworded(mut self, message: String) -> Error {
        self.inner.message = message;
        self
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Error {
        use redis::{ErrorKind as K, ServerErrorKind as S};
        let kind = match err.kind() {
            K::AuthenticationFailed => ErrorKind::Auth,
            K::Server(S::ReadOnly) => ErrorKind::ReadOnly,
            K::Server(S::NoPerm) => ErrorKind::Auth,
            // A redirection that came back (the cluster client ran out of
            // retries following it) did not run either.
            K::Server(
                S::TryAgain | S::ClusterDown | S::MasterDown | S::BusyLoading | S::Moved | S::Ask,
            ) => ErrorKind::Unavailable,
            _ if err.is_timeout() => ErrorKind::Timeout,
            // The cluster client reports a node's refusal of our credentials
            // inside its "failed to create initial connections" error, with
            // the server's code only in the text.
            _ if (err.is_connection_refusal() || err.is_io_error()) && refused_access(&err) => {
                ErrorKind::Auth
            }
            _ if err.is_connection_refusal()
                || err.is_connection_dropped()
                || err.is_io_error() =>
            {
                ErrorKind::Connection
            }
            // Errors raised by `redis.call` inside a script keep the
            // command's own code, and some codes have no `ServerErrorKind`.
            _ => match err.code() {
                Some("WRONGTYPE") => ErrorKind::WrongType,
                Some("NOAUTH" | "WRONGPASS" | "NOPERM") => ErrorKind::Auth,
                Some("READONLY") => ErrorKind::ReadOnly,
                // An ACL denial inside a script (Redis 7.0): "ERR The user
                // executing the script can't run this command or
                // subcommand" (or "... can't publish to the channel ...").
                Some("ERR") if denied_in_script(&err) => ErrorKind::Auth,
                _ => ErrorKind::Redis,
            },
        };
        let message = match kind {
            // Redis does not say which key or what it holds; the primitive
            // that knows says more ([`wrong_type_message`]).
            ErrorKind::WrongType => {
                "a key holds another type of value than this operation needs".to_owned()
            }
            ErrorKind::Auth => auth_message(&err),
            ErrorKind::ReadOnly => {
                "redis server is a read-only replica; locks must be taken on the master".to_owned()
            }
            ErrorKind::Unavailable => format!("redis cannot serve this for now: {err}"),
            ErrorKind::Timeout => format!("redis did not answer in time: {err}"),
            ErrorKind::Connection => format!("cannot reach redis: {err}"),
            _ => format!("redis error: {err}"),
        };
        let mut e = Error::new(kind, message);
        e.inner.source = Some(err);
        e
    }
}

/// An authentication error in one wording whichever way it came (the
/// `AUTH`/`HELLO` reply, redis-rs's own check, a cluster node's refusal
/// inside a connection error), saying what to fix; an ACL denial keeps
/// the server's text, which names the command.
fn auth_message(err: &redis::RedisError) -> String {
    let text = err.to_string();
    let code = err.code();
    // Our own refusal with its context (the sentinels, which have
    // credentials of their own), not a server's reply: the context says
    // what to fix.
    if let (redis::ErrorKind::AuthenticationFailed, None, Some(detail)) =
        (err.kind(), code, err.detail())
    {
        return format!("authentication failed: {detail}");
    }
    if err.kind() == redis::ErrorKind::AuthenticationFailed
        || code == Some("WRONGPASS")
        || text.contains("WRONGPASS")
    {
        "authentication failed: wrong username or password".to_owned()
    } else if code == Some("NOAUTH") || text.contains("NOAUTH") {
        "authentication required: the server needs a password".to_owned()
    } else {
        format!("redis refused access: {err}")
    }
}

/// A duration for people: `0.2ms`, `302ms`, `1.5s`, `3m12s`, `2h05m`;
/// rounded down, since it reports how long something took or may take.
/// ([`Error::waited`] keeps the exact one.)
pub(crate) fn human(d: Duration) -> String {
    let micros = d.as_micros();
    match micros {
        0 if d.is_zero() => "0s".to_owned(),
        0..100 => format!("{micros}\u{b5}s"),
        100..1_000 => format!("0.{}ms", micros / 100),
        1_000..1_000_000 => format!("{}ms", micros / 1_000),
        1_000_000..60_000_000 => match micros / 100_000 {
            tenths if tenths % 10 == 0 => format!("{}s", tenths / 10),
            tenths => format!("{}.{}s", tenths / 10, tenths % 10),
        },
        _ => {
            let secs = d.as_secs();
            match secs {
                0..3_600 => format!("{}m{:02}s", secs / 60, secs % 60),
                _ => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
            }
        }
    }
}

/// What a `WRONGTYPE` means for a primitive: `what` key `key` (a "lock",
/// a "semaphore") holds a value of the type `holds` (`TYPE`'s answer, when
/// it was read: Redis's own error does not say) where `expected` (such as
/// "a lock hash") belongs: `lock key "k" holds a string, not a lock hash`.
pub(crate) fn wrong_type_message(
    what: &str,
    key: &str,
    holds: Option<&str>,
    expected: &str,
) -> String {
    let holds = holds.map_or_else(|| "another type of value".to_owned(), |t| format!("a {t}"));
    format!("{what} key {} holds {holds}, not {expected}", quoted(key))
}

/// A key quoted for a message, bounded as the command line bounds it.
pub(crate) use redlease_grammar::limits::quoted;

/// Whether a script's error is the server refusing this user a command,
/// key or channel the script uses.
fn denied_in_script(err: &redis::RedisError) -> bool {
    err.detail()
        .is_some_and(|d| d.starts_with("The user executing the script can't"))
}

/// Whether a connection error's text carries a server's refusal of our
/// credentials.
fn refused_access(err: &redis::RedisError) -> bool {
    let text = err.to_string();
    ["WRONGPASS", "NOAUTH", "NOPERM"]
        .iter()
        .any(|code| text.contains(code))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("key", &self.inner.key)
            .field("waited", &self.inner.waited)
            .field("message", &self.inner.message)
            .field("source", &self.inner.source)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime that shut down mid-call is said as such (#27: it was a
    /// made-up I/O error from Redis, which waiters retried as a lost
    /// connection).
    #[test]
    fn a_stopped_runtime_is_a_runtime_error_not_a_redis_one() {
        let e = Error::runtime_stopped("a script");
        assert!(e.is_runtime());
        assert!(!e.is_transient() && !e.is_connection());
        assert_eq!(
            e.to_string(),
            "the runtime shut down during a script; its outcome is unknown"
        );
    }

    #[test]
    fn busy_carries_key_and_wait() {
        let e = Error::busy("orders:1", Duration::from_millis(250));
        assert!(e.is_busy());
        assert_eq!(e.key(), Some("orders:1"));
        assert_eq!(e.waited(), Some(Duration::from_millis(250)));
        assert_eq!(e.to_string(), "lock \"orders:1\" is busy (waited 250ms)");
    }

    #[test]
    fn busy_waits_read_as_people_write_them() {
        let waited = |d: Duration| Error::busy("k", d).to_string();
        assert_eq!(
            waited(Duration::from_nanos(233_632)),
            "lock \"k\" is busy (waited 0.2ms)"
        );
        assert_eq!(
            waited(Duration::from_nanos(302_368_643)),
            "lock \"k\" is busy (waited 302ms)"
        );
        assert_eq!(
            waited(Duration::from_millis(1_500)),
            "lock \"k\" is busy (waited 1.5s)"
        );
        assert_eq!(
            waited(Duration::from_secs(2)),
            "lock \"k\" is busy (waited 2s)"
        );
        assert_eq!(
            waited(Duration::from_secs(192)),
            "lock \"k\" is busy (waited 3m12s)"
        );
        // The exact wait stays available to code.
        let e = Error::busy("k", Duration::from_nanos(233_632));
        assert_eq!(e.waited(), Some(Duration::from_nanos(233_632)));
        assert_eq!(human(Duration::ZERO), "0s");
        assert_eq!(human(Duration::from_micros(40)), "40\u{b5}s");
    }

    #[test]
    fn long_keys_are_quoted_by_their_start_and_length() {
        let key = "a".repeat(10_240);
        let message = Error::busy(&key, Duration::from_millis(5)).to_string();
        let shown = format!("\"{}\u{2026}\" (10240 bytes)", "a".repeat(64));
        assert_eq!(message, format!("lock {shown} is busy (waited 5ms)"));
    }

    #[test]
    fn wrong_types_say_what_the_key_holds() {
        assert_eq!(
            wrong_type_message("lock", "orders:1", Some("string"), "a lock hash"),
            "lock key \"orders:1\" holds a string, not a lock hash"
        );
        assert_eq!(
            Error::not_a_lock("orders:1").to_string(),
            "lock key \"orders:1\" holds another type of value, not a lock hash"
        );
    }

    #[test]
    fn error_is_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }
}
