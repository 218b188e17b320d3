//! [`RedLock`]: one lock over several independent Redis masters, held once
//! a majority granted it (the Redlock algorithm), and [`RedLockGuard`].
//!
//! Each master gets an ordinary fixed-lease lock on Redisson's layout
//! through its own [`Client`]; the quorum, the validity and the clock
//! arithmetic are here.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, sleep_until};
use tracing::Instrument;

use crate::client::Client;
use crate::error::Error;
use crate::front::{self, Patience};
use crate::guard::LockGuard;
use crate::lost::LostReason;
use crate::metrics::Label;
use crate::metrics::Outcome;
use crate::wait::Attempt;

/// The lease when none is given.
const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// How long one master may take to answer an acquire, by default.
const DEFAULT_MASTER_TIMEOUT: Duration = Duration::from_millis(50);

/// A lock over N independent Redis masters (N clients, each to its own
/// master, neither replicas nor one cluster): held when a majority,
/// N/2 + 1, granted it, for a validity of the lease minus the time the
/// acquire took minus a clock drift allowance (1% of the lease + 2 ms).
///
/// Acquire requests go to every master at once, each bounded by a
/// per-master timeout, and the outcome is known as soon as a majority
/// granted it or can no longer grant it. When the acquire fails, the
/// masters still to answer are heard out (within their timeout) and every
/// grant is released before the busy answer. After a success the requests still in flight go
/// on in the background (each within its timeout), and every master that
/// grants it late joins the guard, as the Redlock algorithm keeps every
/// grant it gets: the lock is then held by as many masters as would grant
/// it, so losing one of them need not lose the quorum.
///
/// What it does not give: a fencing token that means anything across
/// masters (each master's token is its own; use a single Redis with
/// fencing where a database must reject stale holders), and safety without
/// bounded clock drift and process pauses (Kleppmann's critique of
/// Redlock, and antirez's reply: the validity is only as good as the
/// clocks, and a holder paused past it overlaps with the next one). A
/// master that restarts without persistence forgets its grants: restart
/// masters only after a lease has passed.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
/// # let a = redlease::Client::connect(&masters[0].url()).await?;
/// # let b = redlease::Client::connect(&masters[1].url()).await?;
/// # let c = redlease::Client::connect(&masters[2].url()).await?;
/// use std::time::Duration;
///
/// // a, b, c: clients of three independent masters.
/// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:nightly")?
///     .lease(Duration::from_secs(30));
/// let guard = redlock.try_lock_for(Duration::from_secs(5)).await?;
/// // ... work until guard.expires_at() at the latest ...
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RedLock {
    clients: Vec<Client>,
    name: String,
    /// [`crate::metrics::lock_label`] of the name, made once.
    label: Label,
    lease: Duration,
    master_timeout: Duration,
}

