//! Plain connections (no lock API) to one node or to a cluster, behind one
//! type, so that the demo's `GET`/`SET`/`DEL` need not know which.

use std::fmt;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// The scheme of a cluster URL, as the library reads it.
const CLUSTER_SCHEME: &str = "redis-cluster://";

/// The scheme of a cluster URL over TLS.
const TLS_CLUSTER_SCHEME: &str = "rediss-cluster://";

/// A connection for commands the lock API does not offer: a multiplexed
/// connection to one node, or a cluster connection, which sends each
/// command to the master of its key's slot and follows `MOVED` and `ASK`.
/// Cheap to clone; clones share the connection.
#[derive(Clone)]
pub(crate) enum Plain {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

// redis-rs's cluster connection has no Debug of its own.
impl fmt::Debug for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Plain::Single(_) => f.write_str("Plain::Single"),
            Plain::Cluster(_) => f.write_str("Plain::Cluster"),
        }
    }
}

impl ConnectionLike for Plain {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Plain::Single(conn) => conn.req_packed_command(cmd),
            Plain::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Plain::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Plain::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Plain::Single(conn) => conn.get_db(),
            Plain::Cluster(conn) => conn.get_db(),
        }
    }
}

/// Whether `url` names a cluster (`redis-cluster://`, or
/// `rediss-cluster://` over TLS).
pub(crate) fn is_cluster(url: &str) -> bool {
    url.starts_with(CLUSTER_SCHEME) || url.starts_with(TLS_CLUSTER_SCHEME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_are_told_apart() {
        assert!(is_cluster("redis-cluster://a:1") && !is_cluster("redis://a:1"));
        assert!(is_cluster("rediss-cluster://a:1") && !is_cluster("rediss://a:1"));
    }
}
