//! Native twins of the SHA-256 parts of Filecoin's PoRep circuit, built on
//! [`filprove_groth16::native`].
//!
//! Each function has the signature and the semantics of the upstream gadget it replaces
//! and leaves, in a constraint system whose root is a [`WitnessSink`], exactly the
//! assignment the gadget leaves (same variables, constraints, evaluations and densities,
//! in the same order). SHA-256 and the packing of its digest are computed natively; the
//! few other pieces (index bits, path elements, insertion, outputs) go through the
//! constraint system as upstream's do, in the same order and namespaces.
//!
//! - [`create_label`] is `storage_proofs_porep::stacked::create_label_circuit`
//!   ([`create_label_bits`] the same on [`Bit`]s);
//! - [`tree_d_inclusion`] is the tree D inclusion proof of a PoRep challenge
//!   (`PoRCircuit::<MerkleTreeWrapper<Sha256Hasher, _, U2, U0, U0>>::synthesize` with a
//!   private root, as storage-proofs-porep's `enforce_inclusion` calls it);
//! - [`tree_d_por_no_challenge_input`] is `por_no_challenge_input` for a binary SHA-256
//!   tree (SnapDeals' tree D: its apex tree's path to comm_d, each challenge's path to
//!   its apex leaf);
//! - [`hash2`] and [`hash_multi_leaf`] are filecoin-hashers'
//!   `Sha256Function::{hash2_circuit, hash_multi_leaf_circuit}`;
//! - [`poseidon`] holds the twins of the Poseidon hashes (`PoseidonFunction`'s circuits),
//!   [`por`] the inclusion proofs in Poseidon trees (trees C and R).

pub mod por;
pub mod poseidon;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, num::AllocatedNum};
use bellperson::{ConstraintSystem, SynthesisError};
use ff::PrimeField;
use filprove_groth16::native::{self, Bit};
use filprove_groth16::sink::WitnessSink;
use filprove_groth16::Fr;
use storage_proofs_core::gadgets::{constraint, insertion::insert, uint64::UInt64};
use storage_proofs_porep::stacked::TOTAL_PARENTS;

/// Twin of `create_label_circuit(cs, replica_id, parents, UInt32::constant(layer_index),
/// node)`: the label `sha256(replica_id | layer | node | parents)` packed into a number.
pub fn create_label<CS>(
    cs: CS,
    replica_id: &[Boolean],
    parents: Vec<Vec<Boolean>>,
    layer_index: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let replica_id = Bit::from_booleans(replica_id)?;
    let node = Bit::from_booleans(&node.to_bits_be())?;
    let parents = parents
        .iter()
        .map(|p| Bit::from_booleans(p))
        .collect::<Result<Vec<_>, _>>()?;
    let parents: Vec<&[Bit]> = parents.iter().map(Vec::as_slice).collect();
    create_label_bits(cs, &replica_id, &parents, layer_index, &node)
}

/// [`create_label`] on [`Bit`]s: `node` is the node's 64 bits big-endian
/// (`UInt64::to_bits_be`), `parents` the `TOTAL_PARENTS` parents' bits.
pub fn create_label_bits<CS>(
    mut cs: CS,
    replica_id: &[Bit],
    parents: &[&[Bit]],
    layer_index: u32,
    node: &[Bit],
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    assert!(replica_id.len() >= 32, "replica id is too small");
    assert!(replica_id.len() <= 256, "replica id is too large");
    assert_eq!(parents.len(), TOTAL_PARENTS, "invalid sized parents");
    assert_eq!(node.len(), 64);

    // id | layer | node | parent_0 | parent_1 | ..., each in 32 bytes.
    let mut msg = Vec::with_capacity((1 + 1 + TOTAL_PARENTS) * 256);
    msg.extend_from_slice(replica_id);
    msg.resize(256, Bit::Constant(false));
    msg.extend(
        (0..32)
            .rev()
            .map(|j| Bit::Constant((layer_index >> j) & 1 == 1)),
    );
    msg.extend_from_slice(node);
    msg.resize(512, Bit::Constant(false));
    for parent in parents {
        msg.extend_from_slice(parent);
        msg.resize(msg.len().div_ceil(256) * 256, Bit::Constant(false));
    }
    assert_eq!(msg.len(), (1 + 1 + TOTAL_PARENTS) * 32 * 8);

    let digest = within(&mut cs, || "hash", |cs| native::sha256(cs.get_root(), &msg))?;
    let bits = reverse_bit_numbering(digest);
    within(
        &mut cs,
        || "result_num",
        |cs| native::pack_bits(cs, &bits[..Fr::CAPACITY as usize]),
    )
}

