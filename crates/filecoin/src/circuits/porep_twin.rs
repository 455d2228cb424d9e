//! A twin of storage-proofs-porep's PoRep circuit, built from the vanilla proofs: the same
//! constraints and variables in the same order as `StackedCircuit` (its head) and its
//! per-challenge proof, but synthesized by code of ours, so that its hashes can be computed
//! natively instead of through bellperson's gadgets.
//!
//! The hashes go through one seam, [`ChallengeHashes`]: the SHA-256 labels and tree D, the
//! Poseidon column hashes, the inclusion paths in trees C and R, and the bit decomposition
//! of the parents' labels. [`UpstreamHashes`] calls the upstream gadgets (the reference),
//! [`NativeHashes`] filprove's native twins (production). The rest (the head, the column
//! allocations, encoding, the challenge input) uses the public storage-proofs gadgets,
//! exactly as upstream does. The
//! circuit of the head and one challenge is a part of [`filprove_groth16::parts`]; the
//! differential tests hold its assignment equal, field for field, to the upstream
//! circuit's.

use std::marker::PhantomData;

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::{ConstraintSystem, SynthesisError};
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait};
use filprove_groth16::native::Bit;
use filprove_groth16::sink::{SinkCircuit, SinkRoot};
use filprove_groth16::Fr;
use generic_array::typenum::{U11, U2};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::{BinaryMerkleTree, DiskTree, MerkleProof, MerkleProofTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, create_label_circuit, TOTAL_PARENTS};

use crate::native::{por, poseidon};

/// A Merkle path as the circuits take it: per level from the leaf, the sibling values and
/// the position of the path's node among them.
pub(crate) type PathOptions = por::PathOptions;

/// The hashes of a challenge: the seam between the upstream gadgets and native witness
/// code. Each implementation must produce what the upstream gadget produces, value for
/// value and constraint for constraint. The methods with a body are the upstream gadgets.
pub(crate) trait ChallengeHashes {
    /// One label: storage-proofs-porep's `create_label_circuit` (the layer index as a
    /// number rather than a constant `UInt32`).
    fn create_label<CS>(
        cs: CS,
        replica_id: &[Boolean],
        parents: Vec<Vec<Boolean>>,
        layer_index: u32,
        node: &UInt64,
    ) -> Result<AllocatedNum<Fr>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot;

    /// The inclusion of `leaf` in tree D (binary, SHA-256) under `root`, as storage-proofs'
    /// private PoR circuit over that tree enforces it.
    fn tree_d_inclusion<CS>(
        cs: CS,
        path: PathOptions,
        root: &AllocatedNum<Fr>,
        leaf: &AllocatedNum<Fr>,
    ) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot;

    /// The Poseidon hash of a column (of 2 or 11 layers, the only ones Filecoin seals).
    fn column_hash<CS>(
        cs: CS,
        rows: &[AllocatedNum<Fr>],
    ) -> Result<AllocatedNum<Fr>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        type F = <PoseidonHasher as Hasher>::Function;
        match rows.len() {
            2 => F::hash_multi_leaf_circuit::<U2, _>(cs, rows, 0),
            11 => F::hash_multi_leaf_circuit::<U11, _>(cs, rows, 0),
            n => Err(bad(&format!("a column of {n} layers"))),
        }
    }

    /// The inclusion of `leaf` under `root` in a tree of `Tree`'s shape (trees C and R), as
    /// storage-proofs' private PoR circuit enforces it.
    fn tree_inclusion<Tree, CS>(
        cs: CS,
        path: PathOptions,
        root: &AllocatedNum<Fr>,
        leaf: &AllocatedNum<Fr>,
    ) -> Result<(), SynthesisError>
    where
        Tree: MerkleTreeTrait,
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        type Shape<T> = DiskTree<
            <T as MerkleTreeTrait>::Hasher,
            <T as MerkleTreeTrait>::Arity,
            <T as MerkleTreeTrait>::SubTreeArity,
            <T as MerkleTreeTrait>::TopTreeArity,
        >;
        let path: AuthPath<_, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> = path.into();
        PoRCircuit::<Shape<Tree>>::synthesize(
            cs,
            Root::Var(leaf.clone()),
            path,
            Root::Var(root.clone()),
            true,
        )
    }

    /// The little-endian bits of a parent's label (`AllocatedNum::to_bits_le`).
    fn parent_bits<CS>(cs: CS, label: &AllocatedNum<Fr>) -> Result<Vec<Boolean>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        label.to_bits_le(cs)
    }
}

