//! The URL forms: what `Client::connect` reads (`redlease::url::check`
//! reads a URL the same way, without connecting), a cluster URL's seed
//! nodes, and the password kept out of both's messages.

use redlease::url::{check, cluster_seeds, password, redact};

/// Reads `data` as a URL. Every outcome is a value or an invalid-argument
/// error; a redacted URL shows no password; and a password that the
/// redacted URL does not show anyway (as its host, say) appears in no
/// error message. A cluster's seeds are one-node URLs that read as one.
pub fn url(data: &[u8]) {
    let url = String::from_utf8_lossy(data);
    let redacted = redact(&url);
    assert!(
        matches!(password(&redacted), None | Some("***")),
        "{url:?} -> {redacted:?}"
    );
    // A secret long enough not to be found by chance in a message, and
    // not found in the message about the redacted URL (where it is part of
    // the fixed text: "is-clus" of "redis-cluster://").
    let elsewhere = |p: &str| {
        redacted.contains(p) || check(&redacted).is_err_and(|e| e.to_string().contains(p))
    };
    let secret = password(&url).filter(|p| p.len() >= 6 && !elsewhere(p));
    let shown = |e: &redlease::Error| {
        let message = e.to_string();
        assert!(e.is_invalid_argument(), "{url:?}: {message}");
        if let Some(secret) = secret {
            assert!(!message.contains(secret), "{url:?}: {message}");
        }
    };
    if let Err(e) = check(&url) {
        shown(&e);
    }
    match cluster_seeds(&url) {
        Ok(Some(seeds)) => {
            assert!(!seeds.is_empty(), "{url:?}");
            for seed in seeds {
                assert!(cluster_seeds(&seed).is_ok_and(|s| s.is_none()), "{seed:?}");
                assert!(seed.starts_with("redis://") || seed.starts_with("rediss://"));
            }
        }
        Ok(None) => {}
        Err(e) => shown(&e),
    }
}
