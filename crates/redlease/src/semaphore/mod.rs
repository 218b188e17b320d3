//! [`Semaphore`]: Redisson's `RSemaphore`, a fleet-wide "at most N at
//! once", and its single acquire attempt; the permits it hands out are a
//! [`SemaphorePermit`] (`permit.rs`). Waiting is the waiting engine's
//! ([`crate::wait`]).

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::connection::Connection;
use crate::count;
use crate::count::{Counter, REQUEST_TTL, REQUEST_TTL_MS};
use crate::error::Error;
use crate::front::{self, Begin, Patience};
use crate::layout;
use crate::pubsub::Wakes;
use crate::scripts::semaphore::{self as scripts, Counted, Taken};
use crate::shared::Handle;
use crate::wait::{Attempt, Contender};

mod permit;

pub use permit::SemaphorePermit;

/// A handle to one named semaphore, Redisson's `RSemaphore`; made by
/// [`Client::semaphore`](crate::Client::semaphore).
///
/// The semaphore is a count of available permits in Redis: acquiring `n`
/// takes `n` away if that many are there, releasing `n` gives `n` back.
/// Nothing records who acquired, so any client may release, and permits
/// that are acquired and never released (a crashed holder) are gone until
/// someone adds them back: for permits that come back by themselves, use a
/// semaphore with leased permits instead. The handle is cheap to clone and
/// holds nothing in Redis by itself.
///
/// # Layout
///
/// Redisson's, so that Java services on the same name share the permits:
/// the string key `name` holds the available count as a decimal integer (a
/// missing key is 0), and every release or change of the count publishes
/// the new available count on `redisson_sc:{name}`
/// ([`layout::semaphore_channel`]). A message `n` wakes up to `n` waiters
/// in each client; a waiter for more permits than are free passes its
/// wake-up on to the next one, so a small request is not left asleep
/// behind a large one.
///
/// # Limits
///
/// Counts are at most `i32::MAX` ([`MAX_PERMITS`](crate::MAX_PERMITS)), as
/// Redisson reads them. A semaphore never waits for replicas,
/// even when the client
/// [requires them](crate::ClientBuilder::require_replicas): its scripts
/// run on the master alone, as Redisson's would without `syncedEval`.
/// Waiting is woken by messages, and a semaphore has no expiry to bound a
/// sleep: a message lost while the connection is up (a Redis that drops
/// pub/sub output, say) leaves a waiter asleep until the next one or its
/// deadline; a lost connection wakes every waiter to check again.
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
/// let exports = client.semaphore("doc:semaphore:exports");
/// exports.try_set_available(2).await?; // at most 2 exports at once, fleet-wide
/// let permit = exports.try_acquire_for(1, Duration::from_secs(5)).await?;
/// // ... the export ...
/// permit.release().await?;
/// assert_eq!(exports.available_permits().await?, 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    counter: Counter,
}

impl Semaphore {
    /// The handle [`Client::semaphore`](crate::Client::semaphore) makes.
    pub(crate) fn new(handle: Handle) -> Semaphore {
        Semaphore {
            counter: Counter::new(handle, &count::SEMAPHORE),
        }
    }

