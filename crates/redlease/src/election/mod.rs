//! Leader election on a lock: [`Election`], the [`Leadership`] it grants,
//! the [`Leader`] anyone can ask about, and the observers of its changes.
//!
//! * `mod.rs`: the handle: campaign, ask who leads, observe.
//! * `leadership.rs`: the guard of a leadership, a lock guard with an
//!   epoch and a resignation.
//! * `observe.rs`: the observer, woken by the lock's release message and
//!   the election's own announcement.
//!
//! Who leads is who holds the lock of the election's name, in either
//! layout, so a Java service holding that lock with Redisson's `RLock`
//! leads as far as redlease is concerned (with no value), and excludes
//! redlease campaigners as any holder does. A redlease leader adds a record
//! beside the lock (its value and epoch) and announces itself; see
//! [`crate::scripts`]'s `election.rs` for the layout.

mod leadership;
mod observe;

use std::time::Duration;

use futures_util::Stream;

use crate::error::Error;
use crate::guard::LockGuard;
use crate::kind::Kind;
use crate::lock::Lock;
use crate::scripts::election::{self as scripts, Leads};
use crate::shared::{Handle, Shared};

pub use leadership::Leadership;

/// A leader election on one name: who holds the lock `name` leads.
/// Made by [`Client::election`](crate::Client::election); cheap to clone.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let url = redlease_testkit::RedisServer::shared().url();
/// let client = redlease::Client::connect(&url).await?;
/// let election = client.election("doc:election:scheduler");
/// let leadership = election.campaign("10.0.0.7:8080").await?;
/// // ... lead: run the scheduler, until `leadership.lost()` resolves ...
/// let leader = election.leader().await?.expect("we lead");
/// assert_eq!(leader.value.as_deref(), Some("10.0.0.7:8080"));
/// assert_eq!(leader.epoch, leadership.epoch());
/// leadership.resign().await?;
/// assert_eq!(election.leader().await?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Election {
    client: Shared,
    name: String,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Who leads an election now ([`Election::leader`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The leader's owner field in the lock (`<client id>:<n>` for
    /// redlease, `<uuid>:<thread id>` for Redisson).
    pub owner: String,
    /// What the leader campaigned with; `None` for a holder that is no
    /// redlease leader (a Redisson `RLock`, a plain lock of the same name),
    /// or a redlease leader in the moment between its acquire and its
    /// announcement.
    pub value: Option<String>,
    /// The leadership's epoch, its fencing token: greater for every later
    /// leadership of the name. `None` when the leader has no record, or
    /// campaigned with fencing off.
    pub epoch: Option<u64>,
    /// How long the leader's lock lives if it is not renewed; `None` for
    /// a lock without expiry.
    pub ttl: Option<Duration>,
}

impl Leader {
    fn from_seen(seen: scripts::Seen) -> Leader {
        Leader {
            owner: seen.owner,
            value: seen.value,
            epoch: seen.epoch,
            ttl: u64::try_from(seen.ttl_ms).ok().map(Duration::from_millis),
        }
    }

    /// The same leadership: owner, value and epoch (the time to live moves
    /// on its own).
    pub(crate) fn same(&self, other: &Leader) -> bool {
        self.owner == other.owner && self.value == other.value && self.epoch == other.epoch
    }
}

impl Election {
    pub(crate) fn new(client: Shared, name: String) -> Election {
        Election { client, name }
    }

    /// The election's lock, in the client's layout.
    fn lock(&self) -> Lock {
        let handle = Handle::new(self.client.clone(), self.name.as_str().into());
        Lock::new(handle, Kind::plain(self.client.layout()))
    }

    /// The election's name: the name of its lock.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Campaigns until this process leads, waiting for as long as it
    /// takes; the leadership lasts until [`Leadership::resign`], its
    /// guard's drop, or its loss ([`Leadership::lost`]). Its lock is kept
    /// by the client's watchdog.
    ///
    /// `value` is what [`leader`](Election::leader) and observers show for
    /// this leadership: an address, a host name, anything the followers
    /// need (at most the lock name limit).
    ///
    /// # Errors
    ///
    /// [`is_invalid_argument`](Error::is_invalid_argument) for an invalid
    /// name or a value over [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes;
    /// connection and server errors as a lock's `lock()` gives them; when
    /// the lock is lost before the announcement,
    /// [`is_not_owner`](Error::is_not_owner) (the lock is released).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe as [`Lock::lock`](crate::Lock::lock): dropped while
    /// waiting, nothing is left; dropped after the lock was taken, the
    /// guard's drop releases it in the background.
    pub async fn campaign(&self, value: &str) -> Result<Leadership, Error> {
        let lock = self.lock();
        check_value(value)?;
        let guard = lock.lock().await?;
        self.announce(guard, value).await
    }

    /// One attempt: leads now if nobody does, else an error for which
    /// [`is_busy`](Error::is_busy) is true.
    ///
    /// # Errors
    ///
    /// As [`campaign`](Election::campaign), and busy.
    ///
    /// # Cancel safety
    ///
    /// As [`campaign`](Election::campaign).
    pub async fn try_campaign(&self, value: &str) -> Result<Leadership, Error> {
        let lock = self.lock();
        check_value(value)?;
        let guard = lock.try_lock().await?;
        self.announce(guard, value).await
    }

    /// Campaigns for at most `wait`: an error for which
    /// [`is_busy`](Error::is_busy) is true if another still leads then.
    ///
    /// # Errors
    ///
    /// As [`try_campaign`](Election::try_campaign).
    ///
    /// # Cancel safety
    ///
    /// As [`campaign`](Election::campaign).
    pub async fn campaign_for(&self, value: &str, wait: Duration) -> Result<Leadership, Error> {
        let lock = self.lock();
        check_value(value)?;
        let guard = lock.try_lock_for(wait).await?;
        self.announce(guard, value).await
    }

    /// Writes the record of the leadership `guard` holds, and announces it.
    async fn announce(&self, guard: LockGuard, value: &str) -> Result<Leadership, Error> {
        let conn = self.client.conn();
        let call = scripts::announce(
            &self.name,
            guard.owner(),
            value,
            guard.fencing_token(),
            conn.publish().command(),
        );
        // Sent again while the reply may have been lost: it writes the same
        // record each time, and only while the lock is ours.
        let written = crate::backoff::retry_while(
            self.client.retry_writes_for(),
            Error::is_transient,
            || async {
                call.run::<i64>(conn)
                    .await
                    .map_err(|e| Error::from(e).with_key(&self.name))
            },
        )
        .await?;
        if written != 1 {
            // Lost between the acquire and now: not a leadership.
            drop(guard);
            return Err(Error::not_owner(&self.name));
        }
        crate::metrics::elected(&self.name);
        Ok(Leadership::new(
            guard,
            value.to_owned(),
            self.client.clone(),
        ))
    }

    /// Who leads now, read in one step: the lock's holder, with its value
    /// and epoch when it is a redlease leader; `None` when nobody holds the
    /// lock.
    ///
    /// # Errors
    ///
    /// [`is_wrong_type`](Error::is_wrong_type) when the key holds something
    /// that is no lock; connection and server errors as they come.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn leader(&self) -> Result<Option<Leader>, Error> {
        let reply = scripts::leader(&self.name)
            .run::<Leads>(self.client.conn())
            .await;
        let Leads(seen) = reply.map_err(|e| Error::from(e).with_key(&self.name))?;
        Ok(seen.map(Leader::from_seen))
    }

    /// The changes of leader, as they happen: first who leads now, then
    /// each new leader or `None` when nobody leads. Woken by the lock's
    /// release message (a Redisson leader's release too) and by a new
    /// redlease leader's announcement, not polled: a leader that dies
    /// without a release is seen gone when its lock expires, and a holder
    /// that announces nothing (a Redisson `RLock`) is seen at the next look,
    /// at most [`OBSERVE_IDLE`] after it took the lock.
    ///
    /// A read that fails is given as an `Err` item, and observing goes on.
    ///
    /// # Cancel safety
    ///
    /// Dropping the stream leaves the election's channels.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redlease::Error> {
    /// # let url = redlease_testkit::RedisServer::shared().url();
    /// use futures_util::StreamExt;
    ///
    /// let client = redlease::Client::connect(&url).await?;
    /// let election = client.election("doc:election:observe");
    /// let mut changes = Box::pin(election.observe());
    /// assert_eq!(changes.next().await.unwrap()?, None); // nobody leads yet
    /// let leadership = election.campaign("a").await?;
    /// let now = changes.next().await.unwrap()?.unwrap();
    /// assert_eq!(now.value.as_deref(), Some("a"));
    /// leadership.resign().await?;
    /// assert_eq!(changes.next().await.unwrap()?, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn observe(&self) -> impl Stream<Item = Result<Option<Leader>, Error>> + Send + 'static {
        observe::Observer::new(self.clone()).into_stream()
    }

    pub(crate) fn client(&self) -> &Shared {
        &self.client
    }
}

/// How long an observer with nobody leading waits before it looks again,
/// for a holder that announces nothing (a Redisson `RLock` taking the
/// name): redlease leaders announce themselves and are seen at once.
pub const OBSERVE_IDLE: Duration = Duration::from_secs(2);

/// A value is shown and stored as given: bounded as a name is.
fn check_value(value: &str) -> Result<(), Error> {
    if value.len() > crate::name::MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "a campaign's value is at most {} bytes, not {}",
            crate::name::MAX_NAME_LEN,
            value.len()
        )));
    }
    Ok(())
}
