//! [`Election`], [`Leadership`] and [`Changes`]: the blocking twins of the
//! leader election, the leadership it grants, and its observer.

use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};

use crate::election::Leader;
use crate::error::Error;
use crate::lost::LostReason;

twin! {
    /// A leader election on one name ([`crate::Election`]); made by
    /// [`Client::election`](super::Client::election).
    handle Election { "let election = client.election(name);" } example {
        "let leadership = election.campaign(\"10.0.0.7:8080\")?;"
        "assert_eq!(election.leader()?.unwrap().value.as_deref(), Some(\"10.0.0.7:8080\"));"
        "leadership.resign()?;"
    }

    /// the election's name.
    fn name(&self) -> &str { "assert_eq!(election.name(), name);" }
    /// campaigns until this process leads, waiting for as long as it takes.
    async fn campaign(&self, value: &str) -> Leadership {
        "let leadership = election.campaign(\"a\")?; // nobody led: at once"
        "assert_eq!(leadership.value(), \"a\");"
    }
    /// one attempt; [`is_busy`](crate::Error::is_busy) when another leads.
    async fn try_campaign(&self, value: &str) -> Leadership {
        "let leadership = election.try_campaign(\"a\")?;"
        "assert!(election.try_campaign(\"b\").unwrap_err().is_busy());"
    }
    /// campaigns for at most `wait`.
    async fn campaign_for(&self, value: &str, wait: Duration) -> Leadership {
        "let leadership = election.campaign_for(\"a\", Duration::from_secs(1))?;"
        "assert!(election.campaign_for(\"b\", Duration::from_millis(50)).unwrap_err().is_busy());"
    }
    /// who leads now; `None` when nobody does.
    async fn leader(&self) -> Option<Leader> {
        "assert_eq!(election.leader()?, None);"
        "let leadership = election.try_campaign(\"a\")?;"
        "assert_eq!(election.leader()?.unwrap().epoch, leadership.epoch());"
    }
    /// The blocking twin of [`crate::Election::observe`]: the changes of
    /// leader, each asked for with [`Changes::next`].
    own fn observe(&self) -> Changes {
        Changes {
            stream: Box::pin(self.inner.observe()),
        }
    } {
        "let mut changes = election.observe();"
        "assert_eq!(changes.next(Duration::from_secs(5))?, Some(None)); // nobody leads"
        "let leadership = election.campaign(\"a\")?;"
        "let now = changes.next(Duration::from_secs(5))?.unwrap().unwrap();"
        "assert_eq!(now.value.as_deref(), Some(\"a\"));"
    }
}

twin! {
    /// A leadership ([`crate::Leadership`]). Give it up with
    /// [`resign`](Leadership::resign); dropped, it resigns before Drop
    /// returns, waiting at most
    /// [`DROP_RELEASE_WAIT`](super::DROP_RELEASE_WAIT).
    #[must_use = "dropping the leadership resigns it at once; hold it while leading and call `resign()`"]
    guard Leadership {
        "let election = client.election(name);"
        "let leadership = election.campaign(\"a\")?;"
    } example {
        "// ... lead, checking `leadership.is_lost()` before each step ..."
        "leadership.resign()?;"
    }

    /// the election's name.
    fn name(&self) -> &str { "assert_eq!(leadership.name(), name);" }
    /// what this leadership campaigned with.
    fn value(&self) -> &str { "assert_eq!(leadership.value(), \"a\");" }
    /// the owner field the lock is held with.
    fn owner(&self) -> &str { "assert!(leadership.owner().starts_with(&format!(\"{}:\", client.id())));" }
    /// the leadership's epoch, its fencing token.
    fn epoch(&self) -> Option<u64> { "assert!(leadership.epoch().is_some());" }
    /// the epoch, under the name every guard answers it by.
    fn fencing_token(&self) -> Option<u64> { "assert_eq!(leadership.fencing_token(), leadership.epoch());" }
    /// `None`: a leadership is kept by the watchdog.
    fn expires_at(&self) -> Option<Instant> { "assert_eq!(leadership.expires_at(), None);" }
    /// asks Redis whether this process still leads.
    async fn is_leading(&self) -> bool { "assert!(leadership.is_leading()?);" }
    /// `Some` with the reason once the leadership is lost, `None` if it is
    /// still held when the time is up.
    wait fn lost(&self) -> LostReason {
        "assert_eq!(leadership.lost(Duration::from_millis(20))?, None);"
    }
    /// true if the leadership is known or must be assumed lost.
    fn is_lost(&self) -> bool { "assert!(!leadership.is_lost());" }
    /// gives the leadership up.
    release fn resign(self) {
        "leadership.resign()?;"
        "assert_eq!(election.leader()?, None);"
    }
}

/// The changes of an election's leader ([`Election::observe`]).
pub struct Changes {
    stream: Pin<Box<dyn Stream<Item = Result<Option<Leader>, Error>> + Send>>,
}

impl Changes {
    /// The next change, waiting at most `timeout`: `Some(None)` when nobody
    /// leads any more, `Some(Some(leader))` for a new leader, `None` when
    /// nothing changed within `timeout`. The first call answers who leads
    /// now.
    ///
    /// # Errors
    ///
    /// A failed read, as [`crate::Election::leader`] gives it (observing
    /// goes on at the next call); [`is_runtime`](crate::Error::is_runtime)
    /// inside a Tokio runtime.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Option<Leader>>, Error> {
        let next = super::within("Changes::next", timeout, self.stream.next())?;
        match next {
            None => Ok(None),
            Some(Some(item)) => item.map(Some),
            Some(None) => Ok(None),
        }
    }
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").finish_non_exhaustive()
    }
}
