//! Least privilege: the Redis ACL rules a service user needs to run
//! redlease's locks on names with given prefixes, and nothing more.
//!
//! ```
//! use redlease::acl::{self, Access};
//!
//! let rules = acl::setuser("orders-svc", &["orders:"], Access::Locks)?;
//! let line = rules.to_string(); // ACL SETUSER orders-svc on resetkeys ...
//! assert!(line.contains("'~orders:*'"));
//! assert!(!line.contains("~*'") && !line.contains("+@all"));
//! # Ok::<(), redlease::Error>(())
//! ```
//!
//! A lock named `orders:1` is the hash `orders:1`, plus keys and channels
//! derived from its name by Redisson's rule (see [`crate::layout`]):
//! `redisson_lock__channel:{orders:1}` (also passed to the release script
//! as a key), `redisson_lock_token:{...}`, the release's unlock latches
//! `redisson_unlock_latch:{...}:<id>`, and for fair locks
//! `redisson_lock_queue:{...}`, `redisson_lock_timeout:{...}` and the
//! waiter channels `redisson_lock__channel:{...}:<owner>`; for the rest of
//! Redisson's family, `redisson_rwlock:{...}` and the read holds' timeout
//! keys `{orders:1}:<owner>:rwlock_timeout:<i>` (read-write locks),
//! `redisson_sc:{...}` (semaphores), redlease's own `redlease_request:{...}:<id>`
//! (semaphores and latches) and `{orders:1}:timeout` (expirable
//! semaphores), and `redisson_countdownlatch__channel__{...}` (latches,
//! braced whatever the name). A name that
//! carries its own `{tag}` derives `prefix:name` without added braces. The
//! rules grant those patterns for each prefix, the commands the scripts
//! run inside Redis (read from the scripts themselves, so they cannot
//! drift), and the few the client sends: `EVALSHA`, `SCRIPT LOAD` (after
//! `NOSCRIPT`), the (sharded) subscriptions, `PING`, `WAIT`
//! (`require_replicas`), `HEXISTS` (`is_held`), `EXISTS`, the string
//! layout's `MULTI`/`EXEC` transaction and `COMMAND INFO`, `CLUSTER SLOTS`
//! and `PUBSUB SHARDNUMSUB` (on a cluster), and `ROLE` (under Sentinel, a
//! new master is checked before use). The sentinels themselves are sent
//! only `SENTINEL GET-MASTER-ADDR-BY-NAME` and `SUBSCRIBE +switch-master`.
//!
//! The rules start with `resetkeys resetchannels -@all clearselectors`,
//! not `reset`, so that running them again changes the permissions and
//! keeps the user's passwords; add one with `ACL SETUSER <user>
//! '>password'`. `SELECT` is not granted: a URL with a database number
//! needs `+select` as well.

use std::fmt;

use crate::error::Error;
use crate::layout::{
    CHANNEL_PREFIX, LATCH_CHANNEL_PREFIX, LEADER_CHANNEL_PREFIX, LEADER_PREFIX, QUEUE_PREFIX,
    REQUEST_PREFIX, RWLOCK_CHANNEL_PREFIX, SEMAPHORE_CHANNEL_PREFIX, TIMEOUT_PREFIX, TOKEN_PREFIX,
    UNLOCK_LATCH_PREFIX,
};

/// What the user may do.
///
/// # Examples
///
/// ```
/// use redlease::acl::{self, Access};
///
/// let service = acl::setuser("orders-svc", &["orders:"], Access::Locks)?;
/// let operator = acl::setuser("orders-ops", &["orders:"], Access::Admin)?;
/// let scans = |rules: &acl::SetUser| rules.args().iter().any(|a| a == "+scan");
/// assert!(!scans(&service));
/// assert!(scans(&operator)); // for `redlease inspect`
/// # Ok::<(), redlease::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Take, wait for, renew and release locks (plain, fair, read-write)
    /// with fencing tokens, and use semaphores and latches: what a service
    /// needs.
    Locks,
    /// Also read every lock's state, force an unlock and collect what
    /// locks leave behind: what `redlease inspect`, `redlease unlock
    /// --force` and `redlease gc` need (`SCAN`, `TYPE`,
    /// `HGETALL`, ...).
    Admin,
}

