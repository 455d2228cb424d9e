//! Native (gadget-free) twins of bellperson 0.27's SHA-256 gadgets.
//!
//! Every function here writes, through a [`WitnessSink`], exactly what its bellperson
//! gadget writes into a constraint system: the same aux variables in the same order, the
//! same constraints in the same order with the same a and b evaluations (C's is not
//! recorded, [`crate::assignment`]), and the same density bits (an aux variable is marked in A or B when it occurs there with a non-zero
//! coefficient *after* the linear combination merged its terms; inputs are marked in B
//! only). The values are computed with word arithmetic: bits, small integers and packed
//! integers, never by evaluating linear combinations.
//!
//! - [`Bit`]: a `Boolean` (constant, a variable, or its negation) with its value;
//! - [`boolean`]: `Boolean::{xor, and, sha256_ch, sha256_maj}` and `AllocatedBit`'s
//!   `alloc, xor, and, and_not, nor`, constant folding included;
//! - [`uint32`]: [`UInt32`] (`xor`, `rotr`, `shr`, `addmany`, `sha256_ch`, `sha256_maj`);
//! - [`multieq`]: [`MultiEq`], accumulating `addmany`'s equalities into few constraints,
//!   flushed when full and on drop, as bellperson does;
//! - [`sha256`](mod@sha256): [`sha256()`], [`sha256_block_no_padding`],
//!   [`sha256_compression_function`];
//! - [`num`]: `AllocatedNum::to_bits_le` and `multipack::pack_bits` for values written
//!   natively.
//!
//! Bellperson's own constant cases are kept (an operation on constants allocates
//! nothing), and so are its linear-combination merges: a variable that occurs twice in
//! one linear combination with cancelling coefficients is not marked, exactly as
//! `LinearCombination` would drop it to a zero coefficient.

pub mod boolean;
pub mod multieq;
pub mod num;
pub mod sha256;
pub mod uint32;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;

use crate::sink::WitnessSink;
use crate::Fr;

pub use multieq::MultiEq;
pub use num::{pack_bits, to_bits_le};
pub use sha256::{sha256, sha256_block_no_padding, sha256_compression_function};
pub use uint32::UInt32;

/// A boolean of a constraint system: bellperson's `Boolean`, as a `Copy` value.
///
/// As in bellperson, `value` is the value of the *variable* (`AllocatedBit::get_value`);
/// the value of a [`Bit::Not`] is its negation ([`Bit::value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    /// A constant.
    Constant(bool),
    /// A variable (`Boolean::Is`).
    Is {
        /// The variable.
        var: Index,
        /// Its value.
        value: bool,
    },
    /// The negation of a variable (`Boolean::Not`).
    Not {
        /// The variable.
        var: Index,
        /// The value of the variable (the bit's value is its negation).
        value: bool,
    },
}

impl Bit {
    /// The bit of a bellperson `Boolean`; `AssignmentMissing` when its variable has no
    /// value.
    pub fn from_boolean(b: &Boolean) -> Result<Bit, SynthesisError> {
        Ok(match b {
            Boolean::Constant(c) => Bit::Constant(*c),
            Boolean::Is(v) => Bit::Is {
                var: v.get_variable().get_unchecked(),
                value: v.get_value().ok_or(SynthesisError::AssignmentMissing)?,
            },
            Boolean::Not(v) => Bit::Not {
                var: v.get_variable().get_unchecked(),
                value: v.get_value().ok_or(SynthesisError::AssignmentMissing)?,
            },
        })
    }

    /// The bits of bellperson `Boolean`s.
    pub fn from_booleans(bs: &[Boolean]) -> Result<Vec<Bit>, SynthesisError> {
        bs.iter().map(Bit::from_boolean).collect()
    }

