//! A valid interactive-PoRep C1 output of a virtual sector (docs/virtual-sectors.md).
//!
//! Interactive PoRep derives its challenges from the replica id and the seed alone, so they
//! are known before any tree exists. What the vanilla verifier and the circuit check per
//! challenge is: the data leaf's path to comm_d; the columns of the node and of its 14
//! parents, included in tree C; each of the node's labels recomputed from its parents'
//! column values; the encoded leaf (last label + data) in tree R; comm_r = H(comm_c,
//! comm_r_last). Nothing checks a parent's own labels or any node that is neither challenged
//! nor a parent. So: the data repeats a short seeded pattern (comm_d is known before the
//! challenges), every parent column is drawn from a seeded function, a challenged node's
//! column holds its real labels (computed layer by layer, so a challenged node that is also
//! a parent gets its real column), and trees C and R hold only the touched leaves.

use std::any::Any;
use std::collections::BTreeMap;

use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{parameters::setup_params, MerkleTreeTrait};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use generic_array::typenum::{Unsigned, U2};
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Column, ColumnProof, EncodingProof, LabelingProof,
    ReplicaColumnProof, StackedDrg, TOTAL_PARENTS,
};

use super::tree::{PeriodicTree, SparseTree};
use super::{fr_safe, prf, VirtualSector};
use crate::circuits::with_tree;
use crate::error::FilecoinError;

type RawProof<Tree> = stacked::Proof<Tree, Sha256Hasher>;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// Nodes in the repeating data pattern (32 KiB of data; whole sector when smaller).
const DATA_PATTERN_NODES: usize = 1024;

