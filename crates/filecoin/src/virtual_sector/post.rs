//! WinningPoSt and WindowPoSt vanilla proofs of virtual sectors.
//!
//! A PoSt challenges leaves of each sector's tree R chosen from the randomness, the prover
//! id and the sector id only; its vanilla proof is the challenged leaves' paths, comm_c and
//! comm_r_last, checked against comm_r = H(comm_c, comm_r_last). Each virtual sector's tree
//! R holds seeded values at its challenged leaves and one seeded default everywhere else;
//! comm_c is seeded. WindowPoSt fills a whole partition (2,349 sectors at 32 GiB).

use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, MerkleTreeTrait};
use filecoin_proofs_api::{post, SectorId};
use rayon::prelude::*;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_post::fallback::{self, SectorProof};

use super::porep::poseidon;
use super::porep::tree_arities;
use super::tree::SparseTree;
use super::{fr_safe, prf, VirtualSector};
use crate::circuits::with_tree;
use crate::error::FilecoinError;
use crate::kinds::{self, ProofKind};
use crate::request::{ProofRequest, RequestBody};

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The validated request of a WinningPoSt (one sector) or of one full WindowPoSt partition
/// (`sector_count` consecutive sectors from the sector's number) over virtual sectors.
pub(crate) fn request(
    sector: &VirtualSector,
    kind: ProofKind,
) -> Result<ProofRequest, FilecoinError> {
    let size = sector.sector_size;
    let registered = match kind {
        ProofKind::WinningPoSt => kinds::winning_proof_for_size(size),
        _ => kinds::window_proof_for_size(size),
    }
    .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {size}")))?;
    let randomness = fr_safe(prf(sector.seed, b"post randomness", &[kind as u64]));
    let count = match kind {
        ProofKind::WinningPoSt => 1,
        _ => registered.sector_count(),
    };
    let sectors: Vec<SectorId> = (0..count as u64)
        .map(|i| SectorId::from(sector.sector_number + i))
        .collect();
    let challenges = post::generate_fallback_sector_challenges(
        registered,
        &randomness,
        &sectors,
        sector.prover_id(),
    )
    .map_err(FilecoinError::fp)?;
    let vanilla_proofs = sectors
        .par_iter()
        .map(|id| with_tree!(size, sector_proof, size, sector.seed, *id, &challenges[id]))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match kind {
        ProofKind::WinningPoSt => RequestBody::WinningPoSt {
            registered,
            miner_id: sector.miner_id,
            randomness,
            vanilla_proofs,
        },
        _ => RequestBody::WindowPoSt {
            registered,
            miner_id: sector.miner_id,
            randomness,
            partition_index: 0,
            vanilla_proofs,
        },
    };
    ProofRequest::new(body)
}

/// One sector's bincode `FallbackPoStSectorProof`, as filecoin-proofs-api's
/// `generate_single_vanilla_proof` returns it.
fn sector_proof<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    sector_size: u64,
    seed: u64,
    id: SectorId,
    challenges: &[u64],
) -> Result<Vec<u8>, FilecoinError> {
    let n = u64::from(id);
    let tree = SparseTree::<PoseidonHasher>::new(
        tree_arities::<Tree>(sector_size / 32),
        poseidon(prf(seed, b"post tree-r default", &[n])),
        challenges
            .iter()
            .map(|&c| (c, poseidon(prf(seed, b"post tree-r leaf", &[n, c])))),
    );
    let comm_c: PoseidonDomain = poseidon(prf(seed, b"post comm_c", &[n]));
    let comm_r_last = tree.root();
    let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let inclusion_proofs = challenges
        .iter()
        .map(|&c| TreeProof::<Tree>::from_parts(tree.leaf(c), comm_r_last, tree.path(c)))
        .collect();
    let proof = FallbackPoStSectorProof::<Tree> {
        sector_id: id,
        comm_r,
        vanilla_proof: fallback::Proof {
            sectors: vec![SectorProof {
                inclusion_proofs,
                comm_c,
                comm_r_last,
            }],
        },
    };
    bincode::serialize(&proof)
        .map_err(|e| FilecoinError::Fixture(format!("virtual PoSt proof: {e}")))
}