    /// The bellperson `Boolean` of this bit (no variable is allocated: the
    /// `AllocatedBit` refers to this bit's variable).
    pub fn to_boolean(&self) -> Boolean {
        match *self {
            Bit::Constant(c) => Boolean::Constant(c),
            Bit::Is { var, value } => Boolean::Is(adopt_bit(var, value)),
            Bit::Not { var, value } => Boolean::Not(adopt_bit(var, value)),
        }
    }

    /// The bellperson `Boolean`s of bits.
    pub fn to_booleans(bits: &[Bit]) -> Vec<Boolean> {
        bits.iter().map(Bit::to_boolean).collect()
    }

    /// A constant bit.
    pub fn constant(b: bool) -> Bit {
        Bit::Constant(b)
    }

    /// The bit's value (negated for [`Bit::Not`]).
    #[inline]
    pub fn value(&self) -> bool {
        match *self {
            Bit::Constant(c) => c,
            Bit::Is { value, .. } => value,
            Bit::Not { value, .. } => !value,
        }
    }

    /// Whether the bit is a constant.
    pub fn is_constant(&self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    /// The negated bit (`Boolean::not`).
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn not(&self) -> Bit {
        match *self {
            Bit::Constant(c) => Bit::Constant(!c),
            Bit::Is { var, value } => Bit::Not { var, value },
            Bit::Not { var, value } => Bit::Is { var, value },
        }
    }

    /// `Boolean::lc(one, coeff)`: the bit's linear combination (for gadget code that
    /// needs it).
    pub fn lc(&self, coeff: Fr) -> LinearCombination<Fr> {
        let one = Variable::new_unchecked(Index::Input(0));
        match *self {
            Bit::Constant(true) => LinearCombination::zero() + (coeff, one),
            Bit::Constant(false) => LinearCombination::zero(),
            Bit::Is { var, .. } => {
                LinearCombination::zero() + (coeff, Variable::new_unchecked(var))
            }
            Bit::Not { var, .. } => {
                LinearCombination::zero() + (coeff, one) - (coeff, Variable::new_unchecked(var))
            }
        }
    }

    /// The compact literal of this bit and its (logical) value.
    #[inline]
    pub(crate) fn lit(&self) -> (Lit, bool) {
        match *self {
            Bit::Constant(c) => (Lit::constant(c), c),
            Bit::Is { var, value } => (Lit::is(code_of(var)), value),
            Bit::Not { var, value } => (Lit::not_of(code_of(var)), !value),
        }
    }

    /// The bit of a literal whose (logical) value is `v`.
    #[inline]
    pub(crate) fn of_lit(l: Lit, v: bool) -> Bit {
        match l.tag() {
            Lit::TAG_CONST => Bit::Constant(v),
            Lit::TAG_IS => Bit::Is {
                var: index_of(l.code()),
                value: v,
            },
            _ => Bit::Not {
                var: index_of(l.code()),
                value: !v,
            },
        }
    }
}

/// An `AllocatedBit` for an existing variable: `AllocatedBit::alloc` on a system whose
/// `alloc` returns that variable and whose `enforce` records nothing.
fn adopt_bit(var: Index, value: bool) -> AllocatedBit {
    AllocatedBit::alloc(
        Adopt {
            var: Variable::new_unchecked(var),
        },
        Some(value),
    )
    .expect("adopting a bit with a value cannot fail")
}

struct Adopt {
    var: Variable,
}

impl ConstraintSystem<Fr> for Adopt {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(self.var)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(self.var)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A variable as one integer: aux `i` is `2i`, input `i` is `2i + 1`.
#[inline]
pub(crate) fn code_of(var: Index) -> u64 {
    match var {
        Index::Aux(i) => (i as u64) << 1,
        Index::Input(i) => ((i as u64) << 1) | 1,
    }
}

/// The variable of a code.
#[inline]
pub(crate) fn index_of(code: u64) -> Index {
    if code & 1 == 0 {
        Index::Aux((code >> 1) as usize)
    } else {
        Index::Input((code >> 1) as usize)
    }
}

/// The code of the ONE input.
pub(crate) const ONE_CODE: u64 = 1;

/// A `Boolean` without its value, in one word: the low two bits are the kind (constant,
/// variable, negated variable), the rest the constant's value or the variable's code.
/// Values travel beside literals (a [`UInt32`]'s value holds its bits').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lit(pub(crate) u64);

impl Lit {
    pub(crate) const TAG_CONST: u64 = 0;
    pub(crate) const TAG_IS: u64 = 1;
    pub(crate) const TAG_NOT: u64 = 2;
    pub(crate) const FALSE: Lit = Lit(0);
    pub(crate) const TRUE: Lit = Lit(4);

