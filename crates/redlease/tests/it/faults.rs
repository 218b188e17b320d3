use std::time::{Duration, Instant};

use crate::support::{
    RedisServer, ServerOptions, assert_acquire_was_released, client, client_with,
    client_with_watchdog, evalsha_calls, eventually, exists, pttl, take_and_release, unique,
};

/// Empty and oversized names are rejected before anything is sent, by every
/// acquire method.
#[tokio::test]
async fn bad_names_are_invalid_arguments() {
    let c = client().await;
    for name in [String::new(), "x".repeat(redlease::MAX_NAME_LEN + 1)] {
        let lock = c.lock(&name);
        for err in [
            lock.try_lock().await.unwrap_err(),
            lock.try_lock_for(Duration::from_secs(1)).await.unwrap_err(),
            lock.lock().await.unwrap_err(),
        ] {
            assert!(err.is_invalid_argument(), "{err:?}");
        }
    }
    let err = c.lock("").try_lock().await.unwrap_err();
    assert_eq!(err.to_string(), "lock name must not be empty");
}

/// Zero and sub-millisecond leases are rejected; nothing is written.
#[tokio::test]
async fn zero_lease_is_invalid_argument() {
    let c = client().await;
    let name = unique("zero-lease");
    for lease in [Duration::ZERO, Duration::from_micros(999)] {
        let err = c.lock(&name).lease(lease).try_lock().await.unwrap_err();
        assert!(err.is_invalid_argument(), "{err:?}");
        assert_eq!(err.key(), Some(name.as_str()));
    }
    assert!(!exists(RedisServer::shared(), &name));
}

/// Bad client settings and URLs are invalid arguments, not panics.
#[tokio::test]
async fn bad_client_settings_are_invalid_arguments() {
    let url = RedisServer::shared().url();
    for timeout in [Duration::ZERO, Duration::from_millis(29)] {
        let err = redlease::Client::builder(&url)
            .watchdog_timeout(timeout)
            .build()
            .await
            .unwrap_err();
        assert!(err.is_invalid_argument(), "{err:?}");
    }
    let err = redlease::Client::builder(&url)
        .response_timeout(Duration::ZERO)
        .build()
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    let err = redlease::Client::connect("http://user:hunter2@nowhere")
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(
        !err.to_string().contains("hunter2"),
        "password leaked into {err}"
    );
}

/// A key holding a non-lock value gives a wrong-type error at once (no
/// waiting), and the value is left untouched.
#[tokio::test]
async fn wrong_type_key_is_reported_and_untouched() {
    let server = RedisServer::shared();
    let c = client().await;
    let name = unique("wrongtype");
    let mut conn = server.connection();
    redis::cmd("SET")
        .arg(&name)
        .arg("not a lock")
        .exec(&mut conn)
        .unwrap();
    let err = c.lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_wrong_type(), "{err:?}");
    let start = Instant::now();
    let err = c
        .lock(&name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.is_wrong_type(), "{err:?}");
    assert!(start.elapsed() < Duration::from_millis(500));
    assert_eq!(
        err.to_string(),
        format!("lock key {name:?} holds a string, not a lock hash")
    );
    let value: String = redis::cmd("GET").arg(&name).query(&mut conn).unwrap();
    assert_eq!(value, "not a lock");
    assert_eq!(pttl(server, &name), -1);
}

/// A guard whose key was replaced by a non-lock value no longer holds the
/// lock, and says so on every path: `is_held` is false, and unlock (plain
/// and fair) is `is_not_owner`, leaving the foreign value untouched (#12:
/// unlock answered with a wrong-type error that `is_not_owner` missed).
#[tokio::test]
async fn issue_12_unlock_of_a_key_replaced_by_a_string_is_not_owner() {
    let server = RedisServer::shared();
    let c = client().await;
    for fair in [false, true] {
        let name = unique("replaced-by-string");
        let lock = if fair {
            c.fair_lock(&name)
        } else {
            c.lock(&name)
        };
        let g = lock.try_lock().await.unwrap();
        redis::cmd("SET")
            .arg(&name)
            .arg("v")
            .exec(&mut server.connection())
            .unwrap();
        assert!(!g.is_held().await.unwrap());
        let err = g.unlock().await.unwrap_err();
        assert!(err.is_not_owner(), "fair {fair}: {err:?}");
        let value: String = redis::cmd("GET")
            .arg(&name)
            .query(&mut server.connection())
            .unwrap();
        assert_eq!(value, "v", "fair {fair}");
    }
}