/// Commands the client sends itself, outside scripts.
const SENT: &[&str] = &[
    "evalsha",
    "script|load",
    "subscribe",
    "unsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "ping",
    "wait",
    "hexists",
    "exists",
    "cluster|slots",
    "pubsub|shardnumsub",
    "role",
    // The string layout (#17): its acquire transaction, the refusal's
    // questions, `is_held`, and the look for the server's own commands.
    // `DELIFEQ`/`DELEX` are left out (Redis before 8.4 refuses to grant
    // a command it does not know): without them the scripts do the work.
    "multi",
    "exec",
    "set",
    "incr",
    "persist",
    "pttl",
    "get",
    "command|info",
    // The server's run id after a reconnection: a restart seeds the
    // fencing counters of the locks held (`restart.rs`, #37).
    "info",
];

/// Commands `inspect` sends (`admin::read`, `admin::scan` and
/// `admin::leftovers`).
const INSPECT: &[&str] = &[
    "scan",
    "type",
    "pttl",
    "hlen",
    "get",
    "llen",
    "hgetall",
    "lrange",
    "zrangebyscore",
    "zscore",
    "time",
    // Semaphores and latches: acquired permits, and who waits on them.
    "getrange",
    "zcard",
    "zrange",
    "pubsub|numsub",
    // The size of what locks leave behind (`inspect --leftovers`).
    "memory|usage",
];

/// An `ACL SETUSER` command: [`args`](SetUser::args) to send it, or
/// `Display` for a line that both a shell and `redis-cli` read as the same
/// arguments.
///
/// # Examples
///
/// ```
/// use redlease::acl::{self, Access};
///
/// let rules = acl::setuser("orders-svc", &["orders:"], Access::Locks)?;
/// println!("{rules}"); // for redis-cli, or a shell
/// assert!(rules.to_string().starts_with("ACL SETUSER orders-svc on resetkeys "));
/// assert!(rules.to_string().contains(" '~orders:*' ")); // quoted for the shell
/// # Ok::<(), redlease::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetUser {
    args: Vec<String>,
}

impl SetUser {
    /// The command's arguments, `ACL`, `SETUSER`, the user, then the rules.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use redlease::acl::{self, Access};
    ///
    /// let rules = acl::setuser("doc-acl-svc", &["doc:acl:"], Access::Locks)?;
    /// assert_eq!(rules.args()[..3], ["ACL", "SETUSER", "doc-acl-svc"]);
    /// let server = redlease_testkit::RedisServer::shared();
    /// let mut admin = server.connection();
    /// redis::cmd("ACL").arg(&rules.args()[1..]).query::<()>(&mut admin)?;
    /// redis::cmd("ACL").arg(&["SETUSER", "doc-acl-svc", ">s3cret"]).query::<()>(&mut admin)?;
    ///
    /// let url = format!("redis://doc-acl-svc:s3cret@127.0.0.1:{}", server.port());
    /// let client = redlease::Client::connect(&url).await?;
    /// client.lock("doc:acl:orders:1").try_lock().await?.unlock().await?;
    /// assert!(client.lock("elsewhere:1").try_lock().await.is_err()); // no such key granted
    /// # Ok(())
    /// # }
    /// ```
    pub fn args(&self) -> &[String] {
        &self.args
    }
}

impl fmt::Display for SetUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self.args.iter().map(|a| quote(a)).collect();
        f.write_str(&words.join(" "))
    }
}

