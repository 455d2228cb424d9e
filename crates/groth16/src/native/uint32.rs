//! Twin of bellperson 0.27's `gadgets::uint32::UInt32`.

use super::boolean::{alloc_code, ch_lit, maj_lit, xor_lit};
use super::multieq::MultiEq;
use super::{Bit, Consts, Lit};
use crate::sink::WitnessSink;

/// 32 booleans read as an unsigned integer, least significant bit first, with its value
/// (`UInt32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UInt32 {
    /// The bits, least significant first.
    pub(crate) bits: [Lit; 32],
    /// The value (of the bits, not of their variables).
    pub(crate) value: u32,
}

impl UInt32 {
    /// `UInt32::constant`.
    pub fn constant(value: u32) -> Self {
        let mut bits = [Lit::FALSE; 32];
        for (j, b) in bits.iter_mut().enumerate() {
            *b = Lit::constant((value >> j) & 1 == 1);
        }
        UInt32 { bits, value }
    }

    /// `UInt32::alloc`: 32 new boolean variables, least significant first.
    pub fn alloc<S: WitnessSink>(s: &mut S, value: u32) -> Self {
        let k = Consts::get();
        let mut bits = [Lit::FALSE; 32];
        for (j, b) in bits.iter_mut().enumerate() {
            *b = Lit::is(alloc_code(s, k, (value >> j) & 1 == 1));
        }
        UInt32 { bits, value }
    }

    /// The value.
    pub fn value(&self) -> u32 {
        self.value
    }

    /// The bit `j` (least significant first).
    #[inline]
    pub fn bit(&self, j: usize) -> Bit {
        Bit::of_lit(self.bits[j], (self.value >> j) & 1 == 1)
    }

    /// `UInt32::into_bits_be`.
    pub fn into_bits_be(self) -> Vec<Bit> {
        (0..32).rev().map(|j| self.bit(j)).collect()
    }

    /// `UInt32::into_bits` (little-endian).
    pub fn into_bits(self) -> Vec<Bit> {
        (0..32).map(|j| self.bit(j)).collect()
    }

    /// `UInt32::from_bits_be`.
    pub fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32);
        let mut out = [Lit::FALSE; 32];
        let mut value = 0u32;
        for (t, b) in bits.iter().enumerate() {
            let (l, v) = b.lit();
            out[31 - t] = l;
            value |= (v as u32) << (31 - t);
        }
        UInt32 { bits: out, value }
    }

    /// `UInt32::from_bits` (little-endian).
    pub fn from_bits(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32);
        let mut out = [Lit::FALSE; 32];
        let mut value = 0u32;
        for (j, b) in bits.iter().enumerate() {
            let (l, v) = b.lit();
            out[j] = l;
            value |= (v as u32) << j;
        }
        UInt32 { bits: out, value }
    }

    /// Whether every bit is a constant.
    #[inline]
    pub fn is_constant(&self) -> bool {
        self.bits.iter().all(|b| b.is_const())
    }

    /// `UInt32::rotr`.
    #[inline]
    pub fn rotr(&self, by: usize) -> Self {
        let by = by % 32;
        let mut bits = [Lit::FALSE; 32];
        for (j, b) in bits.iter_mut().enumerate() {
            *b = self.bits[(j + by) % 32];
        }
        UInt32 {
            bits,
            value: self.value.rotate_right(by as u32),
        }
    }

    /// `UInt32::shr`.
    #[inline]
    pub fn shr(&self, by: usize) -> Self {
        let by = by % 32;
        let mut bits = [Lit::FALSE; 32];
        bits[..32 - by].copy_from_slice(&self.bits[by..]);
        UInt32 {
            bits,
            value: self.value >> by,
        }
    }

    /// `UInt32::xor` (`self` is the first operand of each bit's xor).
    #[inline]
    pub fn xor<S: WitnessSink>(&self, s: &mut S, other: &Self) -> Self {
        let k = Consts::get();
        let mut bits = [Lit::FALSE; 32];
        for (j, out) in bits.iter_mut().enumerate() {
            *out = xor_lit(
                s,
                k,
                self.bits[j],
                (self.value >> j) & 1 == 1,
                other.bits[j],
                (other.value >> j) & 1 == 1,
            );
        }
        UInt32 {
            bits,
            value: self.value ^ other.value,
        }
    }

    /// `UInt32::sha256_ch`.
    #[inline]
    pub fn sha256_ch<S: WitnessSink>(s: &mut S, a: &Self, b: &Self, c: &Self) -> Self {
        let value = (a.value & b.value) ^ (!a.value & c.value);
        Self::bitwise3(s, a, b, c, value, ch_lit)
    }

    /// `UInt32::sha256_maj`.
    #[inline]
    pub fn sha256_maj<S: WitnessSink>(s: &mut S, a: &Self, b: &Self, c: &Self) -> Self {
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        Self::bitwise3(s, a, b, c, value, maj_lit)
    }

    /// `op` on the bits of `a`, `b`, `c`, low bit first (as bellperson's loop), giving
    /// `value`.
    #[inline]
    fn bitwise3<S: WitnessSink>(
        s: &mut S,
        a: &Self,
        b: &Self,
        c: &Self,
        value: u32,
        op: impl Fn(&mut S, &Consts, Lit, bool, Lit, bool, Lit, bool) -> Lit,
    ) -> Self {
        let k = Consts::get();
        let bit = |w: &Self, j: usize| (w.value >> j) & 1 == 1;
        let mut bits = [Lit::FALSE; 32];
        for (j, out) in bits.iter_mut().enumerate() {
            *out = op(
                s,
                k,
                a.bits[j],
                bit(a, j),
                b.bits[j],
                bit(b, j),
                c.bits[j],
                bit(c, j),
            );
        }
        UInt32 { bits, value }
    }

    /// `UInt32::addmany`: the sum modulo 2^32 of 2 to 10 operands. Unless every bit of
    /// every operand is a constant, allocates the bits of the whole sum (carries
    /// included) and has `multieq` enforce it.
    pub fn addmany<S: WitnessSink>(multieq: &mut MultiEq<'_, S>, operands: &[Self]) -> Self {
        assert!(operands.len() >= 2);
        assert!(operands.len() <= 10);
        let mut refs = [&operands[0]; 10];
        for (r, o) in refs.iter_mut().zip(operands) {
            *r = o;
        }
        Self::addmany_refs(multieq, &refs[..operands.len()])
    }

    /// [`UInt32::addmany`] of operands held anywhere.
    pub fn addmany_refs<S: WitnessSink>(multieq: &mut MultiEq<'_, S>, operands: &[&Self]) -> Self {
        assert!(operands.len() >= 2);
        assert!(operands.len() <= 10);
        let max_value = operands.len() as u64 * u64::from(u32::MAX);
        let sum: u64 = operands.iter().map(|o| u64::from(o.value)).sum();
        if operands.iter().all(|o| o.is_constant()) {
            return UInt32::constant(sum as u32);
        }
        let k = Consts::get();
        let num_bits = 64 - max_value.leading_zeros() as usize;
        let mut bits = [Lit::FALSE; 32];
        {
            let s = multieq.sink();
            for (i, bit) in bits.iter_mut().enumerate() {
                *bit = Lit::is(alloc_code(s, k, (sum >> i) & 1 == 1));
            }
            // The carries.
            for i in 32..num_bits {
                alloc_code(s, k, (sum >> i) & 1 == 1);
            }
        }
        multieq.enforce_equal_sum(num_bits, operands, sum);
        UInt32 {
            bits,
            value: sum as u32,
        }
    }
}
