//! Private `redis-server` processes on free loopback ports, for redlease's
//! tests and benches.
//!
//! Each [`RedisServer`] is a real `redis-server` with no persistence, bound to
//! 127.0.0.1 on a port nobody else uses, so a test can kill, restart, pause
//! and resume it without disturbing other tests. Servers are stopped when the
//! value drops; a small shell watcher also stops them when the test process
//! dies without running destructors (a panic abort, a `static` server), so no
//! test run leaves `redis-server` processes behind.
//!
//! A [`Proxy`] partitions a client from its server; [`signal`] stops,
//! resumes and kills other processes (test children).
//!
//! Functions here panic on failure: they are test fixtures, and a panic with
//! a clear message is the right report for a broken environment.

mod proxy;

pub use proxy::Proxy;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A `redis-server` process owned by the caller.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    extra_args: Vec<String>,
    /// The shell watcher that started redis-server; killing it is not enough
    /// to stop the server, so [`RedisServer::kill`] signals `pid` too.
    watcher: Option<Child>,
    pid: Option<u32>,
    tls_port: Option<u16>,
}

/// Options for [`RedisServer::start_with`].
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Requires this password (`requirepass`).
    pub password: Option<String>,
    /// Starts the server as a replica of this port on 127.0.0.1.
    pub replica_of: Option<u16>,
    /// Also serves TLS on a port of its own ([`RedisServer::tls_port`]) with
    /// this certificate and key (PEM files), not asking clients for
    /// certificates; the plain port stays open for setup and checks.
    pub tls: Option<TlsFiles>,
}

/// A server certificate and its private key, as PEM files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate (self-signed is fine; it is also given as the CA).
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
    pub fn start_with(options: ServerOptions) -> RedisServer {
        let mut extra_args = Vec::new();
        if let Some(password) = options.password {
            extra_args.extend(["--requirepass".to_owned(), password]);
        }
        if let Some(port) = options.replica_of {
            extra_args.extend([
                "--replicaof".to_owned(),
                "127.0.0.1".to_owned(),
                port.to_string(),
            ]);
        }
        let mut last_error = String::new();
        // A free port can be taken between our probe and redis-server's bind;
        // a few tries make that race irrelevant.
        for _ in 0..5 {
            let mut extra_args = extra_args.clone();
            let tls_port = options.tls.as_ref().map(|tls| {
                let port = free_port();
                extra_args.extend([
                    "--tls-port".to_owned(),
                    port.to_string(),
                    "--tls-cert-file".to_owned(),
                    tls.cert.display().to_string(),
                    "--tls-key-file".to_owned(),
                    tls.key.display().to_string(),
                    "--tls-ca-cert-file".to_owned(),
                    tls.cert.display().to_string(),
                    "--tls-auth-clients".to_owned(),
                    "no".to_owned(),
                ]);
                port
            });
            let mut server = RedisServer {
                port: free_port(),
                extra_args,
                watcher: None,
                pid: None,
                tls_port,
            };
            match server.launch() {
                Ok(()) => return server,
                Err(e) => last_error = e,
            }
        }
        panic!("could not start redis-server: {last_error}");
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

    /// The TLS port, when started with [`ServerOptions::tls`].
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
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
    /// connection drop.
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            signal("KILL", pid);
        }
        if let Some(mut watcher) = self.watcher.take() {
            let _ = watcher.kill();
            let _ = watcher.wait();
        }
        // The kernel closes a killed process's sockets at once; wait for that
        // so a restart can bind the port.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the server and starts a new, empty one on the same port.
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

    /// Stops the server process (SIGSTOP): connections stay open but nothing
    /// is answered, as with a long GC pause or a frozen VM.
    pub fn pause(&self) {
        signal("STOP", self.pid.expect("server is running"));
    }

    /// Resumes a paused server (SIGCONT).
    pub fn resume(&self) {
        signal("CONT", self.pid.expect("server is running"));
    }

    fn password(&self) -> Option<&str> {
        let i = self.extra_args.iter().position(|a| a == "--requirepass")?;
        self.extra_args.get(i + 1).map(String::as_str)
    }

    fn launch(&mut self) -> Result<(), String> {
        let dir = scratch_dir(self.port);
        let mut args = vec![
            "--port".to_owned(),
            self.port.to_string(),
            "--bind".to_owned(),
            "127.0.0.1".to_owned(),
            "--save".to_owned(),
            "''".to_owned(),
            "--appendonly".to_owned(),
            "no".to_owned(),
            // A replica syncs at once instead of after Redis's default 5 s.
            "--repl-diskless-sync-delay".to_owned(),
            "0".to_owned(),
            "--daemonize".to_owned(),
            "no".to_owned(),
            "--dir".to_owned(),
            dir.display().to_string(),
            "--logfile".to_owned(),
            dir.join("redis.log").display().to_string(),
        ];
        args.extend(self.extra_args.iter().map(|a| shell_quote(a)));
        // The watcher prints redis-server's pid, then polls the test process
        // once a second and kills the server when the test process is gone.
        let script = format!(
            "redis-server {args} </dev/null >/dev/null 2>&1 & rs=$!; echo $rs; \
             while kill -0 {parent} 2>/dev/null && kill -0 $rs 2>/dev/null; do sleep 1; done; \
             kill -9 $rs 2>/dev/null",
            args = args.join(" "),
            parent = std::process::id(),
        );
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            panic!(
                "redis-server is not on PATH; install it (scripts/test does: apt-get install redis-server)"
            );
        }
        let mut watcher = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let mut line = String::new();
        BufReader::new(watcher.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .map_err(|e| format!("cannot read redis-server pid: {e}"))?;
        let pid: u32 = line
            .trim()
            .parse()
            .map_err(|_| format!("bad pid line {line:?}"))?;
        self.watcher = Some(watcher);
        self.pid = Some(pid);
        if let Err(e) = self.wait_ready() {
            self.kill();
            let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
            return Err(format!("{e}; log:\n{log}"));
        }
        Ok(())
    }

    fn wait_ready(&self) -> Result<(), String> {
        let client = redis::Client::open(self.url()).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let ready = client
                .get_connection_with_timeout(Duration::from_millis(200))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            match ready {
                Ok(_) => return Ok(()),
                // With requirepass the server answers NOAUTH: it is up.
                Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(format!("not ready: {e}")),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral port")
        .port()
}

fn scratch_dir(port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redlease-test-redis-{port}"));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Sends signal `name` (`STOP`, `CONT`, `KILL`, ...) to process `pid`, as
/// `kill -<name> <pid>` does; a process that is gone is not an error.
pub fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
