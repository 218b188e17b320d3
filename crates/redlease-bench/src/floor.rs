//! `pairs-worker --floor`: the commands redlease sends for one lock and
//! unlock, sent by redis-rs alone. What a pair costs a client that only
//! builds those commands, sends them on one `ConnectionManager` (as
//! redlease does) and reads the replies: the floor under redlease's own
//! cost when counted with callgrind (#28, `scripts/callgrind`). The same
//! commands, on redis-rs's async and synchronous connections, are the
//! floor of `latency`'s one-task table (#39).

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redlease::layout::{self, Layout};

/// The owner a pair writes: the shape of redlease's, a UUID and a number.
const OWNER: &str = "6f1c0c56-3a1e-4c55-9d7a-2f7f1b0c9e11:1";
const LEASE_MS: u64 = 30_000;
const KEY: &str = "bench:floor";

/// One pair's commands as redlease sends them in a layout, fencing on or
/// off, built anew for each pair (as redlease builds them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Commands {
    layout: Layout,
    fencing: bool,
    /// Whether a release in Redisson's layout writes its unlock latch, as
    /// redlease's own releases do (#37).
    latch: bool,
}

/// How long a release's unlock latch lasts: redlease's default.
const LATCH_TTL_MS: u64 = 40_000;

/// This run's part of a release's request id: the process and its start.
static RUN: std::sync::LazyLock<u128> = std::sync::LazyLock::new(|| {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos()) ^ u128::from(std::process::id())
});

impl Commands {
    /// redlease's commands, the unlock latch included.
    pub(crate) fn new(layout: Layout, fencing: bool) -> Commands {
        Commands {
            layout,
            fencing,
            latch: true,
        }
    }

    /// The same without the unlock latch: Redisson's layout's release as
    /// redlease sent it before #37 (and as `redlease::scripts::release`
    /// builds it).
    pub(crate) fn unlatched(self) -> Commands {
        Commands {
            latch: false,
            ..self
        }
    }

    /// `SCRIPT LOAD`s the scripts a pair runs, so no `EVALSHA` meets
    /// NOSCRIPT.
    pub(crate) fn load(conn: &mut impl redis::ConnectionLike) {
        for name in ["acquire", "release", "string_release"] {
            let _: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script(name).1)
                .query(conn)
                .expect("script load");
        }
    }

    /// The acquire of `key`: Redisson's layout's script, or the string
    /// layout's `SET NX PX` (in a `MULTI` with the token's `INCR` when
    /// fencing).
    pub(crate) fn acquire(self, key: &str) -> Acquire {
        match self.layout {
            Layout::String => {
                let mut pipe = redis::pipe();
                pipe.cmd("SET")
                    .arg(key)
                    .arg(OWNER)
                    .arg("NX")
                    .arg("PX")
                    .arg(LEASE_MS);
                if self.fencing {
                    pipe.atomic().cmd("INCR").arg(layout::token_key(key));
                }
                Acquire::Set(pipe, self.fencing)
            }
            _ => {
                let fencing_ttl: i64 = if self.fencing { 86_400_000 } else { -1 };
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(script("acquire").0)
                    .arg(2)
                    .arg(key)
                    .arg(layout::token_key(key))
                    .arg(LEASE_MS)
                    .arg(OWNER)
                    .arg(fencing_ttl);
                Acquire::Script(cmd)
            }
        }
    }

    /// The release of `key`, announced on its channel; the `request`th
    /// release, which names its unlock latch.
    pub(crate) fn release(self, key: &str, request: u64) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        match self.layout {
            Layout::String => cmd
                .arg(script("string_release").0)
                .arg(2)
                .arg(key)
                .arg(layout::channel(key))
                .arg(OWNER)
                .arg(0)
                .arg("publish"),
            _ => {
                cmd.arg(script("release").0)
                    .arg(2 + usize::from(self.latch))
                    .arg(key)
                    .arg(layout::channel(key));
                if self.latch {
                    // A request id of this process's own, as redlease's:
                    // a latch another run left would answer for it.
                    let run = *RUN;
                    cmd.arg(format!(
                        "redisson_unlock_latch:{{{key}}}:{OWNER}:{run}:{request}"
                    ));
                }
                cmd.arg(0).arg(LEASE_MS).arg(OWNER).arg("publish");
                if self.latch {
                    cmd.arg(LATCH_TTL_MS);
                }
                &mut cmd
            }
        };
        cmd
    }
}

/// An acquire, sent as redlease sends it; each send says whether it was
/// granted.
pub(crate) enum Acquire {
    /// Redisson's layout: one script, replying `[granted, token]`.
    Script(redis::Cmd),
    /// The string layout: `SET NX PX`, with the token's `INCR` in the same
    /// `MULTI` when fencing (the `bool`).
    Set(redis::Pipeline, bool),
}

impl Acquire {
    pub(crate) async fn send_async(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
    ) -> redis::RedisResult<bool> {
        Ok(match self {
            Acquire::Script(cmd) => cmd.query_async::<(i64, i64)>(conn).await?.0 == 1,
            Acquire::Set(pipe, true) => {
                pipe.query_async::<(redis::Value, i64)>(conn).await?.0 == redis::Value::Okay
            }
            Acquire::Set(pipe, false) => {
                pipe.query_async::<(redis::Value,)>(conn).await?.0 == redis::Value::Okay
            }
        })
    }

    pub(crate) fn send(&self, conn: &mut impl redis::ConnectionLike) -> redis::RedisResult<bool> {
        Ok(match self {
            Acquire::Script(cmd) => cmd.query::<(i64, i64)>(conn)?.0 == 1,
            Acquire::Set(pipe, true) => {
                pipe.query::<(redis::Value, i64)>(conn)?.0 == redis::Value::Okay
            }
            Acquire::Set(pipe, false) => {
                pipe.query::<(redis::Value,)>(conn)?.0 == redis::Value::Okay
            }
        })
    }
}

/// A script of redlease's by name: its SHA1 and its source.
fn script(name: &str) -> (&'static str, &'static str) {
    let (_, sha, source) = redlease::scripts::lua_scripts()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .expect("a script of redlease's");
    (sha, source)
}

/// Takes and releases [`KEY`] `pairs` times as redlease would in `layout`
/// with fencing on or off, each command built anew, in a task of the
/// runtime (as `pairs_worker`).
pub(crate) async fn worker(url: &str, pairs: u64, layout: Layout, fencing: bool) {
    let client = redis::Client::open(url).expect("a redis URL");
    Commands::load(&mut client.get_connection().expect("connect"));
    // Under valgrind a reply takes many times longer than the default
    // allows on a busy machine; as `pairs_worker`'s.
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(60)));
    let mut conn = ConnectionManager::new_with_config(client, config)
        .await
        .expect("connect");
    let commands = Commands::new(layout, fencing);
    let task = tokio::spawn(async move {
        for request in 0..pairs {
            let granted = (commands.acquire(KEY).send_async(&mut conn).await).expect("acquire");
            assert!(granted, "uncontended");
            let released: i64 =
                (commands.release(KEY, request).query_async(&mut conn).await).expect("release");
            assert_eq!(released, 1);
        }
    });
    task.await.expect("the pairs task");
}
