//! Redisson (Java) as the speed anchor of redlease's default layout (#26).
//!
//! rslock does less work per pair than Redisson's layout (no hash, no
//! fencing counter, no release announcement); Redisson itself does the
//! same work. So redlease's default client (Redisson's layout, fencing on,
//! the watchdog's lease) is measured against Redisson's own `RLock`
//! (`tryLock()` + `unlock()`) and its `RFencedLock` (one-attempt
//! `tryLockAndGetToken` + `unlock()`), run by the Java driver that
//! `scripts/redisson` builds, with the `redisson` crate (a Rust library with
//! a Redisson-like hash) and rslock beside them, all on one private
//! server. As in `versus`: each run measures, for each task count, every
//! subject one after the other, the order rotating from run to run, each
//! task (thread) locking and releasing a key of its own; a ratio is taken
//! within one run, then the ratios' median and range are reported.
//!
//! Each cell gives pairs per second, the server's CPU per pair and the
//! client's CPU per pair. The JVM starts and warms up (2 s, not counted)
//! before its timed window, so the server is read not around a driver's
//! whole run but every [`SAMPLE_EVERY`] while it runs (`INFO cpu`, and the
//! driver's `/proc/<pid>/stat`), and each reading is interpolated at the
//! window's ends: a driver prints its line right after its window, so the
//! window is the `seconds` it reports before the line arrived. The same
//! sampling runs during redlease's window, whose ends are known here. The
//! client's CPU is redlease's own process (`/proc/self/stat`) over its
//! window, and a driver's `cpu_seconds` over its own (the JVM's included
//! JIT and GC), or the driver's `/proc/<pid>/stat` between the window's
//! ends where it reports none (rslock).
//!
//! The JVM runs with its defaults (`REDLEASE_JAVA_OPTS`, which the tests
//! set to start it light, is removed).
//!
//! The targets (#26): redlease's pairs/s at least 2x Redisson `RLock`'s at
//! every count; redlease's Redis CPU per pair at most `RLock`'s plus one
//! `INCR` (the fencing counter, the work redlease's default does beyond
//! `RLock`'s), the `INCR` measured on the same server as `scriptcost`
//! measures scripts: pipelined, the server's CPU over the calls.
//!
//! Last, whether Java's Redisson and the `redisson` crate exclude each other
//! on one key is checked live, with the crate's driver (`hold`) and the Java
//! driver's serve mode taking turns on a key.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use redis::Value;
use redlease_testkit::RedisServer;

use crate::cluster::{median, spread};
use crate::compare::verdict;
use crate::peer::{self, Peer};
use crate::{probe, throughput};

/// What `redisson` is asked to do.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Seconds per measurement (each driver's timed window).
    pub(crate) seconds: u64,
    /// Tasks (threads, for Java) on one client, a row each.
    pub(crate) tasks: Vec<usize>,
    /// Runs of every row.
    pub(crate) runs: usize,
}

/// The Redisson version of the rows: the newest `scripts/redisson` builds.
pub(crate) const JAVA_VERSION: &str = "4.7.0";

/// The Java driver `scripts/redisson` builds for [`JAVA_VERSION`], under
/// the workspace `root`.
pub(crate) fn java_driver(root: &Path) -> PathBuf {
    root.join("target/interop/redisson")
        .join(JAVA_VERSION)
        .join("run")
}

/// The name of the `redisson` crate's entry in `peers.json`.
pub(crate) const CRATE_PEER: &str = "redisson (crate)";

/// How often the server (and a driver's CPU) is read during a measurement.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How long a driver may take beyond its window: the JVM's start, its 2 s
/// warm-up and its client's start and shutdown.
const DRIVER_SLACK: Duration = Duration::from_secs(60);
/// `INCR`s per run of the `INCR` cost, pipelined as `scriptcost` does.
const INCRS: usize = 200_000;
/// Counters the `INCR`s cycle over, and calls per pipeline (`scriptcost`'s).
const COUNTERS: usize = 256;
const BATCH: usize = 500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subject {
    Redlease,
    RLock,
    FencedLock,
    Crate,
    Rslock,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Redlease => "redlease, Redisson's layout (default client)",
            Subject::RLock => "Redisson `RLock` (Java)",
            Subject::FencedLock => "Redisson `RFencedLock` (Java)",
            Subject::Crate => "`redisson` crate (Rust)",
            Subject::Rslock => "rslock (string layout, for reference)",
        }
    }
}

