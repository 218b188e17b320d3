//! Locks over TLS (#14): a private CA given to `tls_ca`, the wrong CA,
//! mutual TLS, a cluster over TLS, and options that cannot work. Servers
//! serve TLS on a port of their own and keep a plain one for the tests'
//! checks; the clients are only ever given the TLS port.
//!
//! Without the `tls-rustls` feature (`cargo test -p redlease` alone), only
//! the refusal of TLS options is tested; `cargo test --workspace` enables
//! the feature through the CLI, or `--features tls-rustls`.

#[cfg(not(feature = "tls-rustls"))]
/// Without the feature, TLS options are a typed error, not ignored.
#[tokio::test]
async fn tls_options_need_the_tls_rustls_feature() {
    let e = redlease::Client::builder("rediss://127.0.0.1:1")
        .tls_ca(b"-----BEGIN CERTIFICATE-----".to_vec())
        .build()
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("tls-rustls"), "{e}");
}

#[cfg(feature = "tls-rustls")]
mod with_tls {
    use std::time::{Duration, Instant};

    use redlease_testkit::{RedisCluster, TestCerts};

    use crate::support::{
        RedisServer, acquired_soon_after, channel_of, evalsha_calls, eventually, exists, pttl,
        spawn_timed, subscribers, unique,
    };

    /// `rediss://` to the server's TLS port.
    fn tls_url(server: &RedisServer) -> String {
        format!("rediss://127.0.0.1:{}", server.tls_port().unwrap())
    }

    /// A builder for `url` that trusts `ca` (a PEM file).
    fn trusting(url: &str, ca: &std::path::Path) -> redlease::ClientBuilder {
        redlease::Client::builder(url).tls_ca(TestCerts::pem(ca))
    }

    /// Acquire, a waiter woken by a release, and watchdog renewals, all
    /// over TLS verified against the test's own CA.
    #[tokio::test]
    async fn lock_wait_and_renew_over_tls_with_a_custom_ca() {
        let certs = TestCerts::generate();
        let server = RedisServer::start_with(certs.server_options(false));
        let url = tls_url(&server);
        let watchdog = Duration::from_millis(600);
        let holder = trusting(&url, &certs.ca)
            .watchdog_timeout(watchdog)
            .build()
            .await
            .unwrap();
        let waiter = trusting(&url, &certs.ca).build().await.unwrap();
        let name = unique("tls");

        let guard = holder.lock(&name).try_lock().await.unwrap();
        let renewals_before = evalsha_calls(&server);
        let waiting = spawn_timed(waiter.lock(&name), Duration::from_secs(10));
        let subscribed = eventually(Duration::from_secs(3), || {
            subscribers(&server, &channel_of(&name)) == 1
        })
        .await;
        assert!(subscribed.is_some(), "the waiter never subscribed over tls");

        // Three leases: held only if the watchdog renewed it over TLS.
        tokio::time::sleep(watchdog * 3).await;
        assert!(!guard.is_lost(), "lost over tls");
        assert!(exists(&server, &name));
        let ttl = pttl(&server, &name);
        assert!(ttl > 0 && ttl <= 600, "pttl {ttl}");
        // About one renewal per 200 ms, plus the waiter's attempts.
        let calls = evalsha_calls(&server) - renewals_before;
        assert!(calls >= 5, "{calls} script calls in 1.8 s");

        let released = Instant::now();
        guard.unlock().await.unwrap();
        let second = acquired_soon_after(waiting, released).await;
        assert!(second.is_held().await.unwrap());
        second.unlock().await.unwrap();
        assert!(!exists(&server, &name));
    }

    /// A server certificate that the given CA did not sign (or the system's
    /// CAs, which know nothing of the test CA) fails the connect as a
    /// connection error that says "certificate", within the connect
    /// timeout, not after a response timeout or a hang.
    #[tokio::test]
    async fn a_wrong_ca_is_a_certificate_error_within_the_connect_timeout() {
        let certs = TestCerts::generate();
        let server = RedisServer::start_with(certs.server_options(false));
        let url = tls_url(&server);
        let timeout = Duration::from_secs(2);
        for builder in [
            trusting(&url, &certs.other_ca),
            redlease::Client::builder(&url),
        ] {
            let start = Instant::now();
            let e = builder
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .build()
                .await
                .unwrap_err();
            let took = start.elapsed();
            eprintln!("refused in {took:?}: {e}");
            assert!(took < timeout, "took {took:?}");
            assert!(e.is_connection(), "{e:?}");
            let shown = e.to_string();
            assert!(
                shown.contains("tls certificate rejected: the server's certificate is not signed by a ca this client trusts"),
                "{shown}"
            );
            assert!(shown.contains("UnknownIssuer"), "{shown}");
        }
    }

