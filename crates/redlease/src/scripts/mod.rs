//! Every Lua script the crate runs, each next to the one builder that packs
//! a call of it and the one decoder that reads its reply.
//!
//! The data layout is Redisson's `RLock` (see [`crate::layout`]), so that
//! Java services using Redisson and Rust services using redlease exclude
//! each other on one key:
//!
//! * the lock key is a hash with one field, `<client-uuid>:<owner-id>`, whose
//!   value is the hold count;
//! * the lease is the key's expiry, set with `PEXPIRE` in milliseconds;
//! * a full release deletes the key and publishes `0` on
//!   `redisson_lock__channel:{<name>}`.
//!
//! One file per primitive: `lock.rs` (acquire, re-entry, release, renewal
//! and the fencing counter), `multi.rs` (a multi-lock's members taken in
//! one script), `fair.rs` (the fair lock's queue), `rwlock.rs`
//! (the read-write lock), `admin.rs` (the operators' forced unlock),
//! `semaphore.rs` (Redisson's `RSemaphore`), `string.rs` (the string
//! layout's lock, with the commands that replace scripts where the server
//! has them), `latch.rs` (Redisson's
//! `RCountDownLatch`) and `expirable.rs` (Redisson's
//! `RPermitExpirableSemaphore`, whose layout it describes), and
//! `commands.rs` (the few plain commands: reads, `WAIT`, `SCAN`). Each
//! script's KEYS/ARGV/return contract is written on its builder; no other
//! module packs a command (`connection/` aside, which speaks the protocol
//! itself).
//!
//! Each call is sent as one `EVALSHA` command, packed once by its builder
//! ([`ScriptCall`]); when the server answers `NOSCRIPT` (after `SCRIPT
//! FLUSH`, a restart or a failover) the call loads its script and is sent
//! once more, as redis-rs's `ScriptInvocation` does, without its copies of
//! every key and argument (#28). Scripts are never pipelined, because that
//! fallback does not apply inside pipelines.

pub(crate) mod admin;
pub(crate) mod commands;
pub(crate) mod election;
pub(crate) mod expirable;
pub(crate) mod fair;
pub(crate) mod gc;
pub(crate) mod latch;
pub(crate) mod lock;
pub(crate) mod multi;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod string;

use std::fmt;
use std::sync::LazyLock;

use redis::{
    Arg, Cmd, ErrorKind, FromRedisValue, RedisError, Script, ServerErrorKind, ToRedisArgs,
};

use crate::connection::Connection;

pub use lock::{acquire, release};

/// The message Redisson publishes on a lock's channel when it is released
/// (`LockPubSub.UNLOCK_MESSAGE`).
pub(crate) const UNLOCK_MESSAGE: i64 = 0;

/// A release sent under a request id (#37), so that it can be sent again
/// after a lost reply: the script first looks for the request's unlock
/// latch, Redisson 4's `redisson_unlock_latch:{name}:<request>`
/// ([`layout::unlock_latch`](crate::layout::unlock_latch)) for a lock, or
/// redlease's own request record where Redisson keeps no latch (an
/// expirable semaphore's permit, [`Latch::request_key`]), and answers
/// what it holds, with nothing written; otherwise it releases and, when
/// the hold was ours, records its answer (`0`: holds remain, `1`: deleted)
/// there for `ttl_ms`, as Redisson's `unlockInnerAsync` does. A release of
/// one of several re-entered holds is then safe to repeat: the repeat finds
/// the latch and takes back no other hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Latch<'a> {
    /// The release's request id, the same for each time it is sent.
    pub(crate) request: &'a str,
    /// How long the latch lasts, in milliseconds.
    pub(crate) ttl_ms: u64,
}

impl Latch<'_> {
    /// The latch key of a release of lock `name`, or nothing without a
    /// latch: a call's last key.
    pub(crate) fn key(latch: Option<Self>, name: &str) -> Option<String> {
        latch.map(|latch| crate::layout::unlock_latch(name, latch.request))
    }

    /// The record of a release of a count in key `name` (an expirable
    /// semaphore's permit), redlease's own `redlease_request:{name}:<id>`
    /// where Redisson keeps no latch, or nothing without a latch.
    pub(crate) fn request_key(latch: Option<Self>, name: &str) -> Option<String> {
        latch.map(|latch| crate::layout::request_key(name, latch.request))
    }

    /// The latch's time to live, or nothing: a call's last argument.
    pub(crate) fn ttl(latch: Option<Self>) -> Option<u64> {
        latch.map(|latch| latch.ttl_ms)
    }
}

