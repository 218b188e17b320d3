//! A client's TLS options (a custom CA, a client certificate), checked
//! once when the client is built, and the certificates redis-rs takes.

use std::fmt;

use crate::error::Error;

/// What [`ClientBuilder::tls_ca`](crate::ClientBuilder::tls_ca) and
/// [`ClientBuilder::tls_client_cert`](crate::ClientBuilder::tls_client_cert)
/// set, as given (PEM bytes).
#[derive(Clone, Default)]
pub(crate) struct TlsOptions {
    ca: Option<Vec<u8>>,
    /// Certificate chain and private key.
    client: Option<(Vec<u8>, Vec<u8>)>,
}

/// Never prints the bytes: the key is a secret, and the certificates are
/// noise in a builder's `Debug`.
impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |present: bool| if present { "<set>" } else { "<none>" };
        f.debug_struct("TlsOptions")
            .field("ca", &set(self.ca.is_some()))
            .field("client_cert", &set(self.client.is_some()))
            .finish()
    }
}

/// Checked certificates for redis-rs; there are none without the
/// `tls-rustls` feature.
#[derive(Clone)]
pub(crate) struct Certificates(#[cfg(feature = "tls-rustls")] pub(super) redis::TlsCertificates);

impl TlsOptions {
    pub(crate) fn set_ca(&mut self, pem: Vec<u8>) {
        self.ca = Some(pem);
    }

    pub(crate) fn set_client_cert(&mut self, cert: Vec<u8>, key: Vec<u8>) {
        self.client = Some((cert, key));
    }

    /// Returns true if and only if no TLS option is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.ca.is_none() && self.client.is_none()
    }

    /// The certificates to connect with, after checking that the PEM parses
    /// (redis-rs would take a CA file without a certificate in it for an
    /// empty trust store, and fail every connection with an unknown
    /// issuer); `None` when no option is set.
    #[cfg(feature = "tls-rustls")]
    pub(crate) fn certificates(&self) -> Result<Option<Certificates>, Error> {
        if self.is_empty() {
            return Ok(None);
        }
        if let Some(ca) = &self.ca {
            check::trust_anchors(ca)?;
        }
        if let Some((cert, key)) = &self.client {
            check::certificates("tls client certificate", cert)?;
            check::private_key(key)?;
        }
        Ok(Some(Certificates(redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca.clone(),
        })))
    }

    /// Without the `tls-rustls` feature there is nothing to connect with.
    #[cfg(not(feature = "tls-rustls"))]
    pub(crate) fn certificates(&self) -> Result<Option<Certificates>, Error> {
        if self.is_empty() {
            return Ok(None);
        }
        Err(Error::invalid(
            "tls_ca and tls_client_cert need redlease's `tls-rustls` feature",
        ))
    }
}

/// What rustls's words for a rejected certificate mean, most specific
/// first: its messages name an enum variant (`invalid peer certificate:
/// UnknownIssuer`, `received fatal alert: CertificateRequired`), not the
/// cause.
const REJECTIONS: [(&str, &str); 6] = [
    (
        "UnknownIssuer",
        "the server's certificate is not signed by a ca this client trusts",
    ),
    (
        "NotValidForName",
        "the server's certificate does not name the host in the url",
    ),
    ("Expired", "the server's certificate has expired"),
    (
        "invalid peer certificate",
        "the server's certificate is not valid",
    ),
    (
        "CertificateRequired",
        "the server requires a client certificate",
    ),
    (
        "BadCertificate",
        "the server refused the client certificate",
    ),
];

/// `e` with a message that says which certificate was rejected and why,
/// when a connection failed on one; any other error as it is. The kind
/// stays a connection error: the server may be fixed, or be the wrong one.
pub(crate) fn explain(e: Error) -> Error {
    if !e.is_connection() {
        return e;
    }
    let cause = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
    match REJECTIONS.iter().find(|(needle, _)| cause.contains(needle)) {
        Some((_, why)) => e.reworded(format!(
            "cannot reach redis: tls certificate rejected: {why} ({cause})"
        )),
        None => e,
    }
}

/// PEM checks, with messages that never quote the input: a key is a
/// secret, and a CA file given by mistake might be one too.
#[cfg(feature = "tls-rustls")]
mod check {
    use rustls::pki_types::pem::{self, PemObject};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    use crate::error::Error;