    #[inline]
    pub(crate) fn constant(b: bool) -> Lit {
        Lit((b as u64) << 2)
    }

    #[inline]
    pub(crate) fn is(code: u64) -> Lit {
        Lit((code << 2) | Self::TAG_IS)
    }

    #[inline]
    pub(crate) fn not_of(code: u64) -> Lit {
        Lit((code << 2) | Self::TAG_NOT)
    }

    #[inline]
    pub(crate) fn tag(self) -> u64 {
        self.0 & 3
    }

    #[inline]
    pub(crate) fn is_const(self) -> bool {
        self.0 & 3 == 0
    }

    /// The variable's code (for a constant: its value).
    #[inline]
    pub(crate) fn code(self) -> u64 {
        self.0 >> 2
    }

    /// `Boolean::not`.
    #[inline]
    pub(crate) fn negate(self) -> Lit {
        if self.is_const() {
            Lit(self.0 ^ 4)
        } else {
            Lit(self.0 ^ 3)
        }
    }
}

/// The field elements native code writes most.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Consts {
    pub(crate) zero: Fr,
    pub(crate) one: Fr,
    pub(crate) two: Fr,
    pub(crate) neg_one: Fr,
    pub(crate) neg_two: Fr,
}

impl Consts {
    pub(crate) fn get() -> &'static Consts {
        static C: std::sync::OnceLock<Consts> = std::sync::OnceLock::new();
        C.get_or_init(|| Consts {
            zero: Fr::ZERO,
            one: Fr::ONE,
            two: Fr::ONE.double(),
            neg_one: -Fr::ONE,
            neg_two: -Fr::ONE.double(),
        })
    }

    /// 0 or 1.
    #[inline]
    pub(crate) fn bit(&self, b: bool) -> Fr {
        if b {
            self.one
        } else {
            self.zero
        }
    }

    /// A small integer in -2..=2.
    #[inline]
    pub(crate) fn small(&self, v: i32) -> Fr {
        match v {
            0 => self.zero,
            1 => self.one,
            2 => self.two,
            -1 => self.neg_one,
            -2 => self.neg_two,
            _ => unreachable!("small constant {v}"),
        }
    }
}

/// Marks `code` in A when it is an aux variable (inputs are dense in A).
#[inline]
pub(crate) fn mark_a_code<S: WitnessSink>(s: &mut S, code: u64) {
    if code & 1 == 0 {
        s.mark_a(Index::Aux((code >> 1) as usize));
    }
}

/// Marks `code` in B.
#[inline]
pub(crate) fn mark_b_code<S: WitnessSink>(s: &mut S, code: u64) {
    s.mark_b(index_of(code));
}

/// Marks the variables of `l.lc(one, 1)` in B.
#[inline]
pub(crate) fn mark_b_lit<S: WitnessSink>(s: &mut S, l: Lit) {
    match l.tag() {
        Lit::TAG_CONST => {
            if l == Lit::TRUE {
                s.mark_b(Index::Input(0));
            }
        }
        Lit::TAG_IS => mark_b_code(s, l.code()),
        _ => {
            // one - x: nothing left when x is ONE itself.
            if l.code() != ONE_CODE {
                s.mark_b(Index::Input(0));
                mark_b_code(s, l.code());
            }
        }
    }
}

