//! [`SentinelGroup`]: a master, its replicas and the Redis Sentinels that
//! watch them, all private `redis-server` processes, and the failovers,
//! kills and wrong answers a test does to them.

mod failover;
mod faults;
mod form;
mod look;

use std::path::PathBuf;
use std::time::Duration;

pub use faults::WrongSentinel;

use crate::{RedisServer, ServerOptions, StartError, TlsFiles};

/// How long starting a group, or letting it settle after a change, may
/// take. A group settles about 2.3 s after its start; after a failover it
/// takes up to two of Sentinel's 10 s `INFO` periods until every Sentinel
/// has seen the old master turn replica. The rest is room for a loaded
/// machine.
const SETTLE_WITHIN: Duration = Duration::from_secs(45);

/// How long the Sentinels may take to agree on a new master after a
/// failover starts: about 1.1 s for `SENTINEL FAILOVER`, the down-after
/// time plus an election or two when the master dies.
const SWITCH_WITHIN: Duration = Duration::from_secs(30);

/// The least `down-after-milliseconds` the Sentinels use while the kit is
/// not killing or pausing the master itself. A loaded machine (a build
/// beside the tests) can keep a healthy node from answering `PING` for
/// over a second, most often a master promoted a moment ago while it
/// serves its first full sync; with the 1 s a fast failover needs, a
/// Sentinel then declares it down and fails over a second time, and the
/// group ends up on a node the test did not expect.
const DOWN_AFTER_AT_REST: Duration = Duration::from_secs(5);

/// How often a wait asks the nodes again.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// A master with replicas and a group of Redis Sentinels watching it, on
/// loopback, owned by the caller.
///
/// Every process is a [`RedisServer`] (free ports, no persistence, watched
/// like any other server), so dropping the group stops them all, and so
/// does the death of the owning process. The Sentinels run `redis-server
/// <conf> --sentinel` and monitor the master as
/// [`master_name`](SentinelGroup::master_name) with a quorum of a majority
/// of them, `failover-timeout` 5000 and `parallel-syncs` 1 (see
/// [`SentinelOptions`]). Their `down-after-milliseconds` is 5000 at rest
/// and drops to the options' 1000 only while
/// [`kill_master`](SentinelGroup::kill_master) or
/// [`pause_master`](SentinelGroup::pause_master) waits for the switch, so
/// a failover comes fast when a test asks for one and not at all when a
/// loaded machine slows a node down.
///
/// The group keeps track of which data node is the master as the Sentinels
/// last agreed. Starting waits until the group is *settled*: every running
/// replica replicates that master with its link up, and every running
/// Sentinel names that master, sees each running replica (not down, and
/// reporting that it replicates the master) and sees the other running
/// Sentinels. Killed, paused and [wrong](SentinelGroup::make_sentinel_wrong)
/// members are left out. Each operation says what it waits for.
///
/// Sentinel asks replicas for `INFO` only every 10 s, which shapes what a
/// failover costs: after `SENTINEL FAILOVER` every Sentinel names the new
/// master within about 1.1 s, but the old master goes on accepting writes
/// until a Sentinel turns it into a replica, about 11 s later, and the other
/// Sentinels notice the change only at their next `INFO`. A failover
/// started while a Sentinel still believes a replica to be a master can be
/// undone by that Sentinel (it "converts" the freshly promoted replica back
/// and the failover aborts), so the operations wait for fresh views first;
/// see [`failover`](SentinelGroup::failover).
///
/// The operations are test fixtures: they panic with what the nodes last
/// said when the group does not settle.
///
/// ```no_run
/// use redlease_testkit::SentinelGroup;
///
/// let mut group = SentinelGroup::start(1, 3);
/// // redis-sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>#mymaster
/// let url = group.url();
/// let old = group.master().port();
/// let new = group.failover(); // every Sentinel names the new master
/// assert_ne!(new, format!("127.0.0.1:{old}"));
/// # drop(url);
/// ```
#[derive(Debug)]
pub struct SentinelGroup {
    /// The Sentinels in start order. Declared first so that they stop first
    /// on drop and cannot react to the data nodes going away.
    sentinels: Vec<Member>,
    /// The data nodes in start order, the first master first. A killed
    /// node stays, so that it can be restarted.
    nodes: Vec<Member>,
    /// The index in `nodes` of the master the Sentinels last agreed on.
    master: usize,
    options: SentinelOptions,
}

