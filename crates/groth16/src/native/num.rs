//! Twins of `AllocatedNum::to_bits_le` and `multipack::pack_bits` (bellperson 0.27) for
//! constraint systems whose root is a [`WitnessSink`].

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, Index, SynthesisError};
use ff::PrimeField;

use super::boolean::alloc_code;
use super::{fr_of_limbs, index_of, AuxTerms, Bit, Consts};
use crate::sink::WitnessSink;
use crate::Fr;

/// `AllocatedNum::to_bits_le`: 255 new boolean variables holding the little-endian bits
/// of `num` (`field_into_allocated_bits_le`), then the unpacking constraint
/// `0 * 0 = sum(2^i bit_i) - num` (all of whose evaluations are zero).
pub fn to_bits_le<CS>(mut cs: CS, num: &AllocatedNum<Fr>) -> Result<Vec<Bit>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let value = num.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    Ok(value_to_bits_le(cs.get_root(), value))
}

/// [`to_bits_le`] of a value, on a sink.
pub fn value_to_bits_le<S: WitnessSink>(s: &mut S, value: Fr) -> Vec<Bit> {
    let k = Consts::get();
    let repr = value.to_repr();
    let bytes: &[u8] = repr.as_ref();
    let n = Fr::NUM_BITS as usize;
    let mut out = Vec::with_capacity(n + 1);
    for i in 0..n {
        let v = (bytes[i / 8] >> (i % 8)) & 1 == 1;
        let code = alloc_code(s, k, v);
        out.push(Bit::Is {
            var: index_of(code),
            value: v,
        });
    }
    s.push_constraint(k.zero, k.zero);
    out
}

/// `multipack::pack_bits`: a new number (allocated through `cs`, as bellperson does) equal
/// to the first `Fr::CAPACITY` bits of `bits` read little-endian, and the constraint
/// `sum(2^i bit_i) * ONE = num`.
pub fn pack_bits<CS>(mut cs: CS, bits: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let bits = &bits[..bits.len().min(Fr::CAPACITY as usize)];
    let mut limbs = [0u64; 4];
    for (i, b) in bits.iter().enumerate() {
        limbs[i / 64] |= (b.value() as u64) << (i % 64);
    }
    let value = fr_of_limbs(limbs);
    let num = AllocatedNum::alloc(cs.namespace(|| "input"), || Ok(value))?;
    let root = cs.get_root();
    root.push_constraint(value, Consts::get().one);
    let mut terms = AuxTerms::default();
    for (i, b) in bits.iter().enumerate() {
        terms.push(b.lit().0, i);
    }
    terms.mark_a(root);
    root.mark_b(Index::Input(0));
    Ok(num)
}
