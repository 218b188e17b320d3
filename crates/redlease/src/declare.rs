//! What the `#[distributed_lock]` attribute expands to: the process-wide
//! default client, and the entry points its expansion calls.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use crate::client::Client;
use crate::error::Error;
use crate::guard::LockGuard;
use crate::lock::Lock;

static DEFAULT: OnceLock<Client> = OnceLock::new();

/// Installs the client that `#[distributed_lock]` functions without a
/// `client = ..` option use. Call it once at start-up; a second call
/// returns its client back as the error and changes nothing.
///
/// # Errors
///
/// The given client, when a default client is installed already.
///
/// # Examples
///
/// ```
/// /// Runs under the lock `doc:declare:report:<day>`, without `client = ..`.
/// #[redlease::distributed_lock(key = "doc:declare:report:{day}")]
/// async fn nightly_report(day: u32) -> Result<u32, redlease::Error> {
///     Ok(day)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// if redlease::install_default(client.clone()).is_err() {
///     eprintln!("a default redlease client was installed already");
/// }
/// assert_eq!(nightly_report(7).await?, 7);
///
/// // A second call changes nothing and hands its client back.
/// assert!(redlease::install_default(client).is_err());
/// # Ok(())
/// # }
/// ```
pub fn install_default(client: Client) -> Result<(), Client> {
    DEFAULT.set(client)
}

/// The client installed by [`install_default`].
///
/// # Errors
///
/// An error for which [`is_invalid_argument`](Error::is_invalid_argument) is
/// true when none is installed.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// // None installed yet.
/// assert!(redlease::default_client().unwrap_err().is_invalid_argument());
///
/// let client = redlease::Client::connect(&url).await?;
/// redlease::install_default(client).expect("the first one installed");
/// let client = redlease::default_client()?;
/// let guard = client.lock("doc:declare:default-client").try_lock().await?;
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
pub fn default_client() -> Result<Client, Error> {
    DEFAULT.get().cloned().ok_or_else(|| {
        Error::invalid(
            "no default redlease client is installed; call redlease::install_default(client) at start-up, or pass `client = ..` to #[distributed_lock]",
        )
    })
}

/// Acquires `key` as a `#[distributed_lock]` declares it: one attempt
/// without `wait`, watchdog mode without `lease`.
#[doc(hidden)]
pub async fn acquire(
    client: Option<&Client>,
    key: String,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<LockGuard, Error> {
    let lock = resolve(client)?.lock(key);
    take(lock, wait, lease).await
}

/// [`acquire`] for `mode = "read"`: the read side of the read-write lock
/// named `key`. A separate entry, so that the plain lock's expansion stays
/// as it was.
#[doc(hidden)]
pub async fn acquire_read(
    client: Option<&Client>,
    key: String,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<LockGuard, Error> {
    let lock = resolve(client)?.read_write_lock(key).read();
    take(lock, wait, lease).await
}

/// [`acquire`] for `mode = "write"`: the write side of the read-write lock
/// named `key`.
#[doc(hidden)]
pub async fn acquire_write(
    client: Option<&Client>,
    key: String,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<LockGuard, Error> {
    let lock = resolve(client)?.read_write_lock(key).write();
    take(lock, wait, lease).await
}

/// The given client, or the installed default.
fn resolve(client: Option<&Client>) -> Result<Client, Error> {
    match client {
        Some(client) => Ok(client.clone()),
        None => default_client(),
    }
}

async fn take(
    mut lock: Lock,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<LockGuard, Error> {
    if let Some(lease) = lease {
        lock = lock.lease(lease);
    }
    match wait {
        Some(wait) => lock.try_lock_for(wait).await,
        None => lock.try_lock().await,
    }
}

/// Releases a declared lock after its function body returned. The body's
/// result is already made, so a failed release can only be logged (the lock
/// then expires at the end of its lease).
#[doc(hidden)]
pub async fn release(guard: LockGuard) {
    let name = guard.name().to_owned();
    if let Err(e) = guard.unlock().await {
        tracing::warn!(key = %name, error = %e, "releasing a declared lock failed");
    }
}

/// [`release`] for a declaration with `at_least`: the lock is released no
/// earlier than `min` after it was taken ([`LockGuard::unlock_at_least`]).
#[doc(hidden)]
pub async fn release_at_least(guard: LockGuard, min: Duration) {
    let name = guard.name().to_owned();
    if let Err(e) = guard.unlock_at_least(min).await {
        tracing::warn!(key = %name, error = %e, "releasing a declared lock failed");
    }
}

/// Runs a declared function's body in an owner scope (see
/// [`scope`](crate::scope)).
#[doc(hidden)]
pub async fn scoped<F: Future>(body: F) -> F::Output {
    crate::scope(body).await
}
