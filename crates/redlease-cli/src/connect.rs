//! Connections to Redis from a `--url`, and keeping its password out of
//! every message.

use std::process::ExitCode;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

/// How long to wait for a connection, and for each reply, on the plain
/// connections the demo uses and on `inspect`'s reader.
const TIMEOUT: Duration = Duration::from_secs(3);

/// A `--url`, with what is needed to print it safely.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    url: String,
}

impl Target {
    pub(crate) fn new(url: String) -> Target {
        Target { url }
    }

    /// The URL with its password replaced by `***`.
    pub(crate) fn redacted(&self) -> String {
        redlease::url::redact(&self.url)
    }

    /// `message` with every occurrence of the URL's password (as written and
    /// percent-decoded) replaced by `***`, in case a library quoted it.
    pub(crate) fn scrub(&self, message: &str) -> String {
        let mut out = message.replace(&self.url, &self.redacted());
        if let Some(secret) = redlease::url::password(&self.url) {
            for form in [secret.to_owned(), percent_decode(secret)] {
                if !form.is_empty() {
                    out = out.replace(&form, "***");
                }
            }
        }
        out
    }

    /// A redlease client; the error is a message ready to print.
    pub(crate) async fn client(
        &self,
        watchdog_timeout: Option<Duration>,
    ) -> Result<redlease::Client, String> {
        let mut builder = redlease::Client::builder(&self.url);
        if let Some(timeout) = watchdog_timeout {
            builder = builder.watchdog_timeout(timeout);
        }
        builder.build().await.map_err(|e| self.failed(&e))
    }

    /// A client for reading lock states ([`redlease::layout`]), which
    /// waits for replies as long as [`connection`](Target::connection):
    /// a scan's pipelines are bigger than a lock call's.
    pub(crate) async fn reader(&self) -> Result<redlease::Client, String> {
        redlease::Client::builder(&self.url)
            .response_timeout(TIMEOUT)
            .connection_timeout(TIMEOUT)
            .build()
            .await
            .map_err(|e| self.failed(&e))
    }

    /// A plain connection, for reads the lock API does not offer.
    pub(crate) async fn connection(&self) -> Result<MultiplexedConnection, String> {
        let client = redis::Client::open(self.url.as_str()).map_err(|e| self.failed(&e))?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT));
        client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.failed(&redlease::Error::from(e)))
    }

    /// A connection failure, as a message naming the redacted URL.
    fn failed(&self, e: &dyn std::fmt::Display) -> String {
        self.scrub(&format!(
            "cannot connect to redis at {}: {e}",
            self.redacted()
        ))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Prints `redlease: <message>` on stderr and returns exit code 1.
pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("redlease: {message}");
    ExitCode::FAILURE
}

/// Prints `redlease: warning: <message>` on stderr.
pub(crate) fn warn(message: &str) {
    eprintln!("redlease: warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_the_password_only() {
        let t = |u: &str| Target::new(u.to_owned()).redacted();
        assert_eq!(t("redis://alice:s3cret@h:1/0"), "redis://alice:***@h:1/0");
        assert_eq!(t("rediss://:s3cret@h:1"), "rediss://:***@h:1");
        assert_eq!(t("redis://token@h:1"), "redis://***@h:1");
        assert_eq!(t("redis://a:p@ss@h:1"), "redis://a:***@h:1");
        assert_eq!(t("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn scrubs_plain_and_decoded_passwords() {
        let t = Target::new("redis://u:p%40ss@h:1".to_owned());
        assert_eq!(t.scrub("auth p@ss failed"), "auth *** failed");
        assert_eq!(t.scrub("url redis://u:p%40ss@h:1"), "url redis://u:***@h:1");
    }
}
