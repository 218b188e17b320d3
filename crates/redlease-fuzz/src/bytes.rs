//! Fuzz bytes read as a stream of choices. Past the end every read answers
//! zero or nothing, so any input, even an empty one, is a complete run.

/// A cursor over the fuzz input.
#[derive(Debug, Default)]
pub(crate) struct Bytes {
    data: Vec<u8>,
    at: usize,
}

impl Bytes {
    pub(crate) fn new(data: &[u8]) -> Bytes {
        Bytes {
            data: data.to_vec(),
            at: 0,
        }
    }

    /// Returns true if and only if every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.at >= self.data.len()
    }

    /// The next byte, or 0 past the end.
    pub(crate) fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// The next byte as an index into `len` choices.
    pub(crate) fn pick(&mut self, len: usize) -> usize {
        usize::from(self.byte()) % len
    }

    /// Up to `n` next bytes (fewer at the end).
    pub(crate) fn take(&mut self, n: usize) -> &[u8] {
        let start = self.at.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.at = start + n;
        &self.data[start..end]
    }

    /// The next 8 bytes as an integer (zero-filled past the end).
    pub(crate) fn i64(&mut self) -> i64 {
        let mut raw = [0u8; 8];
        for (slot, b) in raw.iter_mut().zip(self.take(8)) {
            *slot = *b;
        }
        i64::from_le_bytes(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_as_zero_and_nothing() {
        let mut bytes = Bytes::new(&[7, 1, 2]);
        assert_eq!(bytes.byte(), 7);
        assert_eq!(bytes.take(5), [1, 2]);
        assert!(bytes.is_empty());
        assert_eq!((bytes.byte(), bytes.pick(3), bytes.i64()), (0, 0, 0));
        assert_eq!(bytes.take(2), [0u8; 0]);
    }
}
