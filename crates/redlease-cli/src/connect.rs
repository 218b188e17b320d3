//! Connections to Redis from a `--url`, and keeping its password out of
//! every message.
//!
//! * `connect/plain.rs`: plain connections to one node or to a cluster.
//! * `connect/tls.rs`: `--tls-ca`, `--tls-cert`, `--tls-key`.

mod plain;
mod tls;

use std::process::ExitCode;
use std::time::Duration;

use percent_encoding::percent_decode_str;
use redis::cluster::ClusterClientBuilder;
use redlease::layout::Layout;

pub(crate) use plain::{Plain, is_cluster};
pub(crate) use tls::{Tls, TlsArgs, is_tls_url};

/// How long to wait for a connection, and for each reply, on the plain
/// connections the demo uses and on `inspect`'s reader.
const TIMEOUT: Duration = Duration::from_secs(3);

/// A `--url`, with what is needed to print it safely, and the TLS files
/// its connections use.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    url: String,
    tls: Tls,
    /// `--sentinel-password`: the sentinels' own, never printed.
    sentinel_password: Option<String>,
}

impl Target {
    pub(crate) fn new(url: String) -> Target {
        Target {
            url,
            tls: Tls::default(),
            sentinel_password: None,
        }
    }

    /// The same URL, authenticating to its sentinels with `password`.
    pub(crate) fn with_sentinel_password(self, password: Option<String>) -> Target {
        Target {
            sentinel_password: password,
            ..self
        }
    }

    /// A client builder for the URL with the TLS files and the sentinels'
    /// password.
    fn builder(&self) -> redlease::ClientBuilder {
        let mut builder = self.tls.apply(redlease::Client::builder(&self.url));
        if let Some(password) = &self.sentinel_password {
            builder = builder.sentinel_password(password.clone());
        }
        builder
    }

    /// The same URL, with `tls` for every connection made from it.
    pub(crate) fn with_tls(self, tls: Tls) -> Target {
        Target { tls, ..self }
    }

    /// Refuses a URL that the library would not read (an unknown scheme,
    /// no host, a port or database out of range), before anything
    /// connects: the message, naming the forms read, is for a usage error.
    pub(crate) fn check(&self) -> Result<(), String> {
        redlease::url::check(&self.url).map_err(|e| self.scrub(&e.to_string()))
    }

    /// The URL with its password replaced by `***`.
    pub(crate) fn redacted(&self) -> String {
        redlease::url::redact(&self.url)
    }

    /// `message` with every occurrence of the URL's password (as written and
    /// percent-decoded) and of the sentinels' password replaced by `***`,
    /// in case a library quoted them.
    pub(crate) fn scrub(&self, message: &str) -> String {
        let mut out = message.replace(&self.url, &self.redacted());
        if let Some(secret) = self.sentinel_password.as_deref().filter(|s| !s.is_empty()) {
            out = out.replace(secret, "***");
        }
        if let Some(secret) = redlease::url::password(&self.url) {
            let decoded = percent_decode_str(secret).decode_utf8_lossy();
            for form in [secret, &*decoded] {
                if !form.is_empty() {
                    out = out.replace(form, "***");
                }
            }
        }
        out
    }

    /// A redlease client whose locks use `layout`; the error is a message
    /// ready to print.
    pub(crate) async fn client(
        &self,
        watchdog_timeout: Option<Duration>,
        layout: LayoutArg,
    ) -> Result<redlease::Client, String> {
        let mut builder = self.builder().layout(layout.into());
        if let Some(timeout) = watchdog_timeout {
            builder = builder.watchdog_timeout(timeout);
        }
        builder.build().await.map_err(|e| self.failed(&e))
    }

    /// A client for reading lock states ([`redlease::layout`]), which
    /// waits for replies as long as [`connection`](Target::connection):
    /// a scan's pipelines are bigger than a lock call's.
    pub(crate) async fn reader(&self) -> Result<redlease::Client, String> {
        self.builder()
            .response_timeout(TIMEOUT)
            .connection_timeout(TIMEOUT)
            .build()
            .await
            .map_err(|e| self.failed(&e))
    }

    /// Whether the URL names a master under Sentinel (`redis-sentinel://`,
    /// `rediss-sentinel://`).
    pub(crate) fn is_sentinel(&self) -> bool {
        is_sentinel_url(&self.url)
    }

    /// Whether the URL is a TLS one (`rediss://`, `rediss-cluster://`,
    /// `rediss-sentinel://`).
    pub(crate) fn is_tls(&self) -> bool {
        is_tls_url(&self.url)
    }

    /// Whether the URL names a cluster (`redis-cluster://`).
    pub(crate) fn is_cluster(&self) -> bool {
        is_cluster(&self.url)
    }