    /// At least one certificate, each one usable as a trust anchor.
    pub(super) fn trust_anchors(pem: &[u8]) -> Result<(), Error> {
        let mut store = rustls::RootCertStore::empty();
        for cert in certificates("tls ca", pem)? {
            store
                .add(cert)
                .map_err(|e| Error::invalid(format!("tls ca: not a usable ca certificate: {e}")))?;
        }
        Ok(())
    }

    /// The certificates of `pem`, at least one.
    pub(super) fn certificates<'a>(
        what: &str,
        pem: &'a [u8],
    ) -> Result<Vec<CertificateDer<'a>>, Error> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::invalid(format!("{what}: {}", why(&e))))?;
        if certs.is_empty() {
            return Err(Error::invalid(format!(
                "{what}: expected a PEM certificate (-----BEGIN CERTIFICATE-----), but found none"
            )));
        }
        Ok(certs)
    }

    pub(super) fn private_key(pem: &[u8]) -> Result<(), Error> {
        match PrivateKeyDer::from_pem_slice(pem) {
            Ok(_) => Ok(()),
            Err(pem::Error::NoItemsFound) => Err(Error::invalid(
                "tls client key: expected a PEM private key (-----BEGIN PRIVATE KEY-----, \
                 RSA or EC), but found none",
            )),
            Err(e) => Err(Error::invalid(format!("tls client key: {}", why(&e)))),
        }
    }

    /// What is wrong with a PEM file, without its contents (some of the
    /// errors' own messages quote a line).
    fn why(e: &pem::Error) -> &'static str {
        match e {
            pem::Error::MissingSectionEnd { .. } => "not valid PEM: a section has no END line",
            pem::Error::IllegalSectionStart { .. } => "not valid PEM: a BEGIN line is malformed",
            pem::Error::Base64Decode(_) => "not valid PEM: a section is not valid base64",
            _ => "not valid PEM",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_bytes() {
        let mut tls = TlsOptions::default();
        tls.set_client_cert(b"CERT-BYTES".to_vec(), b"SECRET-KEY".to_vec());
        let shown = format!("{tls:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("CERT-BYTES"),
            "{shown}"
        );
        assert!(shown.contains("client_cert: \"<set>\""), "{shown}");
    }

    #[test]
    fn certificate_rejections_are_explained_and_stay_connection_errors() {
        let refused = |text: &str| {
            let io = std::io::Error::other(text.to_owned());
            explain(Error::from(redis::RedisError::from(io)))
        };
        let e = refused("invalid peer certificate: UnknownIssuer");
        assert!(e.is_connection(), "{e:?}");
        assert_eq!(
            e.to_string(),
            "cannot reach redis: tls certificate rejected: the server's certificate is not \
             signed by a ca this client trusts (invalid peer certificate: UnknownIssuer)"
        );
        let e = refused("received fatal alert: CertificateRequired");
        assert!(
            e.to_string().contains("requires a client certificate"),
            "{e}"
        );
        let e = refused("Connection refused (os error 111)");
        assert_eq!(
            e.to_string(),
            "cannot reach redis: Connection refused (os error 111)"
        );
        let other = explain(Error::invalid("UnknownIssuer in a name"));
        assert_eq!(other.to_string(), "UnknownIssuer in a name");
    }

    #[cfg(feature = "tls-rustls")]
    #[test]
    fn pem_that_does_not_parse_is_an_invalid_argument_that_quotes_nothing() {
        let fails = |what: &str, tls: TlsOptions, says: &str| {
            let e = tls.certificates().err().expect(what);
            assert!(e.is_invalid_argument(), "{what}: {e}");
            let shown = e.to_string();
            assert!(shown.contains(says), "{what}: {shown}");
            assert!(!shown.contains("SECRET"), "{what}: {shown}");
        };
        let ca = |pem: &[u8]| {
            let mut tls = TlsOptions::default();
            tls.set_ca(pem.to_vec());
            tls
        };
        fails("no pem at all", ca(b"SECRET not pem"), "found none");
        fails(
            "bad base64",
            ca(b"-----BEGIN CERTIFICATE-----\nSECRET!!\n-----END CERTIFICATE-----\n"),
            "base64",
        );
        fails(
            "unterminated",
            ca(b"-----BEGIN CERTIFICATE-----\nSECRET\n"),
            "END line",
        );
        let mut client = TlsOptions::default();
        client.set_client_cert(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
            b"SECRET".to_vec(),
        );
        fails("a key that is not one", client, "tls client key");
    }
}