    /// A server that requires client certificates serves a client that
    /// presents one its CA signed, and turns away one that presents none
    /// with a connection error.
    #[tokio::test]
    async fn mutual_tls_needs_the_client_certificate() {
        let certs = TestCerts::generate();
        let server = RedisServer::start_with(certs.server_options(true));
        let url = tls_url(&server);

        let client = trusting(&url, &certs.ca)
            .tls_client_cert(
                TestCerts::pem(&certs.client.cert),
                TestCerts::pem(&certs.client.key),
            )
            .build()
            .await
            .unwrap();
        let name = unique("mtls");
        let guard = client.lock(&name).try_lock().await.unwrap();
        assert!(exists(&server, &name));
        guard.unlock().await.unwrap();

        let timeout = Duration::from_secs(2);
        let start = Instant::now();
        let e = trusting(&url, &certs.ca)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .build()
            .await
            .unwrap_err();
        let took = start.elapsed();
        eprintln!("refused in {took:?}: {e}");
        assert!(e.is_connection(), "{e:?}");
        assert!(took < timeout * 2, "took {took:?}");
        let shown = e.to_string();
        assert!(
            shown.contains("tls certificate rejected: the server requires a client certificate"),
            "{shown}"
        );
    }

    /// TLS options that cannot be used are refused when building, before
    /// anything is sent: with a plain URL (never a silent plaintext
    /// connection), or PEM that does not parse; no message quotes a key.
    #[tokio::test]
    async fn unusable_tls_options_are_invalid_arguments() {
        let certs = TestCerts::generate();
        let server = RedisServer::start_with(certs.server_options(false));
        let cases = [
            (
                "plain url",
                redlease::Client::builder(&server.url()).tls_ca(TestCerts::pem(&certs.ca)),
                "need a rediss://",
            ),
            (
                "no certificate in the ca",
                redlease::Client::builder(&tls_url(&server)).tls_ca(b"SECRET".to_vec()),
                "found none",
            ),
            (
                "a key that is not one",
                trusting(&tls_url(&server), &certs.ca).tls_client_cert(
                    TestCerts::pem(&certs.client.cert),
                    b"-----BEGIN PRIVATE KEY-----\nSECRET\n".to_vec(),
                ),
                "tls client key",
            ),
        ];
        for (what, builder, says) in cases {
            let shown_builder = format!("{builder:?}");
            assert!(!shown_builder.contains("SECRET"), "{shown_builder}");
            let e = builder.build().await.unwrap_err();
            assert!(e.is_invalid_argument(), "{what}: {e:?}");
            let shown = e.to_string();
            assert!(shown.contains(says), "{what}: {shown}");
            assert!(!shown.contains("SECRET"), "{what}: {shown}");
        }
    }

    /// `rediss-cluster://`: a 3-master cluster whose nodes report their TLS
    /// ports to TLS clients; locks in every master's slots, a scan of every
    /// master, a waiter woken over sharded pub/sub, all over TLS with the
    /// test's CA. Without the CA, the system's CAs refuse the nodes'
    /// certificates.
    #[tokio::test]
    async fn rediss_cluster_with_a_custom_ca() {
        let certs = TestCerts::generate();
        let cluster = RedisCluster::start_with(3, 0, certs.server_options(false));
        let url = cluster.tls_url();
        let client = trusting(&url, &certs.ca).build().await.unwrap();
        let waiter = trusting(&url, &certs.ca).build().await.unwrap();

        // One name per master, so that every node is reached over TLS.
        let mut names: Vec<String> = Vec::new();
        for master in cluster.masters() {
            let name = (0..)
                .map(|i| unique(&format!("tls-cluster-{i}")))
                .find(|name| cluster.master_for_key(name).id() == master.id())
                .unwrap();
            names.push(name);
        }
        let mut guards = Vec::new();
        for name in &names {
            guards.push(client.lock(name).try_lock().await.unwrap());
            let on_master: bool = redis::cmd("EXISTS")
                .arg(name)
                .query(&mut cluster.connection_for_key(name))
                .unwrap();
            assert!(on_master, "{name} is not on its master");
        }
        // A scan goes to each master by the address the cluster gave over
        // TLS: its TLS port.
        let mut found = Vec::new();
        let mut cursor = 0;
        loop {
            let scan = redlease::admin::scan(&client, "test:tls-cluster-*", cursor, 1000)
                .await
                .unwrap();
            found.extend(scan.locks.into_iter().map(|s| (s.name, s.node)));
            cursor = scan.cursor;
            if cursor == 0 {
                break;
            }
        }
        for name in &names {
            let port = cluster.master_for_key(name).tls_port().unwrap();
            let node = Some(format!("127.0.0.1:{port}"));
            assert!(found.contains(&(name.clone(), node)), "{name}: {found:?}");
        }
        for guard in guards {
            guard.unlock().await.unwrap();
        }

        let name = &names[0];
        let guard = client.lock(name).try_lock().await.unwrap();
        let waiting = spawn_timed(waiter.lock(name), Duration::from_secs(10));
        let mut node = cluster.connection_for_key(name);
        let subscribed = eventually(Duration::from_secs(3), || {
            let (_, n): (String, i64) = redis::cmd("PUBSUB")
                .arg("SHARDNUMSUB")
                .arg(channel_of(name))
                .query(&mut node)
                .unwrap();
            n == 1
        })
        .await;
        assert!(subscribed.is_some(), "the waiter never subscribed over tls");
        let released = Instant::now();
        guard.unlock().await.unwrap();
        acquired_soon_after(waiting, released)
            .await
            .unlock()
            .await
            .unwrap();

        let e = redlease::Client::builder(&url)
            .connection_timeout(Duration::from_secs(2))
            .build()
            .await
            .unwrap_err();
        assert!(e.is_connection(), "{e:?}");
        assert!(e.to_string().contains("tls certificate rejected"), "{e:?}");
    }
}