    /// The semaphore's name, which is also its Redis key.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:name");
    /// assert_eq!(exports.name(), "doc:semaphore:name"); // also the Redis key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.counter.handle.name
    }

    /// Sets the number of available permits to `permits` if the semaphore
    /// has none set yet (its key is missing), and announces them to
    /// waiters. Returns true if and only if it was set. Redisson's
    /// `trySetPermits` (a semaphore's count is what is available: the
    /// permits taken are nowhere recorded).
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a bad name or
    /// more than [`MAX_PERMITS`](crate::MAX_PERMITS) permits;
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds another
    /// type or a string that is not an integer; connection and server
    /// errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the script runs to completion even if the future is
    /// dropped: the permits are then set (or not) as if the caller had
    /// waited, and the answer is lost.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:try-set");
    /// assert!(exports.try_set_available(4).await?); // set here
    /// assert!(!exports.try_set_available(10).await?); // set already: left as it is
    /// assert_eq!(exports.available_permits().await?, 4);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_set_available(&self, permits: u64) -> Result<bool, Error> {
        let permits = count::check_permits_u64("permits", permits, 0)?;
        let conn = self.counter.conn()?;
        let call = scripts::try_set_permits(&self.counter.handle.name, permits, conn.publish());
        self.counter
            .try_set(conn, call)
            .instrument(self.span("try_set_available", permits))
            .await
    }

    /// Sets the number of available permits to `permits`, whatever it was,
    /// and publishes `permits` on the channel, which wakes up to that many
    /// waiters per client.
    ///
    /// Redisson's plain `RSemaphore` has no such operation (only
    /// `trySetPermits`, which leaves a set count alone): this is its script
    /// without the condition. Permits held at the time are not counted: a
    /// holder that releases later adds to the new count. To move the count
    /// by a difference, use [`add_permits`](Semaphore::add_permits).
    ///
    /// # Errors
    ///
    /// As [`try_set_available`](Semaphore::try_set_available): a key of another
    /// type or a string that is not an integer is left untouched.
    ///
    /// # Cancel safety
    ///
    /// As [`try_set_available`](Semaphore::try_set_available).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:set");
    /// exports.try_set_available(4).await?;
    /// exports.set_available(2).await?; // whatever it was
    /// assert_eq!(exports.available_permits().await?, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_available(&self, permits: u64) -> Result<(), Error> {
        let permits = count::check_permits_u64("permits", permits, 0)?;
        let conn = self.counter.conn()?;
        let call = scripts::set_permits(&self.counter.handle.name, permits, conn.publish());
        // Sent once: a `SET` sent again after other clients' changes would
        // undo them.
        let reply = self.counter.run(conn, call);
        self.changed(reply)
            .instrument(self.span("set_available", permits))
            .await
    }

    /// Adds `delta` available permits, or removes `-delta` when it is
    /// negative, and publishes the new count. A missing key counts as 0, and
    /// the count may go below zero, as in Redisson's `addPermits`: acquires
    /// then wait until releases bring it above the number they ask for.
    /// Sent again until answered, and applied once, as
    /// [`release`](Semaphore::release) is.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) when `delta` is
    /// beyond ±[`MAX_PERMITS`](crate::MAX_PERMITS); otherwise as
    /// [`release`](Semaphore::release).
    ///
    /// # Cancel safety
    ///
    /// As [`release`](Semaphore::release): once polled, the permits are
    /// added exactly once even if the future is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:add");
    /// exports.add_permits(3).await?; // a missing key counts as 0
    /// exports.add_permits(-5).await?; // may go below zero
    /// assert_eq!(exports.available_permits().await?, -2);
    /// assert!(exports.try_acquire(1).await.unwrap_err().is_busy());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn add_permits(&self, delta: i64) -> Result<(), Error> {
        count::check_permits("the change of permits", delta, -(count::MAX_PERMITS as i64))?;
        let conn = self.counter.conn()?;
        let request = self.counter.request();
        let call = scripts::add_permits(
            &self.counter.handle.name,
            delta,
            &request,
            self.counter.answer_ttl_ms(),
            conn.publish(),
        );
        let span = tracing::debug_span!("semaphore", op = "add_permits", key = %self.counter.handle.name, delta);
        let reply = self.counter.run_retried(conn, call);
        self.changed(reply).instrument(span).await
    }

    /// The number of permits available now (a missing key is 0). Negative
    /// when [`add_permits`](Semaphore::add_permits) removed more than there
    /// were, as Redisson allows: that many must be released before any can
    /// be acquired. With other clients acquiring and releasing, it may have
    /// changed by the time it is returned.
    ///
    /// # Errors
    ///
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds a string
    /// that is not an integer, or a key of another type; connection and
    /// server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a read only.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:available");
    /// assert_eq!(exports.available_permits().await?, 0); // never set
    /// exports.try_set_available(3).await?;
    /// let permit = exports.acquire(2).await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn available_permits(&self) -> Result<i64, Error> {
        let conn = self.counter.conn()?;
        self.counter.read(conn).await
    }

    /// Makes one attempt to take `permits` permits, held by the
    /// [`SemaphorePermit`] returned until it is released or dropped.
    ///
    /// # Errors
    ///
    /// [`is_busy`](Error::is_busy) when fewer are available, with nothing
    /// taken;
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a bad name, 0
    /// permits or more than [`MAX_PERMITS`](crate::MAX_PERMITS);
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds another
    /// type or a string that is not an integer; connection and server
    /// errors as they come. Nothing is taken when an error is returned, except as below.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future never takes permits away for good, and neither
    /// does a reply that is lost (the connection dropped, or the reply came
    /// later than the response timeout) after the script ran: every attempt
    /// of one acquire carries the same request id, which the script records
    /// with the permits it takes, for two minutes. A later attempt of
    /// the acquire finds them there and returns them as acquired; an
    /// acquire that ends without them (dropped, busy, or in error) after an
    /// attempt whose answer it never saw withdraws the request in the
    /// background, sent again until answered, which gives back what the
    /// request took (publishing, as any release does) and keeps a late
    /// attempt from taking any. Redisson's `tryAcquire`, which records
    /// nothing, leaks such permits (#36).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:try-acquire");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire(1).await?;
    /// let none_left = exports.try_acquire(1).await.unwrap_err(); // nothing taken
    /// assert!(none_left.is_busy());
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_acquire(&self, permits: u64) -> Result<SemaphorePermit, Error> {
        front::acquire(&self.request(permits), Patience::Once).await
    }

    /// Tries to take `permits` permits until `wait` has passed, held by the
    /// [`SemaphorePermit`] returned.
    ///
    /// After a first failed attempt the waiter subscribes to the
    /// semaphore's channel (shared with the client's other waiters on it),
    /// tries again once the subscription is confirmed, then sleeps until a
    /// message announces permits, trying again at each, and once more at the
    /// end of `wait`. A release by any client, Redisson included, wakes it.
    /// Waiters are not served in order: whoever tries first after a release
    /// takes the permits. A `wait` of zero is
    /// [`try_acquire`](Semaphore::try_acquire).
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Semaphore::try_acquire): busy when the wait ended
    /// with too few available. Lost connections and time-outs are retried
    /// until the wait ends, and then reported as they are; any other error
    /// ends the wait at once.
    ///
    /// # Cancel safety
    ///
    /// As [`try_acquire`](Semaphore::try_acquire): the request of an acquire
    /// dropped with an attempt in flight is withdrawn, which gives back
    /// what it took. Dropping the future also leaves the
    /// channel (unsubscribing if it was the client's last waiter on it) and
    /// hands a wake-up it had received but not used to the next local
    /// waiter.
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
    /// let exports = client.semaphore("doc:semaphore:try-acquire-for");
    /// exports.try_set_available(1).await?;
    /// let permit = exports.try_acquire_for(1, Duration::from_secs(5)).await?;
    ///
    /// // Another task gives the permit back; the waiter wakes at its message.
    /// tokio::spawn(permit.release());
    /// let again = exports.try_acquire_for(1, Duration::from_secs(5)).await?;
    /// again.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_acquire_for(
        &self,
        permits: u64,
        wait: Duration,
    ) -> Result<SemaphorePermit, Error> {
        front::acquire(&self.request(permits), Patience::within(wait)).await
    }

    /// Waits until `permits` permits are taken, as
    /// [`try_acquire_for`](Semaphore::try_acquire_for) with no time limit.
    ///
    /// # Errors
    ///
    /// Never busy; otherwise as [`try_acquire`](Semaphore::try_acquire); lost connections and
    /// time-outs are retried (with backoff up to 256 ms) for as long as it
    /// waits, so bound it with `tokio::time::timeout` if Redis may stay
    /// down.
    ///
    /// # Cancel safety
    ///
    /// As [`try_acquire_for`](Semaphore::try_acquire_for).
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
    /// let exports = client.semaphore("doc:semaphore:acquire");
    /// exports.try_set_available(2).await?;
    /// // Bounded, in case Redis stays down.
    /// let permit = tokio::time::timeout(Duration::from_secs(10), exports.acquire(2))
    ///     .await
    ///     .expect("two permits within 10 s")?;
    /// assert_eq!(exports.available_permits().await?, 0);
    /// permit.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire(&self, permits: u64) -> Result<SemaphorePermit, Error> {
        front::acquire(&self.request(permits), Patience::Forever).await
    }

    /// Gives `permits` permits back and publishes the new available count,
    /// which wakes up to that many waiters per client. Any client may
    /// release, whether it acquired or not, as in Redisson: releasing
    /// permits that were never acquired raises the count. This is the raw
    /// release, for permits taken elsewhere (a
    /// [forgotten](SemaphorePermit::forget) permit, another process, a Java
    /// service); permits this process holds are given back by their
    /// [`SemaphorePermit`].
    ///
    /// A release whose reply does not come (a time-out, a lost connection,
    /// a failover) is sent again, for up to 30 s, under the same request
    /// id, which the script records with its answer for 40 s
    /// (`redlease_request:{name}:<id>`): however many times it reaches
    /// Redis, it gives the permits back once (#37).
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Semaphore::try_acquire); the count is unchanged
    /// when an error comes from Redis itself. A transient error only once
    /// Redis has not answered for 30 s, and the release may then still
    /// arrive, once.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the release runs to completion, sent again until
    /// answered, even if the future is dropped, so a release cancelled on
    /// its way (by a time-out around the caller, say) still gives the
    /// permits back, once. A future dropped before its first poll sends
    /// nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let exports = client.semaphore("doc:semaphore:release");
    /// exports.try_set_available(1).await?;
    /// // Taken here and left taken, to be given back by someone else.
    /// let taken = exports.try_acquire(1).await?.forget();
    /// assert_eq!(exports.available_permits().await?, 0);
    /// exports.release(taken).await?;
    /// assert_eq!(exports.available_permits().await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn release(&self, permits: u64) -> Result<(), Error> {
        let permits = count::check_permits_u64("permits", permits, 1)?;
        let conn = self.counter.conn()?;
        let request = self.counter.request();
        let call = scripts::release(
            &self.counter.handle.name,
            permits,
            &request,
            self.counter.answer_ttl_ms(),
            conn.publish(),
        );
        let reply = self.counter.run_retried(conn, call);
        self.changed(reply)
            .instrument(self.span("release", permits))
            .await
    }

    /// An acquire of `permits`, for the front. It owns a handle (a few
    /// reference counts): a borrowed one would give the acquire's future a
    /// lifetime of its own, which `tokio::spawn`'s `Send` check cannot see
    /// through.
    fn request(&self, permits: u64) -> Request {
        Request {
            semaphore: self.clone(),
            permits,
        }
    }

    /// Runs the acquire script once for acquire request `request`.
    async fn attempt(
        &self,
        conn: &Connection,
        permits: u64,
        request: &str,
    ) -> Result<Attempt<()>, Error> {
        let name = &self.counter.handle.name;
        let call = scripts::acquire(name, permits, request, REQUEST_TTL_MS);
        let taken = match call.run::<Taken>(conn).await {
            Ok(taken) => taken,
            Err(e) => return Err(self.counter.error(conn, e.into()).await),
        };
        tracing::debug!(key = %name, permits, ?taken, "semaphore acquire attempt");
        match taken {
            Taken::Acquired(_) => Ok(Attempt::Acquired(())),
            // Some free, but not enough for this request: a smaller one
            // may get them, so a wake-up that led here is passed on.
            Taken::Available(available) if available > 0 => Ok(Attempt::Short(None)),
            Taken::Available(_) => Ok(Attempt::Busy(None)),
            Taken::NotACount => Err(self.counter.not_a_count()),
        }
    }

    /// Waits for the `reply` of a script that changes the count and answers
    /// the new one.
    async fn changed(
        &self,
        reply: impl std::future::Future<Output = Result<Counted, Error>>,
    ) -> Result<(), Error> {
        match reply.await? {
            Counted(Some(available)) => {
                tracing::debug!(key = %self.counter.handle.name, available, "semaphore count changed");
                Ok(())
            }
            Counted(None) => Err(self.counter.not_a_count()),
        }
    }

    /// The span of operation `op` on `permits` permits.
    fn span(&self, op: &'static str, permits: u64) -> tracing::Span {
        tracing::debug_span!("semaphore", op, key = %self.counter.handle.name, permits)
    }
}

