//! [`RedisServer`]: one private `redis-server` and what a test does to it.

use std::path::PathBuf;
use std::process::Child;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::launch::{free_port, scratch_dir, spawn, wait_ready, watch};
use crate::{StartError, signal};

/// How many fresh ports [`RedisServer::try_start_with`] tries.
const START_TRIES: u32 = 5;

/// A `redis-server` process owned by the caller.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    extra_args: Vec<String>,
    /// The server, a child of this process, so that it is reaped here
    /// rather than left to an init process that may not reap (as in some
    /// containers). `None` once killed.
    server: Option<Child>,
    /// Kills the server if this process dies without running destructors
    /// (see [`watch`]).
    watcher: Option<Child>,
    tls_port: Option<u16>,
    cluster_bus_port: Option<u16>,
    /// A Sentinel's configuration file, in `dir`: passed first on every
    /// launch, so a restarted Sentinel comes back with what it had
    /// written there (its id, the masters, replicas and Sentinels it knew).
    config: Option<PathBuf>,
    dir: PathBuf,
    /// The server program: `redis-server` on PATH unless
    /// [`ServerOptions::program`] named another.
    program: PathBuf,
}

/// Options for [`RedisServer::start_with`].
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Requires this password (`requirepass`), and gives it to the master
    /// when the server is or becomes a replica (`masterauth`).
    pub password: Option<String>,
    /// Starts the server as a replica of this port on 127.0.0.1.
    pub replica_of: Option<u16>,
    /// Also serves TLS on a port of its own ([`RedisServer::tls_port`]) with
    /// this certificate and key (PEM files); the plain port stays open for
    /// setup and checks. A cluster node ([`cluster`](ServerOptions::cluster))
    /// then also talks TLS to the other nodes and to its replicas
    /// (`--tls-cluster yes`, `--tls-replication yes`) and reports its TLS
    /// port to TLS clients, so that a cluster client can follow it over TLS.
    /// [`TestCerts`](crate::TestCerts) makes the files.
    pub tls: Option<TlsFiles>,
    /// The CA certificate (PEM) the TLS server trusts: for client
    /// certificates, and for the servers it connects to itself (a cluster
    /// node's peers). By default the certificate of [`tls`](ServerOptions::tls)
    /// itself, which suits a self-signed one.
    pub tls_ca: Option<PathBuf>,
    /// Requires TLS clients to present a certificate signed by
    /// [`tls_ca`](ServerOptions::tls_ca) (`--tls-auth-clients yes`): mutual
    /// TLS. Off by default: clients present none.
    pub tls_auth_clients: bool,
    /// Replicates over TLS (`--tls-replication yes`), with
    /// [`tls`](ServerOptions::tls): a replica connects to its master's TLS
    /// port (give that port as [`replica_of`](ServerOptions::replica_of))
    /// and announces its own TLS port; a Sentinel talks TLS to the nodes and
    /// the other Sentinels and announces its TLS port. Implied for a
    /// cluster node.
    pub tls_replication: bool,
    /// Starts the server as a Redis Cluster node, alone until it is
    /// introduced to others (`CLUSTER MEET`); [`RedisCluster`](crate::RedisCluster)
    /// does that. Cannot be combined with `replica_of`: a cluster node
    /// becomes a replica with `CLUSTER REPLICATE`.
    pub cluster: Option<ClusterNodeOptions>,
    /// Starts the server as a Redis Sentinel (`--sentinel`) that monitors
    /// nothing yet: `SENTINEL MONITOR` and `SENTINEL SET` configure it.
    /// Its configuration file, which Sentinel rewrites as it learns, stays
    /// in the scratch directory, so [`restart`](RedisServer::restart)
    /// brings back the same Sentinel. `password` then guards the Sentinel
    /// itself, and is also what it sends to other Sentinels. Cannot be
    /// combined with `replica_of` or `cluster`. A
    /// [`SentinelGroup`](crate::SentinelGroup) starts its Sentinels so.
    pub sentinel: bool,
    /// The server program to run, by default `redis-server` on PATH. Any
    /// program that takes `redis-server`'s arguments will do:
    /// [`valkey_server`](crate::valkey_server) finds Valkey's.
    pub program: Option<PathBuf>,
}

/// How a server started with [`ServerOptions::cluster`] takes part in a
/// cluster.
#[derive(Clone, Debug)]
pub struct ClusterNodeOptions {
    /// How long a node may be unreachable before the others count it as
    /// failing and its replica takes over (`cluster-node-timeout`). Redis's
    /// default is 15 s; 2 s makes a failover in a test take a few seconds.
    pub node_timeout: Duration,
}

impl Default for ClusterNodeOptions {
    fn default() -> ClusterNodeOptions {
        ClusterNodeOptions {
            node_timeout: Duration::from_secs(2),
        }
    }
}