/// What a latched release script ([`Lua::latched`]) runs before its body:
/// the latch is the key after the script's own, when the call passes one.
const LATCH_HEAD: &str = r"
local latch = KEYS[LATCH_AT]
if latch ~= nil then
    local before = redis.call('get', latch)
    if before ~= false then
        return tonumber(before)
    end
end
local function release()
";

/// What a latched release script runs after its body: it records an
/// answer that says the hold was ours, for the time the call's last
/// argument gives.
const LATCH_TAIL: &str = r"
end
local answer = release()
if latch ~= nil and answer ~= nil then
    redis.call('set', latch, answer, 'px', ARGV[#ARGV])
end
return answer
";

/// Whether an acquire issues a fencing token (#28), as the acquire scripts
/// take it in their fencing argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fencing {
    /// No token, and the counter is neither written nor read: the argument
    /// is `-1`, and the script answers the token `0`, which
    /// [`FENCE`](lock::FENCE) never issues.
    Off,
    /// A token from the name's counter, whose time to live is `ttl_ms`
    /// milliseconds (`0`: none, kept for ever).
    Counter { ttl_ms: u64 },
}

impl Fencing {
    /// The scripts' fencing argument.
    pub(crate) fn arg(self) -> i64 {
        match self {
            Fencing::Off => -1,
            // Bounded by `name::lease_millis` when the client is built.
            Fencing::Counter { ttl_ms } => i64::try_from(ttl_ms).unwrap_or(i64::MAX),
        }
    }
}

/// A token as the acquire scripts answer it: `None` for the `0` they
/// answer when fencing is off (a counter never issues less than 10^15).
pub(crate) fn token(reply: i64) -> Option<u64> {
    u64::try_from(reply).ok().filter(|&t| t > 0)
}

/// A call a lock sends: a script call, or a call of the string layout,
/// whose form (commands or a script) the connection picks
/// ([`string::run`]).
#[derive(Debug)]
pub(crate) enum Call<'a> {
    Script(ScriptCall),
    String(string::StringCall<'a>),
}

impl Call<'_> {
    /// Sends the call on `conn`: a script call as
    /// [`ScriptCall::run`], a string-layout call in the form `conn`'s
    /// server takes best ([`string::run`]).
    pub(crate) async fn run<T: FromRedisValue>(&self, conn: &Connection) -> Result<T, RedisError> {
        match self {
            Call::Script(script) => script.run(conn).await,
            Call::String(call) => Ok(T::from_redis_value(string::run(conn, call).await?)?),
        }
    }
}

impl From<ScriptCall> for Call<'_> {
    fn from(call: ScriptCall) -> Self {
        Call::Script(call)
    }
}

impl<'a> From<string::StringCall<'a>> for Call<'a> {
    fn from(call: string::StringCall<'a>) -> Self {
        Call::String(call)
    }
}

/// One call of one script, packed: which script, its KEYS and its ARGV.
///
/// Made by the builders in this module (for example [`acquire`]); sent by
/// the crate's connection with `EVALSHA`, or replayed by a benchmark from
/// [`evalsha_args`](ScriptCall::evalsha_args).
///
/// # Examples
///
/// ```
/// let call = redlease::scripts::release("orders:1", 30_000, "2b1c7f9e:1");
/// assert_eq!(call.script_name(), "release");
/// assert_eq!(call.keys().len(), 2); // the lock and its channel
/// println!("{call:?}"); // the script and how many keys and args, never their bytes
/// ```
#[must_use = "a script call does nothing until it is sent"]
pub struct ScriptCall {
    script: &'static Lua,
    /// The whole command, `EVALSHA <sha> <number of keys> KEYS... ARGV...`,
    /// packed as it is written: one buffer, where a `Vec` per key and per
    /// argument, copied into redis-rs's own invocation, cost the hot path
    /// a dozen allocations per call (#28).
    cmd: Cmd,
    /// How many of the arguments after the number are KEYS.
    keys: usize,
}

impl ScriptCall {
    /// A call of `script` with all its `keys`, in order: `EVALSHA` gives
    /// their number before the first, so they come at once, and the
    /// builder adds ARGV after them with [`arg`](ScriptCall::arg).
    fn new(script: &'static LazyLock<Lua>, keys: impl ToRedisArgs) -> ScriptCall {
        let script = LazyLock::force(script);
        // Counted as written, not from `num_of_args`, which answers the
        // number of elements of a `Vec` of pairs, not of arguments.
        let mut count = Count(0);
        keys.write_redis_args(&mut count);
        // Sized for the usual call, so that packing it allocates once.
        let mut cmd = Cmd::with_capacity(3 + count.0 + 8, 256);
        cmd.arg("EVALSHA")
            .arg(script.script.get_hash())
            .arg(count.0);
        cmd.arg(keys);
        ScriptCall {
            script,
            cmd,
            keys: count.0,
        }
    }