/// Twin of `Sha256Function::hash2_circuit(cs, a, b)`.
pub fn hash2<CS>(
    mut cs: CS,
    a: &AllocatedNum<Fr>,
    b: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let a = within(&mut cs, || "a_bits", |cs| native::to_bits_le(cs, a))?;
    let b = within(&mut cs, || "b_bits", |cs| native::to_bits_le(cs, b))?;
    let mut preimage = Vec::with_capacity(512);
    push_le_bytes(&mut preimage, a);
    push_le_bytes(&mut preimage, b);
    hash_bits(cs, &preimage)
}

/// Twin of `Sha256Function::hash_multi_leaf_circuit(cs, leaves, height)`.
pub fn hash_multi_leaf<CS>(
    mut cs: CS,
    leaves: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let mut preimage = Vec::with_capacity(leaves.len() * 256);
    for (i, leaf) in leaves.iter().enumerate() {
        let bits = within(
            &mut cs,
            || format!("{i}_num_into_bits"),
            |cs| native::to_bits_le(cs, leaf),
        )?;
        push_le_bytes(&mut preimage, bits);
    }
    hash_bits(cs, &preimage)
}

/// Twin of `storage_proofs_core::util::reverse_bit_numbering`: `bits` padded to whole
/// bytes, each byte's bits reversed.
pub fn reverse_bit_numbering(bits: Vec<Bit>) -> Vec<Bit> {
    let mut out = Vec::with_capacity(bits.len().div_ceil(8) * 8);
    push_le_bytes(&mut out, bits);
    out
}

/// Pads `bits` to whole bytes and appends them with each byte's bits reversed.
fn push_le_bytes(out: &mut Vec<Bit>, mut bits: Vec<Bit>) {
    bits.resize(bits.len().div_ceil(8) * 8, Bit::Constant(false));
    out.extend(bits.chunks_exact(8).flat_map(|c| c.iter().rev().copied()));
}

/// Twin of `Sha256Function::hash_circuit`: the digest's first `Fr::CAPACITY` bits, each
/// byte's reversed, packed.
fn hash_bits<CS>(mut cs: CS, bits: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    let be = within(&mut cs, || "hash", |cs| native::sha256(cs.get_root(), bits))?;
    let le: Vec<Bit> = be
        .chunks(8)
        .flat_map(|c| c.iter().rev().copied())
        .take(Fr::CAPACITY as usize)
        .collect();
    within(&mut cs, || "pack_le", |cs| native::pack_bits(cs, &le))
}

/// `f(cs)` inside the namespace `name`, as `f(cs.namespace(name))` would run (a
/// `Namespace` is a system over the root's root, which need not be a sink).
fn within<CS, N, NR, T>(cs: &mut CS, name: N, f: impl FnOnce(&mut CS) -> T) -> T
where
    CS: ConstraintSystem<Fr>,
    N: FnOnce() -> NR,
    NR: Into<String>,
{
    cs.get_root().push_namespace(name);
    let out = f(cs);
    cs.get_root().pop_namespace();
    out
}