/// The upstream gadgets behind the seam: the reference the tests hold the native twins
/// and the rest of the circuit twin to (production uses [`NativeHashes`]).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct UpstreamHashes;

impl ChallengeHashes for UpstreamHashes {
    fn create_label<CS>(
        cs: CS,
        replica_id: &[Boolean],
        parents: Vec<Vec<Boolean>>,
        layer_index: u32,
        node: &UInt64,
    ) -> Result<AllocatedNum<Fr>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        create_label_circuit(
            cs,
            replica_id,
            parents,
            UInt32::constant(layer_index),
            node.clone(),
        )
    }

    fn tree_d_inclusion<CS>(
        cs: CS,
        path: PathOptions,
        root: &AllocatedNum<Fr>,
        leaf: &AllocatedNum<Fr>,
    ) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        PoRCircuit::<BinaryMerkleTree<DefaultPieceHasher>>::synthesize(
            cs,
            Root::Var(leaf.clone()),
            path.into(),
            Root::Var(root.clone()),
            true,
        )
    }
}

/// filprove's native twins behind the seam ([`crate::native`]): SHA-256 from word
/// arithmetic, Poseidon from field arithmetic, written straight into the constraint
/// system's sink.
pub(crate) struct NativeHashes;

impl ChallengeHashes for NativeHashes {
    fn create_label<CS>(
        cs: CS,
        replica_id: &[Boolean],
        parents: Vec<Vec<Boolean>>,
        layer_index: u32,
        node: &UInt64,
    ) -> Result<AllocatedNum<Fr>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        crate::native::create_label(cs, replica_id, parents, layer_index, node)
    }

    fn tree_d_inclusion<CS>(
        cs: CS,
        path: PathOptions,
        root: &AllocatedNum<Fr>,
        leaf: &AllocatedNum<Fr>,
    ) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        crate::native::tree_d_inclusion(cs, path, root, leaf)
    }

    fn column_hash<CS>(
        cs: CS,
        rows: &[AllocatedNum<Fr>],
    ) -> Result<AllocatedNum<Fr>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        match rows.len() {
            2 => poseidon::hash_multi_leaf::<U2, _>(cs, rows),
            11 => poseidon::hash_multi_leaf::<U11, _>(cs, rows),
            n => Err(bad(&format!("a column of {n} layers"))),
        }
    }

    fn tree_inclusion<Tree, CS>(
        cs: CS,
        path: PathOptions,
        root: &AllocatedNum<Fr>,
        leaf: &AllocatedNum<Fr>,
    ) -> Result<(), SynthesisError>
    where
        Tree: MerkleTreeTrait,
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        por::tree_inclusion::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
            cs, path, root, leaf,
        )
    }

    fn parent_bits<CS>(cs: CS, label: &AllocatedNum<Fr>) -> Result<Vec<Boolean>, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        let bits = filprove_groth16::native::to_bits_le(cs, label)?;
        Ok(Bit::to_booleans(&bits))
    }
}

/// What the head of a partition's circuit allocates: the replica id, comm_d and comm_r
/// (public), comm_r_last and comm_c (private, comm_r = H(comm_c, comm_r_last)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Head {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_r: Fr,
    pub comm_r_last: Fr,
    pub comm_c: Fr,
}