    fn arg(mut self, arg: impl ToRedisArgs) -> ScriptCall {
        self.cmd.arg(arg);
        self
    }

    /// The script's name, as [`lua_scripts`] lists it.
    ///
    /// # Examples
    ///
    /// ```
    /// let call = redlease::scripts::acquire("orders:1", 30_000, "2b1c7f9e:1", 0);
    /// assert_eq!(call.script_name(), "acquire");
    /// ```
    pub fn script_name(&self) -> &'static str {
        self.script.name
    }

    /// The script's SHA1, which `EVALSHA` names it by.
    ///
    /// # Examples
    ///
    /// ```
    /// use redlease::scripts::{acquire, lua_scripts};
    ///
    /// let call = acquire("orders:1", 30_000, "2b1c7f9e:1", 0);
    /// let listed = lua_scripts().into_iter().find(|s| s.0 == call.script_name()).unwrap();
    /// assert_eq!(call.sha(), listed.1);
    /// assert_eq!(call.sha().len(), 40); // hex SHA1
    /// ```
    pub fn sha(&self) -> &'static str {
        self.script.script.get_hash()
    }

    /// The call's KEYS, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let call = redlease::scripts::release("orders:1", 30_000, "2b1c7f9e:1");
    /// assert_eq!(call.keys()[0], b"orders:1");
    /// assert_eq!(call.keys()[1], b"redisson_lock__channel:{orders:1}");
    /// ```
    pub fn keys(&self) -> Vec<Vec<u8>> {
        let keys = parts(&self.cmd).skip(3).take(self.keys);
        keys.map(<[u8]>::to_vec).collect()
    }

    /// The call's ARGV, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let call = redlease::scripts::acquire("orders:1", 30_000, "2b1c7f9e:1", 0);
    /// assert_eq!(call.args(), [&b"30000"[..], b"2b1c7f9e:1", b"0"]);
    /// ```
    pub fn args(&self) -> Vec<Vec<u8>> {
        let args = parts(&self.cmd).skip(3 + self.keys);
        args.map(<[u8]>::to_vec).collect()
    }

    /// The whole command: `EVALSHA <sha> <number of keys> KEYS... ARGV...`.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut redis = redlease_testkit::RedisServer::shared().connection();
    /// for (_, _, source) in redlease::scripts::lua_scripts() {
    ///     redis::cmd("SCRIPT").arg("LOAD").arg(source).query::<String>(&mut redis)?;
    /// }
    /// let call = redlease::scripts::acquire("doc:scripts:evalsha", 30_000, "2b1c7f9e:1", 0);
    /// let command = call.evalsha_args(); // EVALSHA <sha> 2 KEYS... ARGV...
    /// let (acquired, _token): (i64, u64) = redis::cmd("EVALSHA").arg(&command[1..]).query(&mut redis)?;
    /// assert_eq!(acquired, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn evalsha_args(&self) -> Vec<Vec<u8>> {
        parts(&self.cmd).map(<[u8]>::to_vec).collect()
    }

    /// Sends the call on `conn` (on a cluster, to the node of its first
    /// key): `EVALSHA`, and when the server answers `NOSCRIPT` (after
    /// `SCRIPT FLUSH`, a restart or a failover to a node that never saw the
    /// script), `SCRIPT LOAD` and `EVALSHA` once more, as redis-rs's
    /// `ScriptInvocation` does. The call is its own command, where a
    /// `ScriptInvocation` would copy every key and argument into a `Vec` of
    /// its own, then into a command (#28).
    pub(crate) async fn run<T: FromRedisValue>(&self, conn: &Connection) -> Result<T, RedisError> {
        let cmd = &self.cmd;
        match conn.query(cmd).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(self.script.source.as_str());
                // Through the same routing as the call: on a cluster,
                // redis-rs sends `SCRIPT LOAD` to every primary.
                conn.query::<()>(&load).await?;
                conn.query(cmd).await
            }
            answer => answer,
        }
    }
}

/// Command `name` with room for `args` more arguments and their bytes
/// (an owner and a key or two), so that building it allocates twice, not
/// once per growth as `redis::cmd` does (#28).
pub(crate) fn command(name: &str, args: usize) -> Cmd {
    let mut cmd = Cmd::with_capacity(1 + args, 128);
    cmd.arg(name);
    cmd
}

/// Counts the arguments a value writes, and keeps none.
struct Count(usize);

