//! Twin of bellperson 0.27's `gadgets::sha256`.

use bellperson::SynthesisError;

use super::multieq::MultiEq;
use super::uint32::UInt32;
use super::{AuxTerms, Bit, Lit};
use crate::sink::WitnessSink;

#[allow(clippy::unreadable_literal)]
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The initial hash value.
#[allow(clippy::unreadable_literal)]
pub const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The initial hash value as constant words (`get_sha256_iv`).
pub fn iv() -> [UInt32; 8] {
    IV.map(UInt32::constant)
}

/// `sha256(cs, input)`: the SHA-256 digest of `input` (a whole number of bytes), as 256
/// bits, big-endian in each word as bellperson returns them.
pub fn sha256<S: WitnessSink>(sink: &mut S, input: &[Bit]) -> Result<Vec<Bit>, SynthesisError> {
    assert!(input.len().is_multiple_of(8));
    let len = input.len();
    let plen = len as u64;
    // One '1' bit, zeros, the 64-bit big-endian length: a multiple of 512 bits in all.
    let total = (len + 1 + 64).div_ceil(512) * 512;
    let bit_at = |p: usize| -> (Lit, bool) {
        if p < len {
            input[p].lit()
        } else if p == len {
            (Lit::TRUE, true)
        } else if p < total - 64 {
            (Lit::FALSE, false)
        } else {
            let v = (plen >> (63 - (p - (total - 64)))) & 1 == 1;
            (Lit::constant(v), v)
        }
    };
    let mut cur = iv();
    let mut scratch = Scratch::default();
    for block in 0..total / 512 {
        let mut w = [UInt32::constant(0); 16];
        for (t, word) in w.iter_mut().enumerate() {
            let base = block * 512 + t * 32;
            for q in 0..32 {
                let (l, v) = bit_at(base + q);
                word.bits[31 - q] = l;
                word.value |= (v as u32) << (31 - q);
            }
        }
        cur = compress(sink, &mut scratch, &w, &cur)?;
    }
    Ok(cur.iter().flat_map(|w| w.into_bits_be()).collect())
}

/// `sha256_block_no_padding(cs, input)`: the compression of one 512-bit block from the
/// initial hash value.
pub fn sha256_block_no_padding<S: WitnessSink>(
    sink: &mut S,
    input: &[Bit],
) -> Result<Vec<Bit>, SynthesisError> {
    assert_eq!(input.len(), 512);
    Ok(sha256_compression_function(sink, input, &iv())?
        .into_iter()
        .flat_map(|w| w.into_bits_be())
        .collect())
}

/// `sha256_compression_function(cs, input, current_hash_value)`.
pub fn sha256_compression_function<S: WitnessSink>(
    sink: &mut S,
    input: &[Bit],
    current_hash_value: &[UInt32],
) -> Result<Vec<UInt32>, SynthesisError> {
    assert_eq!(input.len(), 512);
    assert_eq!(current_hash_value.len(), 8);
    let mut w = [UInt32::constant(0); 16];
    for (word, chunk) in w.iter_mut().zip(input.chunks(32)) {
        *word = UInt32::from_bits_be(chunk);
    }
    let cur: [UInt32; 8] = current_hash_value.try_into().expect("8 words");
    Ok(compress(sink, &mut Scratch::default(), &w, &cur)?.to_vec())
}

/// Space reused by the compressions of one hash.
#[derive(Default)]
struct Scratch {
    terms: AuxTerms,
    words: Vec<UInt32>,
}

/// The words of one compression, written once and then referred to by index (the
/// message schedule, the state's words, every intermediate operand).
struct Arena<'a> {
    words: &'a mut Vec<UInt32>,
}

impl Arena<'_> {
    #[inline]
    fn push(&mut self, w: UInt32) -> u16 {
        self.words.push(w);
        (self.words.len() - 1) as u16
    }

    #[inline]
    fn get(&self, i: u16) -> &UInt32 {
        &self.words[i as usize]
    }

    /// `addmany` of the words at `ops`.
    #[inline]
    fn addmany<S: WitnessSink>(&mut self, meq: &mut MultiEq<'_, S>, ops: &[u16]) -> u16 {
        let mut refs = [&self.words[0]; 10];
        for (r, &i) in refs.iter_mut().zip(ops) {
            *r = &self.words[i as usize];
        }
        let w = UInt32::addmany_refs(meq, &refs[..ops.len()]);
        self.push(w)
    }
}

/// A word of the state: computed, or the operands of its sum, summed when first used
/// (with the final addition's operand when that comes first).
#[derive(Clone, Copy)]
enum Maybe {
    Deferred([u16; 8], usize),
    Concrete(u16),
}

