//! The deployment's nodes as the rest of the crate sees them, without a
//! redis-rs type: a key's hash slot ([`SlotId`]), the master of each slot
//! ([`SlotNodes`]), both for grouping keys that one call may touch
//! together, and a node to scan ([`Node`]). The backend fills them in
//! (`backend.rs`, from `cluster.rs`); on one node they are empty.

/// A cluster hash slot, to group keys by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SlotId(#[cfg(feature = "cluster")] pub(super) u16);

/// Which master serves each hash slot, as a cluster last said: for
/// grouping keys by node. Nodes are numbered in no particular order.
#[derive(Debug, Default)]
pub(crate) struct SlotNodes {
    #[cfg(feature = "cluster")]
    pub(super) node: Vec<Option<u16>>,
}

impl SlotNodes {
    /// The node that serves `slot`, if the map has one.
    pub(crate) fn node_of(&self, slot: SlotId) -> Option<u16> {
        #[cfg(feature = "cluster")]
        return self.node.get(usize::from(slot.0)).copied().flatten();
        #[cfg(not(feature = "cluster"))]
        {
            let _ = slot;
            None
        }
    }
}

/// One node of the deployment, as far as a scan of its keys goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// A cluster node's `host:port`; `None` for the one node of a
    /// single-node deployment.
    pub(crate) address: Option<String>,
}
