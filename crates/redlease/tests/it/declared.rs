use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use redlease::{Client, distributed_lock};

use crate::support::{RedisServer, client, client_with_watchdog, eventually, exists, pttl, unique};

/// The error type of the declared functions: a lock error arrives through
/// its `From<redlease::Error>`.
#[derive(Debug)]
enum AppError {
    Lock(redlease::Error),
    Refused(&'static str),
    Parse(std::num::ParseIntError),
}

impl From<redlease::Error> for AppError {
    fn from(e: redlease::Error) -> Self {
        AppError::Lock(e)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(e: std::num::ParseIntError) -> Self {
        AppError::Parse(e)
    }
}

impl AppError {
    fn into_lock(self) -> redlease::Error {
        match self {
            AppError::Lock(e) => e,
            other => panic!("expected a lock error, got {other:?}"),
        }
    }
}

/// What a body saw of its own lock, read straight from Redis.
#[derive(Debug)]
struct Seen {
    exists: bool,
    fields: i64,
    pttl: i64,
}

fn look(name: &str) -> Seen {
    let server = RedisServer::shared();
    let fields = redis::cmd("HLEN")
        .arg(name)
        .query(&mut server.connection())
        .unwrap();
    Seen {
        exists: exists(server, name),
        fields,
        pttl: pttl(server, name),
    }
}

/// Installs a default client of the shared server once per process. The
/// client lives on a runtime of its own: each `#[tokio::test]` has its own
/// runtime, and a client's connection would die with the test that made it.
fn install_shared_default() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let url = RedisServer::shared().url();
        let (ready, installed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let client = Client::connect(&url).await.unwrap();
                // Another test may have installed one first; either serves.
                let _ = redlease::install_default(client);
                ready.send(()).unwrap();
                std::future::pending::<()>().await
            });
        });
        installed.recv().unwrap();
    });
}

struct Bill {
    id: u64,
}

#[distributed_lock(key = "{prefix}:receipt:{bill.id}", client = client)]
async fn receipt(client: &Client, prefix: &str, bill: &Bill) -> Result<(Seen, usize), AppError> {
    let seen = look(&format!("{prefix}:receipt:{}", bill.id));
    Ok((seen, client.renewing()))
}

/// While the body runs, the key formatted from the arguments is a lock hash
/// with one owner field, renewed by the watchdog; afterwards it is gone.
#[tokio::test]
async fn body_runs_under_the_lock_named_by_the_key() {
    let c = client().await;
    let prefix = unique("declared");
    let (seen, renewing) = receipt(&c, &prefix, &Bill { id: 42 }).await.unwrap();
    assert!(seen.exists, "{seen:?}");
    assert_eq!(seen.fields, 1, "{seen:?}");
    assert!(seen.pttl > 0 && seen.pttl <= 30_000, "{seen:?}");
    // The watchdog's, not a fixed lease of the same length (#12: the TTL
    // alone could not tell them apart).
    assert_eq!(
        renewing, 1,
        "the body's lock is not renewed by the watchdog"
    );
    assert_eq!(c.renewing(), 0, "still renewed after the call");
    assert!(!exists(
        RedisServer::shared(),
        &format!("{prefix}:receipt:42")
    ));
}

#[distributed_lock(key = "{name}", client = client)]
async fn no_wait(client: &Client, name: &str) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "{name}", client = client, wait = "200ms")]
async fn short_wait(client: &Client, name: &str) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "{name}", client = client, wait = "5s")]
async fn long_wait(client: &Client, name: &str) -> Result<Instant, AppError> {
    Ok(Instant::now())
}