/// An acquire of some permits, as the front drives it.
struct Request {
    semaphore: Semaphore,
    permits: u64,
}

impl front::Primitive for Request {
    type Guard = SemaphorePermit;
    type Contender<'a> = Waiter<'a>;

    const KIND: &'static str = "semaphore";

    fn handle(&self) -> &Handle {
        &self.semaphore.counter.handle
    }

    async fn begin(&self, _: Patience) -> Result<Begin<SemaphorePermit, Waiter<'_>>, Error> {
        let permits = count::check_permits_u64("permits", self.permits, 1)?;
        let handle = &self.semaphore.counter.handle;
        Ok(Begin::Contend(Waiter {
            semaphore: &self.semaphore,
            conn: self.semaphore.counter.conn()?,
            permits,
            request: handle.client.new_owner_field(),
            unsure: false,
            granted: false,
        }))
    }
}

/// How often a waiting acquire attempts again even when no release wakes
/// it: a lost reply's permits, taken late, are then found within this.
const REFRESH: Duration = Duration::from_secs(30);

/// A semaphore's waiting acquire, as the waiting engine drives it.
pub(crate) struct Waiter<'a> {
    semaphore: &'a Semaphore,
    conn: &'a Connection,
    permits: u64,
    /// This acquire's request id, the same for all its attempts.
    request: Arc<str>,
    /// An attempt was sent whose answer never came (it may have taken
    /// permits), or one is on its way.
    unsure: bool,
    /// An attempt answered that the permits are ours.
    granted: bool,
}

