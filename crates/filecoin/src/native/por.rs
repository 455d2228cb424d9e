//! Twin of storage-proofs-core's `PoRCircuit::<Tree>::synthesize` for Poseidon trees
//! (trees C and R of a PoRep: base arity 8, sub-tree arity 8 or 0, top arity 2 or 0) with
//! a private root: the index bits, path elements and insertions go through the upstream
//! gadgets as in `SubPath::synthesize`, each level's hash through the native Poseidon twin
//! ([`super::poseidon`]).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, num::AllocatedNum};
use bellperson::{ConstraintSystem, SynthesisError};
use filecoin_hashers::PoseidonArity;
use filprove_groth16::sink::SinkRoot;
use filprove_groth16::Fr;
use storage_proofs_core::gadgets::{constraint, insertion::insert};

use super::poseidon;

/// A Merkle path as the circuits take it (`MerkleProof::as_options`): per level from the
/// leaf, the sibling values and the position of the path's node among them.
pub type PathOptions = Vec<(Vec<Option<Fr>>, Option<usize>)>;

/// Twin of `PoRCircuit::<Tree>::synthesize(cs, Root::Var(leaf), path.into(),
/// Root::Var(root), true)` for a tree of arities `Base`, `Sub`, `Top` (0: no such level)
/// hashed with Poseidon.
pub fn tree_inclusion<Base, Sub, Top, CS>(
    mut cs: CS,
    mut path: PathOptions,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    Base: PoseidonArity,
    Sub: PoseidonArity,
    Top: PoseidonArity,
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    // AuthPath::from: the last level is the top tree's, the one before the sub-tree's.
    let has_top = Top::to_usize() > 0;
    let has_sub = Sub::to_usize() > 0;
    let split = if has_top { 2 } else { usize::from(has_sub) };
    let base_levels = path
        .len()
        .checked_sub(split)
        .ok_or_else(|| bad("a path shorter than the tree's sub and top levels"))?;
    let mut rest = path.split_off(base_levels);
    let top = if has_top { rest.pop() } else { None };
    let sub = if has_sub { rest.pop() } else { None };

    let cur = {
        let _ns = cs.namespace(|| "value");
        leaf.clone()
    };
    let mut bits = Vec::new();
    let cur = levels::<Base, _>(cs.namespace(|| "base"), cur, path, &mut bits)?;
    let cur = levels::<Sub, _>(
        cs.namespace(|| "sub"),
        cur,
        sub.into_iter().collect(),
        &mut bits,
    )?;
    let cur = levels::<Top, _>(
        cs.namespace(|| "top"),
        cur,
        top.into_iter().collect(),
        &mut bits,
    )?;

    multipack::pack_into_inputs(cs.namespace(|| "path"), &bits)?;
    let rt = {
        let _ns = cs.namespace(|| "root_value");
        root.clone()
    };
    constraint::equal(&mut cs, || "enforce root is correct", &cur, &rt);
    Ok(())
}

/// `SubPath::<_, A>::synthesize`: per level, the index bits, the siblings, the insertion
/// of the current node among them and their hash; the index bits are appended to `bits`.
fn levels<A, CS>(
    mut cs: CS,
    mut cur: AllocatedNum<Fr>,
    path: PathOptions,
    bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    A: PoseidonArity,
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    let arity = A::to_usize();
    if arity == 0 {
        return if path.is_empty() {
            Ok(cur)
        } else {
            Err(bad("levels for a tree of arity 0"))
        };
    }
    if !arity.is_power_of_two() {
        return Err(bad(&format!("arity {arity}")));
    }
    let index_bit_count = arity.trailing_zeros() as usize;
    for (i, (hashes, index)) in path.into_iter().enumerate() {
        if hashes.len() + 1 != arity {
            return Err(bad(&format!(
                "{} siblings at a level of arity {arity}",
                hashes.len()
            )));
        }
        let cs = &mut cs.namespace(|| format!("merkle tree hash {i}"));
        let mut index_bits = Vec::with_capacity(index_bit_count);
        for b in 0..index_bit_count {
            let bit = AllocatedBit::alloc(
                cs.namespace(|| format!("index bit {b}")),
                index.map(|index| (index >> b) & 1 == 1),
            )?;
            index_bits.push(Boolean::from(bit));
        }
        bits.extend_from_slice(&index_bits);
        let siblings = hashes
            .iter()
            .enumerate()
            .map(|(e, h)| {
                AllocatedNum::alloc(cs.namespace(|| format!("path element {e}")), || {
                    h.ok_or(SynthesisError::AssignmentMissing)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let inserted = insert(cs, &cur, &index_bits, &siblings)?;
        cur = poseidon::hash_multi_leaf::<A, _>(
            cs.namespace(|| "computation of commitment hash"),
            &inserted,
        )?;
    }
    Ok(cur)
}

fn bad(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!("Merkle path: {what}")))
}
