//! A blocking API, for code that is not async (feature `blocking`).
//!
//! Command line tools, batch jobs, `std::thread` workers and build scripts
//! need a lock as much as async services do, without a runtime of their
//! own. This module mirrors the async API type for type: [`Client`],
//! [`Lock`] (plain, fair, and the sides of a [`ReadWriteLock`]),
//! [`LockGuard`], [`Semaphore`] and [`SemaphorePermit`],
//! [`ExpirableSemaphore`] and [`PermitGuard`], [`CountDownLatch`],
//! [`MultiLock`] and [`MultiGuard`], [`RedLock`] and [`RedLockGuard`].
//! Every call blocks the calling thread until it is done and behaves as its
//! async twin, whose documentation says what it does, sends and returns.
//! The twins are generated from one list (`twin.rs`), so they cannot drift
//! from the async API: each wraps the async value and runs its method on
//! the runtime below.
//!
//! ```
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), redlease::Error> {
//! # let url = redlease_testkit::RedisServer::shared().url();
//! let client = redlease::blocking::Client::connect(&url)?;
//! let guard = client.lock("doc:blocking:intro").try_lock_for(Duration::from_secs(3))?;
//! // ... the critical section, watchdog-renewed for as long as it takes ...
//! guard.unlock()?;
//! # Ok(())
//! # }
//! ```
//!
//! # The runtime behind it
//!
//! The caller needs no runtime: the first call starts one for the whole
//! process, a current-thread runtime, and a background thread
//! (`redlease-blocking`) that drives it between calls, for what must go on
//! then (watchdog renewals, release notifications, background releases).
//! Both live until the process ends. A call drives the runtime itself on
//! the calling thread while it runs, so its commands are written and their
//! replies read there, with no hand-over to another thread and back (#39:
//! that hand-over made a pair of calls a third slower than the same
//! commands on a synchronous redis-rs connection). Threads that call at
//! once do not wait for each other's calls to end: the one driving the
//! runtime reads the others' replies and wakes them. The background thread
//! takes the runtime back once no call has run for 2 ms, so a thread that
//! makes call after call keeps it, and the work between calls waits at
//! most that long.
//!
//! # Not inside a runtime
//!
//! A call made inside a Tokio runtime returns an error for which
//! [`Error::is_runtime`] is true, and sends nothing: blocking there would
//! stall the runtime's thread, and every task on it, for as long as a lock
//! is awaited. Use the async API there. That includes a closure given to
//! `tokio::task::spawn_blocking`: Tokio offers no way to tell its threads
//! from the runtime's workers, so the check refuses both; such a closure
//! can run the async API with `Handle::current().block_on(..)`.
//!
//! # Drop
//!
//! A guard dropped without `unlock` releases what it holds before Drop
//! returns, waiting at most [`DROP_RELEASE_WAIT`]; a release that takes
//! longer (Redis unreachable) goes on in the background, and failing that
//! the lock expires after its lease. Dropped inside a Tokio runtime, it
//! never blocks: it releases in the background. Drop never panics.
//!
//! Locks are not re-entrant here: the async API's re-entry belongs to an
//! owner [`scope`](crate::scope), and a thread that asks again for a lock
//! it holds waits for itself, as with `std::sync::Mutex`.

use std::future::Future;
use std::time::Duration;

use crate::error::Error;

#[macro_use]
mod twin;
mod client;
mod driver;
mod election;
mod lock;
mod multi;
mod owned;
mod semaphore;

pub use client::Client;
pub use election::{Changes, Election, Leadership};
pub use lock::{Lock, LockGuard, ReadWriteLock};
pub use multi::{MultiGuard, MultiLock, RedLock, RedLockGuard};
pub use semaphore::{CountDownLatch, ExpirableSemaphore, PermitGuard, Semaphore, SemaphorePermit};

/// The longest a dropped guard blocks its thread to release what it holds
/// (1 s, the client's default response timeout): long enough for any
/// answering server, short enough that an unreachable one never hangs the
/// thread.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::blocking::Client::connect(&url)?;
/// let guard = client.lock("doc:blocking:drop_release_wait").try_lock()?;
/// // Released before drop returns: at most DROP_RELEASE_WAIT, then in the background.
/// drop(guard);
/// client.lock("doc:blocking:drop_release_wait").try_lock()?.unlock()?; // free at once
/// assert_eq!(redlease::blocking::DROP_RELEASE_WAIT, Duration::from_secs(1));
/// # Ok(())
/// # }
/// ```
pub const DROP_RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Runs `fut` to completion on the calling thread.
fn block_on<F: Future>(what: &str, fut: F) -> Result<F::Output, Error> {
    Ok(driver::driver(what)?.block_on(fut))
}

/// Runs a call that answers with a `Result` of its own.
fn call<T, F>(what: &str, fut: F) -> Result<T, Error>
where
    F: Future<Output = Result<T, Error>>,
{
    block_on(what, fut)?
}

/// Waits for `fut` at most `timeout`; `None` if it did not finish.
fn within<F: Future>(what: &str, timeout: Duration, fut: F) -> Result<Option<F::Output>, Error> {
    block_on(what, async move {
        tokio::time::timeout(timeout, fut).await.ok()
    })
}
