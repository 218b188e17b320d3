//! Integration tests against real `redis-server` processes.
//!
//! One test binary (one link step); one module per area. Tests that only
//! touch their own keys share one server; tests that kill, pause or
//! reconfigure a server start their own.

/// Helpers for the tests against a real local Redis Cluster.
mod cluster_support;
mod support;

/// The `fenced` example's database guard, tested as shipped.
#[path = "../../examples/fenced/ledger.rs"]
mod ledger;

/// The `once_per_tick` example's replica, run by its test as shipped.
#[path = "../../examples/once_per_tick/replica.rs"]
mod replica_example;

/// A least-privilege ACL user from `redlease::acl`: allowed on its prefix,
/// refused clearly outside it.
mod acl;
/// Exclusion, waiting and busy errors.
mod acquire;
/// The operators' side on both layouts: state, forced unlock, wrong types
/// (#27).
mod admin;
/// DESIGN.md's table of every primitive's verbs, checked against the API
/// (#27).
mod api_table;
/// The blocking API from plain threads (#18).
mod blocking;
/// Cancelled futures and dropped guards.
mod cancel;
/// The fault-injection suite: stopped, killed and partitioned holders, and
/// Redis restarting empty, against the PostgreSQL guard.
mod chaos;
/// Locks on a real local Redis Cluster: slots, sharded pub/sub, the API.
mod cluster;
/// Failover, a killed master, a lost key and slot migration on a cluster.
mod cluster_faults;
/// `#[distributed_lock]`: keys, waits, leases, clients, release on every exit.
mod declared;
/// Leader election (#40): campaigns, observers, Redisson holders, a
/// paused, killed or restarted leader, a cluster, Sentinel.
mod election;
/// The expirable semaphore: Redisson's layout, limits, wake-ups, crashed
/// holders, renewal, cancellation.
mod expirable;
/// Extending a fixed lease by hand (#16).
mod extend;
/// The fair lock: FIFO order across clients, no stuck queue.
mod fair;
/// Bad input and Redis faults: typed errors, no panics, no leaked locks.
mod faults;
/// Fencing tokens: increasing across clients, Redisson, expiry, restarts.
mod fence;
/// What locks leave behind, and its removal (#40).
mod gc;
/// Redisson itself, in a JVM, on the same keys (#26).
mod java;
/// Redisson's count-down latch: layout, messages, waiters in every client.
mod latch;
/// Fixed leases, the watchdog, and `lost()`.
mod lease;
/// Metrics through the `metrics` facade, read from a recorder.
mod metrics;
/// Several locks taken all or none (#16).
mod multi;
/// A job once per tick on replicas with skewed clocks, and
/// `unlock_at_least` (#40).
mod once_per_tick;
/// The real peers (redis-py, rslock, the seed's Java lock) on one key (#17).
mod peers;
/// Fair waiters in other processes, and the child process itself.
mod process;
/// The Redis layout and wire protocol shared with Redisson.
mod redisson;
/// RedLock over independent masters (#16).
mod redlock;
/// Re-entry inside an owner scope (`redlease::scope`).
mod reentry;
/// Acquires acknowledged by replicas (`WAIT`), with a real master and replica.
mod replica;
/// The read-write lock: Redisson's layout, readers together, writers alone.
mod rwlock;
/// Redisson's semaphore: layout, the limit under load, wake-ups, cancel
/// safety.
mod semaphore;
/// Locks through Redis Sentinel: failover under load, a key lost in it, a
/// sentinel down or wrong.
mod sentinel;
/// The string layout (#17): the owner under the key, as other libraries
/// keep locks, on Redis 7.0 (scripts) and Valkey 9 (its own commands).
mod string;
/// Locks over TLS: a custom CA, the wrong CA, mutual TLS, a TLS cluster.
mod tls;
/// Redisson's layout on Valkey 9, and the native commands it has (#17).
mod valkey;
/// Waiters woken by release messages: no lost wake-ups, no leaked
/// subscriptions, a bounded herd.
mod wake;
