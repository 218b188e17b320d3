//! [`TestCerts`]: a certificate authority and the certificates a TLS test
//! needs, made with the `openssl` command when the test runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{ServerOptions, StartError, TlsFiles};

/// Certificates for TLS tests, valid for one day, in a directory of their
/// own that is removed when the value drops (keep it alive as long as a
/// server started with them may restart: Redis reads them at start-up).
///
/// * [`ca`](TestCerts::ca): a self-signed CA that signs the two others;
/// * [`server`](TestCerts::server): for `127.0.0.1` and `localhost`
///   (subject alternative names, which is what clients verify);
/// * [`client`](TestCerts::client): `CN=redlease-client`, for client
///   authentication only (`extendedKeyUsage=clientAuth`), for mutual TLS;
/// * [`other_ca`](TestCerts::other_ca): a second self-signed CA that signed
///   nothing here: the wrong CA.
///
/// Keys are ECDSA P-256: a fraction of the time of RSA keys, and what
/// rustls and Redis's OpenSSL both take.
#[derive(Debug)]
pub struct TestCerts {
    dir: PathBuf,
    /// The CA certificate (PEM).
    pub ca: PathBuf,
    /// The server's certificate and key, signed by [`ca`](TestCerts::ca).
    pub server: TlsFiles,
    /// A client certificate and key, signed by [`ca`](TestCerts::ca).
    pub client: TlsFiles,
    /// Another CA's certificate (PEM), which signed neither.
    pub other_ca: PathBuf,
}

/// `openssl req` arguments for a new P-256 key written to `key`, without a
/// passphrase.
const NEW_KEY: &str = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

impl TestCerts {
    /// Makes a new set in a fresh directory under the system temp dir.
    ///
    /// # Panics
    ///
    /// When `openssl` is missing or fails: this is a test fixture.
    pub fn generate() -> TestCerts {
        TestCerts::try_generate().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Makes a new set like [`generate`](TestCerts::generate).
    ///
    /// # Errors
    ///
    /// [`StartError::Failed`] with openssl's own message when a command
    /// fails, or how to install it when it is missing.
    pub fn try_generate() -> Result<TestCerts, StartError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "redlease-certs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| StartError::Failed(format!("cannot create {}: {e}", dir.display())))?;
        // Made before the files, so that a failure below removes the
        // directory on its way out.
        let certs = TestCerts {
            ca: dir.join("ca.pem"),
            server: TlsFiles {
                cert: dir.join("server.pem"),
                key: dir.join("server.key"),
            },
            client: TlsFiles {
                cert: dir.join("client.pem"),
                key: dir.join("client.key"),
            },
            other_ca: dir.join("other-ca.pem"),
            dir,
        };
        let scripts = [
            format!(
                "openssl req -x509 {NEW_KEY} -keyout ca.key -out ca.pem -days 1 -subj /CN=redlease-test-ca"
            ),
            signed(
                "server",
                "/CN=127.0.0.1",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ),
            signed(
                "client",
                "/CN=redlease-client",
                "extendedKeyUsage=clientAuth",
            ),
            format!(
                "openssl req -x509 {NEW_KEY} -keyout other-ca.key -out other-ca.pem -days 1 -subj /CN=redlease-other-ca"
            ),
        ];
        for script in &scripts {
            run(&certs.dir, script)?;
        }
        Ok(certs)
    }

    /// Options for a server that serves TLS with [`server`](TestCerts::server)
    /// and trusts [`ca`](TestCerts::ca); with `mutual`, it also requires
    /// clients to present a certificate that CA signed (`--tls-auth-clients
    /// yes`), such as [`client`](TestCerts::client).
    pub fn server_options(&self, mutual: bool) -> ServerOptions {
        ServerOptions {
            tls: Some(self.server.clone()),
            tls_ca: Some(self.ca.clone()),
            tls_auth_clients: mutual,
            ..ServerOptions::default()
        }
    }

    /// The contents of `path` (one of this set's files), for APIs that take
    /// PEM bytes.
    ///
    /// # Panics
    ///
    /// When the file cannot be read: this is a test fixture.
    pub fn pem(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }
}

impl Drop for TestCerts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The commands for a key and a certificate `name`, signed by the CA in
/// the same directory, with `subject` and one extension line.
fn signed(name: &str, subject: &str, extension: &str) -> String {
    format!(
        "openssl req {NEW_KEY} -keyout {name}.key -out {name}.csr -subj {subject} \
         && printf '{extension}\\n' > {name}.ext \
         && openssl x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
            -out {name}.pem -days 1 -extfile {name}.ext"
    )
}

/// Runs `script` with `sh` in `dir`; fails with its stderr.
fn run(dir: &Path, script: &str) -> Result<(), StartError> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .map_err(|e| StartError::Failed(format!("cannot run sh: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hint = match out.status.code() {
        // The shell's "command not found".
        Some(127) => "; is openssl installed? (scripts/test installs it: apt-get install openssl)",
        _ => "",
    };
    Err(StartError::Failed(format!(
        "making test certificates failed ({}){hint}: {}",
        out.status,
        stderr.trim()
    )))
}
