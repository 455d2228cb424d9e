//! SnapDeals' circuit (storage-proofs-update's `EmptySectorUpdateCircuit`) as a head and
//! one part per challenge, so that the challenges synthesize in parallel
//! ([`filprove_groth16::parts::synthesize_shared_head`]).
//!
//! The head is everything the upstream circuit synthesizes before its challenge loop: the
//! public inputs and their bits, phi, the private roots and apex leaves, the checks of
//! comm_r_old and comm_r_new, the apex tree and partition path (SHA-256), and every
//! challenge's random bits. Part `j` is the loop's body for challenge `j`: it reads only
//! head variables besides its own. Head then parts in order is the upstream circuit,
//! constraint for constraint and variable for variable (tested against it). The upstream
//! crate keeps its update gadgets private; the few used here (bit decomposition, the apex
//! tree, challenge bits, high bits, the new label) are written again over the public
//! Poseidon, SHA-256, Merkle-path and selection gadgets, in the same order.
//!
//! Nearly all of a partition is SHA-256 in tree D (at 32 GiB: 127 hashes of the apex tree
//! in the head, 19 path levels per challenge). Built with [`Sha256Witness::Native`] (the
//! twin), those hashes are computed natively ([`crate::native`]) and written in the
//! gadgets' order; the Poseidon hashes and the rest go through the gadgets either way.

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, LinearCombination, SynthesisError};
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::MerkleTreeTrait;
use filprove_groth16::parts::SharedHeadCircuit;
use filprove_groth16::sink::SinkRoot;
use filprove_groth16::Fr;
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::insertion::select;
use storage_proofs_core::gadgets::por::por_no_challenge_input;
use storage_proofs_update::circuit::{PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{
    hs, validate_tree_r_shape, TreeD, TreeDHasher, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS,
};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use crate::native;

/// The upstream circuit of one partition, synthesized as a head and its challenges.
pub(crate) struct UpdateParts<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> {
    circuit: EmptySectorUpdateCircuit<TreeR>,
    sha256: Sha256Witness,
}

/// How tree D's SHA-256 hashes get their witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sha256Witness {
    /// Through filecoin-hashers' and storage-proofs' gadgets.
    Gadgets,
    /// Computed natively ([`native::hash2`], [`native::tree_d_por_no_challenge_input`]).
    Native,
}

/// What the challenges read of the head.
pub(crate) struct UpdateHead {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    phi: AllocatedNum<Fr>,
    root_r_old: AllocatedNum<Fr>,
    root_r_new: AllocatedNum<Fr>,
    apex_leafs: Vec<AllocatedNum<Fr>>,
    /// Each challenge's random bits (without the partition's).
    generated_bits: Vec<Vec<AllocatedBit>>,
}

/// A circuit input that the upstream circuit would assert on.
fn refused(what: String) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(what))
}

fn alloc_num<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    name: String,
    value: Option<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    AllocatedNum::alloc(cs.namespace(|| name), || {
        value.ok_or(SynthesisError::AssignmentMissing)
    })
}

/// `sum 2^i bits[i] = num`, as one constraint.
fn enforce_packing<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    name: &str,
    bits: &[AllocatedBit],
    num: &AllocatedNum<Fr>,
) {
    let mut lc = LinearCombination::<Fr>::zero();
    let mut pow2 = Fr::ONE;
    for bit in bits {
        lc = lc + (pow2, bit.get_variable());
        pow2 = pow2.double();
    }
    cs.enforce(
        || name,
        |_| lc,
        |lc| lc + CS::one(),
        |lc| lc + num.get_variable(),
    );
}

impl<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> UpdateParts<TreeR> {
    /// `circuit` with tree D's hashes witnessed along `sha256`.
    pub(crate) fn new(circuit: EmptySectorUpdateCircuit<TreeR>, sha256: Sha256Witness) -> Self {
        Self { circuit, sha256 }
    }

    /// The upstream circuit.
    pub(crate) fn into_circuit(self) -> EmptySectorUpdateCircuit<TreeR> {
        self.circuit
    }

    fn params(&self) -> &PublicParams {
        &self.circuit.pub_params
    }

