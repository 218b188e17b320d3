//! [`CountDownLatch`]: Redisson's `RCountDownLatch`, "wait until all N are
//! done" across processes. Waiting is the waiting engine's
//! ([`crate::wait`]).

use std::time::Duration;

use tracing::Instrument;

use crate::connection::Connection;
use crate::count;
use crate::count::Counter;
use crate::error::Error;
use crate::front::{self, Begin, Patience};
use crate::layout;
use crate::pubsub::Wakes;
use crate::scripts::latch::{self as scripts, Left};
use crate::shared::Handle;
use crate::wait::{Attempt, Contender};

/// A handle to one named count-down latch, Redisson's `RCountDownLatch`;
/// made by [`Client::count_down_latch`](crate::Client::count_down_latch).
///
/// The latch is armed with a count ([`try_set_count`](CountDownLatch::try_set_count)),
/// counted down by whoever finishes a part of the work
/// ([`count_down`](CountDownLatch::count_down)), and opens when the count
/// reaches zero: every waiter ([`wait_for`](CountDownLatch::wait_for),
/// [`wait`](CountDownLatch::wait)) in every client then returns. An open
/// latch can be armed again. The handle is cheap to clone and holds nothing
/// in Redis by itself.
///
/// # Layout
///
/// Redisson's, so that Java services on the same name share the latch: the
/// string key `name` holds the count still to go (a missing key is 0:
/// open; the key is deleted when the count reaches zero), and
/// `redisson_countdownlatch__channel__{name}` ([`layout::latch_channel`])
/// carries `0` when the latch opens and `1` when it is armed or deleted.
/// `0` wakes every waiter; `1` none.
///
/// # On a cluster
///
/// Redisson's channel name always adds braces around the name, so for a
/// name with a hash tag of its own (`job:{42}:parts`) the channel lies in
/// another slot than the key, and Redisson's scripts fail there with
/// `CROSSSLOT`. Such a name is refused with an error for which
/// [`is_invalid_argument`](Error::is_invalid_argument) is true on a cluster
/// connection; names without braces work everywhere.
///
/// # Limits
///
/// Counts are at most 2^53 - 1 ([`MAX_COUNT`](crate::MAX_COUNT)). A latch never waits for
/// replicas, even when the client
/// [requires them](crate::ClientBuilder::require_replicas). A deleted latch
/// reads as open: its deletion publishes `0`, the opening message, which
/// wakes the waiters of every redlease and Redisson client to see it open
/// (Redisson's own `delete` publishes `1`, on which its waiters sleep on).
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
/// let shards = client.count_down_latch("doc:latch:shards");
/// shards.try_set_count(2).await?; // two shards to import
/// for _ in 0..2 {
///     let done = shards.clone();
///     tokio::spawn(async move {
///         // ... import one shard ...
///         done.count_down().await
///     });
/// }
/// shards.wait_for(Duration::from_secs(10)).await?; // both done
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct CountDownLatch {
    counter: Counter,
}

impl CountDownLatch {
    /// The handle [`Client::count_down_latch`](crate::Client::count_down_latch) makes.
    pub(crate) fn new(handle: Handle) -> CountDownLatch {
        CountDownLatch {
            counter: Counter::new(handle, &count::LATCH),
        }
    }