/// A subject run as a subprocess: its command line and mode.
struct Driver {
    argv: Vec<String>,
    mode: &'static str,
}

/// One subject's measurement in one run.
#[derive(Clone, Copy, Debug)]
struct Cell {
    per_sec: f64,
    /// The server's CPU per pair, µs.
    server_us: f64,
    /// The client's CPU per pair, µs.
    client_us: f64,
    /// The client's CPU read from `/proc/<pid>/stat`: the driver reports none.
    client_from_proc: bool,
    errors: u64,
}

/// `[row][run][subject]`, `None` where it failed.
type Cells = Vec<Vec<Vec<Option<Cell>>>>;

pub(crate) async fn run(server: &RedisServer, plan: &Plan, manifest: &Path, java: &Path) {
    let title = "Redisson (Java) as the anchor of Redisson's layout (#26)";
    if !java.is_file() {
        println!(
            "## {title}\n\nNot measured: no Java driver at {} (run scripts/redisson).\n",
            java.display()
        );
        return;
    }
    let mut peers = match peer::load(manifest) {
        Ok(peers) => peers,
        Err(why) => {
            println!("(The `redisson` crate and rslock: not measured: {why}.)\n");
            Vec::new()
        }
    };
    let mut take = |name: &str| {
        let i = peers.iter().position(|p| p.name == name)?;
        Some(peers.swap_remove(i))
    };
    let (krate, rslock) = (take(CRATE_PEER), take("rslock"));
    let java_argv = vec![java.display().to_string()];
    let mut subjects = vec![Subject::Redlease, Subject::RLock, Subject::FencedLock];
    let mut drivers: Vec<Option<Driver>> = vec![
        None,
        Some(Driver {
            argv: java_argv.clone(),
            mode: "uncontended",
        }),
        Some(Driver {
            argv: java_argv.clone(),
            mode: "uncontended-fenced",
        }),
    ];
    for (subject, peer) in [(Subject::Crate, &krate), (Subject::Rslock, &rslock)] {
        if let Some(peer) = peer {
            subjects.push(subject);
            drivers.push(Some(Driver {
                argv: peer.argv().to_vec(),
                mode: "uncontended",
            }));
        }
    }

    let client = redlease::Client::connect(&server.url())
        .await
        .expect("connect");
    probe::warm_up(&client, "bench:redisson:warmup").await;
    let mut cells: Cells = vec![Vec::new(); plan.tasks.len()];
    let mut incr = Vec::new();
    let mut incr_in_script = Vec::new();
    for run in 0..plan.runs {
        for (row, &n) in plan.tasks.iter().enumerate() {
            let mut measured = vec![None; subjects.len()];
            for turn in 0..subjects.len() {
                // The first subject of a run rotates from run to run.
                let i = (turn + run) % subjects.len();
                measured[i] = match &drivers[i] {
                    None => Some(redlease_cell(&client, server, n, plan.seconds).await),
                    Some(driver) => {
                        let got = tokio::task::block_in_place(|| {
                            driver_cell(driver, server, n, plan.seconds)
                        });
                        match got {
                            Ok(cell) => Some(cell),
                            Err(why) => {
                                eprintln!(
                                    "redisson: {} at {n} tasks failed: {why}",
                                    subjects[i].label()
                                );
                                None
                            }
                        }
                    }
                };
            }
            cells[row].push(measured);
        }
        let (alone, in_script) = incr_cost(server);
        incr.push(alone);
        incr_in_script.push(in_script);
    }
    // The round-trip limit of redlease's pair: its two scripts replayed by
    // redis-benchmark on one connection with N in flight (`versus`'s).
    let duration = Duration::from_secs(plan.seconds);
    let limits = (plan.tasks.iter())
        .map(|&n| throughput::reference(server, 1, n, duration).pairs())
        .collect();
    let exclusion = tokio::task::block_in_place(|| match &krate {
        Some(krate) => exclusion(server, java, krate),
        None => Err(format!("no {CRATE_PEER} in {}", manifest.display())),
    });

    let versions = Versions {
        java: java_version(),
        krate: krate.as_ref().map(|p| p.version.clone()),
        krate_driven: krate.as_ref().map(|p| p.driven.clone()),
        rslock: rslock.as_ref().map(|p| p.version.clone()),
        rslock_driven: rslock.as_ref().map(|p| p.driven.clone()),
    };
    let measured = Measured {
        subjects,
        cells,
        incr,
        incr_in_script,
        limits,
    };
    print(
        plan,
        &server_version(server),
        &versions,
        &measured,
        &exclusion,
    );
}