    /// The partition's path above its apex tree (challenge 0's; every challenge's must be
    /// the same).
    fn partition_path(&self) -> Result<Vec<Option<Fr>>, SynthesisError> {
        let p = self.params();
        let proofs = &self.circuit.priv_inputs.challenge_proofs;
        let tail = |j: usize| -> Result<&[Vec<Option<Fr>>], SynthesisError> {
            proofs[j]
                .path_d_new
                .get(p.challenge_bit_len - p.partition_bit_len..)
                .ok_or_else(|| refused(format!("challenge {j}: a short TreeD path")))
        };
        if proofs.len() != p.challenge_count {
            return Err(refused(format!(
                "{} challenge proofs, not {}",
                proofs.len(),
                p.challenge_count
            )));
        }
        let path = tail(0)?;
        if path.len() != p.partition_bit_len || path.iter().any(|s| s.len() != 1) {
            return Err(refused("a malformed partition path".into()));
        }
        for j in 1..proofs.len() {
            if tail(j)? != path {
                return Err(refused(format!(
                    "challenge {j}'s partition path differs from challenge 0's"
                )));
            }
        }
        Ok(path.iter().map(|s| s[0]).collect())
    }

    /// The checks the upstream circuit makes on `k_and_h_select` before synthesis.
    fn check_k_and_h_select(&self, h_select_bit_len: usize) -> Result<(), SynthesisError> {
        let p = self.params();
        let Some(v) = self.circuit.pub_inputs.k_and_h_select else {
            return Ok(());
        };
        let bits: Vec<bool> = v.to_le_bits().into_iter().collect();
        let k = (0..p.partition_bit_len)
            .filter(|&i| bits[i])
            .fold(0usize, |k, i| k | 1 << i);
        let h_select = &bits[p.partition_bit_len..p.partition_bit_len + h_select_bit_len];
        let rest = &bits[p.partition_bit_len + h_select_bit_len..];
        if k >= p.partition_count
            || h_select.iter().filter(|b| **b).count() != 1
            || rest.iter().any(|b| *b)
        {
            return Err(refused("a malformed k_and_h_select".into()));
        }
        Ok(())
    }
}

impl<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> SharedHeadCircuit for UpdateParts<TreeR> {
    type Head = UpdateHead;

    fn parts(&self) -> usize {
        self.circuit.pub_params.challenge_count
    }

    fn head<CS>(&self, cs: &mut CS) -> Result<UpdateHead, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        let p = self.params();
        let PublicInputs {
            k_and_h_select,
            comm_r_old,
            comm_d_new,
            comm_r_new,
        } = self.circuit.pub_inputs.clone();
        let PrivateInputs {
            comm_c,
            root_r_old,
            root_r_new,
            apex_leafs,
            ..
        } = &self.circuit.priv_inputs;
        validate_tree_r_shape::<TreeR>(p.sector_nodes);
        let h_select_bit_len = hs(p.sector_nodes).len();
        let partition_path = self.partition_path()?;
        self.check_k_and_h_select(h_select_bit_len)?;
        if apex_leafs.len() != p.apex_leaf_count {
            return Err(refused(format!("{} apex leaves", apex_leafs.len())));
        }

        let k_and_h_select = alloc_num(cs, "k_and_h_select".into(), k_and_h_select)?;
        k_and_h_select.inputize(cs.namespace(|| "k_and_h_select (public input)"))?;
        let bit_len = p.partition_bit_len + h_select_bit_len;
        let bit_values: Vec<Option<bool>> = match k_and_h_select.get_value() {
            Some(v) => v.to_le_bits().into_iter().take(bit_len).map(Some).collect(),
            None => vec![None; bit_len],
        };
        let k_and_h_select_bits = bit_values
            .into_iter()
            .enumerate()
            .map(|(i, bit)| {
                AllocatedBit::alloc(cs.namespace(|| format!("k_and_h_select_bit_{i}")), bit)
            })
            .collect::<Result<Vec<_>, _>>()?;
        enforce_packing(
            cs,
            "k_and_h_select binary decomp",
            &k_and_h_select_bits,
            &k_and_h_select,
        );
        let partition_bits = k_and_h_select_bits[..p.partition_bit_len].to_vec();
        let h_select_bits = k_and_h_select_bits[p.partition_bit_len..].to_vec();
        let partition_booleans: Vec<Boolean> =
            partition_bits.iter().cloned().map(Into::into).collect();
        let partition = pack_bits(cs.namespace(|| "pack partition bits"), &partition_booleans)?;