    /// The latch's name, which is also its Redis key.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let shards = client.count_down_latch("doc:latch:name");
    /// assert_eq!(shards.name(), "doc:latch:name"); // also the Redis key
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.counter.handle.name
    }

    /// Arms the latch with `count` if it is open (its key is missing), and
    /// publishes `1`. Returns true if and only if it was armed; false when
    /// it is armed already (the count is left as it is). Redisson's
    /// `trySetCount`.
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) for a bad name
    /// (see "On a cluster" above), a `count` of 0 (a latch at zero is open:
    /// there is nothing to arm) or above [`MAX_COUNT`](crate::MAX_COUNT);
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds another
    /// type or a string that is not an integer; connection and server
    /// errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the script runs to completion even if the future is
    /// dropped: the latch is then armed (or not) as if the caller had
    /// waited, and the answer is lost.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let shards = client.count_down_latch("doc:latch:try-set");
    /// assert!(shards.try_set_count(3).await?); // armed here
    /// assert!(!shards.try_set_count(5).await?); // armed already: left as it is
    /// assert_eq!(shards.count().await?, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_set_count(&self, count: u64) -> Result<bool, Error> {
        let count = count::check_count("count", count, 1)?;
        let conn = self.counter.conn()?;
        let call = scripts::try_set_count(&self.counter.handle.name, count, conn.publish());
        let span = tracing::debug_span!("latch", op = "try_set_count", key = %self.counter.handle.name, count);
        self.counter.try_set(conn, call).instrument(span).await
    }

    /// Counts the latch down by one; at zero the key is deleted and `0` is
    /// published, which wakes every waiter. Counting down an open latch
    /// does nothing (and publishes nothing), as in Redisson.
    ///
    /// A count-down whose reply does not come (a time-out, a lost
    /// connection, a failover) is sent again, for up to 30 s, under the
    /// same request id, which the script records with its answer for 40 s (`redlease_request:{name}:<id>`): however many times it
    /// reaches Redis, it counts once (#37).
    ///
    /// # Errors
    ///
    /// As [`try_set_count`](CountDownLatch::try_set_count), save for the
    /// count's bounds; a transient error only once Redis has not answered
    /// for 30 s, and the count-down may then still arrive, once.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the count-down runs to completion, sent again until
    /// answered, even if the future is dropped, so it counts exactly once;
    /// a future dropped before its first poll sends nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let shards = client.count_down_latch("doc:latch:count-down");
    /// shards.try_set_count(2).await?;
    /// shards.count_down().await?;
    /// assert_eq!(shards.count().await?, 1);
    /// shards.count_down().await?; // zero: open, and every waiter wakes
    /// shards.count_down().await?; // an open latch stays open
    /// assert_eq!(shards.count().await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn count_down(&self) -> Result<(), Error> {
        let conn = self.counter.conn()?;
        let request = self.counter.request();
        let call = scripts::count_down(
            &self.counter.handle.name,
            &request,
            self.counter.answer_ttl_ms(),
            conn.publish(),
        );
        let span =
            tracing::debug_span!("latch", op = "count_down", key = %self.counter.handle.name);
        match self
            .counter
            .run_retried::<Left>(conn, call)
            .instrument(span)
            .await?
        {
            Left(Some(left)) => {
                tracing::debug!(key = %self.counter.handle.name, left, "latch counted down");
                Ok(())
            }
            Left(None) => Err(self.counter.not_a_count()),
        }
    }

    /// The count still to go: 0 when the latch is open.
    ///
    /// # Errors
    ///
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds a string
    /// that is not an integer, a negative one (which no count-down leaves
    /// behind: it deletes the key at zero), or a key of another type;
    /// connection and server errors as they come.
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
    /// let shards = client.count_down_latch("doc:latch:count");
    /// assert_eq!(shards.count().await?, 0); // never armed: open
    /// shards.try_set_count(4).await?;
    /// assert_eq!(shards.count().await?, 4);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn count(&self) -> Result<u64, Error> {
        let conn = self.counter.conn()?;
        let count = self.counter.read(conn).await?;
        u64::try_from(count).map_err(|_| {
            Error::not_a_count(
                &self.counter.handle.name,
                format!(
                    "expected the count of latch {:?} to be at least 0, but found {count}",
                    self.counter.handle.name
                ),
            )
        })
    }

    /// Waits until the latch is open, at most `wait`: `Ok` if it is open
    /// (it was at once, or it opened in time), a busy error if it was still
    /// armed when `wait` ran out (Redisson's `await(timeout)` answers false
    /// there).
    ///
    /// After a first check the waiter subscribes to the latch's channel
    /// (shared with the client's other waiters on it), checks again once the
    /// subscription is confirmed, then sleeps until `0` is published,
    /// checking again at each, and once more at the end of `wait`. So an
    /// opening between its first check and its subscription, or while it is
    /// checking, is not slept through; every waiter of every client wakes at
    /// the opening, whoever counted down, Redisson included. A negative
    /// count (set by someone else) counts as open, as in Redisson.
    ///
    /// # Errors
    ///
    /// [`is_busy`](Error::is_busy) when the latch was still armed at the
    /// end; [`is_wrong_type`](Error::is_wrong_type) (including a string
    /// that is not an integer) and a bad name end the wait; lost
    /// connections and time-outs are retried until `wait` has passed, and
    /// then reported as they are.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: waiting writes nothing. Dropping the future leaves the
    /// channel, unsubscribing if it was the client's last waiter on it.
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
    /// let shards = client.count_down_latch("doc:latch:wait-for");
    /// shards.try_set_count(1).await?;
    /// let armed = shards.wait_for(Duration::from_millis(50)).await.unwrap_err();
    /// assert!(armed.is_busy()); // still armed
    ///
    /// let last = shards.clone();
    /// tokio::spawn(async move { last.count_down().await });
    /// shards.wait_for(Duration::from_secs(10)).await?; // opened in time
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_for(&self, wait: Duration) -> Result<(), Error> {
        front::acquire(self, Patience::within(wait)).await
    }

    /// Waits until the latch is open, with no time limit, as
    /// [`wait_for`](CountDownLatch::wait_for).
    ///
    /// # Errors
    ///
    /// As [`wait_for`](CountDownLatch::wait_for); lost connections and
    /// time-outs are retried (with backoff up to 256 ms) for as long as it
    /// waits, so bound it with `tokio::time::timeout` if Redis may stay
    /// down.
    ///
    /// # Cancel safety
    ///
    /// As [`wait_for`](CountDownLatch::wait_for).
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
    /// let shards = client.count_down_latch("doc:latch:wait");
    /// shards.try_set_count(1).await?;
    /// let last = shards.clone();
    /// tokio::spawn(async move { last.count_down().await });
    /// // Bounded, in case Redis stays down.
    /// tokio::time::timeout(Duration::from_secs(10), shards.wait())
    ///     .await
    ///     .expect("the latch opens within 10 s")?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait(&self) -> Result<(), Error> {
        front::acquire(self, Patience::Forever).await
    }

    /// Deletes the latch and publishes `0`, the opening message (where
    /// Redisson's `delete` publishes `1`). Returns true if and only if it
    /// existed (it was armed). A deleted latch reads as open, and the
    /// waiters of redlease and Redisson clients wake to see it.
    ///
    /// # Errors
    ///
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds another
    /// type, which is then left alone rather than deleted; a bad name;
    /// connection and server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Once polled, the deletion runs to completion even if the future is
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// let client = redlease::Client::connect(&url).await?;
    /// let shards = client.count_down_latch("doc:latch:delete");
    /// shards.try_set_count(3).await?;
    /// assert!(shards.delete().await?); // it was armed
    /// assert!(!shards.delete().await?);
    /// assert_eq!(shards.count().await?, 0); // deleted reads as open
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete(&self) -> Result<bool, Error> {
        let conn = self.counter.conn()?;
        let call = scripts::delete(&self.counter.handle.name, conn.publish());
        let span = tracing::debug_span!("latch", op = "delete", key = %self.counter.handle.name);
        self.counter.run::<bool>(conn, call).instrument(span).await
    }
}