/// A certificate and its private key, as PEM files: a server's, or a
/// client's for mutual TLS.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate (for a server, self-signed is fine: without
    /// [`ServerOptions::tls_ca`] it is also given as the CA).
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

impl RedisServer {
    /// Starts a server with default options.
    pub fn start() -> RedisServer {
        RedisServer::start_with(ServerOptions::default())
    }

    /// Starts a server with `options`.
    ///
    /// # Panics
    ///
    /// When the server cannot be started: this is a test fixture.
    pub fn start_with(options: ServerOptions) -> RedisServer {
        match RedisServer::try_start_with(options) {
            Ok(server) => server,
            Err(StartError::NotInstalled) => panic!(
                "redis-server is not on PATH; install it (scripts/test does: apt-get install redis-server)"
            ),
            Err(e) => panic!("could not start redis-server: {e}"),
        }
    }

    /// Starts a private Valkey 9 server ([`crate::valkey_server`]) with
    /// default options, as [`start`](RedisServer::start) starts
    /// `redis-server`.
    ///
    /// # Errors
    ///
    /// As [`crate::valkey_server`] when there is no Valkey program, and as
    /// [`try_start_with`](RedisServer::try_start_with).
    pub fn try_start_valkey() -> Result<RedisServer, StartError> {
        RedisServer::try_start_with(ServerOptions {
            program: Some(crate::valkey_server()?),
            ..Default::default()
        })
    }

