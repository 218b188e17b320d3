//! The metrics recorded through the `metrics` facade, read back from a
//! recorder after a contended run.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use redlease::metrics as m;

use crate::support::{Proxy, RedisServer, client_with_watchdog, unique};

/// The process-wide recorder: one per test binary, installed on first use.
/// Other tests record into it too, so every assertion filters on a label
/// of this test's own.
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("no other recorder in this binary");
        snapshotter
    })
}

/// The labels of a metric of one lock label and nothing else.
fn lock(label: &str) -> [(&'static str, &str); 1] {
    [(m::LOCK_LABEL, label)]
}

/// The metrics recorded under one lock label, as read once.
struct Recorded(Vec<(CompositeKey, DebugValue)>);

impl Recorded {
    fn take() -> Recorded {
        Recorded(
            snapshotter()
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect(),
        )
    }

    fn find(&self, kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0.iter().find_map(|(key, value)| {
            let k = key.key();
            let matches = key.kind() == kind
                && k.name() == name
                && labels
                    .iter()
                    .all(|(l, v)| k.labels().any(|x| x.key() == *l && x.value() == *v))
                && k.labels().count() == labels.len();
            matches.then_some(value)
        })
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.find(MetricKind::Counter, name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            _ => 0,
        }
    }

    fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        match self.find(MetricKind::Histogram, name, labels) {
            Some(DebugValue::Histogram(v)) => v.iter().map(|x| x.into_inner()).collect(),
            _ => Vec::new(),
        }
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.find(MetricKind::Gauge, name, labels) {
            Some(DebugValue::Gauge(v)) => Some(v.into_inner()),
            _ => None,
        }
    }
}

/// Two clients, eight tasks, one key: every acquire, busy rejection,
/// cancellation, renewal, renewal failure, loss and refused unlock shows up
/// under the key's prefix, never under the full key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_run_is_counted() {
    snapshotter();
    let server = RedisServer::shared();
    let prefix = unique("metrics");
    let key = format!("{prefix}:sku");
    // Renewed every 333 ms: long enough that a loaded machine does not
    // lose a lock by a late renewal.
    let watchdog = Duration::from_secs(1);
    let a = client_with_watchdog(server, watchdog).await;
    let b = client_with_watchdog(server, watchdog).await;

    // Contention: one long hold, renewed, that 8 tasks wait out, then
    // 8 tasks × 5 rounds of short holds.
    let acquired = std::sync::Arc::new(AtomicU64::new(0));
    let first = a.lock(key.as_str()).try_lock().await.unwrap();
    acquired.fetch_add(1, Ordering::Relaxed);
    let mut tasks = Vec::new();
    for t in 0..8 {
        let client = if t % 2 == 0 { a.clone() } else { b.clone() };
        let (key, acquired) = (key.clone(), acquired.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let guard = client
                    .lock(key.as_str())
                    .try_lock_for(Duration::from_secs(10))
                    .await
                    .unwrap();
                acquired.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(3)).await;
                guard.unlock().await.unwrap();
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(450)).await;
    first.unlock().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    // Busy, and cancelled while waiting.
    let held = a.lock(key.as_str()).try_lock().await.unwrap();
    let busy = b.lock(key.as_str()).try_lock().await.unwrap_err();
    assert!(busy.is_busy());
    let cancelled = tokio::time::timeout(
        Duration::from_millis(50),
        b.lock(key.as_str()).try_lock_for(Duration::from_secs(5)),
    )
    .await;
    assert!(cancelled.is_err(), "the wait should have been cancelled");
    held.unlock().await.unwrap();

    // Deleted behind its holder: lost, and the unlock is refused.
    let gone = format!("{prefix}:gone:1");
    let guard = a.lock(gone.as_str()).lock().await.unwrap();
    redis::cmd("DEL")
        .arg(&gone)
        .query::<()>(&mut server.connection())
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), guard.lost())
        .await
        .expect("the watchdog should notice the deletion");
    assert_eq!(reason, redlease::LostReason::OwnerChanged);
    assert!(guard.unlock().await.unwrap_err().is_not_owner());

    // A fixed lease that runs out while held.
    let fixed = format!("{prefix}:fixed:1");
    let guard = a
        .lock(fixed.as_str())
        .lease(Duration::from_millis(30))
        .try_lock()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(guard.unlock().await.unwrap_err().is_not_owner());

    // Renewals that fail: the client is cut off from Redis.
    let proxy = Proxy::start(server.port());
    let cut = redlease::Client::builder(&proxy.url())
        .watchdog_timeout(watchdog)
        .response_timeout(Duration::from_millis(50))
        .build()
        .await
        .unwrap();
    let cut_key = format!("{prefix}:cut:1");
    let guard = cut.lock(cut_key.as_str()).lock().await.unwrap();
    proxy.cut();
    let reason = tokio::time::timeout(Duration::from_secs(4), guard.lost())
        .await
        .expect("renewals should fail until the deadline");
    assert_eq!(reason, redlease::LostReason::RenewalFailed);
    drop(guard);

    // Issue #37: a request sent again is counted by why. An unlock across
    // a stall longer than the response time-out is sent again after each
    // time-out until the server answers: 900 ms of stall, 200 ms time-outs,
    // two retries at least. (The series has no lock label, so other
    // tests' retries may add to it; none of them can take from it, since
    // this test alone reads the recorder, and reading drains it.)
    let stalled = RedisServer::start();
    let impatient = crate::support::impatient_client(&stalled).await;
    let guard = impatient
        .lock(format!("{prefix}:retried:1"))
        .try_lock()
        .await
        .unwrap();
    let released = crate::support::across_a_stall(&stalled, guard.unlock()).await;
    released.unwrap();

    // One read: the debugging recorder's snapshot swaps every counter to
    // zero and drains the histograms.
    let r = Recorded::take();
    let retries = r.counter(m::RETRIES, &[(m::REASON_LABEL, "timeout")]);
    assert!(retries >= 2, "{retries} retries counted");
    let label = |l: &str| format!("{prefix}{l}");
    let (main, gone, fixed, cut) = (label(""), label(":gone"), label(":fixed"), label(":cut"));
    let outcome = |l: &'static str| [(m::LOCK_LABEL, main.as_str()), (m::OUTCOME_LABEL, l)];
    let acquired = acquired.load(Ordering::Relaxed) + 1;

    assert_eq!(acquired, 42);
    assert_eq!(r.counter(m::ACQUIRES, &outcome("acquired")), acquired);
    assert_eq!(r.counter(m::ACQUIRES, &outcome("busy")), 1);
    assert_eq!(r.counter(m::ACQUIRES, &outcome("cancelled")), 1);
    assert_eq!(r.counter(m::ACQUIRES, &outcome("error")), 0);
    // Waiting tasks retry: more attempts than acquisitions.
    let attempts = r.counter(m::ACQUIRE_ATTEMPTS, &lock(&main));
    assert!(attempts > acquired + 1, "attempts {attempts}");
    let waits = r.histogram(m::WAIT_SECONDS, &outcome("acquired"));
    assert_eq!(waits.len() as u64, acquired);
    assert!(
        waits.iter().any(|w| *w > 0.4),
        "someone waited out the long hold"
    );
    let holds = r.histogram(m::HOLD_SECONDS, &lock(&main));
    assert_eq!(holds.len() as u64, acquired);
    assert!(holds.iter().any(|h| *h >= 0.45));
    assert_eq!(r.gauge(m::HELD, &lock(&main)), Some(0.0));
    assert!(r.counter(m::RENEWALS, &lock(&main)) >= 1);
    assert_eq!(r.counter(m::RENEWAL_FAILURES, &lock(&main)), 0);
    assert_eq!(r.counter(m::UNLOCK_NOT_OWNER, &lock(&main)), 0);

    let lost_count = |l: &str, reason: &str| {
        r.counter(m::LOST, &[(m::LOCK_LABEL, l), (m::REASON_LABEL, reason)])
    };
    assert_eq!(lost_count(&gone, "owner_changed"), 1);
    assert_eq!(r.counter(m::UNLOCK_NOT_OWNER, &lock(&gone)), 1);
    assert_eq!(lost_count(&fixed, "expired"), 1);
    assert_eq!(r.counter(m::UNLOCK_NOT_OWNER, &lock(&fixed)), 1);
    assert_eq!(lost_count(&cut, "renewal_failed"), 1);
    assert!(r.counter(m::RENEWAL_FAILURES, &lock(&cut)) >= 1);
    // Never a series per key.
    assert!(
        r.0.iter()
            .all(|(k, _)| k.key().labels().all(|l| !l.value().ends_with(":sku"))),
        "a full key was used as a label"
    );
}