/// A busy lock is a busy `redlease::Error` converted into the function's
/// error type: at once without `wait`, after about the wait with one; the
/// body does not run.
#[tokio::test]
async fn busy_lock_returns_the_converted_error_after_the_wait() {
    let (holder, c) = (client().await, client().await);
    let name = unique("declared-busy");
    let held = holder.lock(&name).try_lock().await.unwrap();

    let start = Instant::now();
    let e = no_wait(&c, &name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    assert_eq!(e.key(), Some(name.as_str()));
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );

    let start = Instant::now();
    let e = short_wait(&c, &name).await.unwrap_err().into_lock();
    let took = start.elapsed();
    assert!(e.is_busy(), "{e:?}");
    assert!(
        took >= Duration::from_millis(200),
        "gave up early: {took:?}"
    );
    assert!(took < Duration::from_secs(1), "gave up late: {took:?}");

    held.unlock().await.unwrap();
    no_wait(&c, &name).await.unwrap();
}

/// With a wait longer than the holder needs, the call acquires soon after
/// the release and runs its body.
#[tokio::test]
async fn waits_for_the_holder_and_then_runs() {
    let (holder, c) = (client().await, client().await);
    let name = unique("declared-wait");
    let held = holder.lock(&name).try_lock().await.unwrap();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let released = Instant::now();
        held.unlock().await.unwrap();
        released
    });
    let start = Instant::now();
    let ran_at = long_wait(&c, &name).await.unwrap();
    let released = releaser.await.unwrap();
    assert!(ran_at - start >= Duration::from_millis(190));
    assert!(
        ran_at.saturating_duration_since(released) < Duration::from_secs(1),
        "ran {:?} after the release",
        ran_at.saturating_duration_since(released)
    );
    assert!(!exists(RedisServer::shared(), &name));
}

#[derive(Clone, Copy, Debug)]
enum Exit {
    Normal,
    EarlyReturn,
    QuestionMark,
}

#[distributed_lock(key = "{name}", client = client)]
async fn exits(client: &Client, name: &str, exit: Exit) -> Result<u32, AppError> {
    assert!(look(name).exists, "the body runs without the lock");
    if let Exit::EarlyReturn = exit {
        return Err(AppError::Refused("early"));
    }
    let n: u32 = match exit {
        Exit::QuestionMark => "not a number".parse()?,
        _ => 7,
    };
    Ok(n)
}

/// The lock is released before the function returns, whichever way the
/// body ends, and the body's result comes through unchanged.
#[tokio::test]
async fn releases_on_return_early_return_and_question_mark() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("declared-exits");
    for exit in [
        Exit::Normal,
        Exit::EarlyReturn,
        Exit::QuestionMark,
        Exit::Normal,
    ] {
        let result = exits(&c, &name, exit).await;
        match (exit, &result) {
            (Exit::Normal, Ok(7)) | (Exit::EarlyReturn, Err(AppError::Refused("early"))) => {}
            (Exit::QuestionMark, Err(AppError::Parse(e)))
                if *e.kind() == std::num::IntErrorKind::InvalidDigit => {}
            _ => panic!("{exit:?} returned {result:?}"),
        }
        assert!(!exists(server, &name), "still locked after {exit:?}");
    }
}

#[distributed_lock(key = "{name}", client = client)]
async fn panics(client: &Client, name: &str) -> Result<(), AppError> {
    assert!(look(name).exists, "the body runs without the lock");
    panic!("the body panics on purpose");
}

/// A panic in the body drops the guard, which releases in the background.
#[tokio::test]
async fn releases_soon_after_a_panic() {
    let c = client().await;
    let name = unique("declared-panic");
    let task_name = name.clone();
    let task = tokio::spawn(async move { panics(&c, &task_name).await });
    let joined = task.await;
    assert!(joined.unwrap_err().is_panic());
    // Far sooner than the 30 s watchdog lease would free it.
    let gone = eventually(Duration::from_secs(1), || {
        !exists(RedisServer::shared(), &name)
    })
    .await;
    assert!(gone.is_some(), "the lock outlived the panic by 1 s");
}

#[distributed_lock(key = "{name}", client = client, lease = "800ms")]
async fn leased(client: &Client, name: &str) -> Result<(Seen, bool), AppError> {
    let seen = look(name);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    Ok((seen, exists(RedisServer::shared(), name)))
}

