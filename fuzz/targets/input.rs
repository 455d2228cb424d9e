//! A fixed split of a fuzz input into fields, for the targets whose seeds are written by
//! hand (docs/fuzzing.md lists each layout). Integers are little-endian; bytes missing at
//! the end read as zero, so every input is some well-formed message.

/// Reads fields from the front of a fuzz input.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads from the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes (fewer when the input ends first).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    /// `N` bytes, zero-padded.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let src = self.bytes(N);
        out[..src.len()].copy_from_slice(src);
        out
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        self.bytes(self.data.len())
    }

    /// Length-prefixed entries until the input ends: a u32 length, then that many bytes
    /// (the last entry takes what is left when its length runs past the end).
    pub fn entries(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while !self.is_empty() {
            let len = self.u32() as usize;
            out.push(self.bytes(len).to_vec());
        }
        out
    }
}