impl RedLock {
    /// A lock called `name` on the masters of `clients`, one client per
    /// independent master.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) without clients.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// // One client per master.
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:new")?;
    /// assert_eq!(redlock.quorum(), 2);
    ///
    /// let none: Vec<redlease::Client> = Vec::new();
    /// let e = redlease::RedLock::new(none, "doc:redlock:new").unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(
        clients: impl IntoIterator<Item = Client>,
        name: impl Into<String>,
    ) -> Result<RedLock, Error> {
        let clients: Vec<Client> = clients.into_iter().collect();
        if clients.is_empty() {
            return Err(Error::invalid("a redlock needs at least one master"));
        }
        let name = name.into();
        Ok(RedLock {
            clients,
            label: crate::metrics::shared_label(&name),
            name,
            lease: DEFAULT_LEASE,
            master_timeout: DEFAULT_MASTER_TIMEOUT,
        })
    }

    /// The lease on each master (default 10 s); the validity is shorter.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::{Duration, Instant};
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:lease")?
    ///     .lease(Duration::from_secs(20));
    /// let guard = redlock.try_lock().await?;
    /// // Valid for less than the lease: the acquire and the drift take their share.
    /// assert!(guard.expires_at().unwrap() < Instant::now() + Duration::from_secs(20));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`lease` returns a new handle; use it to acquire"]
    pub fn lease(mut self, lease: Duration) -> RedLock {
        self.lease = lease;
        self
    }

    /// How long one master may take to answer an acquire (default 50 ms):
    /// a master down or slow costs at most this.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// // Masters across a WAN: give each 200 ms to answer.
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:master-timeout")?
    ///     .master_timeout(Duration::from_millis(200));
    /// let guard = redlock.try_lock().await?;
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "`master_timeout` returns a new handle; use it to acquire"]
    pub fn master_timeout(mut self, timeout: Duration) -> RedLock {
        self.master_timeout = timeout;
        self
    }

    /// The number of masters that must grant the lock: N/2 + 1.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:quorum")?;
    /// // 3 masters: 2 must grant it; one may be down.
    /// assert_eq!(redlock.quorum(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn quorum(&self) -> usize {
        self.clients.len() / 2 + 1
    }

    /// The clock drift allowance taken off the validity: 1% of the lease
    /// plus 2 ms.
    fn drift(&self) -> Duration {
        self.lease / 100 + Duration::from_millis(2)
    }

    /// Makes one attempt on every master.
    ///
    /// # Errors
    ///
    /// [`is_busy`](Error::is_busy) when fewer than a quorum granted it in
    /// time (nothing is left held then), or the validity was used up by the
    /// time a quorum answered; [`is_invalid_argument`](Error::is_invalid_argument)
    /// for a bad name or lease.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves nothing held: each master's acquire is
    /// withdrawn as a cancelled [`Lock::try_lock`](crate::Lock::try_lock)
    /// is, and what was granted is released as dropped guards are.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:try-lock")?;
    /// let guard = redlock.try_lock().await?;
    /// // Held: a second attempt finds no master to grant it.
    /// assert!(redlock.try_lock().await.unwrap_err().is_busy());
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock(&self) -> Result<RedLockGuard, Error> {
        self.retry(Patience::Once).await
    }

    /// Attempts until `wait` has passed, with a jittered pause between
    /// attempts (the masters share no channel to wait on).
    ///
    /// # Errors
    ///
    /// As [`try_lock`](RedLock::try_lock), busy at the end of the wait.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](RedLock::try_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:try-lock-for")?
    ///     .lease(Duration::from_millis(100));
    /// let first = redlock.try_lock().await?;
    /// // Retries until the first holder's 100 ms lease is over.
    /// let second = redlock.try_lock_for(Duration::from_secs(2)).await?;
    /// assert!(first.is_lost());
    /// second.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_lock_for(&self, wait: Duration) -> Result<RedLockGuard, Error> {
        self.retry(Patience::within(wait)).await
    }

    /// Attempts until it is held, as [`try_lock_for`](RedLock::try_lock_for)
    /// with no time limit.
    ///
    /// # Errors
    ///
    /// Never busy: only [`is_invalid_argument`](Error::is_invalid_argument)
    /// for a bad name or lease ends it. Masters down or unreachable are
    /// attempted again for as long as it waits, so bound it with
    /// `tokio::time::timeout` if they may stay down.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](RedLock::try_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:lock")?
    ///     .lease(Duration::from_millis(100));
    /// let first = redlock.try_lock().await?;
    /// // Waits for the first holder's 100 ms lease to end.
    /// let second = tokio::time::timeout(Duration::from_secs(10), redlock.lock())
    ///     .await
    ///     .expect("held within 10 s")?;
    /// assert!(first.is_lost());
    /// second.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lock(&self) -> Result<RedLockGuard, Error> {
        self.retry(Patience::Forever).await
    }

    /// Attempts until held or `patience` runs out, in the front's span and
    /// metrics (the masters share no channel to wait on, so the retries
    /// are its own).
    async fn retry(&self, patience: Patience) -> Result<RedLockGuard, Error> {
        let observed = front::Observed::start("redlock", &self.name, &self.label);
        // Built in the `.await` expression: a future in a local of its own
        // would be held twice (see `front::acquire`).
        let result = async {
            let started = Instant::now();
            let deadline = match patience {
                Patience::Once => Some(started),
                Patience::Within(wait) => started.checked_add(wait),
                Patience::Forever => None,
            };
            loop {
                if let Some(guard) = self.attempt().await? {
                    return Ok((guard, Outcome::Acquired));
                }
                let now = Instant::now();
                if deadline.is_some_and(|deadline| now >= deadline) {
                    return Err(Error::busy(&self.name, now - started));
                }
                // A retry at a random moment, so that contenders that failed
                // together (each holding a minority) do not retry together.
                let jitter =
                    Duration::from_micros(u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 200);
                let pause = Duration::from_millis(5) + jitter;
                sleep(deadline.map_or(pause, |deadline| pause.min(deadline - now))).await;
            }
        }
        .instrument(observed.span())
        .await;
        observed.end(result)
    }

    /// One round: every master at once; `None` when no quorum.
    async fn attempt(&self) -> Result<Option<RedLockGuard>, Error> {
        let lease_ms =
            crate::name::lease_millis("lease", self.lease).map_err(|e| e.with_key(&self.name))?;
        crate::name::validate(&self.name)?;
        let n = self.clients.len();
        let quorum = self.quorum();
        let started = Instant::now();
        let mut pending: FuturesUnordered<_> = self
            .clients
            .iter()
            .map(|client| {
                let lock = client.lock(self.name.clone()).lease(self.lease);
                let timeout = self.master_timeout;
                async move { tokio::time::timeout(timeout, lock.attempt_once()).await }
            })
            .collect();
        let mut granted = Vec::with_capacity(n);
        let mut refused = 0;
        while let Some(outcome) = pending.next().await {
            match outcome {
                Ok(Ok(Attempt::Acquired(guard))) => granted.push(guard),
                Ok(Err(e)) if e.is_invalid_argument() => return Err(e),
                _ => refused += 1,
            }
            if granted.len() >= quorum || refused > n - quorum {
                break;
            }
        }
        let elapsed = started.elapsed();
        let lease = Duration::from_millis(lease_ms);
        let valid_for = lease.checked_sub(elapsed + self.drift());
        match valid_for {
            Some(valid_for) if granted.len() >= quorum && !valid_for.is_zero() => {
                Ok(Some(RedLockGuard {
                    name: self.name.clone(),
                    members: tokio::sync::Mutex::new(Members {
                        guards: granted,
                        late: keep_late_grants(pending),
                    }),
                    quorum,
                    drift: self.drift(),
                    valid_until: std::sync::Mutex::new(started + lease - self.drift()),
                }))
            }
            _ => {
                // Masters still to answer are heard out (each within its
                // timeout) and whatever they grant is released with the
                // rest, before the busy answer: the Redlock algorithm
                // releases on every master, and a caller told "busy" must
                // not find a minority still held behind it.
                while let Some(outcome) = pending.next().await {
                    if let Ok(Ok(Attempt::Acquired(guard))) = outcome {
                        granted.push(guard);
                    }
                }
                release_all(granted).await;
                Ok(None)
            }
        }
    }
}