/// A column of a parent node (its value in every layer) and its path in tree C.
#[derive(Clone, Debug)]
struct ColumnWitness {
    rows: Vec<Fr>,
    path: PathOptions,
}

/// The witness of one challenge, taken from its vanilla proof.
#[derive(Clone, Debug)]
pub(crate) struct ChallengeWitness {
    data_leaf: Fr,
    comm_d_path: PathOptions,
    challenge: u64,
    comm_r_last_path: PathOptions,
    comm_c_path: PathOptions,
    drg_parents: Vec<ColumnWitness>,
    exp_parents: Vec<ColumnWitness>,
}

/// The vanilla proof's column proof with its fields reachable. storage-proofs keeps them
/// crate-private; their serde form is public (the C1 output carries it between processes),
/// so the proof is re-read through it.
#[derive(Deserialize)]
#[serde(bound(deserialize = "stacked::Column<H>: DeserializeOwned, P: DeserializeOwned"))]
struct ColumnProofFields<H: Hasher, P> {
    column: stacked::Column<H>,
    inclusion_proof: P,
}

/// [`ColumnProofFields`] of a challenge's replica column proofs.
#[derive(Deserialize)]
#[serde(bound(deserialize = "ColumnProofFields<H, P>: DeserializeOwned"))]
struct ReplicaColumnFields<H: Hasher, P> {
    c_x: ColumnProofFields<H, P>,
    drg_parents: Vec<ColumnProofFields<H, P>>,
    exp_parents: Vec<ColumnProofFields<H, P>>,
}

/// A labeling proof's fields (the challenged node, which the circuit takes from it).
#[derive(Deserialize)]
struct LabelingFields<D> {
    #[allow(dead_code)]
    parents: Vec<D>,
    #[allow(dead_code)]
    layer_index: u32,
    node: u64,
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// Re-reads `value` as `T` through its bincode form.
fn reread<T: DeserializeOwned>(value: &impl serde::Serialize) -> Result<T, SynthesisError> {
    let bytes = bincode::serialize(value).map_err(io_err)?;
    bincode::deserialize(&bytes).map_err(io_err)
}

fn io_err(e: impl std::fmt::Display) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(e.to_string()))
}

fn bad(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!(
        "PoRep challenge proof: {what}"
    )))
}

impl ChallengeWitness {
    /// The witness of a challenge's vanilla proof, as storage-proofs' conversion to its
    /// circuit proof takes it.
    pub(crate) fn new<Tree>(
        proof: &stacked::Proof<Tree, DefaultPieceHasher>,
    ) -> Result<Self, SynthesisError>
    where
        Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
    {
        let columns: ReplicaColumnFields<PoseidonHasher, TreeProof<Tree>> =
            reread(&proof.replica_column_proofs)?;
        let column = |c: ColumnProofFields<PoseidonHasher, TreeProof<Tree>>| ColumnWitness {
            rows: c.column.rows().iter().map(|&r| r.into()).collect(),
            path: c.inclusion_proof.as_options(),
        };
        let first = proof
            .labeling_proofs
            .first()
            .ok_or_else(|| bad("no labeling proofs"))?;
        let labeling: LabelingFields<<PoseidonHasher as Hasher>::Domain> = reread(first)?;
        Ok(Self {
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            challenge: labeling.node,
            comm_r_last_path: proof.comm_r_last_proof.as_options(),
            comm_c_path: columns.c_x.inclusion_proof.as_options(),
            drg_parents: columns.drg_parents.into_iter().map(column).collect(),
            exp_parents: columns.exp_parents.into_iter().map(column).collect(),
        })
    }
}

/// The twin of a partition's circuit, or of its head and some of its challenges: the head,
/// then each challenge in the namespace `challenge_{i}` (a part of
/// [`filprove_groth16::parts`] is the head and one challenge, in `challenge_0`).
pub(crate) struct TwinCircuit<Tree, Hs> {
    pub head: Head,
    pub challenges: Vec<ChallengeWitness>,
    _t: PhantomData<fn() -> (Tree, Hs)>,
}

