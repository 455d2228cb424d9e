//! SnapDeals (empty sector update) vanilla proofs of a virtual sector over zero data.
//!
//! An update's challenges come from comm_r_new, so its trees must be fixed before they are
//! known, and every node must satisfy what a challenge checks: `new = old + data * rho`,
//! plus the three inclusion paths. Over zero data that holds at every node at once when
//! the old replica is one seeded value everywhere: the new replica equals the old one,
//! tree D is the all-zero tree, comm_r_new = comm_r_old. Every challenge opens the same
//! default paths (a degenerate witness, but a valid proof of the real circuit).

use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_update::constants::TreeDArity;
use storage_proofs_update::{ChallengeProof, Challenges, PartitionProof, PublicParams};

use super::porep::{poseidon, tree_arities};
use super::tree::{PeriodicTree, SparseTree};
use super::{prf, VirtualSector};
use crate::circuits::with_tree;
use crate::error::FilecoinError;
use crate::kinds;
use crate::request::{ProofRequest, RequestBody};

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The validated SnapDeals request of a virtual sector (every partition).
pub(crate) fn request(sector: &VirtualSector) -> Result<ProofRequest, FilecoinError> {
    let size = sector.sector_size;
    let registered = kinds::update_proof_for_size(size)
        .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {size}")))?;
    ProofRequest::new(with_tree!(size, body, sector, registered)?)
}

/// The request: comm_r (old and new), comm_d_new and the bincode `PartitionProof` of every
/// partition.
fn body<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector: &VirtualSector,
    registered: RegisteredUpdateProof,
) -> Result<RequestBody, FilecoinError> {
    let pub_params = PublicParams::from_sector_size(sector.sector_size);
    let nodes = pub_params.sector_nodes as u64;
    let seed = sector.seed;
    let tree_r = SparseTree::<PoseidonHasher>::new(
        tree_arities::<Tree>(nodes),
        poseidon(prf(seed, b"update tree-r default", &[])),
        [],
    );
    let tree_d = PeriodicTree::<Sha256Hasher>::new(
        vec![Sha256Domain([0; 32])],
        pub_params.challenge_bit_len,
    );
    let comm_c = poseidon(prf(seed, b"update comm_c", &[]));
    let root_r = tree_r.root();
    let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &root_r);
    let comm_d_new = tree_d.root();
    // Every apex leaf of tree D is the same zero-subtree root.
    let apex_height =
        pub_params.challenge_bit_len - pub_params.partition_bit_len - pub_params.apex_leaf_bit_len;
    let apex_leaf = tree_d.path(0)[..apex_height]
        .iter()
        .fold(tree_d.leaf(0), |h, (siblings, _)| {
            <Sha256Hasher as Hasher>::Function::hash2(&h, &siblings[0])
        });
    let proofs = (0..pub_params.partition_count)
        .map(|k| {
            let challenge_proofs = Challenges::new(pub_params.sector_nodes, comm_r, k)
                .map(|c| {
                    let c = u64::from(c);
                    let proof_r =
                        || TreeProof::<Tree>::from_parts(tree_r.leaf(c), root_r, tree_r.path(c));
                    ChallengeProof::<Tree> {
                        proof_r_old: proof_r(),
                        proof_d_new: MerkleProof::<Sha256Hasher, TreeDArity>::from_parts(
                            tree_d.leaf(c),
                            comm_d_new,
                            tree_d.path(c),
                        ),
                        proof_r_new: proof_r(),
                    }
                })
                .collect();
            let proof = PartitionProof::<Tree> {
                comm_c,
                apex_leafs: vec![apex_leaf; pub_params.apex_leaf_count],
                challenge_proofs,
            };
            bincode::serialize(&proof)
                .map_err(|e| FilecoinError::Fixture(format!("virtual update proof: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let comm_r: [u8; 32] = comm_r.into_bytes().try_into().expect("32-byte domain");
    Ok(RequestBody::SnapDeals {
        registered,
        comm_r_old: comm_r,
        comm_r_new: comm_r,
        comm_d_new: comm_d_new.0,
        vanilla_proofs: proofs,
    })
}
