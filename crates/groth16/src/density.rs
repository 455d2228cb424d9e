//! Bit vectors recording which variables occur in the A or B matrix.

/// One bit per variable: set when the variable occurs with a non-zero coefficient in a
/// query (A or B). The count of set bits is kept so that backends can size their bases
/// without a pass over the bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DensityBits {
    words: Vec<u64>,
    len: usize,
    count: usize,
}

impl DensityBits {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty vector with room for `n` bits.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            words: Vec::with_capacity(n.div_ceil(64)),
            len: 0,
            count: 0,
        }
    }

    /// A vector of `len` bits from its words (bits past `len` are cleared).
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Self {
        words.resize(len.div_ceil(64), 0);
        if !len.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last &= (1u64 << (len % 64)) - 1;
            }
        }
        let count = words.iter().map(|w| w.count_ones() as usize).sum();
        Self { words, len, count }
    }

    /// Bytes allocated for the bits.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
    }

    /// Empties the vector, keeping its allocation.
    pub fn clear(&mut self) {
        self.words.clear();
        self.len = 0;
        self.count = 0;
    }

    /// Appends a clear bit (a new variable, not yet seen in the query).
    #[inline]
    pub fn push_clear(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Appends a set bit.
    #[inline]
    pub fn push_set(&mut self) {
        self.push_clear();
        self.set(self.len - 1);
    }

    /// Sets bit `i` (idempotent).
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        let (w, b) = (i / 64, i % 64);
        let mask = 1u64 << b;
        if self.words[w] & mask == 0 {
            self.words[w] |= mask;
            self.count += 1;
        }
    }

    /// Whether bit `i` is set.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && (self.words[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.count
    }

    /// The bits as little-endian 64-bit words (bit i is bit i%64 of word i/64); the
    /// unused high bits of the last word are zero.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends `other`'s bits, skipping its first `skip` bits.
    pub fn extend_from(&mut self, other: &DensityBits, skip: usize) {
        for i in skip..other.len {
            if other.get(i) {
                self.push_set();
            } else {
                self.push_clear();
            }
        }
    }

    /// Appends all of `other`'s bits, a word at a time.
    pub fn append(&mut self, other: &DensityBits) {
        let shift = self.len % 64;
        let used = other.len.div_ceil(64);
        if shift == 0 {
            self.words.extend_from_slice(&other.words[..used]);
        } else {
            for &w in &other.words[..used] {
                if let Some(last) = self.words.last_mut() {
                    *last |= w << shift;
                }
                self.words.push(w >> (64 - shift));
            }
        }
        self.len += other.len;
        self.count += other.count;
        // The unused high bits of `other`'s last word are zero, so the word past the new
        // length (when the shift pushed one) holds nothing.
        self.words.truncate(self.len.div_ceil(64));
    }

    /// Sets every bit that is set among `other`'s (no longer than this vector), at the
    /// same positions.
    pub fn or_prefix(&mut self, other: &DensityBits) {
        debug_assert!(other.len <= self.len);
        for (mine, &theirs) in self.words.iter_mut().zip(&other.words) {
            let before = mine.count_ones();
            *mine |= theirs;
            self.count += (mine.count_ones() - before) as usize;
        }
    }

    /// Iterates over the indices of set bits, in increasing order.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(wi * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_count_and_iterate() {
        let mut d = DensityBits::new();
        for i in 0..200 {
            if i % 3 == 0 {
                d.push_set();
            } else {
                d.push_clear();
            }
        }
        d.set(1);
        d.set(1);
        assert_eq!(d.len(), 200);
        assert_eq!(d.count_ones(), 67 + 1);
        let ones: Vec<usize> = d.iter_ones().collect();
        assert_eq!(ones.len(), d.count_ones());
        assert!(ones.windows(2).all(|w| w[0] < w[1]));
        assert!(d.get(1) && d.get(3) && !d.get(2) && !d.get(500));
        let mut e = DensityBits::new();
        e.push_set();
        e.extend_from(&d, 1);
        assert_eq!(e.len(), 200);
        assert_eq!(e.count_ones(), 1 + d.count_ones() - 1);
    }

    /// Bits from a fixed pseudo-random pattern (a multiplicative hash of the index).
    fn pattern(len: usize, seed: u64) -> DensityBits {
        let mut d = DensityBits::new();
        for i in 0..len as u64 {
            if (i.wrapping_add(seed)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61 < 3 {
                d.push_set();
            } else {
                d.push_clear();
            }
        }
        d
    }

    #[test]
    fn append_and_or_prefix_match_bit_by_bit() {
        for a_len in [0, 1, 5, 63, 64, 65, 127, 128, 200] {
            for b_len in [0, 1, 2, 63, 64, 65, 130, 1000] {
                let (a, b) = (pattern(a_len, 1), pattern(b_len, 7));
                let mut want = a.clone();
                want.extend_from(&b, 0);
                let mut got = a.clone();
                got.append(&b);
                assert_eq!(got, want, "append {a_len} + {b_len}");
                // The prefix OR: b's bits over the first b_len of a longer vector.
                let mut long = pattern(a_len + b_len, 3);
                let mut want = long.clone();
                for i in b.iter_ones() {
                    want.set(i);
                }
                long.or_prefix(&b);
                assert_eq!(long, want, "or_prefix {b_len} into {}", a_len + b_len);
                assert_eq!(long.count_ones(), long.iter_ones().count());
            }
        }
    }
}
