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
}