/// Everything measured on the server, for [`print()`].
struct Measured {
    subjects: Vec<Subject>,
    cells: Cells,
    /// One `INCR`'s cost per run, µs: sent on its own, and inside a script.
    incr: Vec<f64>,
    incr_in_script: Vec<f64>,
    /// redis-benchmark's pairs/s with redlease's scripts, by row.
    limits: Vec<f64>,
}

/// redlease's default client, `n` tasks for `seconds`.
async fn redlease_cell(
    client: &redlease::Client,
    server: &RedisServer,
    n: usize,
    seconds: u64,
) -> Cell {
    let sampler = Sampler::start(server, None);
    let cpu = probe::cpu_time();
    let start = Instant::now();
    let (pairs, took) =
        throughput::redlease_pairs(client, n, Duration::from_secs(seconds), None).await;
    let end = Instant::now();
    let client_cpu = (probe::cpu_time() - cpu).as_secs_f64();
    let samples = sampler.finish();
    let server_cpu = between(&samples, start, end, |s| Some(s.server)).unwrap_or(f64::NAN);
    let pairs = (pairs as f64).max(1.0);
    Cell {
        per_sec: pairs / took,
        server_us: server_cpu * 1e6 / pairs,
        client_us: client_cpu * 1e6 / pairs,
        client_from_proc: false,
        errors: 0,
    }
}

/// A driver's pairs, `n` tasks for `seconds`, with the server's CPU and
/// the driver's over its timed window only.
fn driver_cell(
    driver: &Driver,
    server: &RedisServer,
    n: usize,
    seconds: u64,
) -> Result<Cell, String> {
    let mut child = Command::new(&driver.argv[0])
        .args(&driver.argv[1..])
        .args([
            driver.mode,
            &server.url(),
            &n.to_string(),
            &seconds.to_string(),
        ])
        // The JVM with its defaults (the tests' lighter options are no
        // measure of a service).
        .env_remove("REDLEASE_JAVA_OPTS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", driver.argv[0]))?;
    let pid = child.id();
    let sampler = Sampler::start(server, Some(pid));
    let lines = read_lines(&mut child);
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + Duration::from_secs(seconds) + DRIVER_SLACK;
    // The first line that is a JSON object with "pairs", and when it came.
    let found = loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((line, at)) => {
                if let Ok(json) = serde_json::from_str::<serde_json::Value>(&line)
                    && json.get("pairs").is_some()
                {
                    break Ok((json, at));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                break Err(format!("no result within {seconds} s + {DRIVER_SLACK:?}"));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err("the driver ended without a result".to_owned());
            }
        }
    };
    // The sampler reads once more as it stops: past the line's arrival.
    let samples = sampler.finish();
    let status = finish(&mut child, Duration::from_secs(20));
    let stderr = stderr.join().unwrap_or_default();
    let why = |what: String| {
        let last = stderr.lines().last().unwrap_or("nothing on stderr");
        format!("{what} ({last})").replace('|', "/")
    };
    let (json, at) = found.map_err(why)?;
    match status {
        Some(status) if status.success() => {}
        other => return Err(why(format!("the driver exited with {other:?}"))),
    }
    let number = |field: &str| json.get(field).and_then(serde_json::Value::as_f64);
    let took = number("seconds").ok_or_else(|| why("no \"seconds\"".to_owned()))?;
    let pairs = number("pairs").unwrap_or(0.0).max(1.0);
    let start = at
        .checked_sub(Duration::from_secs_f64(took))
        .ok_or("a window before the clock")?;
    let server_cpu = between(&samples, start, at, |s| Some(s.server)).unwrap_or(f64::NAN);
    let (client_cpu, client_from_proc) = match number("cpu_seconds") {
        Some(cpu) => (cpu, false),
        None => (
            between(&samples, start, at, |s| s.driver).unwrap_or(f64::NAN),
            true,
        ),
    };
    Ok(Cell {
        per_sec: pairs / took,
        server_us: server_cpu * 1e6 / pairs,
        client_us: client_cpu * 1e6 / pairs,
        client_from_proc,
        errors: number("errors").unwrap_or(0.0) as u64,
    })
}

