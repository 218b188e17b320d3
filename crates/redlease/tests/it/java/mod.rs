//! Redisson itself, in a JVM, next to redlease on the same keys (#26).
//!
//! Every structure both ways, with a real `RedissonClient` of each tested
//! version (`driver::VERSIONS`) driven by `interop/redisson/`, on one
//! server and on a cluster with sharded and with plain pub/sub: each side
//! excludes the other, a release on either side wakes a waiter on the
//! other (timed), fencing tokens share one sequence, readers share, permits
//! are counted once, a latch opened by one side frees the other's waiters,
//! fair waiters keep their places across clients, and a holder killed with
//! SIGKILL on either side is taken over within one lease.

mod driver;
mod side;

/// Killed holders on either side, and both watchdogs.
mod crash;
/// `RFairLock` and the fair lock on one queue.
mod fair;
/// `RFencedLock` and fencing tokens in one sequence.
mod fenced;
/// `RCountDownLatch` and the latch.
mod latch;
/// Wake-up latency across the two clients, p50 and p99.
mod latency;
/// `RLock` and the non-reentrant lock against `Lock`.
mod lock;
/// `RedissonMultiLock` and the multi-lock.
mod multi;
/// `RReadWriteLock` and the read-write lock.
mod rwlock;
/// `RSemaphore`, `RPermitExpirableSemaphore` and the semaphores.
mod semaphore;
