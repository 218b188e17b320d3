//! The password in a connection URL: hidden for messages and logs
//! ([`redact`]), or read as written ([`password`]); both public as
//! `redlease::url::..`. Apart from `url.rs` so that whatever parses a URL
//! (`url.rs`, the sentinel URL in `sentinel/address.rs`) can hide its
//! password without importing the other.

/// `url` with the password in its user part, if any, replaced by `***`
/// (`redis://user:***@host:6379`); a URL without a password is returned as
/// it is.
///
/// # Examples
///
/// ```
/// use redlease::url::redact;
///
/// assert_eq!(redact("redis://app:s3cret@h:6379/0"), "redis://app:***@h:6379/0");
/// assert_eq!(redact("redis://:s3cret@h"), "redis://:***@h");
/// assert_eq!(redact("redis://h:6379"), "redis://h:6379");
/// ```
pub fn redact(url: &str) -> String {
    match userinfo(url) {
        Some((start, end)) => {
            let shown = match url[start..end].split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => "***".to_owned(),
            };
            format!("{}{shown}{}", &url[..start], &url[end..])
        }
        None => url.to_owned(),
    }
}

/// Where the user information (`user:password`) of a URL lies, as byte
/// offsets, when it has one: after `://`, up to the last `@`, so that an
/// unencoded `@` (or `/`) in a password stays hidden.
pub(super) fn userinfo(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = start + url[start..].rfind('@')?;
    Some((start, end))
}

/// The password of `url` as written (percent-encoded, if it was), when it
/// has one: the part of its user information after the first `:`, or all
/// of it when there is no `:` (a token).
///
/// # Examples
///
/// ```
/// use redlease::url::password;
///
/// assert_eq!(password("redis://app:s3cret@h:6379"), Some("s3cret"));
/// assert_eq!(password("redis://s3cret@h:6379"), Some("s3cret")); // a token
/// assert_eq!(password("redis://app:p%40ss@h"), Some("p%40ss")); // as written
/// assert_eq!(password("redis://h:6379"), None);
/// ```
pub fn password(url: &str) -> Option<&str> {
    let (start, end) = userinfo(url)?;
    let info = &url[start..end];
    let secret = info.split_once(':').map_or(info, |(_, password)| password);
    (!secret.is_empty()).then_some(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_the_password_only() {
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("rediss://:p@ss@h"), "rediss://:***@h");
        assert_eq!(redact("redis://token@h"), "redis://***@h");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("redis://a:p@ss/x@h:1"), "redis://a:***@h:1");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn password_is_what_redact_hides() {
        assert_eq!(password("redis://u:p%40ss@h:1"), Some("p%40ss"));
        assert_eq!(password("redis://token@h"), Some("token"));
        assert_eq!(password("redis://u:@h"), None);
        assert_eq!(password("redis://h"), None);
    }
}
