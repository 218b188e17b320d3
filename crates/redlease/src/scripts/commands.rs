//! The plain commands (no Lua) the crate sends outside `connection/`, built
//! here so that, with the scripts beside them, no other module packs a
//! command (#27). Each builder says what the reply is.

use redis::{Cmd, Pipeline};

use crate::connection::Connection;

use crate::layout::{
    latch_channel, permits_key, queue_key, semaphore_channel, timeout_key, token_key,
};

/// `GET key`: the string, or nil. Reads a semaphore's or a latch's count,
/// and a string-layout lock's owner.
pub(crate) fn get(key: &str) -> Cmd {
    redis::cmd("GET").arg(key).clone()
}

/// `HEXISTS key field`: 1 if a lock hash still has the owner `field`.
pub(crate) fn hexists(key: &str, field: &str) -> Cmd {
    redis::cmd("HEXISTS").arg(key).arg(field).clone()
}

/// `WAIT replicas timeout_ms`: how many replicas acknowledged this
/// connection's writes within the timeout.
pub(crate) fn wait(replicas: u32, timeout_ms: u64) -> Cmd {
    redis::cmd("WAIT").arg(replicas).arg(timeout_ms).clone()
}

/// `TIME`: the server's clock, `[seconds, microseconds]`.
pub(crate) fn time() -> Cmd {
    redis::cmd("TIME")
}

/// `SCAN cursor MATCH pattern COUNT count`: `[next cursor, [keys]]`.
pub(crate) fn scan(cursor: u64, pattern: &str, count: u64) -> Cmd {
    redis::cmd("SCAN")
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(count)
        .clone()
}

/// What [`admin::leftovers`](crate::admin::leftovers) reads of each key:
/// three replies per key in this order, `PTTL key`, `MEMORY USAGE key` (an
/// error where the command is refused), and `HGET key owner` for a leader
/// record (`true`), else a `PING` that keeps the count.
pub(crate) fn leftover_facts<'a>(keys: impl IntoIterator<Item = (&'a str, bool)>) -> Pipeline {
    let mut pipe = redis::pipe();
    for (key, record) in keys {
        pipe.cmd("PTTL").arg(key);
        pipe.cmd("MEMORY").arg("USAGE").arg(key);
        match record {
            true => pipe.cmd("HGET").arg(key).arg("owner"),
            false => pipe.cmd("PING"),
        };
    }
    pipe
}

/// The first round of a layout read: per name, five replies in this
/// order: `TYPE name`, `PTTL name`, `HLEN name` (an error for a key that
/// is no hash), `GET` of its fencing counter, `LLEN` of its fair queue.
pub(crate) fn key_kinds(names: &[String]) -> Pipeline {
    let mut pipe = redis::pipe();
    for name in names {
        pipe.cmd("TYPE").arg(name);
        pipe.cmd("PTTL").arg(name);
        pipe.cmd("HLEN").arg(name);
        pipe.cmd("GET").arg(token_key(name));
        pipe.cmd("LLEN").arg(queue_key(name));
    }
    pipe
}

/// What the second round of a layout read fetches for one name.
pub(crate) struct Detail<'a> {
    pub(crate) name: &'a str,
    /// The key's own value: a small hash's fields, or a string's first
    /// `max_value` bytes.
    pub(crate) head: Head,
    /// Whether an expirable semaphore's permits may live under the name.
    pub(crate) permits: bool,
    /// Whether to count the listeners of its semaphore and latch channels
    /// (one node only: on a cluster `PUBSUB` answers for one node).
    pub(crate) listeners: bool,
}

/// Which value a [`Detail`] reads of the key itself.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    Hash,
    String,
    Nothing,
}