        let comm_r_old = alloc_num(cs, "comm_r_old".into(), comm_r_old)?;
        comm_r_old.inputize(cs.namespace(|| "comm_r_old_input"))?;
        let comm_d_new = alloc_num(cs, "comm_d_new".into(), comm_d_new)?;
        comm_d_new.inputize(cs.namespace(|| "comm_d_new_input"))?;
        let comm_r_new = alloc_num(cs, "comm_r_new".into(), comm_r_new)?;
        comm_r_new.inputize(cs.namespace(|| "comm_r_new_input"))?;

        let phi = poseidon_hash(
            cs.namespace(|| "phi"),
            vec![comm_d_new.clone(), comm_r_old.clone()],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;

        let comm_c = alloc_num(cs, "comm_c".into(), *comm_c)?;
        let root_r_old = alloc_num(cs, "root_r_old".into(), *root_r_old)?;
        let root_r_new = alloc_num(cs, "root_r_new".into(), *root_r_new)?;
        let apex_leafs = apex_leafs
            .iter()
            .enumerate()
            .map(|(i, leaf)| alloc_num(cs, format!("apex_leaf_{i}"), *leaf))
            .collect::<Result<Vec<_>, _>>()?;
        let partition_path = partition_path
            .into_iter()
            .enumerate()
            .map(|(i, s)| alloc_num(cs, format!("partition_path_sibling_{i}"), s).map(|s| vec![s]))
            .collect::<Result<Vec<_>, _>>()?;

        // comm_r = H(comm_c, root_r), old and new.
        for (name, root, comm_r) in [
            ("comm_r_old_calc", &root_r_old, &comm_r_old),
            ("comm_r_new_calc", &root_r_new, &comm_r_new),
        ] {
            let calc = <TreeRHasher as Hasher>::Function::hash2_circuit(
                cs.namespace(|| name),
                &comm_c,
                root,
            )?;
            cs.enforce(
                || format!("enforce {name} == comm_r"),
                |lc| lc + calc.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + comm_r.get_variable(),
            );
        }

        apex_por(
            cs.namespace(|| "apex_gadget"),
            self.sha256,
            apex_leafs.clone(),
            partition_bits.clone(),
            partition_path,
            comm_d_new,
        )?;
        let generated_bits = challenge_bits(
            cs.namespace(|| "gen_challenge_bits"),
            &comm_r_new,
            &partition,
            p.challenge_count,
            p.challenge_bit_len - p.partition_bit_len,
        )?;
        Ok(UpdateHead {
            partition_bits,
            h_select_bits,
            phi,
            root_r_old,
            root_r_new,
            apex_leafs,
            generated_bits,
        })
    }

