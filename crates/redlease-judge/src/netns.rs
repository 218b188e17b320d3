//! Real network partitions between a client and Redis, for the
//! `partition` phase: each client runs in a network namespace of its own,
//! joined by a veth pair to a bridge in the run's namespace, where Redis
//! also listens. A partition is a blackhole route to Redis's address inside
//! the client's namespace: its packets to Redis are dropped, silently, as a
//! cut cable would, until the route goes. The database stays reachable
//! (through [`Relay`], a plain TCP relay on the bridge to PostgreSQL's
//! loopback port), so that a cut-off holder still writes, which is what the
//! fence is for.
//!
//! Everything is made by the run with `ip` (iproute2) and removed when the
//! [`Network`] drops: its own bridge, namespaces and addresses, nothing
//! else. It needs root (CAP_NET_ADMIN), which these machines give. The
//! kernel here has no `netem` qdisc, so delay and loss are not emulated:
//! partitions drop everything.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The run's bridge and the namespaces on it.
#[derive(Debug)]
pub(crate) struct Network {
    bridge: String,
    /// The first three octets of the bridge's /24.
    prefix: [u8; 3],
    namespaces: Vec<String>,
}

/// Runs `ip` with `args`.
fn ip(args: &[&str]) -> std::io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Network {
    /// Makes the bridge, with an address and a /24 of its own derived from
    /// this process's id, so that two runs do not collide.
    pub(crate) fn new() -> std::io::Result<Network> {
        let pid = std::process::id();
        let prefix = [10, 200 + (pid % 50) as u8, (pid / 50 % 250) as u8];
        let network = Network {
            bridge: format!("rlj{}", pid % 1_000_000),
            prefix,
            namespaces: Vec::new(),
        };
        ip(&["link", "add", &network.bridge, "type", "bridge"])?;
        let cidr = format!("{}/24", network.address(1));
        ip(&["addr", "add", &cidr, "dev", &network.bridge])?;
        // A second address for the database's relay, which a partition
        // (a route to the first) leaves reachable.
        let relay = format!("{}/24", network.address(2));
        ip(&["addr", "add", &relay, "dev", &network.bridge])?;
        ip(&["link", "set", &network.bridge, "up"])?;
        Ok(network)
    }

    /// Host `n`'s address on the bridge's /24; 1 is the bridge's (Redis's),
    /// 2 the bridge's too (the database relay's, which partitions spare).
    pub(crate) fn address(&self, n: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.prefix[0], self.prefix[1], self.prefix[2], n)
    }

    /// Makes namespace number `i` (< 200), joined to the bridge; returns its
    /// name, for `ip netns exec`.
    pub(crate) fn namespace(&mut self, i: usize) -> std::io::Result<String> {
        let host = u8::try_from(i + 10).map_err(std::io::Error::other)?;
        let name = format!("{}-{i}", self.bridge);
        let (outer, inner) = (
            format!("{}a{i}", self.bridge),
            format!("{}b{i}", self.bridge),
        );
        ip(&["netns", "add", &name])?;
        self.namespaces.push(name.clone());
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner,
        ])?;
        ip(&["link", "set", &outer, "master", &self.bridge])?;
        ip(&["link", "set", &outer, "up"])?;
        ip(&["link", "set", &inner, "netns", &name])?;
        let cidr = format!("{}/24", self.address(host));
        ip(&[
            "netns", "exec", &name, "ip", "addr", "add", &cidr, "dev", &inner,
        ])?;
        ip(&["netns", "exec", &name, "ip", "link", "set", &inner, "up"])?;
        ip(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"])?;
        Ok(name)
    }

    /// Cuts namespace `ns` off from Redis (the bridge's address).
    pub(crate) fn partition(&self, ns: &str) -> std::io::Result<()> {
        self.blackhole(ns, "add")
    }

    /// Ends [`partition`](Network::partition).
    pub(crate) fn heal(&self, ns: &str) -> std::io::Result<()> {
        self.blackhole(ns, "del")
    }

    /// Adds or deletes (`action`) the blackhole route to Redis in `ns`.
    fn blackhole(&self, ns: &str, action: &str) -> std::io::Result<()> {
        let redis = format!("{}/32", self.address(1));
        ip(&[
            "netns",
            "exec",
            ns,
            "ip",
            "route",
            action,
            "blackhole",
            &redis,
        ])
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // A namespace's veth end goes with it, and takes its peer along.
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// A TCP relay from the bridge to a loopback port (PostgreSQL's), one
/// thread pair per connection, until dropped.
#[derive(Debug)]
pub(crate) struct Relay {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Listens on `on` (a free port) and forwards to 127.0.0.1:`target`.
    pub(crate) fn start(on: Ipv4Addr, target: u16) -> std::io::Result<Relay> {
        let listener = TcpListener::bind((on, 0))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(("127.0.0.1", target)) {
                            pipe(client, server);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Relay { address, stop })
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies both ways between `a` and `b` until either side closes.
fn pipe(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let copy = |mut from: TcpStream, mut to: TcpStream| {
        move || {
            let mut buf = [0u8; 16 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 || to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Both);
            let _ = from.shutdown(std::net::Shutdown::Both);
        }
    };
    std::thread::spawn(copy(a, b));
    std::thread::spawn(copy(b2, a2));
}