/// A span's name and its fields as recorded so far.
type SpanRecord = (String, Vec<(String, String)>);

/// The spans a subscriber saw, by id (index + 1).
#[derive(Clone, Default)]
struct Spans(std::sync::Arc<std::sync::Mutex<Vec<SpanRecord>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl tracing::Subscriber for Spans {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Vec::new();
        span.record(&mut Fields(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), fields));
        tracing::span::Id::from_u64(spans.len() as u64)
    }

    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.0.lock().unwrap();
        let entry = &mut spans[span.into_u64() as usize - 1];
        values.record(&mut Fields(&mut entry.1));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

impl Spans {
    /// The spans called `name` whose `key` field is `key`, as field maps.
    fn named(&self, name: &str, key: &str) -> Vec<std::collections::HashMap<String, String>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, fields)| {
                fields
                    .iter()
                    .cloned()
                    .collect::<std::collections::HashMap<_, _>>()
            })
            .filter(|f| f.get("key").map(String::as_str) == Some(key))
            .collect()
    }
}

/// The process-wide subscriber, installed on first use. A scoped one
/// (`set_default`) would race with other tests' threads over the callsites'
/// cached interest; every test records into this one, so the assertions
/// filter on this test's key.
fn spans() -> &'static Spans {
    static SPANS: OnceLock<Spans> = OnceLock::new();
    SPANS.get_or_init(|| {
        let spans = Spans::default();
        tracing::subscriber::set_global_default(spans.clone())
            .expect("no other subscriber in this binary");
        spans
    })
}

/// Acquire, wait and unlock run in spans that name the key and the outcome.
#[tokio::test]
async fn spans_name_the_key_and_outcome() {
    let spans = spans();
    let key = unique("spans");
    let client = redlease::Client::connect(&RedisServer::shared().url())
        .await
        .unwrap();
    let guard = client.lock(key.as_str()).try_lock().await.unwrap();
    let busy = client
        .lock(key.as_str())
        .try_lock_for(Duration::from_millis(30))
        .await
        .unwrap_err();
    assert!(busy.is_busy());
    guard.unlock().await.unwrap();

    let outcomes = |name| -> Vec<String> {
        spans
            .named(name, &key)
            .into_iter()
            .filter_map(|f| f.get("outcome").cloned())
            .collect()
    };
    assert_eq!(outcomes("acquire"), ["acquired", "busy"]);
    assert_eq!(outcomes("unlock"), ["released"]);
    assert!(
        !spans.named("wait", &key).is_empty(),
        "the busy acquire waited"
    );
}