impl redis::RedisWrite for Count {
    fn write_arg(&mut self, _: &[u8]) {
        self.0 += 1;
    }

    fn write_arg_fmt(&mut self, _: impl fmt::Display) {
        self.0 += 1;
    }

    fn writer_for_next_arg(&mut self) -> impl std::io::Write + '_ {
        self.0 += 1;
        std::io::sink()
    }
}

/// The arguments packed in `cmd`, in order.
fn parts(cmd: &Cmd) -> impl Iterator<Item = &[u8]> {
    cmd.args_iter().filter_map(|part| match part {
        Arg::Simple(bytes) => Some(bytes),
        // Only `SCAN`-like commands write a cursor; a script call has none.
        _ => None,
    })
}

impl fmt::Debug for ScriptCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Owner fields are not secrets, but ARGV may grow to carry some;
        // counts are enough to tell calls apart in a log.
        f.debug_struct("ScriptCall")
            .field("script", &self.script.name)
            .field("keys", &self.keys)
            .field(
                "args",
                &self.cmd.args_iter().len().saturating_sub(3 + self.keys),
            )
            .finish()
    }
}

/// A script, its name and the source it was built from.
pub(crate) struct Lua {
    name: &'static str,
    source: String,
    script: Script,
}

impl Lua {
    /// Joins `parts` into one script.
    fn new(name: &'static str, parts: &[&str]) -> Lua {
        let source = parts.concat();
        #[cfg(redlease_plant)]
        let source = crate::plant::rewrite(name, source);
        let script = Script::new(&source);
        Lua {
            name,
            source,
            script,
        }
    }

    /// Joins `parts`, a release whose calls have `keys` keys of their own,
    /// into one script that a [`Latch`] makes safe to send again: the parts
    /// become the body of a function, run unless the latch (key `keys + 1`,
    /// when the call passes one) holds an earlier answer.
    fn latched(name: &'static str, keys: usize, parts: &[&str]) -> Lua {
        let head = LATCH_HEAD.replace("LATCH_AT", &(keys + 1).to_string());
        let mut all = vec![head.as_str()];
        all.extend_from_slice(parts);
        all.push(LATCH_TAIL);
        Lua::new(name, &all)
    }
}

/// Every script the crate runs, as `(name, sha1, source)`, for operators who
/// pre-load or allow-list scripts and for benchmarks that replay them.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut redis = redlease_testkit::RedisServer::shared().connection();
/// // Pre-loaded, as an operator who allow-lists scripts would:
/// for (name, sha, source) in redlease::scripts::lua_scripts() {
///     let loaded: String = redis::cmd("SCRIPT").arg("LOAD").arg(source).query(&mut redis)?;
///     assert_eq!(loaded, sha, "{name}");
/// }
/// # Ok(())
/// # }
/// ```
pub fn lua_scripts() -> Vec<(&'static str, &'static str, &'static str)> {
    let scripts: [&'static LazyLock<Lua>; 42] = [
        &lock::ACQUIRE,
        &lock::SEED,
        &lock::REENTER,
        &lock::RELEASE,
        &lock::KEEP,
        &election::ANNOUNCE,
        &election::RETIRE,
        &election::LEADER,
        &lock::RENEW,
        &lock::RENEW_ON_NODE,
        &multi::ACQUIRE_ALL,
        &string::RELEASE,
        &string::FENCE_ONLY,
        &fair::ACQUIRE,
        &fair::RELEASE,
        &fair::ABANDON,
        &rwlock::READ_ACQUIRE,
        &rwlock::WRITE_ACQUIRE,
        &rwlock::READ_REENTER,
        &rwlock::READ_RELEASE,
        &rwlock::WRITE_RELEASE,
        &rwlock::RENEW_READS,
        &admin::FORCE_UNLOCK,
        &gc::FAIR,
        &gc::PERMITS_RECLAIM,
        &gc::READ_TIMEOUT,
        &gc::LEADER,
        &expirable::ACQUIRE,
        &expirable::RELEASE,
        &expirable::RENEW,
        &expirable::RENEW_ALL,
        &expirable::COUNTS,
        &expirable::TRY_SET,
        &expirable::SET,
        &expirable::ADD,
        &semaphore::ACQUIRE,
        &semaphore::WITHDRAW,
        &semaphore::RELEASE,
        &semaphore::SET_PERMITS,
        &semaphore::SET_IF_MISSING,
        &latch::COUNT_DOWN,
        &latch::DELETE,
    ];
    scripts
        .into_iter()
        .map(|lua| {
            let lua = LazyLock::force(lua);
            (lua.name, lua.script.get_hash(), lua.source.as_str())
        })
        .collect()
}