/// The rules for `user` on locks whose names start with one of `prefixes`.
///
/// # Errors
///
/// [`is_invalid_argument`](Error::is_invalid_argument) when `user` is
/// empty, no prefix is given, a prefix is empty, or either contains
/// whitespace, quotes or control characters (which no ACL line can carry
/// unambiguously). Glob characters in a prefix (`*?[]\`) are escaped, so
/// they match only themselves.
///
/// # Examples
///
/// ```
/// use redlease::acl::{self, Access};
///
/// let rules = acl::setuser("billing", &["invoices:", "{tenant-7}:"], Access::Locks)?;
/// assert!(rules.args().iter().any(|a| a == "~invoices:*"));
/// assert!(rules.args().iter().any(|a| a == "~redisson_lock_token:{invoices:*"));
/// assert!(rules.args().iter().any(|a| a == "~{tenant-7}:*"));
///
/// let everything: [&str; 0] = [];
/// assert!(acl::setuser("billing", &everything, Access::Locks).unwrap_err().is_invalid_argument());
/// # Ok::<(), redlease::Error>(())
/// ```
pub fn setuser(user: &str, prefixes: &[impl AsRef<str>], access: Access) -> Result<SetUser, Error> {
    check_word("user name", user)?;
    if prefixes.is_empty() {
        return Err(Error::invalid(
            "at least one lock name prefix is needed; a user for every name would need ~*",
        ));
    }
    let mut args: Vec<String> = ["ACL", "SETUSER", user, "on"]
        .into_iter()
        .chain(["resetkeys", "resetchannels", "-@all", "clearselectors"])
        .map(str::to_owned)
        .collect();
    let mut commands: Vec<String> = crate::scripts::commands(access == Access::Admin);
    commands.extend(SENT.iter().map(|c| (*c).to_owned()));
    if access == Access::Admin {
        commands.extend(INSPECT.iter().map(|c| (*c).to_owned()));
    }
    commands.sort();
    commands.dedup();
    args.extend(commands.into_iter().map(|c| format!("+{c}")));

    // Channels are passed to the scripts as keys too.
    let channels = [
        CHANNEL_PREFIX,
        RWLOCK_CHANNEL_PREFIX,
        SEMAPHORE_CHANNEL_PREFIX,
        LEADER_CHANNEL_PREFIX,
    ];
    let derived = [
        LEADER_PREFIX,
        TOKEN_PREFIX,
        QUEUE_PREFIX,
        TIMEOUT_PREFIX,
        REQUEST_PREFIX,
        UNLOCK_LATCH_PREFIX,
    ];
    let mut keys = Vec::new();
    let mut chans = Vec::new();
    for prefix in prefixes {
        let prefix = prefix.as_ref();
        check_word("lock name prefix", prefix)?;
        let glob = escape_glob(prefix);
        keys.push(format!("~{glob}*"));
        // Keys named by Redisson's `suffixName` (a read hold's timeout
        // keys, an expirable semaphore's permits): `{name}:...`, or
        // `name:...` (matched above) when the name has its own tag.
        if !prefix.contains('{') {
            keys.push(format!("~{{{glob}*"));
        }
        for d in derived.iter().chain(&channels) {
            keys.extend(derived_patterns(d, prefix, &glob).map(|p| format!("~{p}")));
        }
        for c in &channels {
            chans.extend(derived_patterns(c, prefix, &glob).map(|p| format!("&{p}")));
        }
        // A latch's channel is braced whatever the name.
        keys.push(format!("~{LATCH_CHANNEL_PREFIX}{{{glob}*"));
        chans.push(format!("&{LATCH_CHANNEL_PREFIX}{{{glob}*"));
    }
    args.extend(keys);
    args.extend(chans);
    Ok(SetUser { args })
}

/// The patterns of `derived`'s keys (or channels) for names starting with
/// `prefix`: `derived:{prefix*` for names without a `{` of their own, and
/// `derived:prefix*{*` for names with one (Redisson adds no braces then).
/// A prefix that has a `{` only derives the second kind.
fn derived_patterns(derived: &str, prefix: &str, glob: &str) -> impl Iterator<Item = String> {
    let braced = (!prefix.contains('{')).then(|| format!("{derived}:{{{glob}*"));
    let tagged = if prefix.contains('{') {
        format!("{derived}:{glob}*")
    } else {
        format!("{derived}:{glob}*{{*")
    };
    braced.into_iter().chain(std::iter::once(tagged))
}

/// Refuses what an ACL rule cannot carry: empty words, whitespace, quotes
/// and control characters.
fn check_word(what: &str, word: &str) -> Result<(), Error> {
    if word.is_empty() {
        return Err(Error::invalid(format!("the {what} is empty")));
    }
    if let Some(c) = word
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '\'' | '"'))
    {
        return Err(Error::invalid(format!(
            "the {what} {word:?} contains {c:?}, which an ACL rule cannot carry"
        )));
    }
    Ok(())
}