impl Drop for Waiter<'_> {
    /// An acquire that ends without its permits, having sent an attempt
    /// whose answer it never saw, withdraws its request in the background
    /// (sent again until answered: withdrawing twice gives back once).
    fn drop(&mut self) {
        if self.granted || !self.unsure {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(key = %self.semaphore.counter.handle.name, "no runtime to withdraw a semaphore request in; permits it may have taken stay taken");
            return;
        };
        let conn = self.conn.clone();
        let name = self.semaphore.counter.handle.name.clone();
        let request = self.request.clone();
        drop(runtime.spawn(async move {
            let withdrawn = crate::backoff::retry_transient(REQUEST_TTL / 2, || async {
                let call = scripts::withdraw(&name, &request, REQUEST_TTL_MS, conn.publish());
                call.run::<i64>(&conn).await.map_err(Error::from)
            })
            .await;
            match withdrawn {
                Ok(gave_back) => tracing::debug!(key = %name, gave_back, "withdrew a semaphore request"),
                Err(e) => tracing::warn!(key = %name, error = %e, "could not withdraw a semaphore request; permits it took stay taken"),
            }
        }));
    }
}

impl Contender for Waiter<'_> {
    type Acquired = SemaphorePermit;

    fn name(&self) -> &str {
        &self.semaphore.counter.handle.name
    }

    fn busy(&self, waited: Duration) -> Error {
        count::too_few_permits(&self.semaphore.counter.handle.name, waited)
    }

    async fn attempt(&mut self) -> Result<Attempt<SemaphorePermit>, Error> {
        // Unsure from the send until the answer (a drop in between leaves
        // it so), and for good once an answer was lost.
        let before = self.unsure;
        self.unsure = true;
        let attempt = match (self.semaphore)
            .attempt(self.conn, self.permits, &self.request)
            .await
        {
            Ok(attempt) => attempt,
            Err(e) => {
                self.unsure = before || e.is_transient();
                return Err(e);
            }
        };
        self.unsure = before;
        self.granted = matches!(attempt, Attempt::Acquired(()));
        Ok(attempt.map(|()| SemaphorePermit::new(self.semaphore.clone(), self.permits)))
    }

    fn channel(&self) -> String {
        layout::semaphore_channel(&self.semaphore.counter.handle.name)
    }

    fn wakes(&self) -> Wakes {
        Wakes::Count
    }

    fn refresh(&self) -> Option<Duration> {
        Some(REFRESH)
    }

    // The next attempt keeps the request id: it finds what an attempt whose
    // reply was lost took (see `try_acquire`'s cancel safety).
    fn restart(&mut self) {}

    async fn give_up(&mut self) {}
}

