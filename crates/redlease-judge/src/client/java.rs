//! Java Redisson as a client, through the driver's serve mode
//! (`interop/redisson/README.md`): one owner thread, one request at a time
//! on its stdin, one answer line on its stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use super::{ClientArgs, Deployment, Failure, Held, Kind, Prims};
use crate::workload::Workload;

pub(crate) struct JavaPrims {
    driver: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    fenced: bool,
    wait_ms: u64,
    /// An expirable permit's lease: Redisson's permits are not renewed, so
    /// it outlasts every hold this client makes (its holds of them are
    /// short) and a pause, which then takes no permit from it.
    permit_lease_ms: u64,
    next: u64,
}

/// A Java hold: what to release.
pub(crate) struct JavaGuard {
    w: Workload,
    name: String,
    /// An expirable permit's id.
    id: Option<String>,
}

impl JavaPrims {
    /// Starts the driver with Redisson's watchdog at `lease_ms` and waits
    /// for its `ready` line.
    pub(crate) fn start(java: &Path, args: &ClientArgs) -> std::io::Result<JavaPrims> {
        let nodes = || {
            let urls: Vec<String> = args.nodes.iter().map(|n| format!("redis://{n}")).collect();
            urls.join(",")
        };
        let place = match args.deployment {
            Deployment::Single => vec!["--url".to_owned(), args.redis.clone()],
            Deployment::Sentinel => vec![
                "--sentinel".to_owned(),
                args.master_name.clone(),
                "--url".to_owned(),
                nodes(),
            ],
            Deployment::Cluster => vec!["--cluster".to_owned(), "--url".to_owned(), nodes()],
        };
        let mut driver = Command::new(java)
            .arg("serve")
            .args(place)
            .args(["--watchdog-ms", &args.lease_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let input = driver
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let mut output = BufReader::new(
            driver
                .stdout
                .take()
                .ok_or_else(|| std::io::Error::other("no stdout"))?,
        );
        let mut line = String::new();
        output.read_line(&mut line)?;
        if !line.starts_with("ready ") {
            let _ = driver.kill();
            let _ = driver.wait();
            return Err(std::io::Error::other(format!(
                "the Redisson driver said {line:?}"
            )));
        }
        Ok(JavaPrims {
            driver,
            input,
            output,
            fenced: args.kind == Kind::JavaFenced,
            wait_ms: args.wait_ms,
            permit_lease_ms: args.lease_ms * 4,
            next: 0,
        })
    }

    /// Sends `request` for owner `a`: `Ok(value)` or `Err((class,
    /// message))` as the driver answered.
    fn call(&mut self, request: &str) -> std::io::Result<Result<String, (String, String)>> {
        self.next += 1;
        let id = self.next.to_string();
        writeln!(self.input, "{id} a {request}")?;
        self.input.flush()?;
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("the Redisson driver exited"));
        }
        // `<id> ok|err <start_us> <end_us> <value or class and message>`
        let mut words = line.trim_end().splitn(5, ' ');
        let (answer, status) = (words.next(), words.next());
        let rest = words.nth(2).unwrap_or("").to_owned();
        if answer != Some(id.as_str()) {
            return Err(std::io::Error::other(format!(
                "answer out of turn: {line:?}"
            )));
        }
        Ok(match status {
            Some("ok") => Ok(rest),
            _ => {
                let (class, message) = rest.split_once(' ').unwrap_or((&rest, ""));
                Err((class.to_owned(), message.to_owned()))
            }
        })
    }

    /// `request`'s value, any error unknown.
    fn value(&mut self, request: &str) -> Result<String, Failure> {
        match self.call(request) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err((class, message))) => Err(Failure::Unknown(format!("{class}: {message}"))),
            Err(e) => Err(Failure::Unknown(e.to_string())),
        }
    }

    /// The driver's lock kind for `w`.
    fn kind(&self, w: Workload) -> &'static str {
        match w {
            Workload::Fair => "fair",
            Workload::Read => "read",
            Workload::Write => "write",
            _ if self.fenced => "fenced",
            _ => "lock",
        }
    }
}

impl Drop for JavaPrims {
    fn drop(&mut self) {
        // `shutdown` ends the driver; it is waited for, so no JVM outlives
        // its client.
        let _ = self.call("shutdown");
        let _ = self.driver.wait();
    }
}

/// A busy answer (`false`, `null`) or the acquired value.
fn granted(value: String) -> Result<String, Failure> {
    match value.as_str() {
        "false" | "null" => Err(Failure::Definite("busy".to_owned())),
        _ => Ok(value),
    }
}

impl Prims for JavaPrims {
    type Guard = JavaGuard;

    fn acquire(&mut self, w: Workload, name: &str) -> Result<Held<Self::Guard>, Failure> {
        let wait = self.wait_ms;
        let request = match w {
            Workload::Lock if self.fenced => format!("token.trylock {name} {wait} -1"),
            // A Java leader of the election is a holder of its `RLock`.
            Workload::Lock
            | Workload::Fair
            | Workload::Read
            | Workload::Write
            | Workload::Elect => {
                format!("trylock {} {name} {wait} -1", self.kind(w))
            }
            Workload::Multi => format!("multi.trylock {wait} -1 {name}"),
            Workload::Sem => format!("sem.tryacquire {name} 1 {wait}"),
            Workload::Xsem => format!("xsem.tryacquire {name} {wait} {}", self.permit_lease_ms),
            Workload::Latch => unreachable!("a latch is not held"),
        };
        let value = granted(self.value(&request)?)?;
        let members = name.split(',').count();
        let mut held = Held {
            guard: JavaGuard {
                w,
                name: name.to_owned(),
                id: None,
            },
            tokens: vec![None; members],
        };
        match w {
            Workload::Lock if self.fenced => match value.parse() {
                Ok(token) => held.tokens = vec![Some(token)],
                Err(_) => return Err(Failure::Unknown(format!("token {value:?}"))),
            },
            Workload::Xsem => held.guard.id = Some(value),
            _ => {}
        }
        Ok(held)
    }

    fn is_lost(&self, _: &Self::Guard) -> Option<bool> {
        None
    }

    fn release(&mut self, guard: Self::Guard) -> Result<(), Failure> {
        let name = &guard.name;
        let request = match guard.w {
            Workload::Multi => format!("multi.unlock {name}"),
            Workload::Sem => format!("sem.release {name} 1"),
            Workload::Xsem => format!("xsem.release {name} {}", guard.id.unwrap_or_default()),
            w => format!("unlock {} {name}", self.kind(w)),
        };
        match self
            .call(&request)
            .map_err(|e| Failure::Unknown(e.to_string()))?
        {
            Ok(_) => Ok(()),
            // Redisson's answers to a release of what is no longer ours: an
            // unlock of another's lock, a permit id that expired.
            Err((class, message))
                if class.contains("IllegalMonitorState")
                    || (guard.w == Workload::Xsem && class.contains("IllegalArgument")) =>
            {
                Err(Failure::Definite(format!("{class}: {message}")))
            }
            Err((class, message)) => Err(Failure::Unknown(format!("{class}: {message}"))),
        }
    }

    fn count_down(&mut self, name: &str) -> Result<(), Failure> {
        self.value(&format!("latch.countdown {name}")).map(drop)
    }

    fn await_latch(&mut self, name: &str, wait: Duration) -> Result<bool, Failure> {
        let value = self.value(&format!("latch.await {name} {}", wait.as_millis()))?;
        Ok(value == "true")
    }

    fn needs_token(&self) -> bool {
        !self.fenced
    }

    fn long_holds(&self, w: Workload) -> bool {
        w != Workload::Xsem
    }
}
