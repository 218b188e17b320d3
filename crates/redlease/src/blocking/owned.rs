//! [`Owned`]: the async guard inside each blocking guard, released in the
//! foreground by the guard's `unlock` or `release`, and by Drop otherwise.

use std::fmt;
use std::future::Future;

use tokio::runtime::Handle;

use super::{DROP_RELEASE_WAIT, RUNTIME, runtime};
use crate::error::Error;

/// An async guard a blocking guard owns: how it is released.
pub(super) trait Release: Sized {
    /// The blocking guard's type name, for messages.
    const NAME: &'static str;

    /// The owner-checked release (`unlock` or `release`).
    fn release(self) -> impl Future<Output = Result<(), Error>>;
}

impl Release for crate::LockGuard {
    const NAME: &'static str = "LockGuard";
    fn release(self) -> impl Future<Output = Result<(), Error>> {
        self.unlock()
    }
}

impl Release for crate::PermitGuard {
    const NAME: &'static str = "PermitGuard";
    fn release(self) -> impl Future<Output = Result<(), Error>> {
        crate::PermitGuard::release(self)
    }
}

impl Release for crate::MultiGuard {
    const NAME: &'static str = "MultiGuard";
    fn release(self) -> impl Future<Output = Result<(), Error>> {
        self.unlock()
    }
}

impl Release for crate::RedLockGuard {
    const NAME: &'static str = "RedLockGuard";
    fn release(self) -> impl Future<Output = Result<(), Error>> {
        self.unlock()
    }
}

/// The async guard, until [`release`](Owned::release) or Drop takes it.
pub(super) struct Owned<G: Release>(Option<G>);

impl<G: Release> Owned<G> {
    pub(super) fn new(guard: G) -> Owned<G> {
        Owned(Some(guard))
    }

    pub(super) fn get(&self) -> &G {
        self.0
            .as_ref()
            .expect("only release and Drop take the guard, and both consume its owner")
    }

    pub(super) fn get_mut(&mut self) -> &mut G {
        self.0
            .as_mut()
            .expect("only release and Drop take the guard, and both consume its owner")
    }

    /// Releases in the foreground; `what` names the public call. Inside a
    /// runtime the guard is dropped instead (a release in the background)
    /// and the error says why.
    pub(super) fn release(mut self, what: &str) -> Result<(), Error> {
        let guard = self
            .0
            .take()
            .expect("only release and Drop take the guard, and both consume its owner");
        match runtime(what) {
            Ok(rt) => rt.block_on(guard.release()),
            Err(e) => {
                release_on_drop(guard);
                Err(e)
            }
        }
    }
}

impl<G: Release> Drop for Owned<G> {
    fn drop(&mut self) {
        if let Some(guard) = self.0.take() {
            release_on_drop(guard);
        }
    }
}

/// A guard's release where nobody waits for its answer. Outside a runtime
/// it runs for at most [`DROP_RELEASE_WAIT`]; if it has not finished by
/// then it is dropped inside the runtime, which drops the async guard and
/// so hands the release to the background. Inside another runtime, where
/// blocking is not allowed, the guard is only dropped, with ours entered,
/// for the same hand-over.
fn release_on_drop<G: Release>(guard: G) {
    // A guard exists only if a call started the runtime.
    let Some(rt) = RUNTIME.get() else {
        return;
    };
    if Handle::try_current().is_ok() {
        let _entered = rt.enter();
        drop(guard);
        return;
    }
    rt.block_on(async move {
        match tokio::time::timeout(DROP_RELEASE_WAIT, guard.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "{} dropped: its release failed", G::NAME),
            Err(_) => tracing::debug!(
                "{} dropped: its release took over {DROP_RELEASE_WAIT:?}; it goes on in the background",
                G::NAME
            ),
        }
    });
}

impl<G: Release + fmt::Debug> fmt::Debug for Owned<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(guard) => guard.fmt(f),
            None => write!(f, "{}(released)", G::NAME),
        }
    }
}
