//! `redlease run`: exclusion, exit codes, the fencing token, lost locks,
//! signals, and the URL forms (ACL user, TLS, unreachable).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, eventually, output, redis, redlease, stderr, stdout, temp_dir, unique, wait,
};

const LIMIT: Duration = Duration::from_secs(15);

/// Eight processes on one key append start/end pairs to one file; a pair
/// split by another process's line means two ran at once.
#[test]
fn concurrent_runs_never_interleave() {
    let server = RedisServer::shared();
    let key = unique("run:exclusive");
    let file = temp_dir("exclusive").join("log");
    let script = format!(
        "echo start $$ >> {f}; sleep 0.05; echo end $$ >> {f}",
        f = file.display()
    );
    let mut children: Vec<_> = (0..8)
        .map(|_| {
            redlease(&server.url())
                .args([
                    "run", "--key", &key, "--wait", "30s", "--", "sh", "-c", &script,
                ])
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in &mut children {
        assert!(wait(child, LIMIT).success());
    }
    let log = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 16, "{log}");
    for pair in lines.chunks(2) {
        let pid = pair[0].strip_prefix("start ").expect(&log);
        assert_eq!(pair[1], format!("end {pid}"), "interleaved:\n{log}");
    }
}

#[test]
fn exit_status_and_fencing_token_are_passed_on() {
    let server = RedisServer::shared();
    let key = unique("run:status");
    let run = |script: &str| {
        output(
            redlease(&server.url()).args(["run", "--key", &key, "--", "sh", "-c", script]),
            LIMIT,
        )
    };
    assert_eq!(run("exit 7").status.code(), Some(7));
    // Death by signal N is 128 + N, as a shell reports it.
    assert_eq!(run("kill -9 $$").status.code(), Some(137));
    let token = |out: std::process::Output| -> u64 {
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().parse().expect("a token")
    };
    let first = token(run("echo $REDLEASE_FENCING_TOKEN"));
    let second = token(run("echo $REDLEASE_FENCING_TOKEN"));
    assert!(second > first, "{second} after {first}");
    assert_eq!(stdout(&run("echo $REDLEASE_KEY")).trim(), key);
    // Released after the command: nothing left under the key.
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
}

#[test]
fn busy_lock_waits_then_exits_with_the_conflict_code() {
    let server = RedisServer::shared();
    let key = unique("run:busy");
    // Held by a Redisson-style owner for longer than the test.
    redis::<i64>(server, &["HSET", &key, "someone-else:1", "1"]);
    redis::<i64>(server, &["PEXPIRE", &key, "20000"]);
    let started = Instant::now();
    let out = output(
        redlease(&server.url()).args(["run", "--key", &key, "--wait", "700ms", "--", "true"]),
        LIMIT,
    );
    let waited = started.elapsed();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(waited >= Duration::from_millis(700), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(stderr(&out).contains("busy"), "{}", stderr(&out));
    let out = output(
        redlease(&server.url()).args([
            "run", "--key", &key, "-E", "42", "--wait", "0", "--", "true",
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(42));
    // The holder was left alone.
    assert_eq!(
        redis::<i64>(server, &["HEXISTS", &key, "someone-else:1"]),
        1
    );
}

/// A shell command that logs `started`, then `term` when it gets SIGTERM,
/// and `done` if it finishes its `secs` of sleep.
fn traps_term(log: &std::path::Path, secs: u32) -> String {
    format!(
        "trap 'echo term >> {f}; kill $! 2>/dev/null; exit 0' TERM; echo started >> {f}; \
         sleep {secs} & wait $!; echo done >> {f}",
        f = log.display()
    )
}

#[test]
fn deleted_lock_stops_the_command() {
    let server = RedisServer::shared();
    let key = unique("run:lost");
    let log = temp_dir("lost").join("log");
    let mut child = redlease(&server.url())
        .args([
            "run",
            "--key",
            &key,
            "--watchdog-timeout",
            "1500ms",
            "--grace",
            "5s",
        ])
        .args(["--", "sh", "-c", &traps_term(&log, 10)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the command to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
    });
    redis::<i64>(server, &["DEL", &key]);
    let deleted = Instant::now();
    let status = wait(&mut child, LIMIT);
    assert_eq!(status.code(), Some(76));
    // Noticed within a renewal period or two, not at the end of the sleep.
    assert!(
        deleted.elapsed() < Duration::from_secs(3),
        "{:?}",
        deleted.elapsed()
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("term") && !log.contains("done"), "{log}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("lost"), "{err}");
}

#[test]
fn on_lost_ignore_lets_the_command_finish() {
    let server = RedisServer::shared();
    let key = unique("run:ignore");
    let log = temp_dir("ignore").join("log");
    let mut child = redlease(&server.url())
        .args([
            "run",
            "--key",
            &key,
            "--watchdog-timeout",
            "1500ms",
            "--on-lost",
            "ignore",
        ])
        .args(["--", "sh", "-c", &traps_term(&log, 2)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the command to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
    });
    redis::<i64>(server, &["DEL", &key]);
    assert_eq!(wait(&mut child, LIMIT).code(), Some(0));
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("done") && !log.contains("term"), "{log}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("keeps running"), "{err}");
}

/// A command that ignores SIGTERM is killed once `--grace` has passed
/// after the lock was lost: it does not run on without the lock.
#[test]
fn a_command_ignoring_sigterm_is_killed_after_the_grace() {
    let server = RedisServer::shared();
    let key = unique("run:grace");
    let log = temp_dir("grace").join("log");
    // An ignored signal stays ignored across exec, so `sleep` ignores it.
    let script = format!(
        "trap '' TERM; echo started >> {f}; exec sleep 10",
        f = log.display()
    );
    let mut child = redlease(&server.url())
        .args([
            "run",
            "--key",
            &key,
            "--watchdog-timeout",
            "1500ms",
            "--grace",
            "300ms",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the command to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
    });
    redis::<i64>(server, &["DEL", &key]);
    let deleted = Instant::now();
    assert_eq!(wait(&mut child, LIMIT).code(), Some(76));
    // Noticed within a renewal period, killed 300 ms later: far from the
    // 10 s the command would run.
    assert!(
        deleted.elapsed() < Duration::from_secs(4),
        "{:?}",
        deleted.elapsed()
    );
}

/// SIGINT, SIGQUIT and SIGHUP sent to redlease alone (by a supervisor, not
/// from a terminal) are passed on to the command, which did not get them.
#[test]
fn signals_sent_to_redlease_alone_reach_the_command() {
    let server = RedisServer::shared();
    for sig in ["INT", "QUIT", "HUP"] {
        let key = unique("run:forward");
        let log = temp_dir("forward").join("log");
        let script = format!(
            "trap 'echo {sig} >> {f}; kill $! 2>/dev/null; exit 3' {sig}; echo started >> {f}; \
             sleep 10 & wait $!",
            f = log.display()
        );
        let mut child = redlease(&server.url())
            .args(["run", "--key", &key, "--", "sh", "-c", &script])
            .spawn()
            .unwrap();
        eventually(LIMIT, "the command to start", || {
            std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
        });
        redlease_testkit::signal(sig, child.id());
        assert_eq!(wait(&mut child, LIMIT).code(), Some(3), "SIG{sig}");
        let log = std::fs::read_to_string(&log).unwrap();
        assert_eq!(log.matches(sig).count(), 1, "SIG{sig}: {log}");
        assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0, "lock released");
    }
}

#[test]
fn fixed_lease_expiry_stops_the_command() {
    let server = RedisServer::shared();
    let key = unique("run:lease");
    let log = temp_dir("lease").join("log");
    let mut child = redlease(&server.url())
        .args([
            "run",
            "--key",
            &key,
            "--lease",
            "2s",
            "--",
            "sh",
            "-c",
            &traps_term(&log, 10),
        ])
        .spawn()
        .unwrap();
    assert_eq!(wait(&mut child, LIMIT).code(), Some(76));
    assert!(std::fs::read_to_string(&log).unwrap().contains("term"));
}

#[test]
fn sigterm_reaches_the_command_and_the_lock_is_released() {
    let server = RedisServer::shared();
    let key = unique("run:signal");
    let log = temp_dir("signal").join("log");
    let script = format!(
        "trap 'echo term >> {f}; kill $! 2>/dev/null; exit 3' TERM; echo started >> {f}; sleep 10 & wait $!",
        f = log.display()
    );
    let mut child = redlease(&server.url())
        .args(["run", "--key", &key, "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    eventually(LIMIT, "the command to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
    });
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 1);
    redlease_testkit::signal("TERM", child.id());
    // The command's own exit code after its trap: redlease waited for it.
    assert_eq!(wait(&mut child, LIMIT).code(), Some(3));
    assert!(std::fs::read_to_string(&log).unwrap().contains("term"));
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0, "lock released");
}

/// Issue #12: the options take durations as the attribute and the audit
/// read them, and `--help` says how.
#[test]
fn durations_read_as_the_attribute_reads_them() {
    let url = RedisServer::shared().url();
    for (option, value) in [
        ("--wait", "1h30m"),
        ("--wait", "0"),
        ("--lease", "1m30s"),
        ("--grace", "0"),
        ("--watchdog-timeout", "1m0s"),
    ] {
        let key = unique("run:grammar");
        let out = output(
            redlease(&url).args(["run", "--key", &key, option, value, "--", "true"]),
            LIMIT,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{option} {value}: {}",
            stderr(&out)
        );
    }
    for (option, value, why) in [
        (
            "--wait",
            "30s1m",
            "units must go from largest to smallest, each at most once",
        ),
        (
            "--lease",
            "1.5s",
            "expected integers each followed by a unit",
        ),
        ("--grace", "10", "expected integers each followed by a unit"),
        ("--watchdog-timeout", "1d", "unknown unit `d`"),
    ] {
        let out = output(
            redlease(&url).args(["run", "--key", "k", option, value, "--", "true"]),
            LIMIT,
        );
        assert_eq!(out.status.code(), Some(2), "{option} {value}");
        assert!(
            stderr(&out).contains(why),
            "{option} {value}: {}",
            stderr(&out)
        );
    }
    let help = output(redlease(&url).args(["run", "--help"]), LIMIT);
    assert!(
        stdout(&help).contains(redlease_grammar::duration::GRAMMAR),
        "{}",
        stdout(&help)
    );
}

/// `--read` runs beside a Redisson reader; `--write` and the plain lock
/// wait for it (busy, 75), and the reader's hold is left alone.
#[test]
fn read_runs_share_with_readers_and_write_runs_wait() {
    let server = RedisServer::shared();
    let key = unique("run:rw-read");
    let reader = "8743c9c0-0795-4907-87fd-6c719a6cb586:1";
    // A Java reader, by Redisson's raw commands: mode, the hold count, and
    // the hold's timeout key.
    redis::<i64>(server, &["HSET", &key, "mode", "read", reader, "1"]);
    redis::<i64>(server, &["PEXPIRE", &key, "20000"]);
    let timeout = format!("{{{key}}}:{reader}:rwlock_timeout:1");
    redis::<String>(server, &["SET", &timeout, "1", "PX", "20000"]);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--key", &key, "--wait", "0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", "echo $REDLEASE_KEY"]);
        output(redlease(&server.url()).args(&args), LIMIT)
    };

    let out = run(&["--read"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), key);
    for side in [&["--write"][..], &[]] {
        let out = run(side);
        assert_eq!(out.status.code(), Some(75), "{side:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("busy"), "{}", stderr(&out));
    }
    // Our read hold came and went; the Java reader's is as it was.
    assert_eq!(
        redis::<Vec<String>>(server, &["HKEYS", &key]),
        ["mode", reader]
    );
    assert_eq!(redis::<i64>(server, &["EXISTS", &timeout]), 1);
}

/// While a `--write` run holds the lock, `mode` is `write` and a `--read`
/// run is busy; after it, the key is gone and a `--read` run goes.
#[test]
fn write_runs_exclude_readers() {
    let server = RedisServer::shared();
    let key = unique("run:rw-write");
    let dir = temp_dir("rw-write");
    let go = dir.join("go");
    let script = format!("while [ ! -e {} ]; do sleep 0.02; done", go.display());
    let mut writer = redlease(&server.url())
        .args(["run", "--key", &key, "--write", "--", "sh", "-c", &script])
        .spawn()
        .expect("spawn");
    eventually(LIMIT, "the write hold", || {
        redis::<Option<String>>(server, &["HGET", &key, "mode"]).as_deref() == Some("write")
    });
    let read = || {
        output(
            redlease(&server.url())
                .args(["run", "--key", &key, "--read", "--wait", "0", "--", "true"]),
            LIMIT,
        )
    };
    let out = read();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    std::fs::write(&go, "").unwrap();
    assert!(wait(&mut writer, LIMIT).success());
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
    let out = read();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn bad_input_is_a_usage_error() {
    let url = RedisServer::shared().url();
    let out = output(
        redlease(&url).args(["run", "--key", "k", "--wait", "5x", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("unknown unit `x` in duration \"5x\": expected `ms`, `s`, `m` or `h`"),
        "{}",
        stderr(&out)
    );
    let out = output(redlease(&url).args(["run", "--key", "k"]), LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("<CMD>"), "{}", stderr(&out));
    let out = output(
        redlease(&url).args(["run", "--key", &unique("run:nocmd"), "--", "/no/such/cmd"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    // One side or the other, not both; refused before connecting.
    let out = output(
        redlease("redis://127.0.0.1:1")
            .args(["run", "--key", "k", "--read", "--write", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'--read' cannot be used with '--write'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unreachable_redis_is_reported_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://alice:hunter2secret@127.0.0.1:{port}");
    for args in [
        &["run", "--key", "k", "--", "true"][..],
        &["inspect"],
        &["unlock", "--force", "--yes", "k"],
    ] {
        let out = output(redlease(&url).args(args), LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("redlease: cannot connect to redis at redis://alice:***@127.0.0.1"),
            "{err}"
        );
        assert!(!err.contains("hunter2secret"), "{err}");
    }
}

#[test]
fn acl_user_and_password_in_the_url() {
    let server = RedisServer::start();
    redis::<String>(
        &server,
        &[
            "ACL",
            "SETUSER",
            "locker",
            "on",
            ">s3cret-pw",
            "~*",
            "&*",
            "+@all",
        ],
    );
    let port = server.port();
    let good = format!("redis://locker:s3cret-pw@127.0.0.1:{port}");
    let out = output(
        redlease(&good).args([
            "run",
            "--key",
            "acl:k",
            "--",
            "sh",
            "-c",
            "echo $REDLEASE_FENCING_TOKEN",
        ]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).trim().parse::<u64>().is_ok());
    let bad = format!("redis://locker:wrong-pw@127.0.0.1:{port}");
    let out = output(
        redlease(&bad).args(["run", "--key", "acl:k", "--", "true"]),
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("authentication failed: wrong username or password")
            && !err.contains("wrong-pw"),
        "{err}"
    );
}

/// `rediss://` verified against the system's CAs (here `SSL_CERT_FILE`,
/// which rustls reads), refused without them, and not verified at all with
/// `#insecure`.
#[test]
fn rediss_urls_work() {
    let certs = redlease_testkit::TestCerts::generate();
    let ca = &certs.ca;
    let server = RedisServer::start_with(certs.server_options(false));
    let tls_port = server.tls_port().unwrap();
    let token = |url: &str, ca: Option<&std::path::Path>| {
        let mut cmd = redlease(url);
        cmd.args([
            "run",
            "--key",
            "tls:k",
            "--",
            "sh",
            "-c",
            "echo $REDLEASE_FENCING_TOKEN",
        ]);
        if let Some(ca) = ca {
            cmd.env("SSL_CERT_FILE", ca);
        }
        output(&mut cmd, LIMIT)
    };
    // Verified against our CA.
    let out = token(&format!("rediss://127.0.0.1:{tls_port}"), Some(ca));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).trim().parse::<u64>().is_ok());
    // Not verifiable without it, unless verification is switched off.
    let out = token(&format!("rediss://127.0.0.1:{tls_port}"), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
    let out = token(&format!("rediss://127.0.0.1:{tls_port}/#insecure"), None);
    assert!(out.status.success(), "{}", stderr(&out));
    // The lock went over TLS to the same server.
    assert!(redis::<Option<String>>(&server, &["GET", "redisson_lock_token:{tls:k}"]).is_some());
}

/// A lock deleted behind the command, which then exits before the watchdog
/// looks (every 10 s by default): the loss is found at release and still
/// reported with the lost code, not the command's 0.
#[test]
fn loss_found_at_release_is_reported() {
    let server = RedisServer::shared();
    let key = unique("run:late-loss");
    let log = temp_dir("late-loss").join("log");
    let script = format!("echo started >> {f}; sleep 1", f = log.display());
    let mut child = redlease(&server.url())
        .args(["run", "--key", &key, "--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually(LIMIT, "the command to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started"))
    });
    redis::<i64>(server, &["DEL", &key]);
    assert_eq!(wait(&mut child, LIMIT).code(), Some(76));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("was lost while the command ran"), "{err}");
}

/// Ctrl-C on a terminal reaches the command once: the terminal signals the
/// whole foreground group, so redlease must not forward a second one
/// (which tools like terraform take as "quit without cleaning up"). Runs
/// under `script`, which gives redlease a pseudo-terminal.
#[test]
fn terminal_ctrl_c_reaches_the_command_once() {
    let server = RedisServer::shared();
    let key = unique("run:tty");
    let dir = temp_dir("tty");
    let (handler, log) = (dir.join("handler.py"), dir.join("log"));
    std::fs::write(
        &handler,
        "import signal, sys, time\n\
         log = open(sys.argv[1], 'a')\n\
         def on_int(*_):\n    log.write('INT\\n'); log.flush()\n\
         signal.signal(signal.SIGINT, on_int)\n\
         log.write('ready\\n'); log.flush()\n\
         end = time.time() + 2\n\
         while time.time() < end:\n    time.sleep(0.05)\n",
    )
    .unwrap();
    // `exec`: `script` runs this through $SHELL, and a non-interactive
    // shell left waiting in between (dash does not exec a lone command)
    // would die of the Ctrl-C itself. SHELL is fixed so the test does not
    // depend on who runs it.
    let inner = format!(
        "exec {bin} --url {url} run --key {key} -- python3 {h} {l}",
        bin = env!("CARGO_BIN_EXE_redlease"),
        url = server.url(),
        h = handler.display(),
        l = log.display()
    );
    let mut script = Command::new("script")
        .env("SHELL", "/bin/sh")
        .args(["-qfec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("`script` (util-linux) runs the test under a pseudo-terminal");
    eventually(LIMIT, "the handler to start", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("ready"))
    });
    // ^C typed at the terminal.
    std::io::Write::write_all(script.stdin.as_mut().unwrap(), b"\x03").unwrap();
    assert!(wait(&mut script, LIMIT).success());
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("INT").count(), 1, "{log}");
}

/// `--semaphore NAME --permits N`: six processes, at most two at once, each
/// told its permit's id; the semaphore is Redisson's expirable one, and
/// every permit is given back.
#[test]
fn a_semaphore_run_lets_at_most_n_commands_run_at_once() {
    let server = RedisServer::shared();
    let name = unique("run:semaphore");
    let dir = temp_dir("semaphore");
    let log = dir.join("log");
    // Each command counts the runs in progress (a file per run) and logs
    // how many it saw.
    let script = format!(
        "touch {d}/running.$$; ls {d} | grep -c running >> {log}; \
         echo id $REDLEASE_PERMIT_ID $REDLEASE_SEMAPHORE >> {log}; sleep 0.2; rm {d}/running.$$",
        d = dir.display(),
        log = log.display()
    );
    let mut children: Vec<_> = (0..6)
        .map(|_| {
            redlease(&server.url())
                .args([
                    "run",
                    "--semaphore",
                    &name,
                    "--permits",
                    "2",
                    "--wait",
                    "30s",
                    "--",
                    "sh",
                    "-c",
                    &script,
                ])
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in &mut children {
        assert!(wait(child, LIMIT).success());
    }
    let log = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<u32> = log.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(seen.len(), 6, "{log}");
    assert!(seen.iter().all(|n| *n <= 2), "more than 2 at once:\n{log}");
    assert!(seen.contains(&2), "never 2 at once:\n{log}");
    let ids: Vec<&str> = log.lines().filter_map(|l| l.strip_prefix("id ")).collect();
    assert_eq!(ids.len(), 6, "{log}");
    for id in &ids {
        let (id, semaphore) = id.split_once(' ').expect(&log);
        assert_eq!(id.len(), 32, "{log}");
        assert_eq!(semaphore, name);
    }
    assert_eq!(redis::<String>(server, &["GET", &name]), "2");
    assert_eq!(
        redis::<i64>(server, &["ZCARD", &format!("{{{name}}}:timeout")]),
        0
    );
}

/// A semaphore with no free permit: busy after --wait, exit 75; the
/// semaphore's count is never reset by `--permits`.
#[test]
fn a_busy_semaphore_exits_with_the_conflict_code() {
    let server = RedisServer::shared();
    let name = unique("run:semaphore-busy");
    redis::<String>(server, &["SET", &name, "0"]);
    let started = Instant::now();
    let out = output(
        redlease(&server.url()).args([
            "run",
            "--semaphore",
            &name,
            "--permits",
            "3",
            "--wait",
            "300ms",
            "--",
            "true",
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(redis::<String>(server, &["GET", &name]), "0");
}

/// `--semaphore` needs `--permits` (at least 1) and excludes `--key`,
/// `--read` and `--write`; all refused before connecting.
#[test]
fn semaphore_usage_errors_exit_2_before_connecting() {
    for args in [
        &["run", "--semaphore", "s", "--", "true"][..],
        &["run", "--semaphore", "s", "--permits", "0", "--", "true"],
        &["run", "--semaphore", "s", "--permits", "x", "--", "true"],
        &[
            "run",
            "--semaphore",
            "s",
            "--permits",
            "2",
            "--key",
            "k",
            "--",
            "true",
        ],
        &[
            "run",
            "--semaphore",
            "s",
            "--permits",
            "2",
            "--read",
            "--",
            "true",
        ],
        &["run", "--key", "k", "--permits", "2", "--", "true"],
    ] {
        let out = output(redlease("redis://127.0.0.1:1").args(args), LIMIT);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("connect"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// `--key A --key B`: all or none. Runs naming the two keys in opposite
/// orders never overlap and never deadlock; a run refused because one key
/// is busy leaves the other free; the command gets every key's token.
#[test]
fn several_keys_are_taken_all_or_none() {
    let server = RedisServer::shared();
    let (a, b) = (unique("run:multi-a"), unique("run:multi-b"));
    let file = temp_dir("multi").join("log");
    let script = format!(
        "echo start $$ >> {f}; sleep 0.05; echo end $$ >> {f}",
        f = file.display()
    );
    let mut children: Vec<_> = (0..6)
        .map(|i| {
            let (first, second) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
            redlease(&server.url())
                .args([
                    "run", "--key", first, "--key", second, "--wait", "30s", "--", "sh", "-c",
                    &script,
                ])
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in &mut children {
        assert!(wait(child, LIMIT).success());
    }
    let log = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 12, "{log}");
    for pair in lines.chunks(2) {
        let pid = pair[0].strip_prefix("start ").expect(&log);
        assert_eq!(pair[1], format!("end {pid}"), "interleaved:\n{log}");
    }
    let out = output(
        redlease(&server.url()).args([
            "run",
            "--key",
            &a,
            "--key",
            &b,
            "--",
            "sh",
            "-c",
            "echo $REDLEASE_FENCING_TOKENS",
        ]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let tokens = stdout(&out);
    assert!(
        tokens.contains(&format!("{a}=")) && tokens.contains(&format!("{b}=")),
        "{tokens}"
    );
    // One key held elsewhere: busy, and the other is not left held.
    redis::<i64>(server, &["HSET", &b, "someone-else:1", "1"]);
    redis::<i64>(server, &["PEXPIRE", &b, "20000"]);
    let out = output(
        redlease(&server.url())
            .args(["run", "--key", &a, "--key", &b, "--wait", "0", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert_eq!(redis::<i64>(server, &["EXISTS", &a]), 0);
    redis::<i64>(server, &["DEL", &b]);
    // --read and --write take one key.
    let out = output(
        redlease("redis://127.0.0.1:1")
            .args(["run", "--key", "a", "--key", "b", "--read", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `--layout string`: while the command runs the key is a string holding
/// the owner (`<client-id>:<n>`, as `SET key owner NX PX` writes it), with
/// a lease and the fencing token from the usual counter; gone after.
#[test]
fn string_layout_holds_the_key_as_a_string() {
    let server = RedisServer::shared();
    let key = unique("run:string");
    let go = temp_dir("string").join("go");
    let script = format!(
        "echo $REDLEASE_FENCING_TOKEN; while [ ! -e {} ]; do sleep 0.02; done",
        go.display()
    );
    let mut holder = redlease(&server.url())
        .args([
            "run", "--layout", "string", "--key", &key, "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    eventually(LIMIT, "the lock", || {
        redis::<i64>(server, &["EXISTS", &key]) == 1
    });
    assert_eq!(redis::<String>(server, &["TYPE", &key]), "string");
    let owner: String = redis(server, &["GET", &key]);
    let (client, n) = owner.rsplit_once(':').expect(&owner);
    assert!(!client.is_empty() && n.parse::<u64>().is_ok(), "{owner}");
    let ttl: i64 = redis(server, &["PTTL", &key]);
    assert!(ttl > 0 && ttl <= 30_000, "{ttl}");
    std::fs::write(&go, "").unwrap();
    assert!(wait(&mut holder, LIMIT).success());
    let mut printed = String::new();
    std::io::Read::read_to_string(&mut holder.stdout.take().unwrap(), &mut printed).unwrap();
    let token: String = redis(server, &["GET", &format!("redisson_lock_token:{{{key}}}")]);
    assert_eq!(printed.trim(), token);
    assert_eq!(redis::<i64>(server, &["EXISTS", &key]), 0);
}

/// `--layout string` on a key held by another library's `SET key uuid NX
/// PX`: busy after --wait (75), and the holder is left alone; free once it
/// deletes its key.
#[test]
fn string_layout_is_busy_on_a_set_nx_lock() {
    let server = RedisServer::shared();
    let key = unique("run:string-busy");
    let uuid = "5f0c7d0e-2b1a-4c3d-9e8f-7a6b5c4d3e2f";
    let set: String = redis(server, &["SET", &key, uuid, "NX", "PX", "20000"]);
    assert_eq!(set, "OK");
    let run = |wait: &str| {
        output(
            redlease(&server.url()).args([
                "run", "--layout", "string", "--key", &key, "--wait", wait, "--", "true",
            ]),
            LIMIT,
        )
    };
    let started = Instant::now();
    let out = run("300ms");
    let waited = started.elapsed();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(stderr(&out).contains("busy"), "{}", stderr(&out));
    assert_eq!(redis::<String>(server, &["GET", &key]), uuid);
    // Redisson's layout cannot lock a string key: an error, not a lock.
    let out = output(
        redlease(&server.url()).args(["run", "--key", &key, "--wait", "0", "--", "true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(redis::<String>(server, &["GET", &key]), uuid);
    redis::<i64>(server, &["DEL", &key]);
    assert!(run("0").status.success());
}

#[test]
fn string_layout_usage_errors_exit_2_before_connecting() {
    let refused = |args: &[&str], expected: &str| {
        let out = output(redlease("redis://127.0.0.1:1").args(args), LIMIT);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    };
    for side in ["--read", "--write"] {
        refused(
            &[
                "run", "--layout", "string", "--key", "k", side, "--", "true",
            ],
            "--layout string takes plain locks",
        );
    }
    refused(
        &[
            "run",
            "--layout",
            "string",
            "--semaphore",
            "s",
            "--permits",
            "2",
            "--",
            "true",
        ],
        "--layout string takes plain locks",
    );
    refused(
        &["run", "--layout", "hash", "--key", "k", "--", "true"],
        "invalid value 'hash' for '--layout <LAYOUT>'",
    );
}
