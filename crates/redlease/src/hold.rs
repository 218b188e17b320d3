//! What a `LockGuard` does while it holds a lock (any lock kind, and each
//! member of a multi-lock), between its acquire and its release.
//!
//! A [`Hold`] is registered with the client's watchdog (or, for a fixed
//! lease, knows when it expires), answers `lost()` and `is_lost()`, releases
//! owner-checked through its [`Kind`]'s script, and, dropped without a
//! release, releases in the background. A primitive's guard wraps a `Hold`
//! and adds only what it shows its users.

use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::metrics::Label;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};
use tracing::Instrument;

use crate::backoff;
use crate::error::{Error, ErrorKind};
use crate::kind::Kind;
use crate::lost::{LostReason, LostSignal};
use crate::scripts::lock::{Renewal, Renewed, keep};
use crate::scripts::{Latch, commands};
use crate::shared::Shared;
use crate::watchdog::Kept;
use crate::{metrics, release};

/// How a hold's lease is kept: never both.
#[derive(Clone, Debug)]
pub(crate) enum LeaseMode {
    /// Renewed by the client's watchdog.
    Watchdog,
    /// Never renewed by itself; gone at `expires_at` by our clock (the
    /// acquire, or the last [`extend`](Hold::extend), was sent before this
    /// instant minus the lease, so Redis expires it no earlier).
    Fixed { expires_at: Expiry },
}

impl LeaseMode {
    /// The lease to restore on a re-entry or a re-entered guard's release:
    /// a fixed lease's current length, else `watchdog_ms`.
    pub(crate) fn lease_ms(&self, watchdog_ms: u64) -> u64 {
        match self {
            LeaseMode::Watchdog => watchdog_ms,
            LeaseMode::Fixed { expires_at } => expires_at.lease_ms(),
        }
    }
}

/// A fixed lease's end by our clock, and its length, shared by the guards
/// of one hold (an owner scope's re-entries) and moved by [`Hold::extend`].
#[derive(Clone, Debug)]
pub(crate) struct Expiry(Arc<ExpiryState>);

#[derive(Debug)]
struct ExpiryState {
    /// A std mutex: held only to copy or store the instant.
    at: Mutex<Instant>,
    /// Wakes `until_passed` when `at` moves. A `watch` channel did both in
    /// 344 bytes a hold (#28).
    moved: Notify,
    /// The lease a re-entry or the release of a re-entered guard sets the
    /// key's expiry to: the last one asked for, so that the key never ends
    /// before what the guards report.
    lease_ms: AtomicU64,
}

impl Expiry {
    pub(crate) fn new(at: Instant, lease_ms: u64) -> Expiry {
        Expiry(Arc::new(ExpiryState {
            at: Mutex::new(at),
            moved: Notify::new(),
            lease_ms: AtomicU64::new(lease_ms),
        }))
    }

