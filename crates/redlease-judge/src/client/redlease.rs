//! redlease's own clients: the async API, driven on a runtime of its own
//! (whose worker runs the watchdog between calls), and the blocking API,
//! called outside any runtime. One implementation of [`Prims`] for both,
//! written once by the macro `redlease_prims!`: the blocking API mirrors the async
//! one type for type.

use std::time::Duration;

use super::{ClientArgs, Failure, Held, Prims};
use crate::workload::Workload;

/// The async API's types.
mod a {
    pub(super) use redlease::{
        Client, Leadership, LockGuard, MultiGuard, PermitGuard, SemaphorePermit,
    };
}

/// The blocking API's types.
mod b {
    pub(super) use redlease::blocking::{
        Client, Leadership, LockGuard, MultiGuard, PermitGuard, SemaphorePermit,
    };
}

/// A hold of either API's `$m` types.
pub(crate) enum Holding<L, M, P, X, E> {
    Lock(L),
    Multi(M),
    Permit(P),
    Xpermit(X),
    Leader(E),
}

pub(crate) struct AsyncPrims {
    rt: tokio::runtime::Runtime,
    client: a::Client,
    wait: Duration,
}

pub(crate) struct BlockingPrims {
    client: b::Client,
    wait: Duration,
}

/// The builder both APIs start from.
fn builder(args: &ClientArgs) -> redlease::ClientBuilder {
    redlease::Client::builder(&args.redis)
        .layout(args.kind.layout())
        .watchdog_timeout(Duration::from_millis(args.lease_ms))
}

impl AsyncPrims {
    pub(crate) fn connect(args: &ClientArgs) -> Result<AsyncPrims, Box<dyn std::error::Error>> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let client = rt.block_on(builder(args).build())?;
        Ok(AsyncPrims {
            rt,
            client,
            wait: Duration::from_millis(args.wait_ms),
        })
    }
}

impl BlockingPrims {
    pub(crate) fn connect(args: &ClientArgs) -> Result<BlockingPrims, Box<dyn std::error::Error>> {
        Ok(BlockingPrims {
            client: b::Client::from_builder(builder(args))?,
            wait: Duration::from_millis(args.wait_ms),
        })
    }
}

/// Runs an async call on the client's runtime.
macro_rules! on_runtime {
    ($self:ident, $call:expr) => {
        $self.rt.block_on($call)
    };
}

/// Runs a blocking call as it is.
macro_rules! as_is {
    ($self:ident, $call:expr) => {
        $call
    };
}

/// [`Prims`] for `$ty`, on the types of module `$m`, each call run by the
/// macro `$run`.
macro_rules! redlease_prims {
    ($ty:ty, $m:ident, $run:ident) => {
        impl Prims for $ty {
            type Guard = Holding<
                $m::LockGuard,
                $m::MultiGuard,
                $m::SemaphorePermit,
                $m::PermitGuard,
                $m::Leadership,
            >;

            fn acquire(&mut self, w: Workload, name: &str) -> Result<Held<Self::Guard>, Failure> {
                let wait = self.wait;
                let busy = |e: redlease::Error| Failure::of(&e, e.is_busy());
                let lock = |guard: $m::LockGuard| Held {
                    tokens: vec![guard.fencing_token()],
                    guard: Holding::Lock(guard),
                };
                match w {
                    Workload::Lock => {
                        $run!(self, self.client.lock(name).try_lock_for(wait)).map(lock)
                    }
                    Workload::Fair => {
                        $run!(self, self.client.fair_lock(name).try_lock_for(wait)).map(lock)
                    }
                    Workload::Read => $run!(
                        self,
                        self.client.read_write_lock(name).read().try_lock_for(wait)
                    )
                    .map(lock),
                    Workload::Write => $run!(
                        self,
                        self.client.read_write_lock(name).write().try_lock_for(wait)
                    )
                    .map(lock),
                    Workload::Multi => {
                        let members: Vec<&str> = name.split(',').collect();
                        $run!(
                            self,
                            self.client
                                .multi_lock(members.iter().copied())
                                .try_lock_for(wait)
                        )
                        .map(|guard| Held {
                            tokens: members.iter().map(|n| guard.fencing_token_of(n)).collect(),
                            guard: Holding::Multi(guard),
                        })
                    }
                    Workload::Sem => {
                        $run!(self, self.client.semaphore(name).try_acquire_for(1, wait)).map(
                            |permit| Held {
                                tokens: vec![None],
                                guard: Holding::Permit(permit),
                            },
                        )
                    }
                    Workload::Xsem => $run!(
                        self,
                        self.client.expirable_semaphore(name).try_acquire_for(wait)
                    )
                    .map(|permit| Held {
                        tokens: vec![None],
                        guard: Holding::Xpermit(permit),
                    }),
                    Workload::Elect => {
                        let value = format!("judge-{}", std::process::id());
                        $run!(self, self.client.election(name).campaign_for(&value, wait)).map(
                            |leadership| Held {
                                tokens: vec![leadership.epoch()],
                                guard: Holding::Leader(leadership),
                            },
                        )
                    }
                    Workload::Latch => unreachable!("a latch is not held"),
                }
                .map_err(busy)
            }

            fn is_lost(&self, guard: &Self::Guard) -> Option<bool> {
                match guard {
                    Holding::Lock(g) => Some(g.is_lost()),
                    Holding::Multi(g) => Some(g.is_lost()),
                    Holding::Xpermit(g) => Some(g.is_lost()),
                    Holding::Leader(g) => Some(g.is_lost()),
                    // A plain semaphore's permit never expires: nothing to
                    // be told.
                    Holding::Permit(_) => None,
                }
            }

            fn release(&mut self, guard: Self::Guard) -> Result<(), Failure> {
                match guard {
                    Holding::Lock(g) => $run!(self, g.unlock()),
                    Holding::Multi(g) => $run!(self, g.unlock()),
                    Holding::Permit(g) => $run!(self, g.release()),
                    Holding::Xpermit(g) => $run!(self, g.release()),
                    Holding::Leader(g) => $run!(self, g.resign()),
                }
                .map_err(|e| Failure::of(&e, e.is_not_owner()))
            }

            fn count_down(&mut self, name: &str) -> Result<(), Failure> {
                $run!(self, self.client.count_down_latch(name).count_down())
                    .map_err(|e| Failure::of(&e, false))
            }

            fn await_latch(&mut self, name: &str, wait: Duration) -> Result<bool, Failure> {
                match $run!(self, self.client.count_down_latch(name).wait_for(wait)) {
                    Ok(()) => Ok(true),
                    Err(e) if e.is_busy() => Ok(false),
                    Err(e) => Err(Failure::of(&e, false)),
                }
            }
        }
    };
}

redlease_prims!(AsyncPrims, a, on_runtime);
redlease_prims!(BlockingPrims, b, as_is);