/// After `SCRIPT FLUSH` every script is reloaded on its own: acquire,
/// renewal and release keep working.
#[tokio::test]
async fn noscript_after_script_flush_is_handled() {
    let server = RedisServer::start();
    let c = client_with_watchdog(&server, Duration::from_millis(150)).await;
    let name = unique("noscript");
    let mut conn = server.connection();
    let g = c.lock(&name).try_lock().await.unwrap();
    redis::cmd("SCRIPT").arg("FLUSH").exec(&mut conn).unwrap();
    // Several renewal periods: renewal must reload its script.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!g.is_lost());
    assert!(pttl(&server, &name) > 0);
    redis::cmd("SCRIPT").arg("FLUSH").exec(&mut conn).unwrap();
    g.unlock().await.unwrap();
    redis::cmd("SCRIPT").arg("FLUSH").exec(&mut conn).unwrap();
    take_and_release(c.lock(&name)).await;
}

/// Nothing listening: connect fails quickly with a connection error.
#[tokio::test]
async fn connection_refused_is_a_connection_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let err = redlease::Client::connect(&format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap_err();
    assert!(err.is_connection(), "{err:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// A server with a password: a wrong password fails at connect, a missing
/// one at the first lock, both as auth errors; the right one works.
#[tokio::test]
async fn auth_failures_are_auth_errors() {
    let server = RedisServer::start_with(ServerOptions {
        password: Some("s3cret".into()),
        ..Default::default()
    });
    let err = redlease::Client::connect(&format!("redis://:wrong@127.0.0.1:{}", server.port()))
        .await
        .unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    let name = unique("auth");
    match redlease::Client::connect(&server.url()).await {
        Err(err) => assert!(err.is_auth(), "{err:?}"),
        Ok(c) => {
            let err = c.lock(&name).try_lock().await.unwrap_err();
            assert!(err.is_auth(), "{err:?}");
        }
    }
    let c = redlease::Client::connect(&format!("redis://:s3cret@127.0.0.1:{}", server.port()))
        .await
        .unwrap();
    take_and_release(c.lock(&name)).await;
}

/// Locking through a read-only replica is a named error.
#[tokio::test]
async fn read_only_replica_is_named() {
    let master = RedisServer::start();
    let replica = RedisServer::start_with(ServerOptions {
        replica_of: Some(master.port()),
        ..Default::default()
    });
    let c = redlease::Client::connect(&replica.url()).await.unwrap();
    let err = c.lock(unique("replica")).try_lock().await.unwrap_err();
    assert!(err.is_read_only(), "{err:?}");
    // The string layout's transaction is refused as it is queued: the
    // replica's own error comes back, not `EXECABORT`'s.
    let c = redlease::Client::builder(&replica.url())
        .layout(redlease::layout::Layout::String)
        .build()
        .await
        .unwrap();
    let err = c.lock(unique("replica")).try_lock().await.unwrap_err();
    assert!(err.is_read_only(), "{err:?}");
}

/// Redis killed while a client is connected: a single attempt fails at
/// once with a connection error; a bounded wait retries and then reports
/// that error rather than "busy"; once Redis is back, locking works again.
#[tokio::test]
async fn redis_down_gives_errors_then_recovers() {
    let mut server = RedisServer::start();
    let c = redlease::Client::connect(&server.url()).await.unwrap();
    let name = unique("down");
    take_and_release(c.lock(&name)).await;
    server.kill();
    let start = Instant::now();
    let err = c.lock(&name).try_lock().await.unwrap_err();
    assert!(err.is_connection() || err.is_timeout(), "{err:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let start = Instant::now();
    // Several times as long as one attempt takes with Redis down (about
    // 0.55 s, spent in the connection's reconnect attempts), so that only
    // retries fill it (#12: with 500 ms, one attempt that was never
    // retried outlasted the wait).
    let wait = Duration::from_secs(2);
    let err = c.lock(&name).try_lock_for(wait).await.unwrap_err();
    let took = start.elapsed();
    assert!(err.is_connection() || err.is_timeout(), "{err:?}");
    assert!(
        took >= wait && took < wait + Duration::from_secs(5),
        "{took:?}"
    );
    server.restart();
    // A waiter rides out the rest of the reconnection.
    let g = c
        .lock(&name)
        .try_lock_for(Duration::from_secs(10))
        .await
        .unwrap();
    g.unlock().await.unwrap();
}

/// A frozen server: the acquire times out with a timeout error, and once the
/// server resumes the acquire that did run is released behind it, so the
/// lock is not left held for its 30 s lease.
#[tokio::test]
async fn acquire_timeout_leaves_no_lock() {
    let server = RedisServer::start();
    let c = client_with(
        &server,
        redlease::DEFAULT_WATCHDOG_TIMEOUT,
        Duration::from_millis(200),
    )
    .await;
    let name = unique("frozen");
    // Load the scripts first, so that after the pause exactly two EVALSHAs
    // run: the acquire and its release.
    take_and_release(c.lock(&name)).await;
    let calls_before = evalsha_calls(&server);
    server.pause();
    let start = Instant::now();
    let err = c.lock(&name).try_lock().await.unwrap_err();
    let took = start.elapsed();
    server.resume();
    assert!(err.is_timeout(), "{err:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The acquire runs after the resume; the background release follows it.
    assert_acquire_was_released(&server, &name, calls_before).await;
    take_and_release(c.lock(&name)).await;
}

/// #29: an acquire that Redis granted but whose reply came too late is
/// withdrawn even when the withdrawal's own reply is late too. On a fresh
/// server the withdrawal's script is not cached yet: its `NOSCRIPT` came
/// back after the response timeout, redis-rs never fell back to `EVAL`, and
/// the grant held the lock (and a fair lock's turn) for its whole 30 s
/// lease, so that every waiter behind it gave up busy. The withdrawal is
/// now sent again until answered. For each layout and the fair lock.
#[tokio::test]
async fn issue_29_a_late_grant_is_withdrawn_when_its_withdrawal_is_late_too() {
    use redlease::layout::Layout;
    let cases = [
        ("redisson", Layout::Redisson, true, false),
        ("fair", Layout::Redisson, true, true),
        ("string", Layout::String, true, false),
        ("string, fencing off", Layout::String, false, false),
    ];
    for (case, layout, fencing, fair) in cases {
        // A server of its own: nothing has loaded the release scripts.
        let server = RedisServer::start();
        let c = redlease::Client::builder(&server.url())
            .layout(layout)
            .fencing(fencing)
            .response_timeout(Duration::from_millis(200))
            .build()
            .await
            .unwrap();
        let lock = |name: &str| match fair {
            true => c.fair_lock(name),
            false => c.lock(name),
        };
        // A refused try loads the acquire script, and only that one.
        let held = unique("late-grant-held");
        let mut conn = server.connection();
        let mut hold = match layout {
            Layout::String => redis::cmd("SET"),
            _ => redis::cmd("HSET"),
        };
        hold.arg(&held).arg("other:1");
        if layout != Layout::String {
            hold.arg(1);
        }
        hold.exec(&mut conn).unwrap();
        assert!(
            lock(&held).try_lock().await.unwrap_err().is_busy(),
            "{case}"
        );

        let name = unique("late-grant");
        server.pause();
        let err = lock(&name).try_lock().await.unwrap_err();
        assert!(err.is_timeout(), "{case}: {err:?}");
        // The withdrawal times out as well while the server stays frozen.
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.resume();
        let freed = eventually(Duration::from_secs(3), || !exists(&server, &name)).await;
        assert!(
            freed.is_some(),
            "{case}: the late grant still holds the lock, pttl {}",
            pttl(&server, &name)
        );
        let guard = lock(&name).try_lock().await.unwrap();
        guard.unlock().await.unwrap();
    }
}