    /// The end of the lease, now.
    pub(crate) fn at(&self) -> Instant {
        // Poisoned only by a panic while storing an `Instant`, which
        // leaves it whole.
        *self.0.at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lease's length, now.
    fn lease_ms(&self) -> u64 {
        self.0.lease_ms.load(Ordering::Acquire)
    }

    /// The lease is now `lease_ms` from `sent_at`.
    fn moved(&self, sent_at: Instant, lease_ms: u64) {
        self.0.lease_ms.store(lease_ms, Ordering::Release);
        *self.0.at.lock().unwrap_or_else(|e| e.into_inner()) =
            sent_at + Duration::from_millis(lease_ms);
        self.0.moved.notify_waiters();
    }

    /// Whether the lease has ended at `now`.
    fn passed(&self, now: Instant) -> bool {
        now >= self.at()
    }

    /// Resolves when the lease ends, following extensions.
    async fn until_passed(&self) {
        loop {
            // Registered before `at` is read: a move between the read and
            // the sleep still wakes this loop.
            let moved = self.0.moved.notified();
            let mut moved = pin!(moved);
            moved.as_mut().enable();
            let at = self.at();
            tokio::select! {
                () = sleep_until(at) => {
                    if self.passed(Instant::now()) {
                        return;
                    }
                }
                () = moved => {}
            }
        }
    }
}

/// What a successful acquire granted, with what the hold needs to know
/// about the request.
pub(crate) struct Grant {
    /// The owner field the script wrote.
    pub(crate) field: Arc<str>,
    pub(crate) lease_ms: u64,
    pub(crate) mode: LeaseMode,
    /// When the acquire request was sent: the lease started no earlier.
    pub(crate) sent_at: Instant,
    /// `None` when fencing is off.
    pub(crate) token: Option<u64>,
    /// The lock's metrics label.
    pub(crate) label: Label,
}

/// One acquisition's hold, as its guard keeps it.
pub(crate) struct Hold {
    client: Shared,
    kind: Kind,
    name: Arc<str>,
    /// `<client-id>:<n>`, unique to this acquisition.
    field: Arc<str>,
    /// Restored by the release script when other holds of this field remain.
    lease_ms: u64,
    mode: LeaseMode,
    /// Set by the watchdog; a fixed lease is judged by its expiry instead.
    lost: LostSignal,
    /// Shared with the guards that re-entered this hold in an owner scope;
    /// `None` once this guard let go of it.
    registration: Option<Arc<Registration>>,
    /// False once the release reply arrived: Drop has nothing left to do.
    armed: bool,
    /// Issued by the acquire script; `None` when fencing is off.
    token: Option<u64>,
    /// The lock's metrics label, for a refused unlock.
    label: Label,
    /// Whether Drop's release counts a refusal ([`metrics::UNLOCK_NOT_OWNER`]):
    /// not when it retries a release whose reply was lost.
    count_refusal: bool,
    /// The release's request id, made when it is first sent and kept for
    /// Drop's repeat: the unlock latch it names makes the repeat answer as
    /// the first did (#37).
    release_request: Option<Arc<str>>,
}

impl Hold {
    /// Starts holding what `grant` says was acquired: registers it with the
    /// watchdog unless its lease is fixed.
    pub(crate) fn new(client: Shared, kind: Kind, name: Arc<str>, grant: Grant) -> Hold {
        let lost = LostSignal::new();
        // Registered now, as the acquire reply arrives, and deregistered
        // before the release is sent: no renewal can be scheduled after the
        // release and bring the lock back to life (Redisson's #7272,
        // DESIGN.md). The watchdog's deadline counts from `sent_at`: the
        // lease began no earlier, so the deadline never outlasts Redis's.
        let watchdog_id = match &grant.mode {
            LeaseMode::Watchdog => Some(client.watchdog().register(
                name.clone(),
                if kind.renews_timeouts() {
                    Kept::Read(grant.field.clone())
                } else {
                    Kept::Lock(grant.field.clone())
                },
                grant.label.clone(),
                grant.sent_at,
                lost.clone(),
            )),
            LeaseMode::Fixed { .. } => None,
        };
        metrics::hold_started(&grant.label);
        let registration = Arc::new(Registration {
            client: client.clone(),
            watchdog_id,
            label: grant.label.clone(),
            since: Instant::now(),
            mode: grant.mode.clone(),
            guards: AtomicUsize::new(1),
        });
        Hold {
            client,
            kind,
            name,
            field: grant.field,
            lease_ms: grant.lease_ms,
            mode: grant.mode,
            lost,
            registration: Some(registration),
            armed: true,
            token: grant.token,
            release_request: None,
            label: grant.label,
            count_refusal: true,
        }
    }

    /// One more hold of `held`, re-entered in an owner scope: same owner
    /// field, lease, loss signal and fencing token, and renewed by the same
    /// watchdog registration, which lasts until the last guard of the hold
    /// lets go.
    pub(crate) fn reentered(client: Shared, kind: Kind, name: Arc<str>, held: Held) -> Hold {
        held.registration.guards.fetch_add(1, Ordering::AcqRel);
        Hold {
            client,
            kind,
            name,
            field: held.field,
            lease_ms: held.lease_ms,
            mode: held.mode,
            lost: held.lost,
            label: held.registration.label.clone(),
            registration: Some(held.registration),
            armed: true,
            token: held.token,
            count_refusal: true,
            release_request: None,
        }
    }