/// Options for [`SentinelGroup::start_with`]. More may come; build them
/// with `..SentinelOptions::default()`.
#[derive(Clone, Debug)]
pub struct SentinelOptions {
    /// The name the Sentinels know the master by, the URL's fragment.
    /// Default `mymaster`.
    pub master_name: String,
    /// The password of the master and replicas (`requirepass`, and
    /// `masterauth` so that replicas, and an old master turned replica,
    /// can sync); the Sentinels get it as `auth-pass`.
    pub password: Option<String>,
    /// The password of the Sentinels themselves (`requirepass` in Sentinel
    /// mode, which they also present to each other).
    pub sentinel_password: Option<String>,
    /// How long the master may not answer before a Sentinel considers it
    /// down (`down-after-milliseconds`) while
    /// [`kill_master`](SentinelGroup::kill_master) or
    /// [`pause_master`](SentinelGroup::pause_master) waits for the switch.
    /// Default 1 s. At other times the Sentinels wait the longer of this
    /// and 5 s, so that a node slowed by a loaded machine is not failed
    /// over behind a test's back.
    pub down_after: Duration,
    /// `failover-timeout`: how long a failover may take before it is
    /// aborted, and twice the time before a failed one is retried.
    /// Default 5 s.
    pub failover_timeout: Duration,
    /// Every process of the group also serves TLS on a port of its own with
    /// this certificate and key ([`TestCerts::server`](crate::TestCerts)),
    /// replicates over TLS, and the Sentinels monitor the master's TLS
    /// port, talk TLS to each other and name the TLS ports of the data
    /// nodes, before and after a failover: connect with
    /// [`tls_url`](SentinelGroup::tls_url). The plain ports stay open for the
    /// kit's own setup and checks. Clients present no certificate.
    pub tls: Option<TlsFiles>,
    /// The CA the TLS processes trust (for each other's certificates), as
    /// [`ServerOptions::tls_ca`]; [`TestCerts::ca`](crate::TestCerts) with
    /// [`TestCerts::server`](crate::TestCerts) as [`tls`](SentinelOptions::tls).
    pub tls_ca: Option<PathBuf>,
}

impl SentinelOptions {
    /// The TLS part of every process's options.
    fn tls_server(&self) -> ServerOptions {
        ServerOptions {
            tls: self.tls.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_replication: self.tls.is_some(),
            ..ServerOptions::default()
        }
    }
}

/// The port a process of the group is known by to the others: its TLS
/// port in a TLS group, else its port.
fn shown(server: &RedisServer) -> u16 {
    server.tls_port().unwrap_or_else(|| server.port())
}

impl Default for SentinelOptions {
    fn default() -> SentinelOptions {
        SentinelOptions {
            master_name: "mymaster".to_owned(),
            password: None,
            sentinel_password: None,
            down_after: Duration::from_secs(1),
            failover_timeout: Duration::from_secs(5),
            tls: None,
            tls_ca: None,
        }
    }
}

/// A process of the group and what was done to it.
#[derive(Debug)]
struct Member {
    server: RedisServer,
    state: State,
    /// The standalone server a [wrong](State::Wrong) Sentinel names.
    decoy: Option<RedisServer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running,
    /// Stopped with SIGSTOP.
    Paused,
    /// Killed with SIGKILL; keeps its port and scratch directory.
    Killed,
    /// A Sentinel that answers for another master, or for none.
    Wrong,
}

impl Member {
    fn new(server: RedisServer) -> Member {
        Member {
            server,
            state: State::Running,
            decoy: None,
        }
    }
}

impl SentinelGroup {
    /// Starts a master with `replicas` replicas and `sentinels` Sentinels
    /// with default options, and waits until the group is settled.
    ///
    /// # Panics
    ///
    /// When the group cannot be started: this is a test fixture. Also when
    /// `sentinels` is 0.
    pub fn start(replicas: usize, sentinels: usize) -> SentinelGroup {
        SentinelGroup::start_with(replicas, sentinels, SentinelOptions::default())
    }