#[distributed_lock(key = "{name}", client = client, at_least = "700ms")]
async fn once_per_tick(client: &Client, name: &str) -> Result<u32, AppError> {
    Ok(1)
}

/// #40: `at_least` keeps the lock after a short body, until the minimum.
#[tokio::test]
async fn issue_40_at_least_keeps_the_lock_after_the_body() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("declared-at-least");
    let started = Instant::now();
    assert_eq!(once_per_tick(&c, &name).await.unwrap(), 1);
    let left = pttl(server, &name);
    assert!(left > 300 && left <= 700, "pttl {left}");
    // A second run in the same tick finds it taken.
    let again = once_per_tick(&c, &name).await.unwrap_err().into_lock();
    assert!(again.is_busy(), "{again}");
    let gone = eventually(Duration::from_secs(2), || !exists(server, &name)).await;
    assert!(gone.is_some());
    assert!(started.elapsed() >= Duration::from_millis(650));
    assert_eq!(once_per_tick(&c, &name).await.unwrap(), 1);
}

#[distributed_lock(key = "{name}", client = client)]
async fn watched(client: &Client, name: &str) -> Result<(Seen, bool), AppError> {
    let seen = look(name);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    Ok((seen, exists(RedisServer::shared(), name)))
}

/// `lease` fixes the expiry, which passes even while the body runs (and
/// the failed release does not change the result); without it the
/// client's watchdog keeps renewing.
#[tokio::test]
async fn lease_expires_but_the_watchdog_renews() {
    let server = RedisServer::shared();
    let c = client_with_watchdog(server, Duration::from_millis(600)).await;

    let name = unique("declared-lease");
    let (seen, still_there) = leased(&c, &name).await.unwrap();
    assert!(seen.pttl > 0 && seen.pttl <= 800, "{seen:?}");
    assert!(!still_there, "a fixed lease was renewed");

    let name = unique("declared-watchdog");
    let (seen, still_there) = watched(&c, &name).await.unwrap();
    assert!(seen.pttl > 0 && seen.pttl <= 600, "{seen:?}");
    assert!(still_there, "the watchdog did not renew");
    assert!(!exists(server, &name));
}

#[distributed_lock(key = "{name}", wait = "300ms")]
async fn with_default(name: &str) -> Result<Seen, AppError> {
    Ok(look(name))
}

/// Without `client`, the function locks through the installed default
/// client, which excludes other clients like any other.
#[tokio::test]
async fn default_client_is_used_without_a_client_option() {
    install_shared_default();
    let name = unique("declared-default");
    let seen = with_default(&name).await.unwrap();
    assert!(seen.exists && seen.fields == 1, "{seen:?}");
    assert!(!exists(RedisServer::shared(), &name));

    let other = client().await;
    let held = other.lock(&name).try_lock().await.unwrap();
    let start = Instant::now();
    let e = with_default(&name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    assert!(start.elapsed() >= Duration::from_millis(300));
    held.unlock().await.unwrap();
}

/// A service holding its client in an `Arc`, as an application would.
struct Sales {
    locks: Arc<Client>,
    prefix: String,
}

impl Sales {
    #[distributed_lock(key = "{self.prefix}:receipt:{bill_id}", client = self.locks)]
    async fn issue(&self, bill_id: u64, hold: Duration) -> Result<u64, AppError> {
        tokio::time::sleep(hold).await;
        Ok(bill_id)
    }

    #[distributed_lock(key = "{self.prefix}:receipt:{bill_id}", client = self.locks)]
    async fn issue_twice(&self, bill_id: u64) -> Result<u64, AppError> {
        // The nested call runs in this call's owner scope: it re-enters.
        let inner = self.issue(bill_id, Duration::ZERO).await?;
        let name = format!("{}:receipt:{bill_id}", self.prefix);
        assert!(
            look(&name).exists,
            "the nested release dropped the outer hold"
        );
        Ok(inner)
    }
}

/// `client = self.locks` on a `&self` method: two concurrent calls for one
/// bill exclude each other (each call is an owner of its own), calls for
/// different bills do not, and a nested call re-enters.
#[tokio::test]
async fn methods_with_a_client_field_exclude_each_other() {
    let sales = Sales {
        locks: Arc::new(client().await),
        prefix: unique("declared-sales"),
    };
    let hold = Duration::from_millis(200);
    let (a, b, other_bill) = tokio::join!(
        sales.issue(1, hold),
        sales.issue(1, hold),
        sales.issue(2, hold)
    );
    let busy = match (a, b) {
        (Ok(1), Err(e)) | (Err(e), Ok(1)) => e.into_lock(),
        other => panic!("expected one receipt and one busy error, got {other:?}"),
    };
    assert!(busy.is_busy(), "{busy:?}");
    assert_eq!(other_bill.unwrap(), 2);

    let start = Instant::now();
    assert_eq!(sales.issue_twice(3).await.unwrap(), 3);
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "re-entry waited"
    );
    assert!(!exists(
        RedisServer::shared(),
        &format!("{}:receipt:3", sales.prefix)
    ));
}