    /// What a re-entry in an owner scope needs to share this hold; `None`
    /// once it was let go.
    pub(crate) fn held(&self) -> Option<Held> {
        Some(Held {
            field: self.field.clone(),
            lease_ms: self.lease_ms,
            mode: self.mode.clone(),
            lost: self.lost.clone(),
            registration: self.registration.clone()?,
            token: self.token,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn field(&self) -> &str {
        &self.field
    }

    pub(crate) fn token(&self) -> Option<u64> {
        self.token
    }

    pub(crate) fn mode(&self) -> &LeaseMode {
        &self.mode
    }

    /// Releases the hold, owner-checked, after stopping its renewal. After a
    /// lost reply the release may not have run, so Drop sends it once more
    /// in the background.
    pub(crate) async fn release(&mut self) -> Result<(), Error> {
        if !self.let_go().unwrap_or(true) && self.kind.is_string() {
            // Other guards of the owner scope still hold it; the last one
            // releases the key.
            self.armed = false;
            return Ok(());
        }
        let span =
            tracing::debug_span!("unlock", key = %self.name, outcome = tracing::field::Empty);
        let request = self.release_request();
        let conn = self.client.conn();
        // Restored when other guards of the hold remain: a fixed lease's
        // current length, which `extend` may have changed.
        let lease_ms = self.mode.lease_ms(self.lease_ms);
        let latch = request.as_deref().map(|request| Latch {
            request,
            ttl_ms: self.client.answer_ttl_ms(),
        });
        let call = self
            .kind
            .release(&self.name, lease_ms, &self.field, conn.publish(), latch);
        // Sent again for as long as the hold could still be there: under a
        // latch after a lost reply too, without one (the string layout)
        // only while the server says it did not run, since a repeat of a
        // release that ran would find the key gone or another's.
        let retry_for = release_retry(&self.client, lease_ms);
        let again = match latch {
            Some(_) => Error::is_transient,
            None => Error::did_not_run,
        };
        let result =
            backoff::retry_while(retry_for, again, || release::run(conn, &call, &self.name))
                .instrument(span.clone())
                .await;
        let outcome = match &result {
            Ok(()) => "released",
            Err(e) if e.is_not_owner() => {
                metrics::unlock_not_owner(&self.label);
                "not_owner"
            }
            Err(_) => "error",
        };
        span.record("outcome", outcome);
        match &result {
            // Only a lost reply leaves the release undone for sure; then
            // Drop tries once more in the background, under the same latch.
            // If the first one did run, the retry finds its answer (or, in
            // the string layout, nothing): no refusal to count then.
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Connection) => {
                self.count_refusal = false;
            }
            _ => self.armed = false,
        }
        result
    }

    /// Ends the hold but keeps the lock in Redis until it has been held
    /// `min` (counted from the acquire's reply, so never less on the
    /// server): the owner field is swapped for one nobody holds, expiring
    /// when `min` is up ([`scripts::lock::keep`]). With `min` passed
    /// already, or other guards of an owner scope still holding it, this is
    /// [`release`](Hold::release).
    pub(crate) async fn release_at_least(&mut self, min: Duration) -> Result<(), Error> {
        let Some(registration) = self.registration.as_ref() else {
            return self.release().await;
        };
        let last = registration.guards.load(Ordering::Acquire) == 1;
        let since = registration.since;
        let left = min.saturating_sub(since.elapsed());
        if !last || left < Duration::from_millis(1) {
            return self.release().await;
        }
        if matches!(self.kind, Kind::Read) {
            return Err(Error::invalid(format!(
                "lock {:?} is a read hold, shared with other readers: unlock_at_least is for \
                 exclusive locks (plain, fair, string layout, the write side)",
                self.name
            ))
            .with_key(&self.name));
        }
        // Renewal stops before the swap is sent, and nothing is left for
        // Drop: the lock now belongs to nobody, until it expires.
        self.let_go();
        self.armed = false;
        if self.is_lost() {
            return Err(Error::not_owner(&self.name));
        }
        let span =
            tracing::debug_span!("unlock", key = %self.name, outcome = tracing::field::Empty);
        let nobody = self.client.new_owner_field();
        let conn = self.client.conn();
        let name = &self.name;
        let field = &self.field;
        let kept = backoff::retry_while(
            left.min(self.client.retry_writes_for()),
            Error::is_transient,
            || {
                // Recomputed per attempt: a retry keeps only what is left.
                let ms = min.saturating_sub(since.elapsed()).as_millis().max(1);
                let ms = u64::try_from(ms).unwrap_or(u64::MAX);
                let call = keep(name, ms, field, &nobody);
                async move {
                    call.run::<i64>(conn)
                        .await
                        .map_err(|e| Error::from(e).with_key(name))
                }
            },
        )
        .instrument(span.clone())
        .await;
        match kept {
            Ok(1) => {
                span.record("outcome", "kept");
                tracing::debug!(key = %self.name, left_ms = left.as_millis() as u64, "lock kept for its minimum hold");
                Ok(())
            }
            Ok(_) => {
                span.record("outcome", "not_owner");
                metrics::unlock_not_owner(&self.label);
                Err(Error::not_owner(&self.name))
            }
            Err(e) => {
                span.record("outcome", "error");
                Err(e)
            }
        }
    }

    /// Asks Redis whether the hold's owner field is still in the lock hash
    /// (in the string layout, whether the key still holds the owner); a key
    /// that now holds another type means not held.
    pub(crate) async fn is_held(&self) -> Result<bool, Error> {
        let conn = self.client.conn();
        let reply = if self.kind.is_string() {
            let value = conn
                .query::<Option<Vec<u8>>>(&commands::get(&self.name))
                .await;
            value.map(|v| v.as_deref() == Some(self.field.as_bytes()))
        } else {
            conn.query::<bool>(&commands::hexists(&self.name, &self.field))
                .await
        };
        match reply.map_err(|e| Error::from(e).with_key(&self.name)) {
            Err(e) if e.is_wrong_type() => Ok(false),
            other => other,
        }
    }

    /// Sets a fixed lease's end to `lease_ms` from now, owner-checked, and
    /// moves the local expiry with it once Redis confirmed.
    pub(crate) async fn extend(&self, lease_ms: u64) -> Result<(), Error> {
        let LeaseMode::Fixed { expires_at } = &self.mode else {
            return Err(Error::invalid(format!(
                "lock {:?} is held in watchdog mode, which renews it every third of the \
                 watchdog timeout; extend is for fixed leases",
                self.name
            ))
            .with_key(&self.name));
        };
        // Lost by our clock (or reported lost): `lost()` may have told the
        // caller already, so the hold stays lost even if its key lingers.
        if self.is_lost() {
            return Err(Error::not_owner(&self.name));
        }
        let call = self.kind.extend(&self.name, lease_ms, &self.field);
        let sent_at = Instant::now();
        let reply = call.run::<Renewed>(self.client.conn()).await;
        match reply.map_err(|e| Error::from(e).with_key(&self.name))? {
            Renewed(r) if r.first() == Some(&Renewal::Renewed) => {
                // From when the request was sent: Redis set the expiry no
                // earlier, so ours never outlasts it (a shorter lease
                // shortens both).
                expires_at.moved(sent_at, lease_ms);
                tracing::debug!(key = %self.name, lease_ms, "fixed lease extended");
                Ok(())
            }
            _ => {
                metrics::lost(&self.label, LostReason::OwnerChanged);
                self.lost.set(LostReason::OwnerChanged);
                Err(Error::not_owner(&self.name))
            }
        }
    }

    /// Resolves when the hold is known or must be assumed lost.
    pub(crate) async fn lost(&self) -> LostReason {
        match &self.mode {
            LeaseMode::Watchdog => self.lost.wait().await,
            LeaseMode::Fixed { expires_at } => tokio::select! {
                reason = self.lost.wait() => reason,
                () = expires_at.until_passed() => LostReason::Expired,
            },
        }
    }

    /// Whether [`lost`](Hold::lost) would resolve now, or is about to.
    pub(crate) fn is_lost(&self) -> bool {
        lost_now(
            &self.client,
            &self.mode,
            &self.lost,
            self.registration.as_deref(),
        )
    }
}

impl Hold {
    /// The request id of this hold's release, the same each time it is
    /// sent; `None` where the release takes no latch.
    fn release_request(&mut self) -> Option<Arc<str>> {
        if !self.kind.latches() {
            return None;
        }
        let client = &self.client;
        Some(
            self.release_request
                .get_or_insert_with(|| client.new_owner_field())
                .clone(),
        )
    }

    /// Lets go of this guard's share of the registration: whether it was
    /// the last guard of the hold, `None` if it let go before.
    fn let_go(&mut self) -> Option<bool> {
        let registration = self.registration.take()?;
        Some(registration.guards.fetch_sub(1, Ordering::AcqRel) == 1)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let last = self.let_go().unwrap_or(true);
        // In the string layout the key holds no count: only the scope's last
        // guard releases it. Elsewhere each guard takes back its own hold.
        if self.armed && (last || !self.kind.is_string()) {
            let lease_ms = self.mode.lease_ms(self.lease_ms);
            let request = self.release_request();
            // Under a latch, sent until answered: a repeat answers as the
            // first did and takes back no re-entered hold. The string
            // layout's release is sent again only when it did not run.
            let retry_for = release_retry(&self.client, lease_ms);
            let retry = match request {
                Some(request) => release::Retry::Latched {
                    request,
                    retry_for,
                    ttl_ms: self.client.answer_ttl_ms(),
                },
                None => release::Retry::NotRun(retry_for),
            };
            release::in_background(
                self.client.conn(),
                self.kind,
                &self.name,
                &self.field,
                lease_ms,
                self.count_refusal.then(|| self.label.clone()),
                retry,
            );
        }
    }
}

/// How long a latched release is sent again after lost replies: while the
/// hold could still be in Redis (its lease, once the watchdog stops
/// renewing it), at most as long as the client retries writes.
fn release_retry(client: &Shared, lease_ms: u64) -> Duration {
    Duration::from_millis(lease_ms).min(client.retry_writes_for())
}

/// One hold's watchdog registration (none for a fixed lease), shared by
/// the guards of an owner scope that re-entered it; renewal stops when the
/// last of them lets go.
pub(crate) struct Registration {
    client: Shared,
    watchdog_id: Option<u64>,
    /// The hold's metrics label and start, for the hold-time histogram when
    /// the last guard lets go.
    label: Label,
    since: Instant,
    /// A fixed lease that ran out before the hold ended is counted as lost
    /// here: nothing watches its expiry while it is held.
    mode: LeaseMode,
    /// The guards sharing the hold. In the string layout the key carries no
    /// hold count: this is the count, and only the last guard releases.
    guards: AtomicUsize,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(id) = self.watchdog_id {
            self.client.watchdog().deregister(id);
        }
        let now = Instant::now();
        metrics::hold_ended(&self.label, now - self.since);
        if matches!(&self.mode, LeaseMode::Fixed { expires_at } if expires_at.passed(now)) {
            metrics::lost(&self.label, LostReason::Expired);
        }
    }
}

/// A hold as an owner scope shares it with the guards that re-enter it.
pub(crate) struct Held {
    pub(crate) field: Arc<str>,
    pub(crate) lease_ms: u64,
    pub(crate) mode: LeaseMode,
    pub(crate) lost: LostSignal,
    pub(crate) registration: Arc<Registration>,
    pub(crate) token: Option<u64>,
}

impl Held {
    /// Whether the hold is known or must be assumed lost, as
    /// [`Hold::is_lost`] would answer for its guards: such a hold is not
    /// re-entered, even while its key is still in Redis.
    pub(crate) fn is_lost(&self, client: &Shared) -> bool {
        lost_now(client, &self.mode, &self.lost, Some(&self.registration))
    }
}

/// Whether a hold is lost by now: a fixed lease past its expiry, a watchdog
/// lock past its deadline (even before the watchdog task has run to report
/// it), or a loss the watchdog signalled.
fn lost_now(
    client: &Shared,
    mode: &LeaseMode,
    lost: &LostSignal,
    registration: Option<&Registration>,
) -> bool {
    let now = Instant::now();
    // The deadline before the signal: the watchdog removes an overdue entry
    // and signals in one step, so read the other way round both could be
    // missed.
    let overdue = registration
        .and_then(|r| r.watchdog_id)
        .is_some_and(|id| client.watchdog().overdue(id, now));
    let expired = matches!(mode, LeaseMode::Fixed { expires_at } if expires_at.passed(now));
    expired || overdue || lost.get().is_some()
}