/// The arities of a sector tree's levels, leaf level first: base levels, then the
/// sub-tree and top-tree levels when the shape has them.
pub(crate) fn tree_arities<Tree: MerkleTreeTrait>(leaves: u64) -> Vec<usize> {
    let (base, sub, top) = (
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let mut base_leaves = leaves;
    for a in [sub, top] {
        if a > 0 {
            base_leaves /= a as u64;
        }
    }
    let base_levels = base_leaves.ilog(base as u64) as usize;
    debug_assert_eq!((base as u64).pow(base_levels as u32), base_leaves);
    let mut arities = vec![base; base_levels];
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    arities
}

/// A Poseidon-domain value from 32 seeded bytes (top bits cleared: always a field element).
pub(crate) fn poseidon(bytes: [u8; 32]) -> PoseidonDomain {
    PoseidonDomain::try_from_bytes(&fr_safe(bytes)).expect("top bits cleared: a field element")
}

/// The label of `node` at `layer` from its parents' values (already cycled to
/// [`TOTAL_PARENTS`]): SHA-256 over replica id, layer, node, zero padding and parents, top
/// bits cleared, as storage-proofs' labeling proof recomputes it.
fn label(
    replica_id: &PoseidonDomain,
    layer: u32,
    node: u64,
    parents: &[PoseidonDomain],
) -> PoseidonDomain {
    let mut head = [0u8; 64];
    head[..32].copy_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    head[32..36].copy_from_slice(&layer.to_be_bytes());
    head[36..44].copy_from_slice(&node.to_be_bytes());
    let mut h = Sha256::new();
    h.update(head);
    for p in parents {
        h.update(AsRef::<[u8]>::as_ref(p));
    }
    poseidon(h.finalize().into())
}

/// What a challenge's labels are made of: DRG parents at the node's layer, expander parents
/// at the layer below (only the DRG ones at layer 1), repeated to [`TOTAL_PARENTS`].
fn labeling_parents(
    columns: &BTreeMap<u64, Vec<PoseidonDomain>>,
    drg: &[u64],
    exp: &[u64],
    layer: usize,
) -> Vec<PoseidonDomain> {
    let value = |node: &u64, layer: usize| columns[node][layer - 1];
    let mut base: Vec<PoseidonDomain> = drg.iter().map(|p| value(p, layer)).collect();
    if layer > 1 {
        base.extend(exp.iter().map(|p| value(p, layer - 1)));
    }
    base.iter().copied().cycle().take(TOTAL_PARENTS).collect()
}

/// Builds the C1 output of `sector`.
pub(crate) fn c1(sector: &VirtualSector) -> Result<SealCommitPhase1Output, FilecoinError> {
    with_tree!(sector.sector_size, c1_for_tree, sector)
}

fn c1_for_tree<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    sector: &VirtualSector,
) -> Result<SealCommitPhase1Output, FilecoinError> {
    let registered = sector.seal_proof()?;
    let config = registered.as_v1_config();
    let setup = setup_params(&config).map_err(FilecoinError::fp)?;
    let pub_params = StackedDrg::<Tree, Sha256Hasher>::setup(&setup).map_err(FilecoinError::fp)?;
    let graph = &pub_params.graph;
    let nodes = setup.nodes as u64;
    let layers = pub_params.num_layers;
    let base_degree = graph.base_graph().degree();

    // Data: a seeded pattern repeated over the sector; its tree's root is comm_d.
    let pattern_len = DATA_PATTERN_NODES.min(nodes as usize);
    let pattern = (0..pattern_len as u64)
        .map(|i| Sha256Domain(fr_safe(prf(sector.seed, b"data", &[i]))))
        .collect();
    let tree_d = PeriodicTree::<Sha256Hasher>::new(pattern, nodes.ilog2() as usize);
    let comm_d = tree_d.root();
    let replica_id = generate_replica_id::<PoseidonHasher, _>(
        &sector.prover_id(),
        sector.sector_number,
        &sector.ticket,
        comm_d,
        &config.porep_id,
    );

    // The challenges of every partition, and their parents.
    let pub_inputs = stacked::PublicInputs::<PoseidonDomain, Sha256Domain> {
        replica_id,
        seed: Some(sector.seed_bytes),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<u64>> = (0..partitions)
        .map(|k| {
            pub_inputs
                .challenges(&pub_params.challenges, nodes as usize, Some(k))
                .into_iter()
                .map(|c| c as u64)
                .collect()
        })
        .collect();
    let mut parents_of: BTreeMap<u64, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for &c in challenges.iter().flatten() {
        let mut p = vec![0u32; graph.degree()];
        graph
            .parents(c as usize, &mut p)
            .map_err(FilecoinError::fp)?;
        let p: Vec<u64> = p.into_iter().map(u64::from).collect();
        parents_of.insert(c, (p[..base_degree].to_vec(), p[base_degree..].to_vec()));
    }

    // Columns: seeded values for every parent; real labels for challenged nodes, layer by
    // layer and node by node (DRG parents precede their node; expander parents are read a
    // layer below), so a challenged parent is labelled before it is read.
    let mut columns: BTreeMap<u64, Vec<PoseidonDomain>> = BTreeMap::new();
    for (drg, exp) in parents_of.values() {
        for &p in drg.iter().chain(exp) {
            columns.entry(p).or_insert_with(|| {
                (1..=layers as u64)
                    .map(|layer| poseidon(prf(sector.seed, b"column", &[p, layer])))
                    .collect()
            });
        }
    }
    for &c in parents_of.keys() {
        columns.insert(c, vec![PoseidonDomain::default(); layers]);
    }
    for layer in 1..=layers {
        for (&c, (drg, exp)) in &parents_of {
            let parents = labeling_parents(&columns, drg, exp, layer);
            let l = label(&replica_id, layer as u32, c, &parents);
            columns.get_mut(&c).expect("inserted above")[layer - 1] = l;
        }
    }

    // Trees C (column hashes) and R (last label + data) over the touched leaves.
    let arities = tree_arities::<Tree>(nodes);
    let column_hash = |node: u64| -> PoseidonDomain { column_of(node, &columns).hash().into() };
    let tree_c = SparseTree::<PoseidonHasher>::new(
        arities.clone(),
        poseidon(prf(sector.seed, b"tree-c-default", &[])),
        columns.keys().map(|&n| (n, column_hash(n))),
    );
    let replica = |node: u64| -> PoseidonDomain {
        let key: blstrs::Scalar = columns[&node][layers - 1].into();
        let data: blstrs::Scalar = Domain::try_from_bytes(&tree_d.leaf(node).0)
            .map(|d: PoseidonDomain| d.into())
            .expect("data nodes are field elements");
        (key + data).into()
    };
    let tree_r = SparseTree::<PoseidonHasher>::new(
        arities,
        poseidon(prf(sector.seed, b"tree-r-default", &[])),
        parents_of.keys().map(|&c| (c, replica(c))),
    );
    let (comm_c, comm_r_last) = (tree_c.root(), tree_r.root());
    let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);

    let column_proof = |node: u64| -> ColumnProof<TreeProof<Tree>> {
        let inclusion = TreeProof::<Tree>::from_parts(tree_c.leaf(node), comm_c, tree_c.path(node));
        ColumnProof::from_column(column_of(node, &columns), inclusion)
            .expect("from_column does not fail")
    };
    let proof = |c: u64| -> RawProof<Tree> {
        let (drg, exp) = &parents_of[&c];
        let labeling_proofs: Vec<LabelingProof<PoseidonHasher>> = (1..=layers)
            .map(|layer| {
                LabelingProof::new(layer as u32, c, labeling_parents(&columns, drg, exp, layer))
            })
            .collect();
        let encoding_proof = EncodingProof::new(
            layers as u32,
            c,
            labeling_parents(&columns, drg, exp, layers),
        );
        stacked::Proof {
            comm_d_proofs: MerkleProof::<Sha256Hasher, U2>::from_parts(
                tree_d.leaf(c),
                comm_d,
                tree_d.path(c),
            ),
            comm_r_last_proof: TreeProof::<Tree>::from_parts(
                tree_r.leaf(c),
                comm_r_last,
                tree_r.path(c),
            ),
            replica_column_proofs: ReplicaColumnProof {
                c_x: column_proof(c),
                drg_parents: drg.iter().map(|&p| column_proof(p)).collect(),
                exp_parents: exp.iter().map(|&p| column_proof(p)).collect(),
            },
            labeling_proofs,
            encoding_proof,
        }
    };
    let vanilla: Vec<Vec<RawProof<Tree>>> = challenges
        .iter()
        .map(|cs| cs.iter().map(|&c| proof(c)).collect())
        .collect();

    // Our label function must be storage-proofs': check one labelling of each challenge.
    for p in vanilla.iter().flatten() {
        let labeled = p
            .replica_column_proofs
            .c_x
            .get_node_at_layer(layers)
            .map_err(FilecoinError::fp)?;
        if !p.labeling_proofs[layers - 1].verify(&replica_id, labeled) {
            return Err(FilecoinError::Fixture(
                "virtual sector: a computed label does not verify".into(),
            ));
        }
    }

    Ok(SealCommitPhase1Output {
        registered_proof: registered,
        vanilla_proofs: vanilla_seal_proof(sector.sector_size, Box::new(vanilla))?,
        comm_r: comm_r.into_bytes().try_into().expect("32 bytes"),
        comm_d: comm_d.0,
        replica_id,
        seed: sector.seed_bytes,
        ticket: sector.ticket,
    })
}