    /// Starts a group like [`start`](SentinelGroup::start), with `options`.
    ///
    /// # Panics
    ///
    /// As [`start`](SentinelGroup::start).
    pub fn start_with(
        replicas: usize,
        sentinels: usize,
        options: SentinelOptions,
    ) -> SentinelGroup {
        match SentinelGroup::try_start_with(replicas, sentinels, options) {
            Ok(group) => group,
            Err(StartError::NotInstalled) => panic!(
                "redis-server is not on PATH; install it (scripts/test does: apt-get install redis-server)"
            ),
            Err(e) => panic!("could not start a sentinel group: {e}"),
        }
    }

    /// Starts a group like [`start`](SentinelGroup::start); for programs,
    /// which report a failure rather than panic.
    ///
    /// # Errors
    ///
    /// [`StartError::NotInstalled`] when there is no `redis-server` on PATH,
    /// else [`StartError::Failed`] saying which process failed to start, or
    /// what the nodes last said when they did not settle within 45 s.
    ///
    /// # Panics
    ///
    /// When `sentinels` is 0.
    pub fn try_start(replicas: usize, sentinels: usize) -> Result<SentinelGroup, StartError> {
        SentinelGroup::try_start_with(replicas, sentinels, SentinelOptions::default())
    }

    /// [`try_start`](SentinelGroup::try_start) with `options`.
    ///
    /// # Errors
    ///
    /// As [`try_start`](SentinelGroup::try_start).
    ///
    /// # Panics
    ///
    /// When `sentinels` is 0.
    pub fn try_start_with(
        replicas: usize,
        sentinels: usize,
        options: SentinelOptions,
    ) -> Result<SentinelGroup, StartError> {
        assert!(sentinels > 0, "a sentinel group needs a sentinel");
        let tls = options.tls_server();
        let data = ServerOptions {
            password: options.password.clone(),
            ..tls.clone()
        };
        let master = RedisServer::try_start_with(data.clone())?;
        let replica = ServerOptions {
            replica_of: Some(shown(&master)),
            ..data
        };
        let sentinel = ServerOptions {
            password: options.sentinel_password.clone(),
            sentinel: true,
            ..tls
        };
        // Side by side: each process takes 0.1–0.25 s to answer.
        let started: Vec<Result<RedisServer, StartError>> = std::thread::scope(|scope| {
            let starts: Vec<_> = std::iter::repeat_n(&replica, replicas)
                .chain(std::iter::repeat_n(&sentinel, sentinels))
                .map(|options| scope.spawn(|| RedisServer::try_start_with(options.clone())))
                .collect();
            starts
                .into_iter()
                .map(|start| {
                    start.join().unwrap_or_else(|_| {
                        Err(StartError::Failed("starting a node panicked".to_owned()))
                    })
                })
                .collect()
        });
        // On an error the processes already started drop here, and stop.
        let mut servers = started.into_iter().collect::<Result<Vec<_>, _>>()?;
        let sentinel_servers = servers.split_off(replicas);
        let group = SentinelGroup {
            sentinels: sentinel_servers.into_iter().map(Member::new).collect(),
            nodes: std::iter::once(master)
                .chain(servers)
                .map(Member::new)
                .collect(),
            master: 0,
            options,
        };
        group
            .introduce()
            .map_err(|e| StartError::Failed(format!("the sentinel group did not settle: {e}")))?;
        Ok(group)
    }

    /// `redis-sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,...#<name>`: every
    /// Sentinel of the group (killed, paused or wrong ones too, as a
    /// client's configuration would still list them), and the master's
    /// name; with `:<password>@` (as given, not percent-encoded) when the
    /// data nodes have one.
    ///
    /// In a TLS group these are the Sentinels' plain ports, but the
    /// Sentinels name the master's TLS port: use
    /// [`tls_url`](SentinelGroup::tls_url).
    pub fn url(&self) -> String {
        let credentials = match &self.options.password {
            Some(password) => format!(":{password}@"),
            None => String::new(),
        };
        format!(
            "redis-sentinel://{credentials}{}#{}",
            self.sentinel_addresses().join(","),
            self.options.master_name
        )
    }