/// Drives the acquires still in flight once the quorum is known, in the
/// background, and hands each late grant to the guard through the channel
/// returned; `None` when every master already answered.
///
/// `unlock` reads the channel to its end. A dropped guard closes it: the
/// task then drops the acquires still in flight, which withdraws them, and a
/// grant it can no longer hand over is dropped, which releases it
/// (owner-checked, in the background), so nothing stays held behind a
/// guard that is gone.
fn keep_late_grants<F>(
    mut pending: FuturesUnordered<F>,
) -> Option<mpsc::UnboundedReceiver<LockGuard>>
where
    F: Future<Output = Result<Result<Attempt<LockGuard>, Error>, tokio::time::error::Elapsed>>
        + Send
        + 'static,
{
    if pending.is_empty() {
        return None;
    }
    let (late, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = late.closed() => break,
                outcome = pending.next() => match outcome {
                    None => break,
                    Some(Ok(Ok(Attempt::Acquired(guard)))) => {
                        // A send to a closed channel gives the grant back,
                        // and dropping it releases it.
                        let _ = late.send(guard);
                    }
                    // Refused, failed or timed out: nothing held there.
                    Some(_) => {}
                },
            }
        }
    });
    Some(receiver)
}

async fn release_all(granted: Vec<LockGuard>) {
    for result in join_all(granted.into_iter().map(LockGuard::unlock)).await {
        if let Err(e) = result {
            tracing::debug!(error = %e, "redlock release of a master failed");
        }
    }
}