    fn part<CS>(&self, cs: &mut CS, head: &UpdateHead, j: usize) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        let p = self.params();
        let proof = &self.circuit.priv_inputs.challenge_proofs[j];
        let c_bits: Vec<AllocatedBit> = head.generated_bits[j]
            .iter()
            .chain(&head.partition_bits)
            .cloned()
            .collect();
        let c_high = high_bits(
            cs.namespace(|| format!("get_challenge_high_bits (c_index={j})")),
            &c_bits,
            &head.h_select_bits,
            &hs(p.sector_nodes),
        )?;
        let rho = poseidon_hash(
            cs.namespace(|| format!("rho (c_index={j})")),
            vec![head.phi.clone(), c_high],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let leaf_r_old = alloc_num(cs, format!("leaf_r_old (c_index={j})"), proof.leaf_r_old)?;
        let leaf_d_new = alloc_num(cs, format!("leaf_d_new (c_index={j})"), proof.leaf_d_new)?;
        let leaf_r_new = new_label(
            cs.namespace(|| format!("leaf_r_new (c_index={j})")),
            &leaf_r_old,
            &leaf_d_new,
            &rho,
        )?;
        if let Some(v) = leaf_r_new.get_value() {
            if Some(v) != proof.leaf_r_new {
                return Err(refused(format!(
                    "challenge {j}: the new replica's leaf is not the encoding of the old one"
                )));
            }
        }
        for (tree, path, leaf, root) in [
            ("r_old", &proof.path_r_old, leaf_r_old, &head.root_r_old),
            ("r_new", &proof.path_r_new, leaf_r_new, &head.root_r_new),
        ] {
            let path = path
                .iter()
                .enumerate()
                .map(|(row, siblings)| {
                    siblings
                        .iter()
                        .enumerate()
                        .map(|(s, v)| {
                            let name = format!(
                                "path_{tree} sibling (c_index={j}, tree_row={row}, sibling_index={s})"
                            );
                            alloc_num(cs, name, *v)
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
            por_no_challenge_input::<TreeR, _>(
                cs.namespace(|| format!("por tree_{tree} (c_index={j})")),
                c_bits.clone(),
                leaf,
                path,
                root.clone(),
            )?;
        }
        let to_apex = p.challenge_bit_len - p.partition_bit_len - p.apex_leaf_bit_len;
        let apex_leaf_bits: Vec<Boolean> = c_bits[to_apex..to_apex + p.apex_leaf_bit_len]
            .iter()
            .cloned()
            .map(Into::into)
            .collect();
        let apex_leaf = select(
            cs.namespace(|| format!("select_apex_leaf (c_index={j})")),
            &head.apex_leafs,
            &apex_leaf_bits,
        )?;
        let path_to_apex = proof
            .path_d_new
            .iter()
            .take(to_apex)
            .enumerate()
            .map(|(row, siblings)| {
                let name = format!("path_to_apex_leaf sibling (c_index={j}, tree_row={row})");
                alloc_num(cs, name, siblings.first().copied().flatten()).map(|s| vec![s])
            })
            .collect::<Result<Vec<_>, _>>()?;
        tree_d_por(
            cs.namespace(|| format!("por to_apex_leaf (c_index={j})")),
            self.sha256,
            c_bits.into_iter().take(to_apex).collect(),
            leaf_d_new,
            path_to_apex,
            apex_leaf,
        )
    }
}

/// The apex tree of a partition's apex leaves (SHA-256), and the path from its root to
/// comm_d_new.
fn apex_por<CS>(
    mut cs: CS,
    sha256: Sha256Witness,
    leaves: Vec<AllocatedNum<Fr>>,
    partition_bits: Vec<AllocatedBit>,
    partition_path: Vec<Vec<AllocatedNum<Fr>>>,
    comm_d: AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    let height = leaves.len().trailing_zeros() as usize;
    let mut row = leaves;
    for r in 0..height {
        row = row
            .chunks(2)
            .enumerate()
            .map(|(i, pair)| {
                let cs = cs.namespace(|| {
                    format!("apex_tree generation hash (tree_row={r}, siblings={i})")
                });
                match sha256 {
                    Sha256Witness::Gadgets => {
                        <TreeDHasher as Hasher>::Function::hash2_circuit(cs, &pair[0], &pair[1])
                    }
                    Sha256Witness::Native => native::hash2(cs, &pair[0], &pair[1]),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
    }
    tree_d_por(
        cs.namespace(|| "partition-tree por"),
        sha256,
        partition_bits,
        row[0].clone(),
        partition_path,
        comm_d,
    )
}

/// `por_no_challenge_input::<TreeD>`, its hashes witnessed along `sha256`.
fn tree_d_por<CS>(
    cs: CS,
    sha256: Sha256Witness,
    challenge_bits: Vec<AllocatedBit>,
    leaf: AllocatedNum<Fr>,
    path: Vec<Vec<AllocatedNum<Fr>>>,
    root: AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    match sha256 {
        Sha256Witness::Gadgets => {
            por_no_challenge_input::<TreeD, _>(cs, challenge_bits, leaf, path, root)
        }
        Sha256Witness::Native => {
            native::tree_d_por_no_challenge_input(cs, challenge_bits, leaf, path, root)
        }
    }
}

/// Every challenge's random bits: digest `j` = H(comm_r_new, k * digests + j), each
/// digest's bits split into challenges of `bits_per_challenge` bits.
fn challenge_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    // As the upstream gadget counts them (an f32 ceiling).
    let digests = (challenges as f32 / per_digest as f32).ceil() as u64;
    let mut out: Vec<Vec<AllocatedBit>> = Vec::with_capacity(challenges);
    for j in 0..digests {
        let index = AllocatedNum::alloc(cs.namespace(|| format!("digest_index_{j}")), || {
            let k = partition
                .get_value()
                .ok_or(SynthesisError::AssignmentMissing)?;
            Ok(k * Fr::from(digests) + Fr::from(j))
        })?;
        cs.enforce(
            || format!("digest_index_{j} == k * digests_per_partition + {j}"),
            |lc| lc + (Fr::from(digests), partition.get_variable()) + (Fr::from(j), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + index.get_variable(),
        );
        let digest = poseidon_hash(
            cs.namespace(|| format!("digest_{j}")),
            vec![comm_r_new.clone(), index],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let mut bits_cs = cs.namespace(|| format!("digest_{j}_bits"));
        let bits = field_into_allocated_bits_le(&mut bits_cs, digest.get_value())?;
        enforce_packing(&mut bits_cs, "binary decomp", &bits, &digest);
        let take = if j == digests - 1 {
            challenges - out.len()
        } else {
            per_digest
        };
        out.extend(
            bits.chunks(bits_per_challenge)
                .take(take)
                .map(<[AllocatedBit]>::to_vec),
        );
    }
    Ok(out)
}

/// The `h` high bits of a challenge as a number, `h` chosen by the one set bit of
/// `h_select`: each candidate packed and multiplied by its select bit, then summed.
fn high_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if h_select_bits.len() != hs.len() {
        return Err(refused("h_select bits and hs differ in length".into()));
    }
    let n = c_bits.len();
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Into::into).collect();
    let mut scaled = Vec::with_capacity(hs.len());
    for (k, (h, select_bit)) in hs.iter().zip(h_select_bits).enumerate() {
        let high = pack_bits(
            cs.namespace(|| format!("c_high (h={h}, k={k})")),
            &c_bits[n - h..],
        )?;
        let value = match (select_bit.get_value(), high.get_value()) {
            (Some(true), v) => v,
            (Some(false), _) => Some(Fr::ZERO),
            (None, _) => None,
        };
        let high_or_zero = alloc_num(&mut cs, format!("c_high_or_zero (h={h}, k={k})"), value)?;
        cs.enforce(
            || format!("c_high_or_zero == c_high * h_select_bit (h={h}, k={k})"),
            |lc| lc + high.get_variable(),
            |lc| lc + select_bit.get_variable(),
            |lc| lc + high_or_zero.get_variable(),
        );
        scaled.push(high_or_zero);
    }
    let sum = scaled
        .iter()
        .map(AllocatedNum::get_value)
        .sum::<Option<Fr>>();
    let selected = alloc_num(&mut cs, "c_high_selected".into(), sum)?;
    cs.enforce(
        || "c_high_selected == dot(c_highs, h_select_bits)",
        |lc| scaled.iter().fold(lc, |lc, s| lc + s.get_variable()),
        |lc| lc + CS::one(),
        |lc| lc + selected.get_variable(),
    );
    Ok(selected)
}

/// The new replica's label: `label_r_old + label_d_new * rho`.
fn new_label<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    label_r_old: &AllocatedNum<Fr>,
    label_d_new: &AllocatedNum<Fr>,
    rho: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let product = label_d_new.mul(cs.namespace(|| "label_d_new * rho"), rho)?;
    let value = label_r_old
        .get_value()
        .zip(product.get_value())
        .map(|(a, b)| a + b);
    let label = alloc_num(&mut cs, "label_r_new".into(), value)?;
    cs.enforce(
        || "label_r_new == label_r_old + label_d_new * rho",
        |lc| lc + label_r_old.get_variable() + product.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + label.get_variable(),
    );
    Ok(label)
}