/// The child's stdout, line by line as they come, each with when it came.
fn read_lines(child: &mut Child) -> mpsc::Receiver<(String, Instant)> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send((line, Instant::now())).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads `from` to its end on a thread of its own (so that a chatty
/// child never blocks on a full pipe).
fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

/// Waits up to `grace` for the child to exit, then kills it; its status,
/// if it exited by itself.
fn finish(child: &mut Child, grace: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break,
        }
    }
    redlease_testkit::signal("KILL", child.id());
    let _ = child.wait();
    None
}

/// One reading during a measurement.
struct Sample {
    at: Instant,
    /// The server's user+sys CPU seconds so far.
    server: f64,
    /// The driver's, if there is one and it is still there.
    driver: Option<f64>,
}

/// Reads the server's CPU (and a driver's) every [`SAMPLE_EVERY`] on a
/// thread of its own, from a first reading at its start to a last one at
/// [`Sampler::finish`].
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Sample>>,
}

impl Sampler {
    fn start(server: &RedisServer, driver: Option<u32>) -> Sampler {
        let mut conn = server.connection();
        let read = move |conn: &mut redis::Connection| Sample {
            at: Instant::now(),
            server: probe::server_cpu(conn),
            driver: driver
                .and_then(probe::process_cpu_time)
                .map(|d| d.as_secs_f64()),
        };
        // The first reading before this returns: every window starts after it.
        let first = read(&mut conn);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = vec![first];
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_EVERY);
                samples.push(read(&mut conn));
            }
            // The last reading after `finish` was called: every window
            // ends before it.
            samples.push(read(&mut conn));
            samples
        });
        Sampler { stop, thread }
    }

    fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}

/// How much `field` grew from `start` to `end`, each read off the samples
/// by linear interpolation.
fn between(
    samples: &[Sample],
    start: Instant,
    end: Instant,
    field: impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    Some(interpolate(samples, end, &field)? - interpolate(samples, start, &field)?)
}

/// `field` at `t`, between the samples on either side of it.
fn interpolate(
    samples: &[Sample],
    t: Instant,
    field: &impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    let after = samples.iter().position(|s| s.at >= t)?;
    let Some(before) = after.checked_sub(1) else {
        return field(&samples[0]);
    };
    let (a, b) = (&samples[before], &samples[after]);
    let (va, vb) = (field(a)?, field(b)?);
    let span = (b.at - a.at).as_secs_f64();
    let x = if span > 0.0 {
        (t - a.at).as_secs_f64() / span
    } else {
        1.0
    };
    Some(va + (vb - va) * x)
}