    /// Starts a server with `options` on a free port and waits until it
    /// answers; for programs, which report a failure rather than panic.
    ///
    /// # Errors
    ///
    /// [`StartError::NotInstalled`] when there is no `redis-server` on PATH,
    /// else [`StartError::Failed`] after a few tries on fresh ports.
    pub fn try_start_with(options: ServerOptions) -> Result<RedisServer, StartError> {
        let mut extra_args = Vec::new();
        if let Some(password) = &options.password {
            extra_args.extend([
                "--requirepass".to_owned(),
                password.clone(),
                "--masterauth".to_owned(),
                password.clone(),
            ]);
        }
        if let Some(port) = options.replica_of {
            extra_args.extend([
                "--replicaof".to_owned(),
                "127.0.0.1".to_owned(),
                port.to_string(),
            ]);
        }
        // A free port can be taken between our probe and redis-server's bind;
        // a few tries make that race irrelevant.
        let mut tries = 0;
        loop {
            tries += 1;
            let mut extra_args = extra_args.clone();
            let tls_port = match &options.tls {
                Some(tls) => {
                    let port = free_port()?;
                    extra_args.extend(tls_args(port, tls, &options));
                    Some(port)
                }
                None => None,
            };
            // The cluster bus gets a free port of its own too: Redis's default,
            // the client port + 10000, may be taken or out of range.
            let cluster_bus_port = match &options.cluster {
                Some(_) => Some(free_port()?),
                None => None,
            };
            let port = free_port()?;
            let dir = scratch_dir(port)?;
            if let (Some(cluster), Some(bus_port)) = (&options.cluster, cluster_bus_port) {
                extra_args.extend([
                    "--cluster-enabled".to_owned(),
                    "yes".to_owned(),
                    "--cluster-port".to_owned(),
                    bus_port.to_string(),
                    "--cluster-node-timeout".to_owned(),
                    cluster.node_timeout.as_millis().to_string(),
                    // In the scratch directory, so that a restarted node comes
                    // back as the same node (its id, epoch and view of the
                    // cluster), as a real node does after a crash.
                    "--cluster-config-file".to_owned(),
                    dir.join("nodes.conf").display().to_string(),
                ]);
            }
            let config = if options.sentinel {
                // Empty, but it must exist and be writable: Sentinel refuses
                // to run without a file to save its state to.
                let config = dir.join("sentinel.conf");
                std::fs::write(&config, "").map_err(|e| {
                    StartError::Failed(format!("cannot write {}: {e}", config.display()))
                })?;
                extra_args.push("--sentinel".to_owned());
                Some(config)
            } else {
                None
            };
            let mut server = RedisServer {
                port,
                extra_args,
                server: None,
                watcher: None,
                tls_port,
                cluster_bus_port,
                config,
                dir,
                program: options
                    .program
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("redis-server")),
            };
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(e @ StartError::NotInstalled) => return Err(e),
                Err(e) if tries == START_TRIES => return Err(e),
                Err(_) => {}
            }
        }
    }

    /// The shared server for tests that only read and write their own keys.
    /// Started on first use and stopped when the test process exits.
    pub fn shared() -> &'static RedisServer {
        static SHARED: OnceLock<RedisServer> = OnceLock::new();
        SHARED.get_or_init(RedisServer::start)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The last `lines` lines of the server's log (its output, restarts
    /// included), for a test's failure message.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.dir.join(crate::launch::LOG)).unwrap_or_default();
        let mut tail: Vec<&str> = log.lines().rev().take(lines).collect();
        tail.reverse();
        tail.join("\n")
    }

    /// The file name of the server program: `redis-server`, or another
    /// given as [`ServerOptions::program`] (`valkey-server`).
    pub fn program_name(&self) -> String {
        self.program.file_name().map_or_else(
            || self.program.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        )
    }

    /// The TLS port, when started with [`ServerOptions::tls`].
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// The cluster bus port, when started with [`ServerOptions::cluster`]:
    /// what `CLUSTER MEET` needs besides the client port.
    pub fn cluster_bus_port(&self) -> Option<u16> {
        self.cluster_bus_port
    }

    /// A new synchronous connection, for inspecting and changing the data
    /// behind the library's back. Authenticates when `password` is given.
    pub fn connection(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).expect("valid url");
        let mut conn = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .expect("connect to test redis");
        if let Some(password) = self.password() {
            redis::cmd("AUTH")
                .arg(password)
                .exec(&mut conn)
                .expect("auth to test redis");
        }
        conn
    }

    /// Kills the server with SIGKILL: every key is lost, clients see the
    /// connection drop. Returns once the port is free again.
    pub fn kill(&mut self) {
        // The watcher first: see `watch`.
        if let Some(mut watcher) = self.watcher.take() {
            let _ = watcher.kill();
            let _ = watcher.wait();
        }
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        // A process's sockets close when it exits, but a child it forked
        // (a replica sync) may still hold the listener for a moment; a
        // restart must be able to bind the port.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the server and starts a new, empty one on the same port. A
    /// cluster node keeps its `nodes.conf`, so it rejoins as the same node.
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.launch() {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => {
                    panic!("could not restart redis-server: {e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Makes the next [`restart`](RedisServer::restart) start the server
    /// as a replica of `master` on 127.0.0.1, as the configuration file
    /// Sentinel rewrites on a node would.
    pub(crate) fn set_replica_of(&mut self, master: u16) {
        if let Some(i) = self.extra_args.iter().position(|a| a == "--replicaof") {
            self.extra_args.drain(i..i + 3);
        }
        self.extra_args.extend([
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            master.to_string(),
        ]);
    }

    /// Stops the server process (SIGSTOP): connections stay open but nothing
    /// is answered, as with a long GC pause or a frozen VM.
    pub fn pause(&self) {
        signal("STOP", self.pid());
    }

    /// Resumes a paused server (SIGCONT).
    pub fn resume(&self) {
        signal("CONT", self.pid());
    }

    fn pid(&self) -> u32 {
        self.server.as_ref().expect("server is running").id()
    }

    fn password(&self) -> Option<&str> {
        let i = self.extra_args.iter().position(|a| a == "--requirepass")?;
        self.extra_args.get(i + 1).map(String::as_str)
    }

    fn launch(&mut self) -> Result<(), StartError> {
        let mut server = spawn(
            &self.program,
            self.config.as_deref(),
            self.port,
            &self.extra_args,
            &self.dir,
        )?;
        self.watcher = watch(server.id());
        let ready = wait_ready(&mut server, self.port, &self.dir);
        self.server = Some(server);
        if ready.is_err() {
            self.kill();
        }
        ready
    }
}

/// The arguments that serve TLS on `port` with `tls`, as `options` say.
fn tls_args(port: u16, tls: &TlsFiles, options: &ServerOptions) -> Vec<String> {
    let ca = options.tls_ca.as_ref().unwrap_or(&tls.cert);
    let mut args = vec![
        "--tls-port".to_owned(),
        port.to_string(),
        "--tls-cert-file".to_owned(),
        tls.cert.display().to_string(),
        "--tls-key-file".to_owned(),
        tls.key.display().to_string(),
        "--tls-ca-cert-file".to_owned(),
        ca.display().to_string(),
        "--tls-auth-clients".to_owned(),
        if options.tls_auth_clients {
            "yes"
        } else {
            "no"
        }
        .to_owned(),
    ];
    // A TLS cluster that told TLS clients its plain ports (what it does
    // without `tls-cluster`) could not be followed over TLS. Its nodes
    // present their server certificate to each other, and check each
    // other's against `tls_ca`.
    if options.cluster.is_some() {
        args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(str::to_owned));
    } else if options.tls_replication {
        args.extend(["--tls-replication", "yes"].map(str::to_owned));
    }
    args
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        // Nothing in it is worth keeping once the server is gone.
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::launch::release_ports(
            [Some(self.port), self.tls_port, self.cluster_bus_port]
                .into_iter()
                .flatten(),
        );
    }
}