impl Maybe {
    #[inline]
    fn compute<S: WitnessSink>(
        self,
        arena: &mut Arena<'_>,
        meq: &mut MultiEq<'_, S>,
        others: &[u16],
    ) -> u16 {
        match self {
            Maybe::Concrete(v) => v,
            Maybe::Deferred(mut ops, n) => {
                ops[n..n + others.len()].copy_from_slice(others);
                arena.addmany(meq, &ops[..n + others.len()])
            }
        }
    }
}

/// `xor(xor(x >>> r1, x >>> r2), x >>> r3)` (or `x >> r3` when `shift`).
#[inline]
fn sigma<S: WitnessSink>(
    s: &mut S,
    x: &UInt32,
    r1: usize,
    r2: usize,
    r3: usize,
    shift: bool,
) -> UInt32 {
    let t = x.rotr(r1).xor(s, &x.rotr(r2));
    let third = if shift { x.shr(r3) } else { x.rotr(r3) };
    t.xor(s, &third)
}

/// The compression function, with its own `MultiEq` (flushed at the end).
fn compress<S: WitnessSink>(
    sink: &mut S,
    scratch: &mut Scratch,
    input: &[UInt32; 16],
    cur: &[UInt32; 8],
) -> Result<[UInt32; 8], SynthesisError> {
    if crate::cancel::requested() {
        return Err(crate::cancel::error());
    }
    scratch.words.clear();
    scratch.words.reserve(16 + 8 + 48 * 3 + 64 * 7 + 8);
    let mut arena = Arena {
        words: &mut scratch.words,
    };
    let mut w = [0u16; 64];
    for (i, word) in input.iter().enumerate() {
        w[i] = arena.push(*word);
    }
    let mut hv = [0u16; 8];
    for (i, word) in cur.iter().enumerate() {
        hv[i] = arena.push(*word);
    }

    let mut meq = MultiEq::with_terms(sink, std::mem::take(&mut scratch.terms));

    for i in 16..64 {
        let s0 = sigma(meq.sink(), arena.get(w[i - 15]), 7, 18, 3, true);
        let s0 = arena.push(s0);
        let s1 = sigma(meq.sink(), arena.get(w[i - 2]), 17, 19, 10, true);
        let s1 = arena.push(s1);
        w[i] = arena.addmany(&mut meq, &[w[i - 16], s0, w[i - 7], s1]);
    }

    let mut a = Maybe::Concrete(hv[0]);
    let mut b = hv[1];
    let mut c = hv[2];
    let mut d = hv[3];
    let mut e = Maybe::Concrete(hv[4]);
    let mut f = hv[5];
    let mut g = hv[6];
    let mut h = hv[7];

    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(&mut arena, &mut meq, &[]);
        let s1 = sigma(meq.sink(), arena.get(new_e), 6, 11, 25, false);
        let s1 = arena.push(s1);
        let ch = UInt32::sha256_ch(meq.sink(), arena.get(new_e), arena.get(f), arena.get(g));
        let ch = arena.push(ch);
        let k = arena.push(UInt32::constant(k));
        let temp1 = [h, s1, ch, k, w[i]];

        let new_a = a.compute(&mut arena, &mut meq, &[]);
        let s0 = sigma(meq.sink(), arena.get(new_a), 2, 13, 22, false);
        let s0 = arena.push(s0);
        let maj = UInt32::sha256_maj(meq.sink(), arena.get(new_a), arena.get(b), arena.get(c));
        let maj = arena.push(maj);

        h = g;
        g = f;
        f = new_e;
        let mut ops = [0u16; 8];
        ops[..5].copy_from_slice(&temp1);
        ops[5] = d;
        e = Maybe::Deferred(ops, 6);
        d = c;
        c = b;
        b = new_a;
        ops[5] = s0;
        ops[6] = maj;
        a = Maybe::Deferred(ops, 7);
    }

    let h0 = a.compute(&mut arena, &mut meq, &[hv[0]]);
    let h1 = arena.addmany(&mut meq, &[hv[1], b]);
    let h2 = arena.addmany(&mut meq, &[hv[2], c]);
    let h3 = arena.addmany(&mut meq, &[hv[3], d]);
    let h4 = e.compute(&mut arena, &mut meq, &[hv[4]]);
    let h5 = arena.addmany(&mut meq, &[hv[5], f]);
    let h6 = arena.addmany(&mut meq, &[hv[6], g]);
    let h7 = arena.addmany(&mut meq, &[hv[7], h]);

    scratch.terms = meq.finish();
    Ok([h0, h1, h2, h3, h4, h5, h6, h7].map(|i| *arena.get(i)))
}
