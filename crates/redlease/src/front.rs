//! Every acquire call (`try_lock`, `try_lock_for`, `lock`, `try_acquire`,
//! `acquire`, a latch's `wait`...) goes through here: it picks one attempt
//! or a wait, applies the busy rule, and records the span and the metrics,
//! written once for every primitive (#27).
//!
//! A primitive's `try_lock`/`try_acquire`, `..._for` and `lock`/`acquire`
//! are each one call of [`acquire`] with a [`Patience`]. The primitive
//! supplies a [`Primitive`]: its name and metrics label, and a
//! [`begin`](Primitive::begin) that checks the input and answers either a
//! guard at once (a re-entry in an owner scope) or a [`Contender`] for the
//! waiting engine ([`crate::wait`]), which says what one attempt is, which
//! channel wakes it and what "busy" means. Everything else is here:
//!
//! * `Once` (and a wait of zero): one attempt; busy is an error for which
//!   [`Error::is_busy`] is true, worded by the contender.
//! * `Within(wait)` and `Forever`: the waiting engine.
//! * An `acquire` span (fields `kind`, `key`, `outcome`) around the whole
//!   call, and [`crate::metrics::ACQUIRES`] and
//!   [`crate::metrics::WAIT_SECONDS`] by
//!   outcome (`cancelled` when the caller drops the call).

use std::future::Future;
use std::time::Duration;

use crate::metrics::Label;
use tokio::time::Instant;
use tracing::Instrument;

use crate::error::Error;
use crate::metrics::{AcquireObservation, Outcome};
use crate::shared::Handle;
use crate::wait::{self, Attempt, Contender};

/// How long an acquire may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Patience {
    /// One attempt (`try_lock`, `try_acquire`, a wait of zero).
    Once,
    /// Until the wait has passed.
    Within(Duration),
    /// Until acquired.
    Forever,
}

impl Patience {
    /// A `..._for(wait)` call's patience: a wait of zero is one attempt.
    pub(crate) fn within(wait: Duration) -> Patience {
        // One attempt, not a wait that ends at once: a fair lock's wait
        // joins its queue, which `try_lock_for(ZERO)` must not (#3).
        if wait.is_zero() {
            Patience::Once
        } else {
            Patience::Within(wait)
        }
    }
}

/// What [`Primitive::begin`] found.
pub(crate) enum Begin<G, C> {
    /// Held at once, without an attempt of the contender's: a re-entry in
    /// an owner scope (or a read taken under the scope's write hold).
    Held(G, Outcome),
    /// Attempt (and perhaps wait) with this contender.
    Contend(C),
}

/// A primitive, as the front drives its acquires.
pub(crate) trait Primitive: Sync {
    /// What an acquire gives: a guard.
    type Guard: Send;
    /// The waiting acquire.
    type Contender<'a>: Contender<Acquired = Self::Guard>
    where
        Self: 'a;

    /// What it is, for the span: `lock`, `semaphore`, ...
    const KIND: &'static str;

    /// Its client, name and metrics label.
    fn handle(&self) -> &Handle;

    /// Checks the input and readies an acquire of this patience.
    fn begin(
        &self,
        patience: Patience,
    ) -> impl Future<Output = Result<Begin<Self::Guard, Self::Contender<'_>>, Error>> + Send;
}

/// Acquires `primitive` with `patience`.
///
/// # Errors
///
/// Busy when one attempt or the wait did not acquire (never with
/// [`Patience::Forever`]); the primitive's errors otherwise.
///
/// # Cancel safety
///
/// As the waiting engine's and the contender's: see each primitive.
pub(crate) async fn acquire<P: Primitive>(
    primitive: &P,
    patience: Patience,
) -> Result<P::Guard, Error> {
    let handle = primitive.handle();
    let observed = Observed::start(P::KIND, &handle.name, &handle.label);
    // Built in the `.await` expression, not passed to a function: a future
    // held by an argument and again by the future wrapping it takes its
    // size twice in the caller's future (#28: `try_lock` was 6.5 KB).
    let result = contend(primitive, patience)
        .instrument(observed.span())
        .await;
    observed.end(result)
}

/// The acquire itself, as [`acquire`] observes it.
async fn contend<P: Primitive>(
    primitive: &P,
    patience: Patience,
) -> Result<(P::Guard, Outcome), Error> {
    let started = Instant::now();
    let mut contender = match primitive.begin(patience).await? {
        Begin::Held(guard, outcome) => return Ok((guard, outcome)),
        Begin::Contend(contender) => contender,
    };
    let wait = match patience {
        Patience::Once => {
            // `attempt_once`, not `attempt`: a fair lock's `try_lock` never
            // joins the queue, nor jumps it (DESIGN.md, "How does the fair
            // lock work").
            return match contender.attempt_once().await? {
                Attempt::Acquired(guard) => Ok((guard, Outcome::Acquired)),
                Attempt::Busy(_) | Attempt::Short(_) => Err(contender.busy(started.elapsed())),
            };
        }
        Patience::Within(wait) => Some(wait),
        Patience::Forever => None,
    };
    let guard = wait::wait(&primitive.handle().client, &mut contender, wait).await?;
    Ok((guard, Outcome::Acquired))
}

/// An acquire call's `acquire` span and its outcome and duration
/// ([`crate::metrics::ACQUIRES`], [`crate::metrics::WAIT_SECONDS`]),
/// `cancelled` if the call is dropped before [`end`](Observed::end). Used
/// by [`acquire`], and by primitives that do not wait through it (a
/// RedLock retries on its own).
pub(crate) struct Observed<'a> {
    span: tracing::Span,
    observation: AcquireObservation<'a>,
}

impl<'a> Observed<'a> {
    pub(crate) fn start(kind: &'static str, name: &str, label: &'a Label) -> Observed<'a> {
        Observed {
            span: tracing::debug_span!(
                "acquire",
                kind,
                key = %name,
                outcome = tracing::field::Empty,
            ),
            observation: AcquireObservation::start(label),
        }
    }

    /// The span to run the call in.
    pub(crate) fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    /// Records how the call ended.
    pub(crate) fn end<G>(mut self, result: Result<(G, Outcome), Error>) -> Result<G, Error> {
        let (result, outcome) = match result {
            Ok((guard, outcome)) => (Ok(guard), outcome),
            Err(e) if e.is_busy() => (Err(e), Outcome::Busy),
            Err(e) => (Err(e), Outcome::Error),
        };
        self.observation.end(outcome);
        self.span.record("outcome", outcome.as_str());
        result
    }
}