impl<Tree, Hs> TwinCircuit<Tree, Hs> {
    /// The circuit of `head` and `challenges`.
    pub(crate) fn new(head: Head, challenges: Vec<ChallengeWitness>) -> Self {
        Self {
            head,
            challenges,
            _t: PhantomData,
        }
    }
}

impl<Tree, Hs> SinkCircuit for TwinCircuit<Tree, Hs>
where
    Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
    Hs: ChallengeHashes,
{
    fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        let Head {
            replica_id,
            comm_d,
            comm_r,
            comm_r_last,
            comm_c,
        } = self.head;
        let replica_id_num = AllocatedNum::alloc(cs.namespace(|| "replica_id"), || Ok(replica_id))?;
        replica_id_num.inputize(cs.namespace(|| "replica_id_input"))?;
        let replica_id_bits =
            reverse_bit_numbering(replica_id_num.to_bits_le(cs.namespace(|| "replica_id_bits"))?);
        let comm_d_num = AllocatedNum::alloc(cs.namespace(|| "comm_d"), || Ok(comm_d))?;
        comm_d_num.inputize(cs.namespace(|| "comm_d_input"))?;
        let comm_r_num = AllocatedNum::alloc(cs.namespace(|| "comm_r"), || Ok(comm_r))?;
        comm_r_num.inputize(cs.namespace(|| "comm_r_input"))?;
        let comm_r_last_num =
            AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || Ok(comm_r_last))?;
        let comm_c_num = AllocatedNum::alloc(cs.namespace(|| "comm_c"), || Ok(comm_c))?;
        let hash_num = <PoseidonHasher as Hasher>::Function::hash2_circuit(
            cs.namespace(|| "H_comm_c_comm_r_last"),
            &comm_c_num,
            &comm_r_last_num,
        )?;
        constraint::equal(
            cs,
            || "enforce comm_r = H(comm_c || comm_r_last)",
            &comm_r_num,
            &hash_num,
        );
        let commitments = Commitments {
            comm_d: &comm_d_num,
            comm_c: &comm_c_num,
            comm_r_last: &comm_r_last_num,
            replica_id: &replica_id_bits,
        };
        for (i, challenge) in self.challenges.into_iter().enumerate() {
            synthesize_challenge::<Tree, Hs, _>(
                &mut cs.namespace(|| format!("challenge_{i}")),
                challenge,
                &commitments,
            )?;
        }
        Ok(())
    }
}

/// The head's variables a challenge uses.
struct Commitments<'a> {
    comm_d: &'a AllocatedNum<Fr>,
    comm_c: &'a AllocatedNum<Fr>,
    comm_r_last: &'a AllocatedNum<Fr>,
    replica_id: &'a [Boolean],
}

/// Allocates a column's rows.
fn alloc_column<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    rows: &[Fr],
) -> Result<Vec<AllocatedNum<Fr>>, SynthesisError> {
    let mut cs = cs.namespace(|| "column");
    rows.iter()
        .enumerate()
        .map(|(i, &v)| {
            AllocatedNum::alloc(cs.namespace(|| format!("column_num_row_{i}")), || Ok(v))
        })
        .collect()
}