    /// `rediss-sentinel://127.0.0.1:<s1>,...#<name>` with the Sentinels'
    /// TLS ports, for a group started with [`SentinelOptions::tls`];
    /// otherwise as [`url`](SentinelGroup::url). Trust
    /// [`SentinelOptions::tls_ca`] (`ClientBuilder::tls_ca`): the Sentinels
    /// and the master present certificates it signed.
    pub fn tls_url(&self) -> String {
        if self.options.tls.is_none() {
            return self.url();
        }
        let credentials = match &self.options.password {
            Some(password) => format!(":{password}@"),
            None => String::new(),
        };
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|member| format!("127.0.0.1:{}", shown(&member.server)))
            .collect();
        format!(
            "rediss-sentinel://{credentials}{}#{}",
            sentinels.join(","),
            self.options.master_name
        )
    }

    /// `127.0.0.1:<port>` of every Sentinel, in start order.
    pub fn sentinel_addresses(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|member| format!("127.0.0.1:{}", member.server.port()))
            .collect()
    }

    /// The name the Sentinels know the master by.
    pub fn master_name(&self) -> &str {
        &self.options.master_name
    }

    /// The master, as the Sentinels last agreed.
    pub fn master(&self) -> &RedisServer {
        &self.nodes[self.master].server
    }

    /// The data nodes other than the master that run (neither killed nor
    /// paused), in start order. Right after
    /// [`failover`](SentinelGroup::failover) the old master is among them
    /// before it actually replicates the new one.
    pub fn replicas(&self) -> Vec<&RedisServer> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|&(i, member)| i != self.master && member.state == State::Running)
            .map(|(_, member)| &member.server)
            .collect()
    }

    /// Every Sentinel, in start order, whatever was done to it.
    pub fn sentinels(&self) -> Vec<&RedisServer> {
        self.sentinels.iter().map(|member| &member.server).collect()
    }

    /// Sentinel `i`, in start order.
    ///
    /// # Panics
    ///
    /// When there is no Sentinel `i`.
    pub fn sentinel(&self, i: usize) -> &RedisServer {
        &self.sentinel_member(i).server
    }

    /// What Sentinel `i` answers to `SENTINEL GET-MASTER-ADDR-BY-NAME`:
    /// `127.0.0.1:<port>`, or `None` when it knows no master by the group's
    /// name. In a TLS group the port is the master's TLS port.
    ///
    /// # Panics
    ///
    /// When Sentinel `i` does not answer (killed, paused) or answers an
    /// error.
    pub fn master_addr_by_sentinel(&self, i: usize) -> Option<String> {
        let port = self.sentinel(i).port();
        self.probe()
            .query::<Option<(String, u16)>>(
                port,
                redis::cmd("SENTINEL")
                    .arg("GET-MASTER-ADDR-BY-NAME")
                    .arg(&self.options.master_name),
            )
            .unwrap_or_else(|e| panic!("sentinel {i}: {e}"))
            .map(|(host, port)| format!("{host}:{port}"))
    }

    /// A majority of the Sentinels.
    fn quorum(&self) -> usize {
        self.sentinels.len() / 2 + 1
    }

    fn sentinel_member(&self, i: usize) -> &Member {
        self.sentinels.get(i).unwrap_or_else(|| {
            panic!(
                "no sentinel {i}: the group has {} of them",
                self.sentinels.len()
            )
        })
    }

    fn sentinel_member_mut(&mut self, i: usize) -> &mut Member {
        let count = self.sentinels.len();
        self.sentinels
            .get_mut(i)
            .unwrap_or_else(|| panic!("no sentinel {i}: the group has {count} of them"))
    }

    /// The index in `nodes` of the data node on `port`, its plain or its
    /// TLS port.
    fn node_index(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|member| {
                member.server.port() == port || member.server.tls_port() == Some(port)
            })
            .unwrap_or_else(|| panic!("no data node of this group on port {port}"))
    }
}
