//! A twin of storage-proofs-post's FallbackPoSt circuit (WinningPoSt and WindowPoSt), one
//! sector at a time: the same variables and constraints in the same order as
//! `Sector::<Tree>::synthesize`, with the Poseidon hashes (comm_r = H(comm_c, comm_r_last)
//! and every level of every tree-R path) computed natively ([`crate::native::poseidon`],
//! [`crate::native::por`]) and written through the constraint system's sink. The rest (the
//! commitments' allocations, the path bits and insertions, the packing into inputs) goes
//! through the upstream gadgets, as upstream does.
//!
//! A FallbackPoSt circuit is a list of independent sectors that share nothing but ONE, so
//! each sector is a part of [`filprove_groth16::parts`] (an empty head, the sector in the
//! namespace [`SECTOR_MARKER`]), synthesized on its own thread.

use std::marker::PhantomData;

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use filecoin_proofs::MerkleTreeTrait;
use filprove_groth16::sink::{SinkCircuit, SinkRoot};
use filprove_groth16::Fr;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_post::fallback::{Sector, SectorProof};

use crate::native::{por, poseidon};

/// The top-level namespace a part (one sector) begins at.
pub(crate) const SECTOR_MARKER: &str = "sector_0";

/// The witness of one sector of the circuit: its commitments and, per challenge, the leaf
/// and its path in tree R.
#[derive(Clone, Debug)]
pub(crate) struct SectorWitness {
    comm_r: Fr,
    comm_c: Fr,
    comm_r_last: Fr,
    leaves: Vec<Fr>,
    paths: Vec<por::PathOptions>,
}

fn missing(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!(
        "PoSt sector proof: no {what}"
    )))
}

impl SectorWitness {
    /// The witness of the circuit's sector `sector` (its commitments and leaves, as
    /// storage-proofs' compound proof put them there) and of its vanilla proof (the paths).
    pub(crate) fn new<Tree: 'static + MerkleTreeTrait>(
        sector: &Sector<Tree>,
        proof: &SectorProof<Tree::Proof>,
    ) -> Result<Self, SynthesisError> {
        let leaves = sector
            .leafs
            .iter()
            .map(|l| l.ok_or_else(|| missing("leaf")))
            .collect::<Result<Vec<_>, _>>()?;
        let paths = proof
            .inclusion_proofs
            .iter()
            .map(MerkleProofTrait::as_options)
            .collect::<Vec<_>>();
        if paths.len() != leaves.len() {
            return Err(SynthesisError::IoError(std::io::Error::other(format!(
                "PoSt sector proof: {} leaves and {} paths",
                leaves.len(),
                paths.len()
            ))));
        }
        Ok(Self {
            comm_r: sector.comm_r.ok_or_else(|| missing("comm_r"))?,
            comm_c: sector.comm_c.ok_or_else(|| missing("comm_c"))?,
            comm_r_last: sector.comm_r_last.ok_or_else(|| missing("comm_r_last"))?,
            leaves,
            paths,
        })
    }
}

/// The twin of one sector (a part: the sector in the namespace [`SECTOR_MARKER`]), or of
/// several in order (the namespaces `sector_{i}`).
pub(crate) struct SectorsTwin<Tree> {
    sectors: Vec<SectorWitness>,
    _t: PhantomData<fn() -> Tree>,
}

impl<Tree> SectorsTwin<Tree> {
    /// The twin of `sectors`, in order.
    pub(crate) fn new(sectors: Vec<SectorWitness>) -> Self {
        Self {
            sectors,
            _t: PhantomData,
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> SinkCircuit for SectorsTwin<Tree> {
    fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        for (i, sector) in self.sectors.into_iter().enumerate() {
            synthesize_sector::<Tree, _>(&mut cs.namespace(|| format!("sector_{i}")), sector)?;
        }
        Ok(())
    }
}

/// `Sector::<Tree>::synthesize`: the commitments, comm_r as an input, comm_r =
/// H(comm_c, comm_r_last), then each challenged leaf's inclusion under comm_r_last.
fn synthesize_sector<Tree, CS>(cs: &mut CS, w: SectorWitness) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Fr>,
    CS::Root: SinkRoot,
{
    let comm_r_last = AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || Ok(w.comm_r_last))?;
    let comm_c = AllocatedNum::alloc(cs.namespace(|| "comm_c"), || Ok(w.comm_c))?;
    let comm_r = AllocatedNum::alloc(cs.namespace(|| "comm_r"), || Ok(w.comm_r))?;
    comm_r.inputize(cs.namespace(|| "comm_r_input"))?;
    let hash = poseidon::hash2(
        cs.namespace(|| "H_comm_c_comm_r_last"),
        &comm_c,
        &comm_r_last,
    )?;
    constraint::equal(
        cs,
        || "enforce_comm_c_comm_r_last_hash_comm_r",
        &comm_r,
        &hash,
    );
    for (i, (leaf, path)) in w.leaves.into_iter().zip(w.paths).enumerate() {
        let mut cs = cs.namespace(|| format!("challenge_inclusion_{i}"));
        // `Root::Val(leaf).allocated(..)` in the "value" namespace.
        let leaf = AllocatedNum::alloc(cs.namespace(|| "value"), || Ok(leaf))?;
        por::tree_inclusion::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
            cs,
            path,
            &comm_r_last,
            &leaf,
        )?;
    }
    Ok(())
}

/// The upstream circuit of one sector in the namespace [`SECTOR_MARKER`]: the reference
/// the twin's parts are held to.
pub(crate) struct UpstreamSector<'a, Tree: MerkleTreeTrait>(pub &'a Sector<Tree>);

impl<Tree: 'static + MerkleTreeTrait> Circuit<Fr> for UpstreamSector<'_, Tree> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(&mut cs.namespace(|| SECTOR_MARKER))
    }
}

/// The upstream circuit's sectors in order, on one thread (`FallbackPoStCircuit`'s
/// synthesis into a constraint system that cannot be extended).
pub(crate) struct UpstreamInOrder<'a, Tree: MerkleTreeTrait>(pub &'a [Sector<Tree>]);

impl<Tree: 'static + MerkleTreeTrait> Circuit<Fr> for UpstreamInOrder<'_, Tree> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let cs = &mut cs.namespace(|| "outer namespace");
        for (i, sector) in self.0.iter().enumerate() {
            sector.synthesize(&mut cs.namespace(|| format!("sector_{i}")))?;
        }
        Ok(())
    }
}