/// Permits to give back: a [`SemaphorePermit`] dropped unreleased.
#[derive(Clone)]
struct GiveBack {
    conn: Connection,
    name: Arc<str>,
    permits: u64,
    /// The release's request id, the same for each time it is sent.
    request: Arc<str>,
    /// How long it is sent again, and how long its record lasts (ms).
    retry_for: Duration,
    answer_ttl_ms: u64,
}

impl GiveBack {
    fn of(semaphore: &Semaphore, permits: u64) -> GiveBack {
        GiveBack {
            conn: semaphore.counter.handle.client.conn().clone(),
            name: semaphore.counter.handle.name.clone(),
            permits,
            request: semaphore.counter.request(),
            retry_for: semaphore.counter.handle.client.retry_writes_for(),
            answer_ttl_ms: semaphore.counter.answer_ttl_ms(),
        }
    }

    /// Releases the permits in the background, sent again until answered
    /// for as long as the client retries writes; without a runtime (it is shutting
    /// down), they stay taken.
    fn run(&self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(key = %self.name, permits = self.permits, "no runtime to give back permits in; they stay taken");
            return;
        };
        let GiveBack {
            conn,
            name,
            permits,
            request,
            retry_for,
            answer_ttl_ms,
        } = self.clone();
        drop(handle.spawn(async move {
            let call = scripts::release(&name, permits, &request, answer_ttl_ms, conn.publish());
            // Already a task of its own: no second one to run it in.
            match count::send_until_answered::<Counted>(&conn, &call, retry_for).await {
                Ok(_) => tracing::debug!(key = %name, permits, "gave back the permits of a dropped permit"),
                Err(e) => tracing::warn!(key = %name, permits, error = %e, "could not give back the permits of a dropped permit; they stay taken"),
            }
        }));
    }
}
