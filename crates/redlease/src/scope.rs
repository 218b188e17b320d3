//! Owner scopes: within one, taking a lock the scope already holds
//! re-enters it instead of waiting for itself.

use std::future::Future;

tokio::task_local! {
    static SCOPE: Scope;
}

/// The holds of one scope.
#[derive(Clone, Debug, Default)]
struct Scope {}

/// Runs `fut` as one lock owner: a lock that `fut` holds (through any
/// client handle to the same [`Client`](crate::Client)) and takes again
/// re-enters it: the hold count in the lock hash goes up, and down again on
/// each release, and the key is deleted at the last one, with no wait and no
/// renewal of its own. Outside a scope every acquisition is a separate
/// owner, and two acquisitions of one lock exclude each other.
///
/// The scope belongs to the task that awaits `fut`: tasks spawned inside it
/// are owners of their own. Nested calls use the outermost scope.
pub async fn scope<F: Future>(fut: F) -> F::Output {
    if SCOPE.try_with(|_| ()).is_ok() {
        fut.await
    } else {
        SCOPE.scope(Scope::default(), fut).await
    }
}