#[distributed_lock(key = "{name}", mode = "read", client = client)]
async fn declared_read(client: &Client, name: &str) -> Result<Seen, AppError> {
    Ok(look(name))
}

#[distributed_lock(key = "{name}", mode = "read", client = client, wait = "5s")]
async fn declared_read_waiting(client: &Client, name: &str) -> Result<Instant, AppError> {
    Ok(Instant::now())
}

#[distributed_lock(key = "{name}", mode = "write", client = client, lease = "10s")]
async fn declared_write(client: &Client, name: &str) -> Result<(Seen, String), AppError> {
    let mode: String = redis::cmd("HGET")
        .arg(name)
        .arg("mode")
        .query(&mut RedisServer::shared().connection())
        .unwrap();
    Ok((look(name), mode))
}

/// `mode = "read"` takes the read side: it runs beside another reader,
/// is refused while a writer holds the lock, and leaves no key behind.
#[tokio::test]
async fn read_mode_shares_with_readers_and_waits_for_the_writer() {
    let (holder, c) = (client().await, client().await);
    let name = unique("declared-read");
    let rw = holder.read_write_lock(&name);

    let reading = rw.read().try_lock().await.unwrap();
    let seen = declared_read(&c, &name).await.unwrap();
    // `mode` and two readers: the other holder's and ours.
    assert_eq!(seen.fields, 3, "{seen:?}");
    reading.unlock().await.unwrap();
    assert!(!exists(RedisServer::shared(), &name));

    let writing = rw.write().try_lock().await.unwrap();
    let e = declared_read(&c, &name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        writing.unlock().await.unwrap();
        Instant::now()
    });
    let ran_at = declared_read_waiting(&c, &name).await.unwrap();
    let released = releaser.await.unwrap();
    assert!(ran_at >= released, "read while the writer held the lock");
    assert!(!exists(RedisServer::shared(), &name));
}

/// `mode = "write"` takes the write side with its fixed lease: `mode` is
/// `write` while the body runs, and a reader or a plain lock of the same
/// name makes it busy.
#[tokio::test]
async fn write_mode_is_alone() {
    let (holder, c) = (client().await, client().await);
    let name = unique("declared-write");

    let (seen, mode) = declared_write(&c, &name).await.unwrap();
    assert_eq!(mode, "write");
    assert_eq!(seen.fields, 2, "{seen:?}");
    assert!(seen.pttl > 9_000 && seen.pttl <= 10_000, "{seen:?}");
    assert!(!exists(RedisServer::shared(), &name));

    let reading = holder
        .read_write_lock(&name)
        .read()
        .try_lock()
        .await
        .unwrap();
    let e = declared_write(&c, &name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    reading.unlock().await.unwrap();

    let plain = holder.lock(&name).try_lock().await.unwrap();
    let e = declared_write(&c, &name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    let e = declared_read(&c, &name).await.unwrap_err().into_lock();
    assert!(e.is_busy(), "{e:?}");
    plain.unlock().await.unwrap();
    declared_write(&c, &name).await.unwrap();
}
