//! A fake Redis: answers the RESP3 handshake (`HELLO`, `CLIENT SETINFO`)
//! as Redis 7.4 does, and every other command with a reply that the fuzz
//! bytes choose: any RESP2 or RESP3 value, a server error, a push before
//! the reply, or a value cut short followed by a closed connection. When
//! the bytes run out it closes each connection at its next command, so
//! the client's calls end in errors instead of waiting.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::bytes::Bytes;

/// What the handshake answers.
const HELLO: &[u8] = b"%7\r\n+server\r\n+redis\r\n+version\r\n+7.4.0\r\n+proto\r\n:3\r\n\
    +id\r\n:7\r\n+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";

/// Integers near the edges of what the decoders and their callers
/// compute with: counts, times to live, fencing tokens (from the clock,
/// above 10^15), flags.
const INTEGERS: [i64; 20] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    30_000,
    86_400_000,
    999_999_999_999_999,
    1_000_000_000_000_000,
    i64::MAX,
    i64::MIN,
    i64::MAX - 1,
    u32::MAX as i64,
    i32::MAX as i64,
    i32::MIN as i64,
    4_611_686_018_427_387_904,
    1_700_000_000_000,
    100,
    -30_000,
];

/// Server errors, by the codes redis-rs and redlease tell apart.
const ERRORS: [&str; 14] = [
    "ERR fuzz",
    "NOSCRIPT No matching script. Please use EVAL.",
    "WRONGTYPE Operation against a key holding the wrong kind of value",
    "BUSY Redis is busy running a script",
    "LOADING Redis is loading the dataset in memory",
    "READONLY You can't write against a read only replica.",
    "NOPERM this user has no permissions to run the 'evalsha' command",
    "MOVED 3999 127.0.0.1:1",
    "ASK 3999 127.0.0.1:1",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "CLUSTERDOWN The cluster is down",
    "EXECABORT Transaction discarded because of previous errors.",
    "MASTERDOWN Link with MASTER is down",
    "ERR unknown command 'DELIFEQ'",
];

/// Doubles, with the ones that do not convert to integers.
const DOUBLES: [&str; 8] = ["0", "1.5", "-1", "inf", "-inf", "nan", "1e300", "-0"];

/// What a connection does after a reply.
enum Next {
    Continue,
    Close,
}

/// A running fake server; it stops accepting when dropped (the
/// connections it has end when the client closes them), or with the
/// runtime it was started on.
pub(crate) struct FakeServer {
    pub(crate) addr: SocketAddr,
    accepting: tokio::task::AbortHandle,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl FakeServer {
    /// Starts a server that answers from `bytes`, shared by all its
    /// connections (the client reconnects after a close).
    pub(crate) async fn start(bytes: Bytes) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        let bytes = Arc::new(Mutex::new(Replies {
            bytes,
            channel: b"redisson_lock__channel:{fuzz}".to_vec(),
        }));
        let accepting = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, bytes.clone()));
            }
        })
        .abort_handle();
        FakeServer { addr, accepting }
    }
}

/// The reply source, and the last channel subscribed to, for a release
/// message to name.
struct Replies {
    bytes: Bytes,
    channel: Vec<u8>,
}

async fn serve(mut stream: TcpStream, replies: Arc<Mutex<Replies>>) {
    let mut input = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some((command, used)) = command(&input) {
            input.drain(..used);
            let mut out = Vec::new();
            let next = {
                let mut replies = replies.lock().expect("no panic while held");
                answer(&command, &mut replies, &mut out)
            };
            if trace() {
                let shown: Vec<_> = command.iter().map(|a| String::from_utf8_lossy(a)).collect();
                eprintln!(
                    "fake redis: {shown:?} -> {:?}",
                    String::from_utf8_lossy(&out)
                );
            }
            if stream.write_all(&out).await.is_err() {
                return;
            }
            if let Next::Close = next {
                return;
            }
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&buf[..n]),
        }
    }
}

