//! Sentinel URLs: `redis-sentinel://[[user]:password@]host[:port]
//! [,host[:port]...][/db]#master-name` (the form Lettuce reads), and
//! `rediss-sentinel://` for TLS to the sentinels and the master alike;
//! what one names ([`Target`]), and its master now as a one-node URL.
//!
//! [`Target`] lives here, beside the parser that makes it, rather than in
//! `sentinel.rs` with the connection that follows it: this file and
//! `url.rs` then import nothing of `sentinel.rs`, which imports them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, ProtocolVersion};
use tokio::sync::OnceCell;

use super::monitor::Monitor;
use crate::connection::password::redact;
use crate::connection::timeouts::Timeouts;
use crate::connection::tls::Certificates;
use crate::error::Error;

/// The port a sentinel listens on when the URL gives none.
const SENTINEL_PORT: u16 = 26379;

/// The credentials of the sentinels themselves
/// ([`ClientBuilder::sentinel_password`](crate::ClientBuilder::sentinel_password)),
/// as opposed to the URL's, which are the master's.
#[derive(Clone, Default)]
pub(crate) struct SentinelAuth {
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
}

/// Never prints the password.
impl fmt::Debug for SentinelAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelAuth")
            .field("username", &self.username)
            .field(
                "password",
                &if self.password.is_some() {
                    "<set>"
                } else {
                    "<none>"
                },
            )
            .finish()
    }
}

impl SentinelAuth {
    /// Returns true if and only if no credential is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.username.is_none() && self.password.is_none()
    }

    /// `info` with these credentials.
    fn apply(&self, info: ConnectionInfo) -> ConnectionInfo {
        let mut redis = info.redis_settings().clone();
        if let Some(username) = &self.username {
            redis = redis.set_username(username);
        }
        if let Some(password) = &self.password {
            redis = redis.set_password(password);
        }
        info.set_redis_settings(redis)
    }
}

/// What a sentinel URL names: the sentinels, the master's name, and how to
/// reach the master (credentials, database, TLS).
pub(crate) struct Target {
    pub(super) sentinels: Vec<redis::Client>,
    pub(super) name: String,
    pub(super) template: ConnectionInfo,
    /// For TLS to the master: a custom CA, a client certificate.
    pub(super) certs: Option<Certificates>,
    /// One monitor per client, shared by its connections (the main one and
    /// the `require_replicas` one), so that both follow the same switches.
    pub(super) monitor: OnceCell<Arc<Monitor>>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No template: it carries the master's password.
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| s.get_connection_info().addr().to_string())
            .collect();
        f.debug_struct("Target")
            .field("sentinels", &sentinels)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Target {
    fn new(
        sentinels: Vec<redis::Client>,
        name: String,
        template: ConnectionInfo,
        certs: Option<Certificates>,
    ) -> Target {
        Target {
            sentinels,
            name,
            template,
            certs,
            monitor: OnceCell::new(),
        }
    }

    /// The current master as a one-node URL with the credentials and
    /// database of the template.
    pub(crate) async fn master_url(&self) -> Result<String, Error> {
        let timeouts = Timeouts {
            response: Duration::from_secs(5),
            connect: Duration::from_secs(5),
        };
        let monitor = Monitor::start(self.sentinels.clone(), self.name.clone(), timeouts).await?;
        let master = monitor.known();
        let info = at(&self.template, &master.host, master.port);
        let scheme = match info.addr() {
            redis::ConnectionAddr::TcpTls { .. } => "rediss",
            _ => "redis",
        };
        let redis = info.redis_settings();
        let userinfo = match (redis.username(), redis.password()) {
            (Some(user), Some(pw)) => format!("{}:{}@", encode(user), encode(pw)),
            (None, Some(pw)) => format!(":{}@", encode(pw)),
            (Some(user), None) => format!("{}@", encode(user)),
            (None, None) => String::new(),
        };
        let host = if master.host.contains(':') {
            format!("[{}]", master.host)
        } else {
            master.host.clone()
        };
        Ok(format!(
            "{scheme}://{userinfo}{host}:{}/{}",
            master.port,
            redis.db()
        ))
    }

    #[cfg(test)]
    fn name(&self) -> &str {
        &self.name
    }

    #[cfg(test)]
    fn sentinels(&self) -> &[redis::Client] {
        &self.sentinels
    }

    #[cfg(test)]
    fn template(&self) -> &ConnectionInfo {
        &self.template
    }
}