/// A [`RedLock`] held by a quorum of masters, valid until
/// [`expires_at`](RedLockGuard::expires_at).
///
/// Masters that grant it after the acquire returned (their requests were
/// still in flight, within the per-master timeout) join the guard as they
/// do: [`masters`](RedLockGuard::masters) counts them, and
/// [`extend`](RedLockGuard::extend), [`unlock`](RedLockGuard::unlock) and
/// Drop cover them. A grant that arrives after the guard was dropped is
/// released at once, in the background.
///
/// Dropping the guard without `unlock` releases it on every master in the
/// background, as a dropped [`LockGuard`] does, and withdraws the requests
/// still in flight.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
/// # let a = redlease::Client::connect(&masters[0].url()).await?;
/// # let b = redlease::Client::connect(&masters[1].url()).await?;
/// # let c = redlease::Client::connect(&masters[2].url()).await?;
/// use std::time::Duration;
///
/// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:guard")?
///     .lease(Duration::from_secs(10));
/// let guard = redlock.try_lock().await?;
/// assert!(guard.masters() >= redlock.quorum());
/// assert!(!guard.is_lost());
/// // ... work until guard.expires_at() at the latest ...
/// guard.unlock().await?;
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the guard releases the lock at once; hold it for the critical section and call `unlock().await`"]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct RedLockGuard {
    name: String,
    /// The masters' guards. An async mutex, held across `extend`'s calls
    /// so that `extend` takes `&self` as every guard's does.
    members: tokio::sync::Mutex<Members>,
    /// N/2 + 1 of all N masters, never of those that happen to hold it:
    /// a majority of the holders could be a minority of N.
    quorum: usize,
    drift: Duration,
    /// Moved by `extend`; read by `is_lost` and `lost`, never held across
    /// an await.
    valid_until: std::sync::Mutex<Instant>,
}

/// What a [`RedLockGuard`] holds on the masters.
#[derive(Debug)]
struct Members {
    /// One per master that granted it, late grants once drained from
    /// `late`.
    guards: Vec<LockGuard>,
    /// Grants that arrived after the acquire returned; `None` when no
    /// request was left in flight. Dropping it (with the guard) tells the
    /// background task to withdraw what is still in flight and release what
    /// it can no longer hand over.
    late: Option<mpsc::UnboundedReceiver<LockGuard>>,
}

impl Members {
    /// Moves the late grants received so far into `guards`.
    fn take_late_grants(&mut self) {
        if let Some(late) = &mut self.late {
            while let Ok(guard) = late.try_recv() {
                self.guards.push(guard);
            }
        }
    }

    fn count(&self) -> usize {
        self.guards.len() + self.late.as_ref().map_or(0, mpsc::UnboundedReceiver::len)
    }
}