/// Writes the reply to `command` into `out`.
fn answer(command: &[Vec<u8>], replies: &mut Replies, out: &mut Vec<u8>) -> Next {
    let name = command
        .first()
        .map(|n| n.to_ascii_uppercase())
        .unwrap_or_default();
    match name.as_slice() {
        b"HELLO" => {
            out.extend_from_slice(HELLO);
            return Next::Continue;
        }
        b"CLIENT" | b"SELECT" | b"AUTH" => {
            out.extend_from_slice(b"+OK\r\n");
            return Next::Continue;
        }
        b"SUBSCRIBE" | b"SSUBSCRIBE" => {
            if let Some(channel) = command.get(1) {
                replies.channel = channel.clone();
            }
        }
        _ => {}
    }
    if replies.bytes.is_empty() {
        return Next::Close;
    }
    value(command, replies, out, 0)
}

/// Writes one reply chosen by the bytes.
fn value(command: &[Vec<u8>], replies: &mut Replies, out: &mut Vec<u8>, depth: u8) -> Next {
    let bytes = &mut replies.bytes;
    let nested = depth < 4;
    match bytes.pick(28) {
        0 => out.extend_from_slice(b"+OK\r\n"),
        1 => {
            let n = INTEGERS[bytes.pick(INTEGERS.len())];
            out.extend_from_slice(format!(":{n}\r\n").as_bytes());
        }
        2 => {
            let n = bytes.i64();
            out.extend_from_slice(format!(":{n}\r\n").as_bytes());
        }
        3 => {
            let len = usize::from(bytes.byte() % 64);
            let text = bytes.take(len).to_vec();
            bulk(out, &text);
        }
        4 => {
            let n = INTEGERS[bytes.pick(INTEGERS.len())];
            bulk(out, n.to_string().as_bytes());
        }
        5 => {
            // One of the command's own arguments: a key, an owner field.
            let arg = match command.len() {
                0 => Vec::new(),
                len => command[bytes.pick(len)].clone(),
            };
            bulk(out, &arg);
        }
        6 => out.extend_from_slice(b"_\r\n"),
        7 => out.extend_from_slice(b"$-1\r\n"),
        8 | 9 | 10 | 27 if nested => {
            let n = bytes.pick(6);
            let (head, per) = match bytes.pick(4) {
                0 => ('%', 2),
                1 => ('~', 1),
                _ => ('*', 1),
            };
            out.extend_from_slice(format!("{head}{n}\r\n").as_bytes());
            for _ in 0..n * per {
                if let Next::Close = value(command, replies, out, depth + 1) {
                    return Next::Close;
                }
            }
        }
        11 => {
            let d = DOUBLES[bytes.pick(DOUBLES.len())];
            out.extend_from_slice(format!(",{d}\r\n").as_bytes());
        }
        12 => out.extend_from_slice(if bytes.byte().is_multiple_of(2) {
            b"#f\r\n"
        } else {
            b"#t\r\n"
        }),
        13 => out.extend_from_slice(b"(123456789012345678901234567890\r\n"),
        14 => {
            let e = ERRORS[bytes.pick(ERRORS.len())];
            out.extend_from_slice(format!("-{e}\r\n").as_bytes());
        }
        15 => {
            let e = ERRORS[bytes.pick(ERRORS.len())];
            out.extend_from_slice(format!("!{}\r\n{e}\r\n", e.len()).as_bytes());
        }
        16 => out.extend_from_slice(b"=7\r\ntxt:1.5\r\n"),
        17 => {
            // The confirmation of a subscription, as a RESP3 push.
            let kind = command
                .first()
                .map(|n| n.to_ascii_lowercase())
                .unwrap_or_default();
            let channel = command.get(1).cloned().unwrap_or_default();
            out.extend_from_slice(b">3\r\n");
            bulk(out, &kind);
            bulk(out, &channel);
            out.extend_from_slice(b":1\r\n");
        }
        18 if nested => {
            // A release message on the last channel, then a reply.
            out.extend_from_slice(b">3\r\n$7\r\nmessage\r\n");
            let channel = replies.channel.clone();
            bulk(out, &channel);
            bulk(
                out,
                if replies.bytes.byte().is_multiple_of(2) {
                    b"0"
                } else {
                    b"1"
                },
            );
            return value(command, replies, out, depth + 1);
        }
        19 if nested => {
            out.extend_from_slice(b"|1\r\n+key-popularity\r\n:1\r\n");
            return value(command, replies, out, depth + 1);
        }
        20 => {
            // A reply cut short, then the connection closed.
            let mut whole = Vec::new();
            let _ = value(command, replies, &mut whole, depth + 1);
            let cut = usize::from(replies.bytes.byte()) % whole.len().max(1);
            out.extend_from_slice(&whole[..cut]);
            return Next::Close;
        }
        21 => return Next::Close,
        22 => {
            let len = usize::from(bytes.byte() % 16);
            out.extend_from_slice(bytes.take(len));
            return Next::Close;
        }
        23 => out.extend_from_slice(b"+QUEUED\r\n"),
        24 => out.extend_from_slice(b"*0\r\n"),
        25 => out.extend_from_slice(b"*-1\r\n"),
        26 => {
            // Two integers: the shape of most script replies.
            let a = INTEGERS[bytes.pick(INTEGERS.len())];
            let b = INTEGERS[bytes.pick(INTEGERS.len())];
            out.extend_from_slice(format!("*2\r\n:{a}\r\n:{b}\r\n").as_bytes());
        }
        _ => out.extend_from_slice(b":1\r\n"),
    }
    Next::Continue
}

