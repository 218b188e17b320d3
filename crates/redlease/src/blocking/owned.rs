//! [`Owned`]: the async guard inside each blocking guard, released in the
//! foreground by the guard's `unlock` or `release`, and by Drop otherwise.

use std::fmt;

use tokio::runtime::Handle;

use super::DROP_RELEASE_WAIT;
use super::driver;
use crate::contract::Guard;
use crate::error::Error;

/// The async guard, until [`release`](Owned::release) or Drop takes it.
pub(super) struct Owned<G: Guard>(Option<G>);

impl<G: Guard> Owned<G> {
    pub(super) fn new(guard: G) -> Owned<G> {
        Owned(Some(guard))
    }

    pub(super) fn get(&self) -> &G {
        self.0
            .as_ref()
            .expect("only release and Drop take the guard, and both consume its owner")
    }

    /// The guard, taken without a release (a permit's `forget`).
    pub(super) fn take(mut self) -> G {
        self.0
            .take()
            .expect("only release and Drop take the guard, and both consume its owner")
    }

    /// Releases in the foreground; `what` names the public call. Inside a
    /// runtime the guard is dropped instead (a release in the background)
    /// and the error says why.
    pub(super) fn release(self, what: &str) -> Result<(), Error> {
        self.release_by(what, Guard::release)
    }

    /// [`release`](Owned::release) by `how`, a release of the guard's own
    /// (`unlock_at_least`).
    pub(super) fn release_by<F, Fut>(mut self, what: &str, how: F) -> Result<(), Error>
    where
        F: FnOnce(G) -> Fut,
        Fut: Future<Output = Result<(), Error>>,
    {
        let guard = self
            .0
            .take()
            .expect("only release and Drop take the guard, and both consume its owner");
        match driver::driver(what) {
            Ok(driver) => driver.block_on(how(guard)),
            Err(e) => {
                release_on_drop(guard);
                Err(e)
            }
        }
    }
}

impl<G: Guard> Drop for Owned<G> {
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
fn release_on_drop<G: Guard>(guard: G) {
    // A guard exists only if a call started the runtime.
    let Some(driver) = driver::get() else {
        return;
    };
    if Handle::try_current().is_ok() {
        let _entered = driver.enter();
        drop(guard);
        return;
    }
    driver.block_on(async move {
        match tokio::time::timeout(DROP_RELEASE_WAIT, Guard::release(guard)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "{} dropped: its release failed", short_name::<G>()),
            Err(_) => tracing::debug!(
                "{} dropped: its release took over {DROP_RELEASE_WAIT:?}; it goes on in the background",
                short_name::<G>()
            ),
        }
    });
}

impl<G: Guard + fmt::Debug> fmt::Debug for Owned<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(guard) => guard.fmt(f),
            None => write!(f, "{}(released)", short_name::<G>()),
        }
    }
}

/// `G`'s name without its path, for messages.
fn short_name<G>() -> &'static str {
    let name = std::any::type_name::<G>();
    name.rsplit("::").next().unwrap_or(name)
}