/// Parses a sentinel URL; `None` when `url` is not one. `certs` (a custom
/// CA, a client certificate) apply to the sentinels and the master alike;
/// `auth` to the sentinels only.
pub(crate) fn parse(
    url: &str,
    certs: Option<Certificates>,
    auth: &SentinelAuth,
) -> Result<Option<Arc<Target>>, Error> {
    let (rest, tls) = if let Some(rest) = url.strip_prefix("redis-sentinel://") {
        (rest, false)
    } else if let Some(rest) = url.strip_prefix("rediss-sentinel://") {
        (rest, true)
    } else {
        return Ok(None);
    };
    let invalid = |why: &str| Error::invalid(format!("invalid redis url {:?}: {why}", redact(url)));
    let (rest, name) = rest
        .split_once('#')
        .ok_or_else(|| invalid("a sentinel url names its master after `#`"))?;
    if name.is_empty() {
        return Err(invalid("the master name after `#` is empty"));
    }
    // The last `@` ends the credentials, as in `redact`.
    let (userinfo, hosts) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    let (hosts, path) = match hosts.find(['/', '?']) {
        Some(end) => hosts.split_at(end),
        None => (hosts, ""),
    };
    let db = match path {
        "" | "/" => "",
        _ if path.starts_with('?') => return Err(invalid("a sentinel url takes no options")),
        _ if path[1..].parse::<u32>().is_ok() => &path[1..],
        _ => return Err(invalid("the path of a sentinel url is a database number")),
    };
    let scheme = if tls { "rediss" } else { "redis" };
    let mut sentinels = Vec::new();
    for host in hosts.split(',') {
        if host.is_empty() {
            return Err(invalid("a sentinel address is empty"));
        }
        // `host`, `host:port`, `[::1]` or `[::1]:port`.
        let has_port = host.rsplit_once(':').is_some_and(|(h, p)| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (!h.contains(':') || h.ends_with(']'))
        });
        let address = if has_port {
            host.to_owned()
        } else {
            format!("{host}:{SENTINEL_PORT}")
        };
        // The sentinels get no database and none of the URL's credentials:
        // those are the master's (sentinels refuse SELECT); only their own.
        let info = format!("{scheme}://{address}")
            .as_str()
            .into_connection_info()
            .map_err(|e| invalid(&e.to_string()))?;
        let info = auth.apply(info);
        let client = client(info, certs.as_ref()).map_err(|e| invalid(&e.to_string()))?;
        sentinels.push(client);
    }
    let first = hosts.split(',').next().unwrap_or_default();
    let template = format!("{scheme}://{userinfo}{first}/{db}");
    let info: ConnectionInfo = template
        .as_str()
        .into_connection_info()
        .map_err(|e| invalid(&e.to_string()))?;
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(ProtocolVersion::RESP3);
    Ok(Some(Arc::new(Target::new(
        sentinels,
        name.to_owned(),
        info.set_redis_settings(settings),
        certs,
    ))))
}

/// A client for `info`, with `certs` when given.
pub(super) fn client(
    info: ConnectionInfo,
    certs: Option<&Certificates>,
) -> Result<redis::Client, redis::RedisError> {
    match certs {
        #[cfg(feature = "tls-rustls")]
        Some(Certificates(certs)) => redis::Client::build_with_tls(info, certs.clone()),
        _ => redis::Client::open(info),
    }
}

/// `template` pointed at `host:port`, keeping its TLS, credentials and
/// database.
pub(super) fn at(template: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
    let mut addr = template.addr().clone();
    match &mut addr {
        ConnectionAddr::Tcp(h, p)
        | ConnectionAddr::TcpTls {
            host: h, port: p, ..
        } => {
            *h = host.to_owned();
            *p = port;
        }
        _ => {}
    }
    template.clone().set_addr(addr)
}

/// `part` percent-encoded for a URL's user information.
fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Arc<Target> {
        parse(url, None, &SentinelAuth::default()).unwrap().unwrap()
    }

    #[test]
    fn sentinel_urls_name_sentinels_master_and_db() {
        let t = target("redis-sentinel://app:pw@a:26380,b,[::1]:1/3#mymaster");
        assert_eq!(t.name(), "mymaster");
        let sentinels: Vec<String> = t
            .sentinels()
            .iter()
            .map(|c| c.get_connection_info().addr().to_string())
            .collect();
        assert_eq!(sentinels, ["a:26380", "b:26379", "::1:1"]);
        for c in t.sentinels() {
            let redis = c.get_connection_info().redis_settings();
            assert_eq!((redis.db(), redis.password()), (0, None), "no credentials");
        }
        let master = at(t.template(), "10.0.0.9", 6390);
        assert_eq!(master.addr().to_string(), "10.0.0.9:6390");
        let redis = master.redis_settings();
        assert_eq!(redis.db(), 3);
        assert_eq!(redis.username(), Some("app"));
        assert_eq!(redis.password(), Some("pw"));
        assert!(
            parse("redis://a:6379", None, &SentinelAuth::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn bad_sentinel_urls_are_invalid_and_hide_the_password() {
        for url in [
            "redis-sentinel://a:1",
            "redis-sentinel://a:1#",
            "redis-sentinel://a:1,,b:2#m",
            "redis-sentinel://a:1/x#m",
            "redis-sentinel://a:1?x=1#m",
            "redis-sentinel://u:secret@a:1/x#m",
        ] {
            let err = parse(url, None, &SentinelAuth::default()).unwrap_err();
            assert!(err.is_invalid_argument(), "{url}");
            assert!(!err.to_string().contains("secret"), "{err}");
        }
    }

    #[test]
    fn sentinel_credentials_go_to_the_sentinels_only() {
        let auth = SentinelAuth {
            username: Some("watcher".to_owned()),
            password: Some("sentinel-pw".to_owned()),
        };
        let t = parse("redis-sentinel://:data-pw@a:1,b:2/2#m", None, &auth)
            .unwrap()
            .unwrap();
        for c in t.sentinels() {
            let redis = c.get_connection_info().redis_settings();
            assert_eq!(redis.username(), Some("watcher"));
            assert_eq!(redis.password(), Some("sentinel-pw"));
            assert_eq!(redis.db(), 0);
        }
        let master = at(t.template(), "10.0.0.9", 6390).redis_settings().clone();
        assert_eq!(
            (master.username(), master.password()),
            (None, Some("data-pw"))
        );
        assert_eq!(master.db(), 2);
        // A password alone, as `requirepass` on the sentinels wants.
        let auth = SentinelAuth {
            username: None,
            password: Some("sentinel-pw".to_owned()),
        };
        let t = parse("redis-sentinel://a:1#m", None, &auth)
            .unwrap()
            .unwrap();
        let redis = t.sentinels()[0]
            .get_connection_info()
            .redis_settings()
            .clone();
        assert_eq!(
            (redis.username(), redis.password()),
            (None, Some("sentinel-pw"))
        );
        assert_eq!(t.template().redis_settings().password(), None);
        assert!(!format!("{auth:?}").contains("sentinel-pw"));
    }
}
