//! Twin of bellperson 0.27's `gadgets::multieq::MultiEq`.
//!
//! `UInt32::addmany` does not write its equality `sum of operands = sum of result bits`
//! at once: `MultiEq` packs successive equalities side by side, each shifted past the
//! bits of the previous ones, into one constraint `lhs * ONE = rhs`, written when the
//! next equality would not fit below `Fr::CAPACITY` bits (before that equality is added),
//! and when the `MultiEq` is dropped. Both sides evaluate to the same integer below
//! 2^253: the concatenation of the sums. Only aux variables of the operands' bits occur
//! in A (the result bits are on the C side, ONE in B).

use bellperson::Index;
use ff::PrimeField;

use super::{fr_of_limbs, AuxTerms, Consts};
use crate::sink::WitnessSink;
use crate::Fr;

use super::uint32::UInt32;

/// Accumulates `addmany` equalities into few constraints; forwards everything else to
/// the sink it wraps (as bellperson's `MultiEq` is a constraint system over its own).
pub struct MultiEq<'a, S: WitnessSink> {
    sink: &'a mut S,
    ops: usize,
    bits_used: usize,
    /// The value of both sides, 256 bits little-endian.
    value: [u64; 4],
    /// The aux terms of the left side.
    terms: AuxTerms,
}

impl<'a, S: WitnessSink> MultiEq<'a, S> {
    /// `MultiEq::new`.
    pub fn new(sink: &'a mut S) -> Self {
        Self::with_terms(sink, AuxTerms::default())
    }

    pub(crate) fn with_terms(sink: &'a mut S, mut terms: AuxTerms) -> Self {
        terms.clear();
        MultiEq {
            sink,
            ops: 0,
            bits_used: 0,
            value: [0; 4],
            terms,
        }
    }

    /// The wrapped sink.
    #[inline]
    pub fn sink(&mut self) -> &mut S {
        self.sink
    }

    /// How many constraints were written so far.
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// Writes the pending constraint (`MultiEq::accumulate`).
    fn accumulate(&mut self) {
        let k = Consts::get();
        let v = fr_of_limbs(self.value);
        self.sink.push_constraint(v, k.one);
        self.sink.mark_b(Index::Input(0));
        self.terms.mark_a(self.sink);
        self.terms.clear();
        self.value = [0; 4];
        self.bits_used = 0;
        self.ops += 1;
    }

    /// `MultiEq::enforce_equal(num_bits, lhs, rhs)` for `addmany`: `lhs` is the sum of
    /// `operands`' bits (each with its power of two), `rhs` the `num_bits` result bits of
    /// value `sum`.
    pub fn enforce_equal_sum(&mut self, num_bits: usize, operands: &[&UInt32], sum: u64) {
        let cap = Fr::CAPACITY as usize;
        if cap <= self.bits_used + num_bits {
            self.accumulate();
        }
        assert!(cap > self.bits_used + num_bits);
        debug_assert!(num_bits == 64 || sum >> num_bits == 0);
        let shift = self.bits_used;
        for op in operands {
            for (j, &l) in op.bits.iter().enumerate() {
                self.terms.push(l, shift + j);
            }
        }
        let (limb, off) = (shift / 64, shift % 64);
        self.value[limb] |= sum << off;
        if off > 0 && limb + 1 < 4 {
            self.value[limb + 1] |= sum >> (64 - off);
        }
        self.bits_used += num_bits;
    }

    /// Writes the pending constraint now and returns the scratch space.
    pub(crate) fn finish(mut self) -> AuxTerms {
        if self.bits_used > 0 {
            self.accumulate();
        }
        std::mem::take(&mut self.terms)
    }
}

impl<S: WitnessSink> Drop for MultiEq<'_, S> {
    fn drop(&mut self) {
        if self.bits_used > 0 {
            self.accumulate();
        }
    }
}

impl<S: WitnessSink> WitnessSink for MultiEq<'_, S> {
    #[inline]
    fn next_aux(&self) -> usize {
        self.sink.next_aux()
    }

    #[inline]
    fn push_aux(&mut self, value: Fr) -> usize {
        self.sink.push_aux(value)
    }

    #[inline]
    fn push_constraint(&mut self, a: Fr, b: Fr) {
        self.sink.push_constraint(a, b)
    }

    #[inline]
    fn mark_a(&mut self, var: Index) {
        self.sink.mark_a(var)
    }

    #[inline]
    fn mark_b(&mut self, var: Index) {
        self.sink.mark_b(var)
    }
}
