//! Reads lock keys and their auxiliary keys with a few pipelines, bounded
//! per key, from any Redis (also a read-only replica: no scripts).

use redis::aio::MultiplexedConnection;
use redis::{FromRedisValue, RedisResult, Value};
use redlease::layout;

/// Hashes with more fields than this are not read: no lock has that many
/// owners, and a big hash that matched the pattern must not cost much.
const MAX_FIELDS: i64 = 64;
/// Fair-queue entries read per lock.
const MAX_QUEUE: isize = 100;

/// What Redis holds for one lock name, as read.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    pub(crate) name: String,
    /// `TYPE`: `hash` for a lock, `none` when the key is absent.
    pub(crate) key_type: String,
    pub(crate) pttl_ms: i64,
    pub(crate) hash_len: i64,
    /// The hash's fields, unless it has more than [`MAX_FIELDS`].
    pub(crate) fields: Option<Vec<(String, String)>>,
    /// The fencing counter's value.
    pub(crate) token: Option<String>,
    /// The fair queue's first entries with their deadlines (ms).
    pub(crate) queue: Vec<(String, Option<f64>)>,
    pub(crate) queue_len: i64,
    /// Deadline entries that have passed and are not in the queue read.
    pub(crate) past_deadlines: Vec<(String, f64)>,
}

/// The server's clock, for ages and deadlines.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Now {
    pub(crate) micros: u64,
}

impl Now {
    pub(crate) fn millis(self) -> u64 {
        self.micros / 1_000
    }
}

/// Reads `names` in three pipelined rounds.
pub(crate) async fn read(
    conn: &mut MultiplexedConnection,
    names: &[String],
) -> RedisResult<(Now, Vec<Raw>)> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    let now = Now {
        micros: secs * 1_000_000 + micros,
    };
    let mut raws: Vec<Raw> = names
        .iter()
        .map(|name| Raw {
            name: name.clone(),
            ..Raw::default()
        })
        .collect();

    // Round 1: what each key is.
    let mut pipe = redis::pipe();
    for name in names {
        pipe.cmd("TYPE").arg(name);
        pipe.cmd("PTTL").arg(name);
        pipe.cmd("HLEN").arg(name);
        pipe.cmd("GET").arg(layout::token_key(name));
        pipe.cmd("LLEN").arg(layout::queue_key(name));
    }
    let replies = query(conn, &pipe).await?;
    for (raw, r) in raws.iter_mut().zip(replies.chunks_exact(5)) {
        raw.key_type = get(&r[0]).unwrap_or_default();
        raw.pttl_ms = get(&r[1]).unwrap_or(-2);
        raw.hash_len = get(&r[2]).unwrap_or(0);
        raw.token = get(&r[3]);
        raw.queue_len = get(&r[4]).unwrap_or(0);
    }

    // Round 2: small hashes, queue heads, and deadlines that have passed.
    let mut pipe = redis::pipe();
    for raw in &raws {
        // A placeholder keeps three replies per name.
        match small_hash(raw) {
            true => pipe.cmd("HGETALL").arg(&raw.name),
            false => pipe.cmd("PING"),
        };
        pipe.cmd("LRANGE")
            .arg(layout::queue_key(&raw.name))
            .arg(0)
            .arg(MAX_QUEUE - 1);
        pipe.cmd("ZRANGEBYSCORE")
            .arg(layout::timeout_key(&raw.name))
            .arg("-inf")
            .arg(now.millis())
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(0)
            .arg(MAX_QUEUE);
    }
    let replies = query(conn, &pipe).await?;
    let mut queues = Vec::new();
    for (raw, r) in raws.iter_mut().zip(replies.chunks_exact(3)) {
        if small_hash(raw) {
            raw.fields = get(&r[0]);
        }
        queues.push(get::<Vec<String>>(&r[1]).unwrap_or_default());
        raw.past_deadlines = get(&r[2]).unwrap_or_default();
    }

    // Round 3: the deadline of each queue entry read.
    let mut pipe = redis::pipe();
    for (raw, queue) in raws.iter().zip(&queues) {
        for owner in queue {
            pipe.cmd("ZSCORE")
                .arg(layout::timeout_key(&raw.name))
                .arg(owner);
        }
    }
    let mut scores = if pipe.is_empty() {
        Vec::new()
    } else {
        query(conn, &pipe).await?
    }
    .into_iter();
    for (raw, queue) in raws.iter_mut().zip(queues) {
        for owner in queue {
            let score = scores.next().and_then(|s| get::<f64>(&s));
            raw.past_deadlines.retain(|(o, _)| *o != owner);
            raw.queue.push((owner, score));
        }
    }
    Ok((now, raws))
}

fn small_hash(raw: &Raw) -> bool {
    raw.key_type == "hash" && raw.hash_len <= MAX_FIELDS
}

/// Runs a pipeline in which one failing command (a key of another type)
/// does not fail the others.
async fn query(
    conn: &mut MultiplexedConnection,
    pipe: &redis::Pipeline,
) -> RedisResult<Vec<RedisResult<Value>>> {
    let mut pipe = pipe.clone();
    pipe.ignore_errors().query_async(conn).await
}

/// One reply as `T`; `None` for errors, nil, and replies of another shape.
fn get<T: FromRedisValue>(reply: &RedisResult<Value>) -> Option<T> {
    match reply {
        Ok(Value::Nil) | Err(_) => None,
        Ok(value) => redis::from_redis_value_ref(value).ok(),
    }
}