/// One challenge, in the order of storage-proofs-porep's `Proof::synthesize`: the data
/// leaf and its tree-D path, the DRG then expander parents' columns (each hashed and
/// included in tree C), the challenge as a public input, the labels of every layer, the
/// encoded node and its tree-R path, the challenged column's hash and its tree-C path.
fn synthesize_challenge<Tree, Hs, CS>(
    cs: &mut CS,
    w: ChallengeWitness,
    head: &Commitments<'_>,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
    Hs: ChallengeHashes,
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    let (Some(first), false) = (w.drg_parents.first(), w.exp_parents.is_empty()) else {
        return Err(bad("no DRG or no expander parents"));
    };
    let layers = first.rows.len();
    let all = w.drg_parents.iter().chain(&w.exp_parents);
    if layers == 0 || all.clone().any(|c| c.rows.len() != layers) {
        return Err(bad("parent columns of different heights"));
    }
    // Each label hashes TOTAL_PARENTS parents: layer 1 its DRG parents repeated, later
    // layers its DRG and expander parents twice over and the first 9 again.
    let (drg, exp) = (w.drg_parents.len(), w.exp_parents.len());
    if 6 * drg + 1 != TOTAL_PARENTS || (layers > 1 && (2 * (drg + exp) + 9 != TOTAL_PARENTS)) {
        return Err(bad(&format!("{drg} DRG and {exp} expander parents")));
    }

    let data_leaf = AllocatedNum::alloc(cs.namespace(|| "data_leaf"), || Ok(w.data_leaf))?;
    Hs::tree_d_inclusion(
        cs.namespace(|| "comm_d_inclusion"),
        w.comm_d_path,
        head.comm_d,
        &data_leaf,
    )?;

    let mut columns = |kind: &str, parents: Vec<ColumnWitness>| {
        let mut out = Vec::with_capacity(parents.len());
        for (i, parent) in parents.into_iter().enumerate() {
            let col = alloc_column(
                cs.namespace(|| format!("{kind}_parent_{i}_num")),
                &parent.rows,
            )?;
            let hash = Hs::column_hash(
                cs.namespace(|| format!("{kind}_parent_{i}_constraint")),
                &col,
            )?;
            Hs::tree_inclusion::<Tree, _>(
                cs.namespace(|| format!("{kind}_parent_{i}_inclusion")),
                parent.path,
                head.comm_c,
                &hash,
            )?;
            out.push(col);
        }
        Ok::<_, SynthesisError>(out)
    };
    let drg_cols = columns("drg", w.drg_parents)?;
    let exp_cols = columns("exp", w.exp_parents)?;

    let challenge = UInt64::alloc(cs.namespace(|| "challenge"), Some(w.challenge))?;
    challenge.pack_into_input(cs.namespace(|| "challenge input"))?;

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut cs = cs.namespace(|| format!("labeling_{layer}"));
        let mut parents = Vec::with_capacity(drg + exp);
        for col in &drg_cols {
            let bits = Hs::parent_bits(
                cs.namespace(|| format!("drg_parent_{}_bits", parents.len())),
                &col[layer - 1],
            )?;
            parents.push(reverse_bit_numbering(bits));
        }
        // Expander parents from layer 2 on, their values from the layer below.
        if layer > 1 {
            for col in &exp_cols {
                let bits = Hs::parent_bits(
                    cs.namespace(|| format!("exp_parent_{}_bits", parents.len())),
                    &col[layer - 2],
                )?;
                parents.push(reverse_bit_numbering(bits));
            }
        }
        let mut expanded = Vec::with_capacity(TOTAL_PARENTS);
        if layer > 1 {
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents[..9]);
        } else {
            for _ in 0..6 {
                expanded.extend_from_slice(&parents);
            }
            expanded.push(parents[0].clone());
        }
        let label = Hs::create_label(
            cs.namespace(|| "create_label"),
            head.replica_id,
            expanded,
            layer as u32,
            &challenge,
        )?;
        labels.push(label);
    }

    let key = labels.last().ok_or_else(|| bad("no layers"))?;
    let encoded = encode(cs.namespace(|| "encode_node"), key, &data_leaf)?;
    Hs::tree_inclusion::<Tree, _>(
        cs.namespace(|| "comm_r_last_data_inclusion"),
        w.comm_r_last_path,
        head.comm_r_last,
        &encoded,
    )?;

    let column = Hs::column_hash(cs.namespace(|| "c_x_column_hash"), &labels)?;
    Hs::tree_inclusion::<Tree, _>(
        cs.namespace(|| "c_x_inclusion"),
        w.comm_c_path,
        head.comm_c,
        &column,
    )
}