impl RedLockGuard {
    /// The lock's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:name")?;
    /// let guard = redlock.try_lock().await?;
    /// assert_eq!(guard.name(), "doc:redlock:name");
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many masters hold it now: the quorum that granted it before the
    /// acquire returned, plus those that granted it since.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:masters")?;
    /// let guard = redlock.try_lock().await?;
    /// // At least a quorum; more as late grants come in.
    /// assert!((2..=3).contains(&guard.masters()));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn masters(&self) -> usize {
        // Busy only while `extend` runs, which never lowers the count: the
        // quorum is the least it can be then.
        self.members
            .try_lock()
            .map_or(self.quorum, |members| members.count())
    }

    /// `None`: each master's token is its own, and together they order
    /// nothing (see [`RedLock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:token")?;
    /// let guard = redlock.try_lock().await?;
    /// assert_eq!(guard.fencing_token(), None);
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        None
    }

    fn valid_until(&self) -> Instant {
        *self
            .valid_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// When the lock stops being valid by this process's clock (the lease
    /// from the start of the acquire, minus the drift allowance): never past
    /// the lease.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::{Duration, Instant};
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:valid-until")?
    ///     .lease(Duration::from_secs(10));
    /// let guard = redlock.try_lock().await?;
    /// let until = guard.expires_at().expect("a RedLock always ends");
    /// let left = until.saturating_duration_since(Instant::now());
    /// assert!(left > Duration::from_secs(9) && left < Duration::from_secs(10));
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn expires_at(&self) -> Option<std::time::Instant> {
        Some(self.valid_until().into_std())
    }

    /// Whether the validity has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:is-lost")?
    ///     .lease(Duration::from_millis(100));
    /// let guard = redlock.try_lock().await?;
    /// assert!(!guard.is_lost());
    /// tokio::time::sleep(Duration::from_millis(100)).await;
    /// assert!(guard.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        Instant::now() >= self.valid_until()
    }

    /// Resolves when the validity ends ([`LostReason::Expired`]), unless
    /// extended first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads the clock.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:lost")?
    ///     .lease(Duration::from_millis(100));
    /// let guard = redlock.try_lock().await?;
    /// let work = tokio::time::sleep(Duration::from_secs(10)); // longer than the lease
    /// tokio::select! {
    ///     () = work => println!("done in time"),
    ///     reason = guard.lost() => assert_eq!(reason, redlease::LostReason::Expired),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lost(&self) -> LostReason {
        // Again after each wake-up: `extend` may have moved the end.
        loop {
            let until = self.valid_until();
            if Instant::now() >= until {
                return LostReason::Expired;
            }
            sleep_until(until).await;
        }
    }

    /// Sets the lease on every master that holds it now (late grants
    /// included) to `lease` from now; valid again for `lease` minus the time
    /// it took and the drift, if a quorum of all the masters (N/2 + 1 of N)
    /// confirmed in time.
    ///
    /// # Errors
    ///
    /// [`is_not_owner`](Error::is_not_owner) when fewer than a quorum still
    /// held it, or the validity had ended (a lock that `lost()` may have
    /// reported is not extended); the validity is then unchanged.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the validity as it was (the masters may
    /// have been extended: the guard errs on the early side).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// use std::time::Duration;
    ///
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:extend")?
    ///     .lease(Duration::from_secs(5));
    /// let guard = redlock.try_lock().await?;
    /// let before = guard.expires_at();
    /// guard.extend(Duration::from_secs(30)).await?;
    /// assert!(guard.expires_at() > before);
    /// guard.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn extend(&self, lease: Duration) -> Result<(), Error> {
        if self.is_lost() {
            return Err(Error::not_owner(&self.name));
        }
        let mut members = self.members.lock().await;
        members.take_late_grants();
        let started = Instant::now();
        let results = join_all(members.guards.iter().map(|g| g.extend(lease))).await;
        let confirmed = results.iter().filter(|r| r.is_ok()).count();
        let valid_until = started + lease.saturating_sub(self.drift);
        if confirmed >= self.quorum && Instant::now() < valid_until {
            *self
                .valid_until
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = valid_until;
            Ok(())
        } else {
            Err(Error::not_owner(&self.name))
        }
    }

    /// Releases the lock on every master that holds it, late grants
    /// included: requests still in flight are awaited first (each within
    /// the master timeout), so that when it returns no master holds it.
    ///
    /// # Errors
    ///
    /// The first master's error, after every release was tried.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the masters' guards, which release in the
    /// background, and withdraws the requests still in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let masters: Vec<_> = (0..3).map(|_| redlease_testkit::RedisServer::start()).collect();
    /// # let a = redlease::Client::connect(&masters[0].url()).await?;
    /// # let b = redlease::Client::connect(&masters[1].url()).await?;
    /// # let c = redlease::Client::connect(&masters[2].url()).await?;
    /// let redlock = redlease::RedLock::new([a, b, c], "doc:redlock:unlock")?;
    /// let guard = redlock.try_lock().await?;
    /// guard.unlock().await?;
    /// // Free on every master again.
    /// redlock.try_lock().await?.unlock().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn unlock(self) -> Result<(), Error> {
        let mut members = self.members.into_inner();
        if let Some(mut late) = members.late.take() {
            // The requests still in flight are heard out (each within its
            // timeout; the channel ends with the last), so that a late grant
            // is released here too: once `unlock` returns, no master holds
            // the lock for this guard.
            while let Some(guard) = late.recv().await {
                members.guards.push(guard);
            }
        }
        let mut first = None;
        for result in join_all(members.guards.into_iter().map(LockGuard::unlock)).await {
            if let Err(e) = result {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}