/// Returns true if and only if `REDLEASE_FUZZ_TRACE` is set: then each
/// command and its reply are written to stderr, to see what an input does.
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("REDLEASE_FUZZ_TRACE").is_some())
}

fn bulk(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", text.len()).as_bytes());
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// The first whole command in `input` (an array of bulk strings, as
/// redis-rs sends them) and the bytes it takes; `None` until it has all
/// arrived.
fn command(input: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let (count, mut at) = line(input, 0, b'*')?;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, start) = line(input, at, b'$')?;
        let end = start + len;
        if input.len() < end + 2 {
            return None;
        }
        args.push(input[start..end].to_vec());
        at = end + 2;
    }
    Some((args, at))
}

/// A `<kind><number>\r\n` line at `at`: the number and where the next
/// line starts.
fn line(input: &[u8], at: usize, kind: u8) -> Option<(usize, usize)> {
    let rest = input.get(at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    if rest.first() != Some(&kind) {
        return None;
    }
    let number = std::str::from_utf8(&rest[1..end]).ok()?.parse().ok()?;
    Some((number, at + end + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_once_whole() {
        let sent = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n";
        let (first, used) = command(sent).unwrap();
        assert_eq!(first, [b"GET".to_vec(), b"k".to_vec()]);
        let (second, _) = command(&sent[used..]).unwrap();
        assert_eq!(second, [b"PING".to_vec()]);
        assert!(command(&sent[..10]).is_none());
    }

    #[test]
    fn the_handshake_is_answered_and_the_rest_from_the_bytes() {
        let mut replies = Replies {
            bytes: Bytes::new(&[26, 1, 0]),
            channel: Vec::new(),
        };
        let mut out = Vec::new();
        answer(&[b"HELLO".to_vec(), b"3".to_vec()], &mut replies, &mut out);
        assert_eq!(out, HELLO);
        out.clear();
        answer(&[b"EVALSHA".to_vec()], &mut replies, &mut out);
        assert_eq!(out, b"*2\r\n:1\r\n:0\r\n");
        out.clear();
        assert!(matches!(
            answer(&[b"GET".to_vec()], &mut replies, &mut out),
            Next::Close
        ));
    }
}