/// Twin of storage-proofs-porep's `enforce_inclusion(cs, path, root, leaf)` for tree D
/// (SHA-256, binary, private root): `PoRCircuit::synthesize(cs, Root::Var(leaf),
/// AuthPath::from(path), Root::Var(root), true)`.
///
/// `path` is the proof's `as_options()`: per level, the sibling and the node's index.
pub fn tree_d_inclusion<CS>(
    mut cs: CS,
    path: Vec<(Vec<Option<Fr>>, Option<usize>)>,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    // PoRCircuit::synthesize(&mut cs): `value.allocated(..)` of a Root::Var is its number.
    let mut cur = {
        let _ns = cs.namespace(|| "value");
        leaf.clone()
    };
    let mut auth_path_bits = Vec::with_capacity(path.len());
    // The base tree (arity 2).
    within(
        &mut cs,
        || "base",
        |cs| -> Result<(), SynthesisError> {
            for (i, (hashes, index)) in path.into_iter().enumerate() {
                cur = within(
                    cs,
                    || format!("merkle tree hash {i}"),
                    |cs| {
                        let bit = AllocatedBit::alloc(
                            cs.namespace(|| "index bit 0"),
                            index.map(|index| index & 1 == 1),
                        )?;
                        let index_bits = vec![Boolean::from(bit)];
                        auth_path_bits.extend_from_slice(&index_bits);
                        let siblings = hashes
                            .iter()
                            .enumerate()
                            .map(|(i, h)| {
                                AllocatedNum::alloc(
                                    cs.namespace(|| format!("path element {i}")),
                                    || h.ok_or(SynthesisError::AssignmentMissing),
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        if siblings.len() != 1 {
                            return Err(not_binary(siblings.len()));
                        }
                        let inserted = insert(cs, &cur, &index_bits, &siblings)?;
                        within(
                            cs,
                            || "computation of commitment hash",
                            |cs| hash_multi_leaf(cs, &inserted),
                        )
                    },
                )?;
            }
            Ok(())
        },
    )?;
    // No sub or top tree.
    drop(cs.namespace(|| "sub"));
    drop(cs.namespace(|| "top"));

    multipack::pack_into_inputs(cs.namespace(|| "path"), &auth_path_bits)?;
    let rt = {
        let _ns = cs.namespace(|| "root_value");
        root.clone()
    };
    constraint::equal(&mut cs, || "enforce root is correct", &cur, &rt);
    Ok(())
}

/// Twin of storage-proofs-core's `por_no_challenge_input::<Tree>(cs, challenge_bits,
/// leaf, path, root)` for a binary SHA-256 tree (storage-proofs-update's `TreeD`): the
/// challenge's bits (little-endian, one per level) and the path's siblings (one per
/// level) already allocated; each level inserts the current node by its bit and hashes
/// the pair; the computed root is enforced equal to `root`. Where upstream asserts on the
/// lengths, this returns an error.
pub fn tree_d_por_no_challenge_input<CS>(
    mut cs: CS,
    challenge_bits: Vec<AllocatedBit>,
    leaf: AllocatedNum<Fr>,
    path: Vec<Vec<AllocatedNum<Fr>>>,
    root: AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: WitnessSink,
{
    if challenge_bits.len() != path.len() {
        return Err(SynthesisError::IoError(std::io::Error::other(format!(
            "tree D path of {} levels for {} challenge bits",
            path.len(),
            challenge_bits.len()
        ))));
    }
    let mut cur = leaf;
    for (height, (siblings, bit)) in path.into_iter().zip(challenge_bits).enumerate() {
        if siblings.len() != 1 {
            return Err(not_binary(siblings.len()));
        }
        let index = [Boolean::from(bit)];
        let preimage = within(
            &mut cs,
            || format!("merkle proof insert (height={height})"),
            |cs| insert(cs, &cur, &index, &siblings),
        )?;
        cur = within(
            &mut cs,
            || format!("merkle proof hash (height={height})"),
            |cs| hash_multi_leaf(cs, &preimage),
        )?;
    }
    cs.enforce(
        || "calculated root == provided root",
        |lc| lc + cur.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + root.get_variable(),
    );
    Ok(())
}

/// A tree D path level with other than one sibling.
fn not_binary(siblings: usize) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!(
        "a tree D path level with {siblings} siblings (the tree is binary)"
    )))
}