/// The second round of a layout read: per name, six replies in this
/// order (a `PING` stands in for what a name does not need, so the count
/// stays six): the head (`HGETALL` or `GETRANGE 0 max_value`), `LRANGE` of
/// the fair queue's first `max_queue`, `ZRANGEBYSCORE` of its deadlines
/// that have passed by `now_ms`, `ZCARD` and `ZRANGE ... WITHSCORES` of the
/// permits set, and `PUBSUB NUMSUB` of the semaphore and latch channels.
pub(crate) fn key_details<'a>(
    details: impl IntoIterator<Item = Detail<'a>>,
    now_ms: u64,
    max_value: usize,
    max_queue: usize,
) -> Pipeline {
    let mut pipe = redis::pipe();
    for detail in details {
        let name = detail.name;
        match detail.head {
            Head::Hash => pipe.cmd("HGETALL").arg(name),
            Head::String => pipe.cmd("GETRANGE").arg(name).arg(0).arg(max_value),
            Head::Nothing => pipe.cmd("PING"),
        };
        pipe.cmd("LRANGE")
            .arg(queue_key(name))
            .arg(0)
            .arg(max_queue - 1);
        pipe.cmd("ZRANGEBYSCORE")
            .arg(timeout_key(name))
            .arg("-inf")
            .arg(now_ms)
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(0)
            .arg(max_queue);
        if detail.permits {
            let permits = permits_key(name);
            pipe.cmd("ZCARD").arg(&permits);
            pipe.cmd("ZRANGE")
                .arg(&permits)
                .arg(0)
                .arg(max_queue - 1)
                .arg("WITHSCORES");
        } else {
            pipe.cmd("PING");
            pipe.cmd("PING");
        }
        match detail.listeners {
            true => pipe
                .cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(semaphore_channel(name))
                .arg(latch_channel(name)),
            false => pipe.cmd("PING"),
        };
    }
    pipe
}

/// The third round of a layout read: `ZSCORE {name}:timeout owner` per
/// fair-queue entry in `queued` (a deadline, or nil), then `PTTL key` per
/// key in `ttls` (a reader's newest hold), in that order.
pub(crate) fn deadlines_and_ttls<'a>(
    queued: impl IntoIterator<Item = (&'a str, &'a str)>,
    ttls: impl IntoIterator<Item = String>,
) -> Pipeline {
    let mut pipe = redis::pipe();
    for (name, owner) in queued {
        pipe.cmd("ZSCORE").arg(timeout_key(name)).arg(owner);
    }
    for key in ttls {
        pipe.cmd("PTTL").arg(key);
    }
    pipe
}

/// `TYPE key`: what a key holds, for an error that says it (a lock whose
/// key holds a string, say).
pub(crate) fn key_type(key: &str) -> Cmd {
    redis::cmd("TYPE").arg(key).to_owned()
}

/// What `key` holds (`TYPE`'s answer), asked after a `WRONGTYPE` about
/// it: `None` when it holds `own` (the primitive's own type: another of its
/// keys was the wrong one), is gone by then, or the question failed.
pub(crate) async fn what_key_holds(conn: &Connection, key: &str, own: &str) -> Option<String> {
    match conn.query::<String>(&key_type(key)).await {
        Ok(holds) if holds != own && holds != "none" => Some(holds),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<cursor>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn commands_pack_their_arguments() {
        assert_eq!(words(&get("k")), ["GET", "k"]);
        assert_eq!(words(&hexists("k", "f")), ["HEXISTS", "k", "f"]);
        assert_eq!(words(&wait(2, 50)), ["WAIT", "2", "50"]);
        assert_eq!(words(&time()), ["TIME"]);
        assert_eq!(
            words(&scan(7, "a:*", 100)),
            ["SCAN", "7", "MATCH", "a:*", "COUNT", "100"]
        );
    }

    #[test]
    fn a_layout_read_asks_five_then_six_per_name() {
        let names = ["a".to_owned(), "b".to_owned()];
        assert_eq!(key_kinds(&names).cmd_iter().count(), 10);
        let details = names.iter().map(|name| Detail {
            name,
            head: Head::String,
            permits: false,
            listeners: true,
        });
        let pipe = key_details(details, 1_000, 128, 100);
        let commands: Vec<Vec<String>> = pipe.cmd_iter().map(words).collect();
        assert_eq!(commands.len(), 12);
        assert_eq!(commands[0], ["GETRANGE", "a", "0", "128"]);
        assert_eq!(commands[3], ["PING"]);
        assert_eq!(commands[5][..2], ["PUBSUB", "NUMSUB"]);
    }
}
