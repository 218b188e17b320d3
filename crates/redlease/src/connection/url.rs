//! Connection URLs: parsing, and keeping passwords out of messages (the
//! `redlease` tool uses [`redact`] and [`password`] for its own messages,
//! and [`cluster_seeds`] for its own connections to a cluster).

use redis::IntoConnectionInfo;

use super::password::userinfo;
pub use super::password::{password, redact};
use super::sentinel::SentinelAuth;
use super::tls::{Certificates, TlsOptions};
use crate::error::Error;

/// What a URL names: one node, or a cluster by its seed nodes.
pub(crate) enum Target {
    /// Boxed: a client is large beside a list of URLs, and a target is made
    /// once per client.
    Single(Box<redis::Client>),
    /// Seed node URLs (`redis[s]://[user:password@]host:port`), with the
    /// cluster URL's credentials, and the certificates for TLS.
    #[cfg(feature = "cluster")]
    Cluster(Vec<String>, Option<Certificates>),
    /// A master under Redis Sentinel.
    Sentinel(std::sync::Arc<super::sentinel::Target>),
}

/// The scheme of a cluster URL.
const CLUSTER_SCHEME: &str = "redis-cluster://";

/// The scheme of a cluster URL over TLS.
const TLS_CLUSTER_SCHEME: &str = "rediss-cluster://";

/// Parses `url`: `redis://[user:password@]host:port[/db]` (`rediss://` with
/// the `tls-rustls` feature) for one node, into a client speaking RESP3, so
/// that release notifications arrive as pushes on the command connection;
/// or `redis-cluster://[user:password@]host:port[,host:port...]` for a
/// cluster, by its seed nodes (`rediss-cluster://` over TLS); or
/// `redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
/// #master-name` for a master under Sentinel (`rediss-sentinel://` over
/// TLS, to the sentinels and the master alike). `tls` applies to TLS URLs
/// only: given with a plain URL it is an error, never a silent plaintext
/// connection; `sentinel` (the sentinels' own credentials) likewise to
/// sentinel URLs only.
pub(crate) fn parse(url: &str, tls: &TlsOptions, sentinel: &SentinelAuth) -> Result<Target, Error> {
    let invalid =
        |e: redis::RedisError| Error::invalid(format!("invalid redis url {:?}: {e}", redact(url)));
    if !tls.is_empty() && !is_tls(url) {
        return Err(Error::invalid(format!(
            "tls_ca and tls_client_cert need a rediss:// or rediss-cluster:// url, but found {:?}",
            redact(url)
        )));
    }
    if cfg!(not(feature = "tls-rustls")) && url.starts_with(TLS_CLUSTER_SCHEME) {
        return Err(Error::invalid(format!(
            "invalid redis url {:?}: rediss-cluster:// urls need redlease's `tls-rustls` feature",
            redact(url)
        )));
    }
    let certs = tls.certificates()?;
    if let Some(target) = super::sentinel::parse(url, certs.clone(), sentinel)? {
        return Ok(Target::Sentinel(target));
    }
    if !sentinel.is_empty() {
        return Err(Error::invalid(format!(
            "sentinel_password needs a redis-sentinel:// or rediss-sentinel:// url, but found {:?}",
            redact(url)
        )));
    }
    if let Some(seeds) = cluster_seeds(url)? {
        return cluster(url, seeds, certs);
    }
    let info = url
        .into_connection_info()
        .map_err(|e| unreadable(url, &e))?;
    let db = info.redis_settings().db();
    if !(0..=i64::from(i32::MAX)).contains(&db) {
        return Err(Error::invalid(format!(
            "invalid redis url {:?}: {DATABASE}, but found {db}",
            redact(url)
        )));
    }
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(redis::ProtocolVersion::RESP3);
    let info = info.set_redis_settings(settings);
    let client = match certs {
        #[cfg(feature = "tls-rustls")]
        Some(Certificates(certs)) => redis::Client::build_with_tls(info, certs),
        _ => redis::Client::open(info),
    };
    Ok(Target::Single(Box::new(client.map_err(invalid)?)))
}

/// The URL forms [`parse`] reads, for the message about a URL that is none
/// of them.
const FORMS: &str = "redis://[user:password@]host[:port][/db], rediss://... (TLS), \
    redis-cluster://host:port[,host:port...], rediss-cluster://..., \
    redis-sentinel://host[:port][,host[:port]...][/db]#master or rediss-sentinel://...";

/// What a database in a URL may be: Redis takes up to `i32::MAX`
/// databases (its `databases` setting, 16 by default).
const DATABASE: &str = "the database (after the host's `/`) is a number from 0 to 2147483647, \
    below the server's `databases` setting (16 by default: 0 to 15)";

