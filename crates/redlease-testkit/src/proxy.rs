//! A TCP proxy on loopback that a test can cut, to partition a client from
//! its Redis server without touching the server.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Forwards connections from its own port to a target port on 127.0.0.1.
///
/// [`cut`](Proxy::cut) partitions: connections stay open but nothing gets
/// through in either direction, and new connections are accepted and never
/// answered, as when a network path dies without a reset. So the client
/// learns nothing until its own time-outs fire. [`heal`](Proxy::heal)
/// delivers what was held back and forwards again, as TCP does when a path
/// comes back before the connection gives up. [`delay`](Proxy::delay)
/// makes the path slow instead: every chunk waits before it is forwarded,
/// as behind a congested link or a master that answers late.
///
/// Runs on plain threads, so it works under any async runtime or none.
#[derive(Debug)]
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    cut: AtomicBool,
    /// Added before forwarding each chunk, in microseconds.
    delay_us: AtomicU64,
    closed: AtomicBool,
    /// Every socket the proxy opened, shut down when it drops so that its
    /// threads end.
    sockets: Mutex<Vec<TcpStream>>,
}

impl Proxy {
    /// Starts forwarding to `target_port`.
    pub fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || accept(listener, target_port, accepting));
        Proxy { port, shared }
    }

    /// The port clients should connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops forwarding, in both directions, until [`heal`](Proxy::heal).
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
    }

    /// Holds each chunk `delay` before forwarding it, in both directions,
    /// from now on (zero: no delay). Requests and replies then arrive late
    /// but in order, and nothing is lost.
    pub fn delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.delay_us.store(us, Ordering::SeqCst);
    }

    /// Delivers what was held back and forwards again.
    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for socket in self.shared.lock_sockets().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        // Unblock the accept loop so it sees `closed`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl Shared {
    fn lock_sockets(&self) -> std::sync::MutexGuard<'_, Vec<TcpStream>> {
        self.sockets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a clone of `socket` for shutdown on drop.
    fn track(&self, socket: &TcpStream) -> bool {
        match socket.try_clone() {
            Ok(clone) => {
                self.lock_sockets().push(clone);
                true
            }
            Err(_) => false,
        }
    }
}

fn accept(listener: TcpListener, target_port: u16, shared: Arc<Shared>) {
    for down in listener.incoming() {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(down) = down else { continue };
        if !shared.track(&down) {
            continue;
        }
        let up = match TcpStream::connect_timeout(
            &([127, 0, 0, 1], target_port).into(),
            Duration::from_secs(2),
        ) {
            Ok(up) if shared.track(&up) => up,
            _ => {
                let _ = down.shutdown(Shutdown::Both);
                continue;
            }
        };
        for (from, to) in [(&down, &up), (&up, &down)] {
            let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
                continue;
            };
            let shared = shared.clone();
            std::thread::spawn(move || pump(from, to, &shared));
        }
    }
}

/// Copies `from` to `to` until either side closes, holding bytes back while
/// the proxy is cut, and each chunk for the delay, if any.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Hold the bytes while cut, as TCP keeps retransmitting them across
        // a dead path; no more are read meanwhile, so the sender's buffers
        // fill up as they would.
        while shared.cut.load(Ordering::SeqCst) {
            if shared.closed.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let delay = shared.delay_us.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