/// Every command the scripts run inside Redis, lowercase and sorted, read
/// from their sources: `redis.call('x', ...)` and `redis.pcall('x', ...)`,
/// plus `publish` and `spublish`, which the scripts take as an argument
/// (see [`Publish`](crate::connection::Publish)). An ACL user needs each
/// of them ([`crate::acl`]): Redis checks commands run by scripts against
/// the caller's permissions. The operators' forced unlock and garbage
/// collection count only with `admin`.
pub(crate) fn commands(admin: bool) -> Vec<String> {
    let mut found: Vec<String> = vec!["publish".to_owned(), "spublish".to_owned()];
    for (name, _, source) in lua_scripts() {
        if !admin && (name == admin::FORCE_UNLOCK.name || name.starts_with("gc_")) {
            continue;
        }
        for call in ["redis.call('", "redis.pcall('"] {
            for (at, _) in source.match_indices(call) {
                let rest = &source[at + call.len()..];
                if let Some(end) = rest.find('\'') {
                    found.push(rest[..end].to_ascii_lowercase());
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The server's clock in milliseconds, in a script (`now`).
const NOW_MS: &str = r"
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A call's KEYS and ARGV as strings, for the builders' tests.
    pub(crate) fn packed(call: &ScriptCall) -> (Vec<String>, Vec<String>) {
        let text = |parts: &[Vec<u8>]| {
            parts
                .iter()
                .map(|p| String::from_utf8(p.clone()).unwrap())
                .collect()
        };
        (text(&call.keys()), text(&call.args()))
    }

    #[test]
    fn listed_scripts_match_what_runs() {
        let listed = lua_scripts();
        assert_eq!(listed.len(), 42);
        for (name, sha, source) in &listed {
            assert_eq!(*sha, Script::new(source).get_hash(), "{name}");
        }
        let mut hashes: Vec<_> = listed.iter().map(|s| s.1).collect();
        hashes.sort();
        hashes.dedup();
        assert_eq!(hashes.len(), 42);
        let names: Vec<_> = listed.iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            [
                "acquire",
                "seed",
                "reenter",
                "release",
                "keep",
                "election_announce",
                "election_retire",
                "election_leader",
                "renew",
                "renew_on_node",
                "acquire_all",
                "string_release",
                "string_fence",
                "fair_acquire",
                "fair_release",
                "fair_abandon",
                "read_acquire",
                "write_acquire",
                "read_reenter",
                "read_release",
                "write_release",
                "renew_reads",
                "force_unlock",
                "gc_fair",
                "gc_permits",
                "gc_read_timeout",
                "gc_leader",
                "expirable_acquire",
                "expirable_release",
                "expirable_renew",
                "expirable_renew_all",
                "expirable_counts",
                "expirable_try_set",
                "expirable_set",
                "expirable_add",
                "semaphore_acquire",
                "semaphore_withdraw",
                "semaphore_release",
                "semaphore_set_permits",
                "set_if_missing",
                "latch_count_down",
                "latch_delete"
            ]
        );
    }

    #[test]
    fn commands_are_read_from_every_script() {
        let locks = commands(false);
        assert!(!locks.iter().any(|c| c == "type"), "{locks:?}");
        let commands = commands(true);
        for wanted in [
            "decr", "del", "exists", "get", "hdel", "hexists", "hget", "hgetall", "hincrby",
            "hlen", "hset", "lindex", "lpop", "lrange", "lrem", "pexpire", "pttl", "publish",
            "rpush", "set", "spublish", "time", "type", "zadd", "zrange", "zrem", "zscore",
        ] {
            assert!(
                commands.iter().any(|c| c == wanted),
                "{wanted}: {commands:?}"
            );
        }
        // The expirable semaphore's.
        for wanted in [
            "decrby",
            "incrby",
            "zcount",
            "zrangebyscore",
            "zremrangebyscore",
        ] {
            assert!(
                commands.iter().any(|c| c == wanted),
                "{wanted}: {commands:?}"
            );
        }
        // Nothing but command names: no quote, space or parenthesis caught.
        assert!(
            commands
                .iter()
                .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase())),
            "{commands:?}"
        );
    }

    #[test]
    fn evalsha_args_are_the_whole_command() {
        let call = acquire("a", 30_000, "u:1", 5);
        let args: Vec<String> = call
            .evalsha_args()
            .into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect();
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], call.sha());
        assert_eq!(args[2], "2");
        assert_eq!(
            args[3..],
            ["a", "redisson_lock_token:{a}", "30000", "u:1", "5"]
        );
        assert_eq!(call.script_name(), "acquire");
    }
}