fn column_of(node: u64, columns: &BTreeMap<u64, Vec<PoseidonDomain>>) -> Column<PoseidonHasher> {
    Column::new(node as u32, columns[&node].clone()).expect("Column::new does not fail")
}

/// Wraps typed vanilla proofs into the API's enum (the variant of the sector size).
fn vanilla_seal_proof(
    sector_size: u64,
    proofs: Box<dyn Any>,
) -> Result<VanillaSealProof, FilecoinError> {
    let wrong = || FilecoinError::Fixture("virtual sector: tree shape of the wrong size".into());
    Ok(match sector_size {
        s if s == 2 << 10 => {
            VanillaSealProof::StackedDrg2KiBV1(*proofs.downcast().map_err(|_| wrong())?)
        }
        s if s == 8 << 20 => {
            VanillaSealProof::StackedDrg8MiBV1(*proofs.downcast().map_err(|_| wrong())?)
        }
        s if s == 512 << 20 => {
            VanillaSealProof::StackedDrg512MiBV1(*proofs.downcast().map_err(|_| wrong())?)
        }
        s if s == 32 << 30 => {
            VanillaSealProof::StackedDrg32GiBV1(*proofs.downcast().map_err(|_| wrong())?)
        }
        s if s == 64 << 30 => {
            VanillaSealProof::StackedDrg64GiBV1(*proofs.downcast().map_err(|_| wrong())?)
        }
        s => return Err(FilecoinError::Unsupported(format!("sector size {s}"))),
    })
}