/// Marks the aux variable of `l.lc(one, 1)` in A.
#[inline]
pub(crate) fn mark_a_lit<S: WitnessSink>(s: &mut S, l: Lit) {
    if !l.is_const() {
        mark_a_code(s, l.code());
    }
}

/// `Fr` of a 256-bit little-endian integer below the modulus.
#[inline]
pub(crate) fn fr_of_limbs(limbs: [u64; 4]) -> Fr {
    Option::from(Fr::from_u64s_le(&limbs)).expect("packed value below the modulus")
}

/// `2^e` for `e < 256`.
pub(crate) fn pow2(e: usize) -> Fr {
    static P: std::sync::OnceLock<Vec<Fr>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let mut v = Vec::with_capacity(256);
        let mut x = Fr::ONE;
        for _ in 0..256 {
            v.push(x);
            x = x.double();
        }
        v
    })[e]
}

/// The A-density of a big linear combination of bits (MultiEq's left side, a packing):
/// its aux terms with their signed coefficients `±2^e`, kept until the constraint is
/// written. With no negative term no coefficient can cancel and every variable is marked;
/// otherwise the coefficients of the variables that occur negated are summed exactly.
#[derive(Debug, Default)]
pub(crate) struct AuxTerms {
    /// `(index << 8) | e` of each `+2^e` term.
    pos: Vec<u64>,
    /// `(index << 8) | e` of each `-2^e` term.
    neg: Vec<u64>,
}

impl AuxTerms {
    #[inline]
    pub(crate) fn push(&mut self, l: Lit, e: usize) {
        let code = l.code();
        if l.is_const() || code & 1 == 1 {
            return;
        }
        let t = ((code >> 1) << 8) | e as u64;
        if l.tag() == Lit::TAG_IS {
            self.pos.push(t);
        } else {
            self.neg.push(t);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.pos.clear();
        self.neg.clear();
    }

    /// Marks in A every variable whose merged coefficient is not zero.
    pub(crate) fn mark_a<S: WitnessSink>(&mut self, s: &mut S) {
        if self.neg.is_empty() {
            for &t in &self.pos {
                s.mark_a(Index::Aux((t >> 8) as usize));
            }
            return;
        }
        self.mark_a_slow(s);
    }

    #[cold]
    fn mark_a_slow<S: WitnessSink>(&mut self, s: &mut S) {
        self.neg.sort_unstable();
        // A cheap filter of the negated variables before the exact search.
        let mut filter = [0u64; 16];
        for &t in &self.neg {
            let h = ((t >> 8) & 1023) as usize;
            filter[h / 64] |= 1 << (h % 64);
        }
        let mut mixed: Vec<u64> = Vec::new();
        for &t in &self.pos {
            let idx = t >> 8;
            let h = (idx & 1023) as usize;
            if filter[h / 64] & (1 << (h % 64)) != 0
                && self.neg.binary_search_by(|n| (n >> 8).cmp(&idx)).is_ok()
            {
                mixed.push(t);
            } else {
                s.mark_a(Index::Aux(idx as usize));
            }
        }
        // Variables that occur negated: the sum of all their coefficients.
        mixed.sort_unstable();
        let mut i = 0;
        let neg = &self.neg;
        while i < neg.len() {
            let idx = neg[i] >> 8;
            let mut sum = Fr::ZERO;
            while i < neg.len() && neg[i] >> 8 == idx {
                sum -= pow2((neg[i] & 255) as usize);
                i += 1;
            }
            let start = mixed.partition_point(|m| (m >> 8) < idx);
            for m in mixed[start..].iter().take_while(|m| (*m >> 8) == idx) {
                sum += pow2((m & 255) as usize);
            }
            if sum != Fr::ZERO {
                s.mark_a(Index::Aux(idx as usize));
            }
        }
    }
}