    /// A plain connection, for reads and writes the lock API does not
    /// offer: to the node, or to the cluster, that the URL names.
    pub(crate) async fn connection(&self) -> Result<Plain, String> {
        if self.is_cluster() {
            return self.cluster_connection().await;
        }
        // Under Sentinel: the master the sentinels name now, asked with
        // the TLS files and the sentinels' password.
        let url = match self.builder().sentinel_master().await {
            Ok(Some(master)) => master,
            Ok(None) => self.url.clone(),
            Err(e) => return Err(self.failed(&e)),
        };
        let client = match self.tls.certificates() {
            Some(certs) => redis::Client::build_with_tls(url.as_str(), certs),
            None => redis::Client::open(url.as_str()),
        };
        let client = client.map_err(|e| self.failed(&e))?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT));
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.failed(&redlease::Error::from(e)))?;
        Ok(Plain::Single(conn))
    }

    async fn cluster_connection(&self) -> Result<Plain, String> {
        let seeds = redlease::url::cluster_seeds(&self.url)
            .map_err(|e| self.failed(&e))?
            .ok_or_else(|| self.failed(&"not a redis-cluster:// url"))?;
        let mut builder = ClusterClientBuilder::new(seeds)
            .connection_timeout(TIMEOUT)
            .response_timeout(TIMEOUT);
        if let Some(certs) = self.tls.certificates() {
            builder = builder.certs(certs);
        }
        let client = builder.build().map_err(|e| self.failed(&e))?;
        let conn = client
            .get_async_connection()
            .await
            .map_err(|e| self.failed(&redlease::Error::from(e)))?;
        Ok(Plain::Cluster(conn))
    }

    /// A connection failure, as a message naming the redacted URL; for a
    /// password refused or missing, where to fix it.
    fn failed(&self, e: &dyn std::fmt::Display) -> String {
        let e = e.to_string();
        let hint = if is_credentials(&e) {
            CHECK_CREDENTIALS
        } else if e.contains("DB index is out of range") || e.contains("value is out of range") {
            NO_SUCH_DATABASE
        } else {
            ""
        };
        self.scrub(&format!(
            "cannot connect to redis at {}: {e}{hint}",
            self.redacted()
        ))
    }
}

/// Where a refused or missing password is fixed.
const CHECK_CREDENTIALS: &str = " (check the URL or REDIS_URL)";

/// What a server's refusal of the URL's database means.
const NO_SUCH_DATABASE: &str = " (the server has no database of the url's number: it has as many \
    as its `databases` setting, 16 by default, numbered from 0)";

/// Whether a library error's message is about the password (its one
/// authentication wording), not an ACL denial.
fn is_credentials(message: &str) -> bool {
    message.starts_with("authentication ")
}

/// `--layout`: how a lock's key holds its owner ([`Layout`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LayoutArg {
    /// A hash whose field is the owner, as Redisson's RLock: shared with
    /// Java services on Redisson.
    #[default]
    Redisson,
    /// A string holding the owner, `SET key owner NX PX lease`: shared
    /// with services using SET NX locks (redis-py's Lock, rslock, redsync,
    /// a hand-written one).
    String,
}

impl From<LayoutArg> for Layout {
    fn from(layout: LayoutArg) -> Layout {
        match layout {
            LayoutArg::Redisson => Layout::Redisson,
            LayoutArg::String => Layout::String,
        }
    }
}

/// Returns true if and only if `url` names a master under Sentinel.
pub(crate) fn is_sentinel_url(url: &str) -> bool {
    ["redis-sentinel://", "rediss-sentinel://"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
}

/// Prints `redlease: <message>` on stderr and returns exit code 1.
pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("redlease: {message}");
    ExitCode::FAILURE
}

/// What to add to an error of `inspect` or `unlock --force`: when the
/// server refused the user, which rules it lacks.
pub(crate) fn admin_hint(e: &redlease::Error) -> &'static str {
    // A password refused or missing is the URL's to fix, not the rules'.
    if e.is_auth() && is_credentials(&e.to_string()) {
        CHECK_CREDENTIALS
    } else if e.is_auth() {
        " (inspect and unlock --force need the operators' rules: redlease acl --admin --prefix PREFIX)"
    } else {
        ""
    }
}

/// Prints `redlease: warning: <message>` on stderr.
pub(crate) fn warn(message: &str) {
    eprintln!("redlease: warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_plain_and_decoded_passwords() {
        let t = Target::new("redis://u:p%40ss@h:1".to_owned());
        assert_eq!(t.scrub("auth p@ss failed"), "auth *** failed");
        assert_eq!(t.scrub("url redis://u:p%40ss@h:1"), "url redis://u:***@h:1");
        // Multi-byte characters decode whole; a `%` that starts no escape
        // stays as written.
        let t = Target::new("redis://u:caf%C3%A9%zz@h:1".to_owned());
        assert_eq!(t.scrub("auth café%zz failed"), "auth *** failed");
        let t = Target::new("redis-sentinel://:data@h:1#m".to_owned())
            .with_sentinel_password(Some("s3ntinel".to_owned()));
        assert_eq!(t.scrub("data and s3ntinel"), "*** and ***");
        assert!(!format!("{:?}", t.builder()).contains("s3ntinel"));
    }
}
