//! Which of the 16384 hash slots a key belongs to.
//!
//! Computed here rather than with `redis::cluster_routing::Slot::for_key`:
//! that needs redis-rs's `cluster` feature, which brings `crc16` and a second
//! major version of `rand` into the CLI's dependency tree for ten lines of
//! arithmetic. The tests check it against the server's `CLUSTER KEYSLOT`.

/// The number of hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The hash slot of `key`, as `CLUSTER KEYSLOT` computes it: CRC16 (XMODEM)
/// of the key modulo 16384, or of its hash tag, the text between the first
/// `{` and the first `}` after it, when that text is not empty.
pub fn key_slot(key: impl AsRef<[u8]>) -> u16 {
    let key = key.as_ref();
    crc16(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// The part of `key` that is hashed instead of the whole key, if any.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    // `{}` is no tag: the whole key is hashed.
    (close > 0).then(|| &rest[..close])
}

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0), bit by bit: a few
/// keys per test do not need the table.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM, also quoted in the cluster spec.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn a_hash_tag_decides_the_slot() {
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(key_slot("foo{bar}{zap}"), key_slot("bar"));
        assert_eq!(key_slot("foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(key_slot("foo{{bar}}zap"), key_slot("{bar"));
        assert_eq!(key_slot("foo{bar"), crc16(b"foo{bar") % SLOTS);
    }
}
