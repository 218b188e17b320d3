//! Bugs planted for the judge (`crates/redlease-judge`, #36): a checker
//! earns trust by failing, so a build with `--cfg redlease_plant` carries
//! known bugs, one switched on per process by `REDLEASE_PLANT=<name>`, and
//! the judge must catch each. Without that cfg (every build users make)
//! [`on`] is the constant `false` and no script is rewritten; with it, a
//! release build refuses to compile, so no release can carry a plant.
//!
//! The bugs are the classic ones of hand-rolled locks: a release or a
//! renewal that does not check the owner, a fencing counter that begins
//! again at 1 after Redis lost it, an acquire that takes a held name; and
//! one of a client that hands a failover's errors to its caller, and one of
//! an operators' gc that takes what a live client holds. Most are
//! edits of the Lua scripts (made in [`rewrite`], each asserting that its
//! text is there, so a plant cannot silently stop applying); the string
//! layout's `SET NX` and the retries are Rust code, and ask [`on`].

#[cfg(all(redlease_plant, not(debug_assertions)))]
compile_error!("the planted bugs (--cfg redlease_plant) are for the judge's debug builds only");

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(redlease_plant), allow(dead_code))]
pub(crate) enum Plant {
    /// Releases delete the lock whoever holds it.
    ReleaseWithoutOwnerCheck,
    /// Renewals extend the lock whoever holds it (or nobody), and say it
    /// is ours.
    RenewWithoutOwnerCheck,
    /// The fencing counter is not seeded from the clock when missing.
    FenceNotSeeded,
    /// An acquire takes a name another owner holds.
    AcquireTakesHeld,
    /// A failover's errors (`MOVED`, `CLUSTERDOWN`, ...) reach the caller
    /// at once: waiting acquires and releases do not send again a command
    /// the server said it did not run (#37).
    FailoverErrorsNotRetried,
    /// The operators' gc gives back an expirable semaphore's permits
    /// whatever their lease, live ones too (#40).
    GcReclaimsLivePermits,
    /// The operators' gc removes a fair queue's waiters whatever their
    /// deadline, live ones too (#40).
    GcPrunesLiveWaiters,
}

/// Whether `plant` is switched on in this process.
#[cfg(not(redlease_plant))]
pub(crate) const fn on(_plant: Plant) -> bool {
    false
}

#[cfg(redlease_plant)]
pub(crate) use planted::{on, rewrite};

#[cfg(redlease_plant)]
mod planted {
    use std::sync::OnceLock;

    use super::Plant;

    impl Plant {
        fn name(self) -> &'static str {
            match self {
                Plant::ReleaseWithoutOwnerCheck => "release-without-owner-check",
                Plant::RenewWithoutOwnerCheck => "renew-without-owner-check",
                Plant::FenceNotSeeded => "fence-not-seeded",
                Plant::AcquireTakesHeld => "acquire-takes-held",
                Plant::FailoverErrorsNotRetried => "failover-errors-not-retried",
                Plant::GcReclaimsLivePermits => "gc-reclaims-live-permits",
                Plant::GcPrunesLiveWaiters => "gc-prunes-live-waiters",
            }
        }

        /// The script edits: in the scripts named, `from` becomes `to`.
        fn edits(self) -> &'static [(&'static [&'static str], &'static str, &'static str)] {
            match self {
                Plant::ReleaseWithoutOwnerCheck => &[
                    (
                        &["release", "fair_release"],
                        "if type(count) ~= 'string' then\n    return nil\nend\n",
                        "if type(count) ~= 'string' then\n    count = '1'\nend\n",
                    ),
                    (
                        &["string_release"],
                        "if redis.pcall('get', KEYS[1]) ~= ARGV[1] then\n    return nil\nend\n",
                        "",
                    ),
                ],
                Plant::RenewWithoutOwnerCheck => &[(
                    &["renew", "renew_on_node"],
                    "local function held(key, owner)\n",
                    "local function held(key, owner)\n    if true then return 1 end\n",
                )],
                Plant::FenceNotSeeded => &[(
                    &["acquire", "string_fence", "fair_acquire"],
                    "    if token < 1000000000000000 then\n",
                    "    if false then\n",
                )],
                Plant::AcquireTakesHeld => &[(
                    &["acquire"],
                    "if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n",
                    "if true then\n",
                )],
                // A Rust change: asks `on`.
                Plant::FailoverErrorsNotRetried => &[],
                Plant::GcReclaimsLivePermits => &[(
                    &["gc_permits"],
                    "return reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], nil)\n",
                    "now = 1e15\nreturn reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], nil)\n",
                )],
                Plant::GcPrunesLiveWaiters => &[(
                    &["gc_fair"],
                    "    if deadline ~= false and tonumber(deadline) > now then break end\n",
                    "",
                )],
            }
        }
    }

    const ALL: [Plant; 7] = [
        Plant::ReleaseWithoutOwnerCheck,
        Plant::RenewWithoutOwnerCheck,
        Plant::FenceNotSeeded,
        Plant::AcquireTakesHeld,
        Plant::FailoverErrorsNotRetried,
        Plant::GcReclaimsLivePermits,
        Plant::GcPrunesLiveWaiters,
    ];

    /// The plants `REDLEASE_PLANT` names (comma-separated), read once.
    fn active() -> &'static [Plant] {
        static ACTIVE: OnceLock<Vec<Plant>> = OnceLock::new();
        ACTIVE.get_or_init(|| {
            let wanted = std::env::var("REDLEASE_PLANT").unwrap_or_default();
            ALL.into_iter()
                .filter(|p| wanted.split(',').any(|w| w.trim() == p.name()))
                .collect()
        })
    }

    pub(crate) fn on(plant: Plant) -> bool {
        active().contains(&plant)
    }

    /// Script `name`'s `source` with the active plants' edits.
    ///
    /// # Panics
    ///
    /// When an edit's text is missing from a script it names: the plant
    /// would not be there.
    pub(crate) fn rewrite(name: &str, source: String) -> String {
        let mut source = source;
        for plant in active() {
            for (scripts, from, to) in plant.edits() {
                if scripts.contains(&name) {
                    assert!(
                        source.contains(from),
                        "plant {}: script {name} no longer has {from:?}",
                        plant.name()
                    );
                    source = source.replace(from, to);
                }
            }
        }
        source
    }
}