/// Waiting for the latch to open, as the front drives it.
impl front::Primitive for CountDownLatch {
    type Guard = ();
    type Contender<'a> = Waiter<'a>;

    const KIND: &'static str = "latch";

    fn handle(&self) -> &Handle {
        &self.counter.handle
    }

    async fn begin(&self, _: Patience) -> Result<Begin<(), Waiter<'_>>, Error> {
        Ok(Begin::Contend(Waiter {
            latch: self,
            conn: self.counter.conn()?,
        }))
    }
}

/// A waiter for a latch to open, as the waiting engine drives it: "busy"
/// while the count is above zero.
pub(crate) struct Waiter<'a> {
    latch: &'a CountDownLatch,
    conn: &'a Connection,
}

impl Contender for Waiter<'_> {
    type Acquired = ();

    fn name(&self) -> &str {
        &self.latch.counter.handle.name
    }

    fn busy(&self, waited: Duration) -> Error {
        Error::busy(&self.latch.counter.handle.name, waited).reworded(format!(
            "latch {} is still armed (waited {})",
            crate::error::quoted(&self.latch.counter.handle.name),
            crate::error::human(waited)
        ))
    }

    async fn attempt(&mut self) -> Result<Attempt<()>, Error> {
        if self.latch.counter.read(self.conn).await? > 0 {
            Ok(Attempt::Busy(None))
        } else {
            Ok(Attempt::Acquired(()))
        }
    }

    fn channel(&self) -> String {
        layout::latch_channel(&self.latch.counter.handle.name)
    }

    fn wakes(&self) -> Wakes {
        Wakes::All
    }

    fn refresh(&self) -> Option<Duration> {
        None
    }

    // A check writes nothing: there is nothing to start over from or
    // take back.
    fn restart(&mut self) {}

    async fn give_up(&mut self) {}
}
