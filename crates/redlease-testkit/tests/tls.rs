//! Test certificates and TLS servers: what each certificate is good for,
//! mutual TLS, and a cluster that a TLS client can follow. Checked with
//! `openssl` and `redis-cli`, so that the kit is not tested by the library
//! it serves.

use std::path::Path;
use std::process::{Command, Output};

use redlease_testkit::{RedisCluster, RedisServer, TestCerts};

fn openssl(args: &[&str], files: &[&Path]) -> Output {
    Command::new("openssl")
        .args(args)
        .args(files)
        .output()
        .expect("run openssl")
}

/// `redis-cli --tls` against `port`, trusting `ca`, with a client
/// certificate when given.
fn redis_cli_tls(
    port: u16,
    ca: &Path,
    client: Option<&redlease_testkit::TlsFiles>,
    args: &[&str],
) -> Output {
    let mut cmd = Command::new("redis-cli");
    cmd.args([
        "--tls",
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--cacert",
    ])
    .arg(ca);
    if let Some(client) = client {
        cmd.arg("--cert")
            .arg(&client.cert)
            .arg("--key")
            .arg(&client.key);
    }
    cmd.args(args).output().expect("run redis-cli")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn certificates_chain_to_their_ca_only_and_say_what_they_are_for() {
    let certs = TestCerts::generate();
    for cert in [&certs.server.cert, &certs.client.cert] {
        let ok = openssl(&["verify", "-CAfile"], &[&certs.ca, cert]);
        assert!(ok.status.success(), "{}", text(&ok));
        let wrong = openssl(&["verify", "-CAfile"], &[&certs.other_ca, cert]);
        assert!(!wrong.status.success(), "{}", text(&wrong));
    }
    let server = openssl(
        &["x509", "-noout", "-ext", "subjectAltName", "-in"],
        &[&certs.server.cert],
    );
    let server = text(&server);
    assert!(
        server.contains("IP Address:127.0.0.1") && server.contains("DNS:localhost"),
        "{server}"
    );
    let client = openssl(
        &["x509", "-noout", "-ext", "extendedKeyUsage", "-in"],
        &[&certs.client.cert],
    );
    let client = text(&client);
    assert!(client.contains("TLS Web Client Authentication"), "{client}");
    // Two sets never share a CA.
    let again = TestCerts::generate();
    let cross = openssl(&["verify", "-CAfile"], &[&again.ca, &certs.server.cert]);
    assert!(!cross.status.success(), "{}", text(&cross));

    let dir = certs.ca.parent().unwrap().to_owned();
    drop(certs);
    assert!(!dir.exists(), "the directory goes with the value");
}

#[test]
fn a_mutual_tls_server_answers_only_clients_with_a_certificate() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_with(certs.server_options(true));
    let port = server.tls_port().unwrap();

    let with = redis_cli_tls(port, &certs.ca, Some(&certs.client), &["PING"]);
    assert_eq!(text(&with).trim(), "PONG");
    let without = redis_cli_tls(port, &certs.ca, None, &["PING"]);
    assert!(!text(&without).contains("PONG"), "{}", text(&without));
    // The plain port stays open for the test's own checks.
    let pong: String = redis::cmd("PING").query(&mut server.connection()).unwrap();
    assert_eq!(pong, "PONG");

    // Without `mutual`, no client certificate is asked for; the other CA
    // cannot verify the server.
    let open = RedisServer::start_with(certs.server_options(false));
    let port = open.tls_port().unwrap();
    assert_eq!(
        text(&redis_cli_tls(port, &certs.ca, None, &["PING"])).trim(),
        "PONG"
    );
    let wrong = text(&redis_cli_tls(port, &certs.other_ca, None, &["PING"]));
    assert!(wrong.contains("certificate verify failed"), "{wrong}");
}

#[test]
fn a_tls_cluster_tells_tls_clients_its_tls_ports() {
    let certs = TestCerts::generate();
    let cluster = RedisCluster::start_with(3, 0, certs.server_options(false));
    let master = cluster.masters().next().unwrap();
    let tls_port = master.tls_port().expect("a tls port");

    let slots = text(&redis_cli_tls(
        tls_port,
        &certs.ca,
        None,
        &["CLUSTER", "SLOTS"],
    ));
    for node in cluster.masters() {
        let (plain, tls) = (
            node.port().to_string(),
            node.tls_port().unwrap().to_string(),
        );
        assert!(slots.lines().any(|l| l == tls), "{tls} not in {slots}");
        assert!(!slots.lines().any(|l| l == plain), "{plain} in {slots}");
    }
    // Plain clients still get the plain ports, which the kit's own checks use.
    let plain: redis::Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut master.connection())
        .unwrap();
    assert!(format!("{plain:?}").contains(&master.port().to_string()));

    let url = cluster.tls_url();
    assert!(url.starts_with("rediss-cluster://127.0.0.1:"), "{url}");
    assert!(url.contains(&format!("127.0.0.1:{tls_port}")), "{url}");
}
