//! Valkey 9 (#17): the native owner-checked commands a string layout can
//! use are there, found with `COMMAND INFO` (Valkey reports
//! `redis_version:7.2.4`, so a version string cannot tell), and
//! Redisson's layout works on it as on Redis: exclusion, hand-off by
//! release message, fencing tokens, the watchdog, the read-write lock and
//! the semaphore.

use std::time::Duration;

use crate::support::{RedisServer, unique, valkey};

/// Which of `commands` the server knows, by `COMMAND INFO` (nil for an
/// unknown command).
fn known(server: &RedisServer, commands: &[&str]) -> Vec<bool> {
    let info: Vec<redis::Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(commands)
        .query(&mut server.connection())
        .unwrap();
    info.iter().map(|v| *v != redis::Value::Nil).collect()
}

#[test]
fn valkey_9_has_delifeq_and_set_ifeq_and_redis_7_has_neither() {
    let server = valkey();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.connection())
        .unwrap();
    assert!(info.contains("valkey_version:9."), "{info}");
    // What a version check would see: a Redis 7 number.
    assert!(info.contains("redis_version:7."), "{info}");
    assert_eq!(known(server, &["DELIFEQ", "GET"]), [true, true]);
    assert_eq!(
        known(RedisServer::shared(), &["DELIFEQ", "GET"]),
        [false, true]
    );
    // The string layout's release and extension, as Valkey runs them.
    let mut conn = server.connection();
    let key = unique("valkey-native");
    let set: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg("token-1")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query(&mut conn)
        .unwrap();
    assert_eq!(set.as_deref(), Some("OK"));
    let extended: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg("token-1")
        .arg("IFEQ")
        .arg("token-1")
        .arg("PX")
        .arg(60_000)
        .query(&mut conn)
        .unwrap();
    assert_eq!(extended.as_deref(), Some("OK"));
    let foreign: i64 = redis::cmd("DELIFEQ")
        .arg(&key)
        .arg("token-2")
        .query(&mut conn)
        .unwrap();
    assert_eq!(foreign, 0, "a foreign token deleted the lock");
    let ours: i64 = redis::cmd("DELIFEQ")
        .arg(&key)
        .arg("token-1")
        .query(&mut conn)
        .unwrap();
    assert_eq!(ours, 1);
}

#[tokio::test]
async fn redissons_layout_works_on_valkey_9() {
    let server = valkey();
    let connect = || async {
        redlease::Client::builder(&server.url())
            .watchdog_timeout(Duration::from_millis(600))
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (connect().await, connect().await);
    let name = unique("valkey-lock");

    // Exclusion, and a waiter woken by the release message.
    let held = a.lock(&name).try_lock().await.unwrap();
    assert!(b.lock(&name).try_lock().await.unwrap_err().is_busy());
    let waiter = tokio::spawn({
        let lock = b.lock(&name);
        async move { lock.try_lock_for(Duration::from_secs(5)).await }
    });
    // Held past two watchdog timeouts: renewed, not lost.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert!(!held.is_lost());
    let first = held.fencing_token().unwrap();
    held.unlock().await.unwrap();
    let next = waiter.await.unwrap().unwrap();
    assert!(
        next.fencing_token().unwrap() > first,
        "tokens go up on Valkey too"
    );
    next.unlock().await.unwrap();

    // The read-write lock: readers share, a writer waits for them.
    let rw = a.read_write_lock(unique("valkey-rw"));
    let (r1, r2) = (
        rw.read().try_lock().await.unwrap(),
        rw.read().try_lock().await.unwrap(),
    );
    assert!(rw.write().try_lock().await.unwrap_err().is_busy());
    r1.unlock().await.unwrap();
    r2.unlock().await.unwrap();
    rw.write().try_lock().await.unwrap().unlock().await.unwrap();

    // The semaphore: permits taken and given back.
    let sem = a.semaphore(unique("valkey-sem"));
    assert!(sem.try_set_available(2).await.unwrap());
    sem.try_acquire(2).await.unwrap().forget();
    assert!(sem.try_acquire(1).await.unwrap_err().is_busy());
    sem.release(2).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 2);
}

/// #40: the doctor names Valkey, its `DELIFEQ`, and its `WAITAOF`, where
/// Redis 7.0 has neither.
#[tokio::test]
async fn issue_40_the_doctor_sees_valkey_and_its_native_release() {
    use redlease::doctor::{self, Check, Severity};

    let found = |report: &doctor::Report, check| {
        let f: Vec<_> = report.of(check).collect();
        assert_eq!(f.len(), 1, "{check}: {report:#?}");
        (f[0].severity, f[0].found.clone())
    };
    let client = redlease::Client::connect(&valkey().url()).await.unwrap();
    let report = doctor::examine(&client, &unique("valkey-doctor"))
        .await
        .unwrap();
    let (_, version) = found(&report, Check::Version);
    assert!(version.starts_with("valkey 9."), "{version}");
    let (_, native) = found(&report, Check::NativeRelease);
    assert!(native.starts_with("DELIFEQ"), "{native}");
    assert_eq!(
        found(&report, Check::WaitAof),
        (Severity::Ok, "answers".to_owned())
    );
    assert_eq!(found(&report, Check::Rights).0, Severity::Ok);

    let client = redlease::Client::connect(&RedisServer::shared().url())
        .await
        .unwrap();
    let report = doctor::examine(&client, &unique("redis-doctor"))
        .await
        .unwrap();
    assert!(found(&report, Check::NativeRelease).1.starts_with("none"));
    assert!(
        found(&report, Check::WaitAof)
            .1
            .starts_with("not on this server")
    );
    // A name that is no lock name: a typed error, before anything is sent.
    assert!(
        doctor::examine(&client, "")
            .await
            .unwrap_err()
            .is_invalid_argument()
    );
}