/// The cost of one `INCR` on `server`, µs of its CPU: sent on its own
/// ([`INCRS`] calls pipelined over [`COUNTERS`] fencing counters, as
/// `scriptcost` sends its pairs), and inside a script (a script calling
/// `INCR` less an empty one, both called the same way).
fn incr_cost(server: &RedisServer) -> (f64, f64) {
    let mut conn = server.connection();
    let counters: Vec<String> = (0..COUNTERS)
        .map(|k| redlease::layout::token_key(&format!("bench:redisson:incr:{k}")))
        .collect();
    let with_incr = probe::load_script(&mut conn, "return redis.call('incr', KEYS[1])");
    let empty = probe::load_script(&mut conn, "return 1");
    let mut cost = |call: &dyn Fn(&str) -> redis::Cmd| {
        let before = probe::server_cpu(&mut conn);
        let mut done = 0;
        while done < INCRS {
            let mut pipe = redis::pipe();
            for i in done..(done + BATCH).min(INCRS) {
                pipe.add_command(call(&counters[i % COUNTERS])).ignore();
            }
            let _: Value = pipe.query(&mut conn).expect("pipeline");
            done += BATCH;
        }
        (probe::server_cpu(&mut conn) - before) * 1e6 / INCRS as f64
    };
    let evalsha = |sha: &str, key: &str| {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha).arg(1).arg(key);
        cmd
    };
    let alone = cost(&|key| {
        let mut cmd = redis::cmd("INCR");
        cmd.arg(key);
        cmd
    });
    let in_script = cost(&|key| evalsha(&with_incr, key)) - cost(&|key| evalsha(&empty, key));
    let _: () = redis::cmd("DEL")
        .arg(&counters)
        .query(&mut conn)
        .expect("DEL the counters");
    (alone, in_script)
}

