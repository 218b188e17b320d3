//! Moving a slot and its keys from one master to another, at once or step
//! by step.

use super::view::short;
use super::{ClusterNode, RedisCluster, SLOTS, key_slot, line_at};

/// How long `MIGRATE` may take per batch of keys.
const MIGRATE_TIMEOUT_MS: u64 = 5000;

/// How many keys `MIGRATE` moves per call.
const MIGRATE_BATCH: usize = 100;

impl RedisCluster {
    /// Moves `slot` and its keys from master `from` to master `to`:
    /// [`begin_migration`](RedisCluster::begin_migration),
    /// [`migrate_keys`](RedisCluster::migrate_keys),
    /// [`finish_migration`](RedisCluster::finish_migration). Returns how
    /// many keys moved.
    ///
    /// # Panics
    ///
    /// As those do.
    pub fn migrate_slot(&mut self, slot: u16, from: &ClusterNode, to: &ClusterNode) -> usize {
        self.begin_migration(slot, from, to);
        let moved = self.migrate_keys(slot, from, to);
        self.finish_migration(slot, from, to);
        moved
    }

    /// Marks `slot` as importing on `to` and migrating on `from`. From then
    /// on `from` still serves the keys it has in the slot and answers
    /// `ASK` (naming `to`) for those it has not, while `to` serves commands
    /// on the slot only after `ASKING`: a test can hold a slot in that
    /// state while locks are held or waited on.
    ///
    /// # Panics
    ///
    /// When `from` does not own `slot`, `to` is not another running master,
    /// or a node refuses.
    pub fn begin_migration(&self, slot: u16, from: &ClusterNode, to: &ClusterNode) {
        let (from, to) = self.migration_ends(slot, from, to);
        // The target first, as the cluster spec orders it: a client sent
        // to `to` by an ASK must find it importing already.
        setslot(&to, slot, "IMPORTING", &from.id);
        setslot(&from, slot, "MIGRATING", &to.id);
    }

    /// Moves every key that `from` holds in `slot` to `to` (`CLUSTER
    /// GETKEYSINSLOT` and `MIGRATE ... KEYS`, in batches), after
    /// [`begin_migration`](RedisCluster::begin_migration). Keys keep their
    /// time to live. Returns how many moved; may be called again for keys
    /// written to `from` meanwhile.
    ///
    /// # Panics
    ///
    /// When `from` does not own `slot`, `to` is not another running master,
    /// or `MIGRATE` fails.
    pub fn migrate_keys(&self, slot: u16, from: &ClusterNode, to: &ClusterNode) -> usize {
        let (from, to) = self.migration_ends(slot, from, to);
        let mut connection = from.connection();
        let mut moved = 0;
        loop {
            let keys: Vec<Vec<u8>> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(MIGRATE_BATCH)
                .query(&mut connection)
                .unwrap_or_else(|e| panic!("CLUSTER GETKEYSINSLOT on {}: {e}", from.name()));
            if keys.is_empty() {
                return moved;
            }
            redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(to.port)
                .arg("")
                .arg(0)
                .arg(MIGRATE_TIMEOUT_MS)
                .arg("KEYS")
                .arg(&keys)
                .exec(&mut connection)
                .unwrap_or_else(|e| {
                    panic!(
                        "MIGRATE of slot {slot} from {} to {}: {e}",
                        from.name(),
                        to.name()
                    )
                });
            moved += keys.len();
        }
    }

    /// Moves the one key `key` from `from` to `to` with `MIGRATE`, after
    /// [`begin_migration`](RedisCluster::begin_migration) of its slot, and
    /// leaves the slot's other keys where they are: `from` then answers
    /// `ASK` for `key` but still serves the others, and a command on `key`
    /// and one of them together answers `TRYAGAIN`.
    ///
    /// # Panics
    ///
    /// When `from` does not own `key`'s slot, `to` is not another running
    /// master, or `MIGRATE` fails (`NOKEY` is no failure: the key is not
    /// on `from`, nothing moves).
    pub fn migrate_key(&self, key: impl AsRef<[u8]>, from: &ClusterNode, to: &ClusterNode) {
        let key = key.as_ref();
        let (from, to) = self.migration_ends(key_slot(key), from, to);
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(to.port)
            .arg("")
            .arg(0)
            .arg(MIGRATE_TIMEOUT_MS)
            .arg("KEYS")
            .arg(key)
            .exec(&mut from.connection())
            .unwrap_or_else(|e| {
                panic!(
                    "MIGRATE of {:?} from {} to {}: {e}",
                    String::from_utf8_lossy(key),
                    from.name(),
                    to.name()
                )
            });
    }

    /// Assigns `slot` to `to` on every master (`CLUSTER SETSLOT ... NODE`,
    /// the target first), which ends the migration, and waits until every
    /// node agrees; `from` then answers `MOVED` for the slot.
    ///
    /// `from` must hold no keys in the slot any more
    /// ([`migrate_keys`](RedisCluster::migrate_keys)); Redis refuses
    /// otherwise. A master that gives away its last slot becomes a replica
    /// of `to` (Redis's `cluster-allow-replica-migration`).
    ///
    /// # Panics
    ///
    /// When `from` does not own `slot`, `to` is not another running master,
    /// a node refuses, or the cluster does not settle.
    pub fn finish_migration(&mut self, slot: u16, from: &ClusterNode, to: &ClusterNode) {
        let (from, to) = self.migration_ends(slot, from, to);
        setslot(&to, slot, "NODE", &to.id);
        setslot(&from, slot, "NODE", &to.id);
        for master in self.masters() {
            if master.port != from.port && master.port != to.port {
                setslot(master, slot, "NODE", &to.id);
            }
        }
        self.settle(
            &format!("moving slot {slot} from {} to {}", from.name(), to.name()),
            |view| {
                let line = line_at(view, to.port)?;
                if line.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)) {
                    Ok(())
                } else {
                    Err(format!("slot {slot} is not seen on {line} yet"))
                }
            },
        );
    }

    /// The current snapshots of `from` and `to`, checked to be a migration's
    /// two ends.
    fn migration_ends(
        &self,
        slot: u16,
        from: &ClusterNode,
        to: &ClusterNode,
    ) -> (ClusterNode, ClusterNode) {
        assert!(slot < SLOTS, "there is no slot {slot}");
        let (from, to) = (self.current(from), self.current(to));
        assert!(
            from.owns(slot),
            "node {} does not own slot {slot}; {} does",
            from.name(),
            self.master_for_slot(slot).name()
        );
        assert!(to.is_master(), "node {} is not a master", to.name());
        assert_ne!(from.port, to.port, "a slot cannot move to its own owner");
        (from, to)
    }
}

/// `CLUSTER SETSLOT <slot> <state> <node id>` on `node`.
fn setslot(node: &ClusterNode, slot: u16, state: &str, id: &str) {
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(state)
        .arg(id)
        .exec(&mut node.connection())
        .unwrap_or_else(|e| {
            panic!(
                "CLUSTER SETSLOT {slot} {state} {} on {}: {e}",
                short(id),
                node.name()
            )
        });
}