/// `prefix` with Redis's glob characters escaped.
fn escape_glob(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `word` as is when it has only characters that neither a shell nor
/// `redis-cli` treat specially, else in single quotes (a word here never
/// contains one: [`check_word`]). Backslashes inside single quotes are
/// literal to a shell, and `redis-cli` only unescapes `\'` there.
fn quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '@' | '+' | '-'));
    if plain {
        word.to_owned()
    } else {
        format!("'{word}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(prefixes: &[&str], access: Access) -> Vec<String> {
        setuser("svc", prefixes, access).unwrap().args().to_vec()
    }

    #[test]
    fn grants_the_prefix_and_its_derived_keys_and_channels_only() {
        let args = rules(&["orders:"], Access::Locks);
        assert_eq!(args[..4], ["ACL", "SETUSER", "svc", "on"]);
        for wanted in [
            "~orders:*",
            "~redisson_lock__channel:{orders:*",
            "~redisson_lock__channel:orders:*{*",
            "~redisson_lock_token:{orders:*",
            "~redisson_lock_queue:{orders:*",
            "~redisson_lock_timeout:orders:*{*",
            "&redisson_lock__channel:{orders:*",
            "&redisson_lock__channel:orders:*{*",
            "~{orders:*",
            "~redisson_rwlock:{orders:*",
            "&redisson_rwlock:{orders:*",
            "~redisson_sc:{orders:*",
            "&redisson_sc:orders:*{*",
            "~redisson_countdownlatch__channel__{orders:*",
            "&redisson_countdownlatch__channel__{orders:*",
            "+evalsha",
            "+script|load",
            "+hincrby",
            "+publish",
            "+spublish",
            "+ssubscribe",
            "+cluster|slots",
        ] {
            assert!(
                args.iter().any(|a| a == wanted),
                "{wanted} missing: {args:?}"
            );
        }
        for never in [
            "~*",
            "&*",
            "+@all",
            "allkeys",
            "allchannels",
            "+scan",
            "reset",
        ] {
            assert!(
                !args.iter().any(|a| a == never),
                "{never} granted: {args:?}"
            );
        }
    }

    #[test]
    fn admin_adds_what_inspect_and_a_forced_unlock_need() {
        let args = rules(&["a"], Access::Admin);
        for wanted in [
            "+scan",
            "+type",
            "+hgetall",
            "+zcard",
            "+pubsub|numsub",
            "+memory|usage",
            "~{a*",
        ] {
            assert!(args.iter().any(|a| a == wanted), "{wanted} missing");
        }
    }

    #[test]
    fn a_prefix_with_its_own_hash_tag_derives_unbraced_names() {
        let args = rules(&["{tenant-7}:"], Access::Locks);
        assert!(args.contains(&"~{tenant-7}:*".to_owned()));
        assert!(args.contains(&"~redisson_lock_token:{tenant-7}:*".to_owned()));
        assert!(!args.contains(&"~{{tenant-7}:*".to_owned()));
        // Only a latch's channel adds braces to a tagged name.
        assert!(
            args.iter()
                .filter(|a| a.contains("{{"))
                .all(|a| a.contains(LATCH_CHANNEL_PREFIX)),
            "{args:?}"
        );
    }

    #[test]
    fn glob_characters_in_a_prefix_match_only_themselves() {
        let args = rules(&["a*b?[c]\\"], Access::Locks);
        assert!(
            args.contains(&"~a\\*b\\?\\[c\\]\\\\*".to_owned()),
            "{args:?}"
        );
    }

    #[test]
    fn several_prefixes_each_get_their_patterns() {
        let args = rules(&["a:", "b:"], Access::Locks);
        assert!(args.contains(&"~a:*".to_owned()) && args.contains(&"~b:*".to_owned()));
        assert!(args.contains(&"&redisson_lock__channel:{b:*".to_owned()));
    }

    #[test]
    fn bad_input_is_an_invalid_argument() {
        let none: [&str; 0] = [];
        for err in [
            setuser("svc", &none, Access::Locks),
            setuser("svc", &[""], Access::Locks),
            setuser("svc", &["a b"], Access::Locks),
            setuser("svc", &["it's"], Access::Locks),
            setuser("", &["a"], Access::Locks),
            setuser("s\nvc", &["a"], Access::Locks),
        ] {
            assert!(err.unwrap_err().is_invalid_argument());
        }
    }

    #[test]
    fn the_line_quotes_what_a_shell_or_redis_cli_would_read_otherwise() {
        let line = setuser("svc", &["orders:"], Access::Locks)
            .unwrap()
            .to_string();
        assert!(
            line.starts_with("ACL SETUSER svc on resetkeys resetchannels -@all clearselectors ")
        );
        assert!(line.contains(" '+script|load' "), "{line}");
        assert!(line.contains(" '~orders:*' "), "{line}");
        assert!(line.contains(" +evalsha "), "{line}");
    }
}
