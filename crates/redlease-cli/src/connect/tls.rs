//! `--tls-ca`, `--tls-cert` and `--tls-key`: the files, read once before
//! anything connects, and applied to every connection of the run.

use std::fmt;
use std::path::{Path, PathBuf};

/// The TLS options, global to every command that connects.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct TlsArgs {
    /// PEM file of the CA that signed the server's certificate, for
    /// rediss://, rediss-cluster:// and rediss-sentinel:// URLs: trusted
    /// instead of the system's CAs.
    #[arg(long, env = "REDLEASE_TLS_CA", global = true, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// PEM file of a client certificate, for servers that require one
    /// (mutual TLS, tls-auth-clients yes); needs --tls-key.
    #[arg(
        long,
        env = "REDLEASE_TLS_CERT",
        global = true,
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key; needs --tls-cert.
    #[arg(
        long,
        env = "REDLEASE_TLS_KEY",
        global = true,
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
}

/// The contents of the TLS files: PEM, handed to the library, which
/// checks them.
#[derive(Clone, Default)]
pub(crate) struct Tls {
    ca: Option<Vec<u8>>,
    /// Certificate and private key.
    client: Option<(Vec<u8>, Vec<u8>)>,
}

/// Never the bytes: one of them is a private key.
impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("ca", &self.ca.is_some())
            .field("client_cert", &self.client.is_some())
            .finish()
    }
}

impl TlsArgs {
    /// Reads the files named; the error names the option and the file.
    pub(crate) fn read(&self) -> Result<Tls, String> {
        let ca = self
            .tls_ca
            .as_deref()
            .map(|f| read("--tls-ca", f))
            .transpose()?;
        let client = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some((read("--tls-cert", cert)?, read("--tls-key", key)?)),
            // clap refuses one without the other; this is the same refusal
            // for a caller that bypassed it.
            (Some(_), None) => return Err("--tls-cert needs --tls-key".to_owned()),
            (None, Some(_)) => return Err("--tls-key needs --tls-cert".to_owned()),
            (None, None) => None,
        };
        Ok(Tls { ca, client })
    }
}

fn read(option: &str, file: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(file).map_err(|e| format!("cannot read {option} {}: {e}", file.display()))
}

impl Tls {
    /// Returns true if and only if no TLS option was given.
    pub(crate) fn is_empty(&self) -> bool {
        self.ca.is_none() && self.client.is_none()
    }

    /// `builder` with the CA and the client certificate, if given.
    pub(crate) fn apply(&self, mut builder: redlease::ClientBuilder) -> redlease::ClientBuilder {
        if let Some(ca) = &self.ca {
            builder = builder.tls_ca(ca.clone());
        }
        if let Some((cert, key)) = &self.client {
            builder = builder.tls_client_cert(cert.clone(), key.clone());
        }
        builder
    }

    /// The same, for redis-rs's own clients (the demo's plain
    /// connections); `None` when no option was given.
    pub(crate) fn certificates(&self) -> Option<redis::TlsCertificates> {
        if self.is_empty() {
            return None;
        }
        Some(redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca.clone(),
        })
    }
}

/// Returns true if and only if `url` is one TLS options apply to.
pub(crate) fn is_tls_url(url: &str) -> bool {
    [
        "rediss://",
        "valkeys://",
        "rediss-cluster://",
        "rediss-sentinel://",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_with_its_option() {
        let args = TlsArgs {
            tls_ca: Some(PathBuf::from("/nonexistent/ca.pem")),
            ..TlsArgs::default()
        };
        let e = args.read().unwrap_err();
        assert!(
            e.starts_with("cannot read --tls-ca /nonexistent/ca.pem: "),
            "{e}"
        );
    }

    #[test]
    fn debug_shows_no_bytes() {
        let tls = Tls {
            ca: None,
            client: Some((b"CERT".to_vec(), b"SECRET".to_vec())),
        };
        let shown = format!("{tls:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("CERT\""),
            "{shown}"
        );
    }

    #[test]
    fn tls_urls_are_told_apart() {
        assert!(is_tls_url("rediss://h:1") && is_tls_url("rediss-cluster://h:1"));
        assert!(is_tls_url("rediss-sentinel://h:1#m") && !is_tls_url("redis-sentinel://h:1#m"));
        assert!(!is_tls_url("redis://h:1") && !is_tls_url("redis-cluster://h:1"));
    }
}