/// The schemes redis-rs reads for one node (with `valkey`, `valkeys` and
/// the `unix` socket forms, which [`FORMS`] leaves out as rarely wanted).
const NODE_SCHEMES: [&str; 7] = [
    "redis://",
    "rediss://",
    "valkey://",
    "valkeys://",
    "unix://",
    "redis+unix://",
    "valkey+unix://",
];

/// The error for a one-node URL that redis-rs could not read, in plain
/// words where redis-rs's are terse ("Redis URL did not parse").
fn unreadable(url: &str, e: &redis::RedisError) -> Error {
    let why = if !NODE_SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
        let scheme = match url.split_once("://") {
            Some((scheme, _)) => format!("the scheme {scheme}:// is not one redlease reads"),
            None => "it has no scheme".to_owned(),
        };
        format!("{scheme}; the forms are {FORMS}")
    } else {
        // redis-rs's descriptions, which its errors print first.
        let message = e.to_string();
        if message.starts_with("Invalid database number") {
            format!("{DATABASE}, but found {:?}", database(url))
        } else if message.starts_with("Missing hostname") {
            "it has no host".to_owned()
        } else if message.starts_with("Redis URL did not parse") {
            "it is not a URL (a host, then a port from 0 to 65535)".to_owned()
        } else {
            message
        }
    };
    Error::invalid(format!("invalid redis url {:?}: {why}", redact(url)))
}

/// The path of a one-node URL, after its host's `/`, as written: its
/// database.
fn database(url: &str) -> &str {
    let start = userinfo(url).map_or_else(|| url.find("://").map_or(0, |i| i + 3), |(_, end)| end);
    let rest = &url[start..];
    let rest = rest.find('/').map_or("", |slash| &rest[slash + 1..]);
    rest.split(['?', '#']).next().unwrap_or_default()
}

/// Checks `url` as [`Client::connect`](crate::Client::connect) reads it,
/// without connecting: its scheme, host, port and database; for a cluster,
/// its seed nodes; for Sentinel, the master's name. For a tool to refuse a
/// bad URL before it starts anything (the `redlease` CLI does).
///
/// # Errors
///
/// An error for which [`is_invalid_argument`](Error::is_invalid_argument)
/// is true, saying what is wrong and, for an unknown scheme, naming the
/// forms that are read; its message hides the password.
///
/// # Examples
///
/// ```
/// use redlease::url::check;
///
/// assert!(check("redis://app:pw@127.0.0.1:6379/2").is_ok());
/// assert!(check("redis-cluster://a:7000,b:7001").is_ok());
/// let e = check("http://127.0.0.1:6379").unwrap_err();
/// assert!(e.is_invalid_argument());
/// assert!(e.to_string().contains("redis-cluster://"), "{e}");
/// let e = check("redis://127.0.0.1:6379/first").unwrap_err();
/// assert!(e.to_string().contains("a number from 0"), "{e}");
/// ```
pub fn check(url: &str) -> Result<(), Error> {
    parse(url, &TlsOptions::default(), &SentinelAuth::default()).map(|_| ())
}

