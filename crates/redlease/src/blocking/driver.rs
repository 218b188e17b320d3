//! The runtime behind the blocking API, and who drives it (#39).
//!
//! One current-thread runtime for the process. A call runs its future
//! with the runtime's `block_on` on the calling thread, which then drives
//! the runtime itself: the connection's I/O, the reply and the caller meet
//! on one thread, as a synchronous connection's would. With a worker
//! thread driving instead (as before #39), each command crossed to that
//! thread and back, two thread wake-ups that cost a pair of calls more
//! than its two round trips (`redlease-bench latency`).
//!
//! Between calls the background thread `redlease-blocking` drives it, for
//! what goes on then (watchdog renewals, release notifications, releases
//! handed to the background). It hands the runtime to a caller at once
//! (tokio gives the runtime to the next `block_on` when the current one
//! returns), and takes it back once no call has run for [`LINGER`]: a
//! thread that makes call after call keeps it, with no hand-over between
//! its calls, and what runs between calls waits at most that long.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tokio::sync::Notify;

use crate::error::Error;

/// How long the runtime stays with the callers after the last call ends
/// before the background thread drives it again: the longest the work
/// between calls waits, far below anything it times (a renewal runs a
/// third of a lease early).
pub(super) const LINGER: Duration = Duration::from_millis(2);

/// The runtime and what its driving threads share.
pub(super) struct Driver {
    runtime: Runtime,
    /// Calls inside [`Driver::block_on`] now.
    callers: AtomicUsize,
    /// Calls ended so far: the background thread tells a quiet spell from
    /// a busy one by this not moving.
    ended: AtomicU64,
    /// Whether the background thread is driving the runtime, so a caller
    /// must ask for it.
    driving: AtomicBool,
    /// A caller's request for the runtime.
    wanted: Notify,
}

/// Started by the first call; never dropped, so nothing ever has to shut
/// it down from a context that cannot block.
static DRIVER: OnceLock<Driver> = OnceLock::new();

/// The driver, started on first use; an error inside another runtime.
/// `what` names the public call, for the error message.
pub(super) fn driver(what: &str) -> Result<&'static Driver, Error> {
    if Handle::try_current().is_ok() {
        return Err(Error::inside_runtime(what));
    }
    started()
}

/// The driver if a call started it (a guard exists only then).
pub(super) fn get() -> Option<&'static Driver> {
    DRIVER.get()
}

fn started() -> Result<&'static Driver, Error> {
    if let Some(driver) = DRIVER.get() {
        return Ok(driver);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::runtime_start(&e))?;
    let mut first = false;
    // Two first calls at once build two; the loser's is dropped here, on a
    // plain thread, where that is allowed, before any thread drives it.
    let driver = DRIVER.get_or_init(|| {
        first = true;
        Driver {
            runtime,
            callers: AtomicUsize::new(0),
            ended: AtomicU64::new(0),
            driving: AtomicBool::new(false),
            wanted: Notify::new(),
        }
    });
    if first {
        let spawned = std::thread::Builder::new()
            .name("redlease-blocking".to_owned())
            .spawn(|| drive(DRIVER.get().expect("set before the thread starts")));
        if let Err(e) = spawned {
            // Calls still work, each driving the runtime while it runs;
            // only the work between calls waits for the next call.
            tracing::error!(error = %e, "redlease-blocking: cannot start the background thread");
        }
    }
    Ok(driver)
}

/// The background thread: drives the runtime while no call does.
fn drive(driver: &'static Driver) {
    loop {
        driver.driving.store(true, SeqCst);
        driver.runtime.block_on(async {
            // Checked after `driving` is set, as callers check `driving`
            // after counting themselves: one of the two sees the other.
            while driver.callers.load(SeqCst) == 0 {
                driver.wanted.notified().await;
            }
        });
        driver.driving.store(false, SeqCst);
        // The callers have it: take it back after a quiet spell.
        loop {
            let ended = driver.ended.load(SeqCst);
            std::thread::sleep(LINGER);
            if driver.callers.load(SeqCst) == 0 && driver.ended.load(SeqCst) == ended {
                break;
            }
        }
    }
}

impl Driver {
    /// Runs `fut` to completion on the calling thread, which drives the
    /// runtime meanwhile (or, while another call does, is woken by it).
    pub(super) fn block_on<F: Future>(&self, fut: F) -> F::Output {
        self.callers.fetch_add(1, SeqCst);
        if self.driving.load(SeqCst) {
            self.wanted.notify_one();
        }
        // Counted out even if `fut` panics, so the background thread does
        // not wait for a call that is gone.
        struct Out<'a>(&'a Driver);
        impl Drop for Out<'_> {
            fn drop(&mut self) {
                self.0.ended.fetch_add(1, SeqCst);
                self.0.callers.fetch_sub(1, SeqCst);
            }
        }
        let _out = Out(self);
        self.runtime.block_on(fut)
    }

    /// Enters the runtime's context, for dropping what spawns into it.
    pub(super) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.runtime.enter()
    }
}