/// What the live check of one key found, for each Java lock kind: whether
/// Java was refused while the crate held the key, and the crate while Java
/// held it.
struct Exclusion {
    kinds: Vec<(&'static str, bool, bool)>,
    /// The hash field the crate wrote, and the one Java wrote.
    fields: (String, String),
}

/// Takes one key in turns with the crate's driver (`hold`) and a Java
/// `RedissonClient` (the driver's serve mode), for `RLock` and
/// `RFencedLock`: each tries while the other holds (one attempt).
fn exclusion(server: &RedisServer, java: &Path, krate: &Peer) -> Result<Exclusion, String> {
    let mut serve = Command::new(java)
        .args(["serve", "--url", &server.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", java.display()))?;
    let lines = read_lines(&mut serve);
    let _stderr = drain(serve.stderr.take().expect("piped stderr"));
    let stdin = serve.stdin.take().expect("piped stdin");
    let mut java = Java {
        stdin,
        lines,
        next: 0,
    };
    let result = check_exclusion(server, &mut java, krate);
    // Redisson shuts down on EOF.
    drop(java);
    finish(&mut serve, Duration::from_secs(10));
    result
}

fn check_exclusion(
    server: &RedisServer,
    java: &mut Java,
    krate: &Peer,
) -> Result<Exclusion, String> {
    let ready = java.line(DRIVER_SLACK)?;
    if !ready.starts_with("ready ") {
        return Err(format!("the Java driver said {ready:?}"));
    }
    let mut conn = server.connection();
    let mut fields = (String::new(), String::new());
    let mut kinds = Vec::new();
    for kind in ["lock", "fenced"] {
        let key = format!("bench:redisson:exclusion:{kind}");
        // The crate holds the key for 3 s; Java tries once meanwhile.
        let mut holder = CrateHold::start(krate, &server.url(), &key, 3000)?;
        holder.acquired()?;
        let crate_field: Vec<String> = redis::cmd("HKEYS")
            .arg(&key)
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        fields.0 = crate_field.join(",");
        let java_refused = java.request(&format!("a trylock {kind} {key} 0 -1"))? == "false";
        holder.released()?;
        // Java holds the key; the crate tries once meanwhile.
        if java.request(&format!("a trylock {kind} {key} 0 -1"))? != "true" {
            return Err(format!("Java could not take the free key {key}"));
        }
        let java_field: Vec<String> = redis::cmd("HKEYS")
            .arg(&key)
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        fields.1 = java_field.join(",");
        let crate_refused = CrateHold::start(krate, &server.url(), &key, 0)?.busy()?;
        java.request(&format!("a unlock {kind} {key}"))?;
        kinds.push((kind, java_refused, crate_refused));
    }
    Ok(Exclusion { kinds, fields })
}

/// The Java driver's serve mode: one request at a time.
struct Java {
    stdin: ChildStdin,
    lines: mpsc::Receiver<(String, Instant)>,
    next: u64,
}

impl Java {
    fn line(&mut self, within: Duration) -> Result<String, String> {
        self.lines
            .recv_timeout(within)
            .map(|(line, _)| line)
            .map_err(|_| "the Java driver did not answer".to_owned())
    }

    /// Sends `<id> <request>`; the value of its `ok` answer.
    fn request(&mut self, request: &str) -> Result<String, String> {
        self.next += 1;
        let id = self.next.to_string();
        writeln!(self.stdin, "{id} {request}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        loop {
            let line = self.line(Duration::from_secs(30))?;
            let words: Vec<&str> = line.split(' ').collect();
            if words.first() != Some(&id.as_str()) {
                continue;
            }
            return match words.get(1..) {
                Some(["ok", _, _, value]) => Ok((*value).to_owned()),
                _ => Err(format!("{request}: {line}")),
            };
        }
    }
}

/// The crate's driver holding (or trying to hold) a key.
struct CrateHold {
    child: Child,
    lines: mpsc::Receiver<(String, Instant)>,
}

impl CrateHold {
    /// `hold URL KEY HOLD_MS 0`: one attempt.
    fn start(krate: &Peer, url: &str, key: &str, hold_ms: u64) -> Result<CrateHold, String> {
        let argv = krate.argv();
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(["hold", url, key, &hold_ms.to_string(), "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
        let lines = read_lines(&mut child);
        Ok(CrateHold { child, lines })
    }

    fn event(&mut self) -> Result<String, String> {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .map(|(line, _)| line)
            .map_err(|_| "the crate's driver did not answer".to_owned())
    }

    fn acquired(&mut self) -> Result<(), String> {
        let event = self.event()?;
        if event.contains(r#""event": "acquired""#) {
            Ok(())
        } else {
            Err(format!(
                "the crate's driver could not take a free key: {event}"
            ))
        }
    }

    /// Waits for the release and the exit.
    fn released(mut self) -> Result<(), String> {
        while !self.event()?.contains(r#""event": "released""#) {}
        match finish(&mut self.child, Duration::from_secs(10)) {
            Some(status) if status.success() => Ok(()),
            other => Err(format!("the crate's driver exited with {other:?}")),
        }
    }

    /// Whether it was refused (and exited with 3).
    fn busy(mut self) -> Result<bool, String> {
        let busy = self.event()?.contains(r#""event": "busy""#);
        if !busy {
            // It holds the key: let it release.
            self.released()?;
            return Ok(false);
        }
        match finish(&mut self.child, Duration::from_secs(10)) {
            Some(status) if status.code() == Some(3) => Ok(true),
            other => Err(format!("the crate's driver, busy, exited with {other:?}")),
        }
    }
}

/// The versions and drivers of the subjects, for the table of subjects.
struct Versions {
    java: String,
    krate: Option<String>,
    krate_driven: Option<String>,
    rslock: Option<String>,
    rslock_driven: Option<String>,
}

/// `java -version`'s first line, e.g. `openjdk version "17.0.13" 2024-10-15`.
fn java_version() -> String {
    Command::new("java")
        .arg("-version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "java: unknown version".to_owned())
}

/// The server's version, as `INFO server` gives it.
fn server_version(server: &RedisServer) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.connection())
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map_or_else(
            || "an unknown server".to_owned(),
            |v| format!("Redis {}", v.trim()),
        )
}

fn print(
    plan: &Plan,
    server: &str,
    versions: &Versions,
    measured: &Measured,
    exclusion: &Result<Exclusion, String>,
) {
    let Measured {
        subjects,
        cells,
        incr,
        incr_in_script,
        limits,
    } = measured;
    let position = |wanted| subjects.iter().position(|s| *s == wanted);
    let ours = position(Subject::Redlease).expect("redlease is measured");
    let rlock = position(Subject::RLock).expect("RLock is measured");
    println!(
        "## Redisson (Java) as the anchor of Redisson's layout (#26), on {server}: uncontended pairs, {} runs of {} s per cell (median, with the range)\n",
        plan.runs, plan.seconds
    );
    let counts: Vec<String> = plan.tasks.iter().map(usize::to_string).collect();
    println!(
        "`cargo run --release -p redlease-bench -- redisson {} {} --runs {}`\n",
        plan.seconds,
        counts.join(" "),
        plan.runs
    );
    println!("| subject | version | driven as |");
    println!("|---|---|---|");
    println!(
        "| {} | this tree | N tokio tasks on one `Client::connect` (fencing on, watchdog lease), `try_lock()` + `unlock()` |",
        Subject::Redlease.label()
    );
    for (subject, call) in [
        (Subject::RLock, "`getLock(key).tryLock()` + `unlock()`"),
        (
            Subject::FencedLock,
            "`getFencedLock(key).tryLockAndGetToken(0, MILLISECONDS)` + `unlock()`",
        ),
    ] {
        println!(
            "| {} | {JAVA_VERSION} ({}) | N platform threads on one `RedissonClient` (defaults), {call}, after a 2 s JIT warm-up |",
            subject.label(),
            versions.java
        );
    }
    for (subject, version, driven) in [
        (Subject::Crate, &versions.krate, &versions.krate_driven),
        (Subject::Rslock, &versions.rslock, &versions.rslock_driven),
    ] {
        if let (Some(version), Some(driven)) = (version, driven) {
            println!("| {} | {version} | {driven} |", subject.label());
        }
    }
    println!();
    println!(
        "| tasks | subject | pairs/s | Redis CPU per pair | client CPU per pair | redlease's pairs/s over this | redlease's Redis CPU per pair over this |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut from_proc = false;
    let mut errors = Vec::new();
    for (row, &n) in plan.tasks.iter().enumerate() {
        println!(
            "| {n} | limit: redlease's two scripts, redis-benchmark `-c 1 -P {n}` | {:.0} | | | | |",
            limits[row]
        );
        for (i, subject) in subjects.iter().enumerate() {
            let mine: Vec<Cell> = cells[row].iter().filter_map(|run| run[i]).collect();
            if mine.is_empty() {
                println!("| {n} | {} | not measured | | | | |", subject.label());
                continue;
            }
            let col = |f: &dyn Fn(&Cell) -> f64| mine.iter().map(f).collect::<Vec<f64>>();
            // Ratios within a run, where both were measured.
            let both: Vec<(Cell, Cell)> = cells[row]
                .iter()
                .filter_map(|run| Some((run[ours]?, run[i]?)))
                .collect();
            let (rate, cpu) = if i == ours || both.is_empty() {
                (String::new(), String::new())
            } else {
                (
                    spread(&ratios(&both, |c| c.per_sec), 2),
                    spread(&ratios(&both, |c| c.server_us), 2),
                )
            };
            let proc_mark = if mine.iter().any(|c| c.client_from_proc) {
                from_proc = true;
                " †"
            } else {
                ""
            };
            println!(
                "| {n} | {} | {} | {} µs | {} µs{proc_mark} | {rate} | {cpu} |",
                subject.label(),
                spread(&col(&|c| c.per_sec), 0),
                spread(&col(&|c| c.server_us), 1),
                spread(&col(&|c| c.client_us), 1),
            );
            let failed: u64 = mine.iter().map(|c| c.errors).sum();
            if failed > 0 {
                errors.push(format!("{} at {n}: {failed}", subject.label()));
            }
        }
    }
    println!();
    if from_proc {
        println!(
            "† The driver reports no CPU time of its own: read from its `/proc/<pid>/stat` between the window's ends.\n"
        );
    }
    if !errors.is_empty() {
        println!(
            "Failed pairs (counted by the drivers): {}.\n",
            errors.join("; ")
        );
    }
    let incr_us = median(incr);
    println!(
        "One `INCR` on this server: {} µs of Redis CPU sent on its own ({INCRS} calls pipelined over {COUNTERS} counters, as `scriptcost` sends pairs), {} µs inside a script (a script calling it less an empty one); median of the {} runs, with the range.\n",
        spread(incr, 2),
        spread(incr_in_script, 2),
        incr.len()
    );
    println!("Targets (#26) on {server}, on the medians:\n");
    for (row, &n) in plan.tasks.iter().enumerate() {
        let both: Vec<(Cell, Cell)> = cells[row]
            .iter()
            .filter_map(|run| Some((run[ours]?, run[rlock]?)))
            .collect();
        if both.is_empty() {
            println!("- {n} tasks: not measured.");
            continue;
        }
        let rate = ratios(&both, |c| c.per_sec);
        let us = |f: fn(&(Cell, Cell)) -> f64| median(&both.iter().map(f).collect::<Vec<_>>());
        let (mine, theirs) = (us(|(o, _)| o.server_us), us(|(_, t)| t.server_us));
        let allowed = theirs + incr_us;
        let rlock_rate = median(&both.iter().map(|(_, t)| t.per_sec).collect::<Vec<_>>());
        println!(
            "- {n} tasks: pairs/s at least 2x Redisson `RLock`'s: **{}** ({}; the limit above is {:.2}x `RLock`'s); Redis CPU per pair at most `RLock`'s plus one `INCR`: **{}** ({mine:.1} µs against {theirs:.1} + {incr_us:.2} = {allowed:.1} µs).",
            verdict(median(&rate) >= 2.0),
            times(&rate),
            limits[row] / rlock_rate,
            verdict(mine <= allowed),
        );
    }
    println!();
    match exclusion {
        Ok(found) => {
            let all = found.kinds.iter().all(|&(_, a, b)| a && b);
            let detail: Vec<String> = found
                .kinds
                .iter()
                .map(|(kind, java_refused, crate_refused)| {
                    format!(
                        "`{kind}`: Java {} while the crate held the key, the crate {} while Java held it",
                        if *java_refused { "refused" } else { "NOT refused" },
                        if *crate_refused { "refused" } else { "NOT refused" },
                    )
                })
                .collect();
            println!(
                "The `redisson` crate and Redisson {JAVA_VERSION} on one key: **{}** (checked in this run, one attempt each: {}). Both take the key only while it does not exist; the crate's hash field is a bare UUID (`{}`), Java's `<client-id>:<thread-id>` (`{}`).\n",
                if all {
                    "they exclude each other"
                } else {
                    "they do not exclude each other"
                },
                detail.join("; "),
                found.fields.0,
                found.fields.1,
            );
        }
        Err(why) => println!(
            "The `redisson` crate and Redisson {JAVA_VERSION} on one key: not checked ({why}).\n"
        ),
    }
}

/// Ratios as `1.29x`, with their range when there are several.
fn times(ratios: &[f64]) -> String {
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ratios.len() > 1 {
        format!("{:.2}x, range {lo:.2} .. {hi:.2}", median(ratios))
    } else {
        format!("{:.2}x", median(ratios))
    }
}

/// redlease's `f` over the other's, per run.
fn ratios(both: &[(Cell, Cell)], f: fn(&Cell) -> f64) -> Vec<f64> {
    both.iter().map(|(o, t)| f(o) / f(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: Instant, server: f64) -> Sample {
        Sample {
            at,
            server,
            driver: None,
        }
    }

    #[test]
    fn a_window_reads_the_samples_interpolated_at_its_ends() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let samples = [
            sample(t, 1.0),
            sample(t + ms(100), 2.0),
            sample(t + ms(200), 4.0),
        ];
        let server = |s: &Sample| Some(s.server);
        let grew = between(&samples, t + ms(50), t + ms(150), server).expect("inside");
        assert!((grew - 1.5).abs() < 1e-9, "{grew}");
        assert_eq!(between(&samples, t, t + ms(200), server), Some(3.0));
        // Past the last sample there is nothing to read.
        assert_eq!(between(&samples, t, t + ms(300), server), None);
        let none = |s: &Sample| s.driver;
        assert_eq!(between(&samples, t, t + ms(100), none), None);
    }
}