/// Returns true if and only if `url` has a TLS scheme (`rediss://`,
/// redis-rs's `valkeys://`, `rediss-cluster://` or `rediss-sentinel://`).
fn is_tls(url: &str) -> bool {
    [
        "rediss://",
        "valkeys://",
        TLS_CLUSTER_SCHEME,
        "rediss-sentinel://",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
}

/// The seed nodes of a cluster URL, `redis-cluster://[user:password@]
/// host:port[,host:port...]`, as one-node URLs carrying the credentials
/// (`redis://[user:password@]host:port`); `rediss://` ones for a cluster
/// over TLS, `rediss-cluster://`; `None` when `url` is not a cluster URL.
/// For tools that open connections of their own to the same cluster
/// (`redlease demo`).
///
/// # Errors
///
/// An error for which [`is_invalid_argument`](Error::is_invalid_argument)
/// is true for a cluster URL with an empty seed, a database other than 0,
/// or options; its message hides the password.
///
/// # Examples
///
/// ```
/// use redlease::url::cluster_seeds;
///
/// let seeds = cluster_seeds("redis-cluster://app:pw@a:7000,b:7001").unwrap();
/// assert_eq!(seeds.unwrap(), ["redis://app:pw@a:7000", "redis://app:pw@b:7001"]);
/// let seeds = cluster_seeds("rediss-cluster://a:7000").unwrap();
/// assert_eq!(seeds.unwrap(), ["rediss://a:7000"]);
/// assert!(cluster_seeds("redis://a:6379").unwrap().is_none());
/// ```
pub fn cluster_seeds(url: &str) -> Result<Option<Vec<String>>, Error> {
    let (node_scheme, rest) = match (
        url.strip_prefix(CLUSTER_SCHEME),
        url.strip_prefix(TLS_CLUSTER_SCHEME),
    ) {
        (Some(rest), _) => ("redis", rest),
        (_, Some(rest)) => ("rediss", rest),
        (None, None) => return Ok(None),
    };
    let invalid = |why: &str| Error::invalid(format!("invalid redis url {:?}: {why}", redact(url)));
    // The last `@` ends the credentials, as in `redact`, so that an
    // unencoded `@` in a password is not taken for the host.
    let (userinfo, hosts) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    let (hosts, path) = match hosts.find(['/', '?', '#']) {
        Some(end) => hosts.split_at(end),
        None => (hosts, ""),
    };
    if !matches!(path, "" | "/" | "/0") {
        return Err(invalid(
            "a cluster has only database 0, and takes no options",
        ));
    }
    let mut nodes = Vec::new();
    for host in hosts.split(',') {
        if host.is_empty() {
            return Err(invalid("a seed node is empty"));
        }
        // Checked as a plain URL: host and port read the same, and whether
        // TLS is available is for the connection to say.
        format!("redis://{userinfo}{host}")
            .as_str()
            .into_connection_info()
            .map_err(|e| invalid(&e.to_string()))?;
        nodes.push(format!("{node_scheme}://{userinfo}{host}"));
    }
    Ok(Some(nodes))
}

/// The current master of a sentinel URL (`redis-sentinel://...#name`), as
/// a one-node URL carrying the URL's credentials and database
/// (`redis://[user:password@]host:port/db`, `rediss://` for
/// `rediss-sentinel://`), asked of the sentinels now; `None` when `url` is
/// not a sentinel URL. For tools that open connections of their own
/// (`redlease demo`); a [`Client`](crate::Client) follows the master by
/// itself. Asks the sentinels without credentials or TLS options of their
/// own; [`ClientBuilder::sentinel_master`](crate::ClientBuilder::sentinel_master)
/// uses a builder's
/// ([`sentinel_password`](crate::ClientBuilder::sentinel_password),
/// [`tls_ca`](crate::ClientBuilder::tls_ca)).
///
/// # Errors
///
/// As [`Client::connect`](crate::Client::connect) for a sentinel URL: an
/// invalid URL, no sentinel answering, or none knowing the master's name.
///
/// # Cancel safety
///
/// Cancel-safe: it only reads; the sentinel connections it made close.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), redlease::Error> {
/// # let sentinels = redlease_testkit::SentinelGroup::start(0, 1);
/// # let url = sentinels.url();
/// use redlease::url::sentinel_master;
///
/// // url: redis-sentinel://127.0.0.1:<port>#mymaster
/// let master = sentinel_master(&url).await?.expect("a sentinel url");
/// assert!(master.starts_with("redis://127.0.0.1:"));
/// assert_eq!(sentinel_master("redis://127.0.0.1:6379").await?, None);
/// # Ok(())
/// # }
/// ```
pub async fn sentinel_master(url: &str) -> Result<Option<String>, Error> {
    sentinel_master_with(url, &TlsOptions::default(), &SentinelAuth::default()).await
}

/// [`sentinel_master`] with TLS options and the sentinels' credentials.
pub(crate) async fn sentinel_master_with(
    url: &str,
    tls: &TlsOptions,
    sentinel: &SentinelAuth,
) -> Result<Option<String>, Error> {
    match super::sentinel::parse(url, tls.certificates()?, sentinel)? {
        Some(target) => Ok(Some(target.master_url().await?)),
        None => Ok(None),
    }
}

#[cfg(feature = "cluster")]
fn cluster(_url: &str, seeds: Vec<String>, certs: Option<Certificates>) -> Result<Target, Error> {
    Ok(Target::Cluster(seeds, certs))
}

#[cfg(not(feature = "cluster"))]
fn cluster(url: &str, _seeds: Vec<String>, _certs: Option<Certificates>) -> Result<Target, Error> {
    Err(Error::invalid(format!(
        "invalid redis url {:?}: redis-cluster:// urls need redlease's `cluster` feature",
        redact(url)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parse` without sentinel credentials.
    fn parse(url: &str, tls: &TlsOptions) -> Result<Target, Error> {
        super::parse(url, tls, &SentinelAuth::default())
    }

    #[test]
    fn a_sentinel_password_is_refused_with_other_urls() {
        let auth = SentinelAuth {
            username: None,
            password: Some("sentinel-pw".to_owned()),
        };
        let tls = TlsOptions::default();
        let e = super::parse("redis://u:secret@a:1", &tls, &auth)
            .err()
            .unwrap();
        assert!(e.is_invalid_argument(), "{e}");
        assert!(e.to_string().contains("sentinel_password needs"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(!e.to_string().contains("sentinel-pw"), "{e}");
        assert!(matches!(
            super::parse("redis-sentinel://a:1#m", &tls, &auth),
            Ok(Target::Sentinel(_))
        ));
    }

    #[cfg(feature = "cluster")]
    #[test]
    fn cluster_urls_name_their_seed_nodes() {
        let none = TlsOptions::default();
        let Ok(Target::Cluster(nodes, None)) =
            parse("redis-cluster://u:p%40w@a:7000,b:7001/", &none)
        else {
            panic!("not a cluster target");
        };
        assert_eq!(nodes, ["redis://u:p%40w@a:7000", "redis://u:p%40w@b:7001"]);
        let Ok(Target::Cluster(nodes, None)) = parse("redis-cluster://a:7000", &none) else {
            panic!("not a cluster target");
        };
        assert_eq!(nodes, ["redis://a:7000"]);
        for bad in [
            "redis-cluster://",
            "redis-cluster://a:1,,b:2",
            "redis-cluster://a:1/3",
            "redis-cluster://a:notaport",
            "rediss-cluster://a:1/#insecure",
        ] {
            let e = parse(bad, &none).err().expect(bad);
            assert!(e.is_invalid_argument(), "{bad}: {e}");
        }
        let e = parse("redis-cluster://u:secret@a:1/3", &none)
            .err()
            .unwrap();
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[cfg(all(feature = "cluster", feature = "tls-rustls"))]
    #[test]
    fn rediss_cluster_urls_keep_tls() {
        let Ok(Target::Cluster(nodes, None)) = parse(
            "rediss-cluster://u:pw@a:7000,b:7001",
            &TlsOptions::default(),
        ) else {
            panic!("not a cluster target");
        };
        assert_eq!(nodes, ["rediss://u:pw@a:7000", "rediss://u:pw@b:7001"]);
    }

    #[cfg(not(feature = "tls-rustls"))]
    #[test]
    fn tls_urls_need_the_feature() {
        for url in ["rediss://a:1", "rediss-cluster://a:1"] {
            let e = parse(url, &TlsOptions::default()).err().expect(url);
            assert!(e.is_invalid_argument(), "{url}: {e}");
        }
    }

    #[test]
    fn tls_options_are_refused_with_a_plain_url() {
        let mut tls = TlsOptions::default();
        tls.set_ca(b"not checked before the feature is".to_vec());
        for url in ["redis://u:secret@a:1", "redis-cluster://a:1"] {
            let e = parse(url, &tls).err().expect(url);
            assert!(e.is_invalid_argument(), "{url}: {e}");
            assert!(e.to_string().contains("need a rediss://"), "{e}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn an_unknown_scheme_is_named_with_the_forms_read() {
        for url in ["http://u:secret@x", "x:6379", "redis-clusters://a:1"] {
            let e = check(url).unwrap_err();
            assert!(e.is_invalid_argument(), "{url}: {e}");
            let message = e.to_string();
            for form in [
                "redis://",
                "rediss://",
                "redis-cluster://",
                "redis-sentinel://",
            ] {
                assert!(message.contains(form), "{url}: {message}");
            }
            assert!(!message.contains("secret"), "{message}");
            assert!(!message.contains("InvalidClientConfig"), "{message}");
        }
    }

    #[test]
    fn a_database_out_of_range_says_so() {
        for url in [
            "redis://h/first",
            "redis://h:1/-1",
            "redis://h:1/2147483648",
            "redis://h/1/2",
        ] {
            let e = check(url).unwrap_err();
            assert!(e.is_invalid_argument(), "{url}: {e}");
            assert!(
                e.to_string().contains("a number from 0 to 2147483647"),
                "{url}: {e}"
            );
        }
        let e = check("redis://u:pw@h:1/first?x=1").unwrap_err().to_string();
        assert!(e.ends_with("but found \"first\""), "{e}");
        assert!(check("redis://h:1/15").is_ok());
        assert!(check("redis://h:1/2147483647").is_ok());
    }

    #[test]
    fn a_port_out_of_range_is_not_a_url() {
        let e = check("redis://h:99999").unwrap_err();
        assert!(e.to_string().contains("not a URL"), "{e}");
        assert!(!e.to_string().contains("InvalidClientConfig"), "{e}");
    }

    #[test]
    fn parse_names_a_bad_url_without_its_password() {
        let e = parse("redis://u:secret@", &TlsOptions::default())
            .err()
            .unwrap();
        assert!(e.is_invalid_argument());
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
