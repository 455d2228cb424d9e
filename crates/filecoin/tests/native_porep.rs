//! The native PoRep twins against the upstream gadgets: on two ProvingAssignments with
//! the same history (ONE first, then the same allocations), upstream's gadget on one and
//! the twin on the other must leave equal assignments.

use assign::{assert_same, fresh};
use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::ConstraintSystem;
use ff::Field;
use filecoin_hashers::sha256::{Sha256Function, Sha256Hasher};
use filecoin_hashers::{HashFunction, Hasher};
use filprove_filecoin::native;
use filprove_groth16::{Fr, ProvingAssignment};
use generic_array::typenum::{U0, U2};
use merkletree::store::DiskStore;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::MerkleTreeWrapper;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::create_label_circuit;

#[path = "common/assign.rs"]
mod assign;

type TreeD =
    MerkleTreeWrapper<Sha256Hasher, DiskStore<<Sha256Hasher as Hasher>::Domain>, U2, U0, U0>;

/// What a PoRep challenge's labeling reads, allocated the same way in a system: the
/// replica id's bits, the 14 parents' bits (6 DRG, 8 expander) and the node.
struct LabelInputs {
    replica_id: Vec<Boolean>,
    parents: Vec<Vec<Boolean>>,
    node: UInt64,
}

fn alloc_label_inputs(cs: &mut ProvingAssignment, seed: u64) -> LabelInputs {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let id = AllocatedNum::alloc(&mut *cs, || Ok(Fr::random(&mut rng))).unwrap();
    let replica_id = id.to_bits_le(&mut *cs).unwrap();
    let parents = (0..14)
        .map(|_| {
            let p = AllocatedNum::alloc(&mut *cs, || Ok(Fr::random(&mut rng))).unwrap();
            reverse_bit_numbering(p.to_bits_le(&mut *cs).unwrap())
        })
        .collect();
    let node = UInt64::alloc(&mut *cs, Some(rng.gen::<u64>() >> 30)).unwrap();
    LabelInputs {
        replica_id,
        parents,
        node,
    }
}

/// The 37 parents of a label, repeated as storage-proofs-porep does.
fn expanded(parents: &[Vec<Boolean>], layer: u32) -> Vec<Vec<Boolean>> {
    if layer > 1 {
        let mut e = parents.to_vec();
        e.extend_from_slice(parents);
        e.extend_from_slice(&parents[..9]);
        e
    } else {
        let drg = &parents[..6];
        let mut e = Vec::new();
        for _ in 0..6 {
            e.extend_from_slice(drg);
        }
        e.push(drg[0].clone());
        e
    }
}

#[test]
fn create_label_matches_upstream() {
    for (seed, layer) in [(1u64, 1u32), (2, 2), (3, 11)] {
        let (mut g, mut n) = (fresh(), fresh());
        let gi = alloc_label_inputs(&mut g, seed);
        let ni = alloc_label_inputs(&mut n, seed);
        assert_same(&g, &n);
        let gl = create_label_circuit(
            g.namespace(|| "create_label"),
            &gi.replica_id,
            expanded(&gi.parents, layer),
            UInt32::constant(layer),
            gi.node.clone(),
        )
        .unwrap();
        let nl = native::create_label(
            n.namespace(|| "create_label"),
            &ni.replica_id,
            expanded(&ni.parents, layer),
            layer,
            &ni.node,
        )
        .unwrap();
        assert_eq!(gl.get_value(), nl.get_value());
        assert_eq!(gl.get_variable(), nl.get_variable());
        assert_same(&g, &n);
    }
}

#[test]
fn hash2_matches_upstream() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (mut g, mut n) = (fresh(), fresh());
    let (x, y) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let ga = AllocatedNum::alloc(&mut g, || Ok(x)).unwrap();
    let gb = AllocatedNum::alloc(&mut g, || Ok(y)).unwrap();
    let na = AllocatedNum::alloc(&mut n, || Ok(x)).unwrap();
    let nb = AllocatedNum::alloc(&mut n, || Ok(y)).unwrap();
    let gh = Sha256Function::hash2_circuit(g.namespace(|| "h"), &ga, &gb).unwrap();
    let nh = native::hash2(n.namespace(|| "h"), &na, &nb).unwrap();
    assert_eq!(gh.get_value(), nh.get_value());
    assert_same(&g, &n);
    // Same node, hashed the way a Merkle level does.
    let gh = Sha256Function::hash_multi_leaf_circuit::<U2, _>(g.namespace(|| "m"), &[ga, gb], 0)
        .unwrap();
    let nh = native::hash_multi_leaf(n.namespace(|| "m"), &[na, nb]).unwrap();
    assert_eq!(gh.get_value(), nh.get_value());
    assert_same(&g, &n);
}

fn random_path(rng: &mut impl Rng, levels: usize) -> Vec<(Vec<Option<Fr>>, Option<usize>)> {
    let challenge: u64 = rng.gen();
    (0..levels)
        .map(|l| {
            (
                vec![Some(Fr::random(&mut *rng))],
                Some(((challenge >> l) & 1) as usize),
            )
        })
        .collect()
}

#[test]
fn tree_d_inclusion_matches_upstream() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for levels in [6usize, 30] {
        let path = random_path(&mut rng, levels);
        let (leaf, root) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let (mut g, mut n) = (fresh(), fresh());
        // comm_d is a public input of the PoRep circuit, the leaf a private number.
        let groot = AllocatedNum::alloc_input(&mut g, || Ok(root)).unwrap();
        let nroot = AllocatedNum::alloc_input(&mut n, || Ok(root)).unwrap();
        let gleaf = AllocatedNum::alloc(&mut g, || Ok(leaf)).unwrap();
        let nleaf = AllocatedNum::alloc(&mut n, || Ok(leaf)).unwrap();
        PoRCircuit::<TreeD>::synthesize(
            g.namespace(|| "comm_d_inclusion"),
            Root::Var(gleaf),
            AuthPath::from(path.clone()),
            Root::Var(groot),
            true,
        )
        .unwrap();
        native::tree_d_inclusion(n.namespace(|| "comm_d_inclusion"), path, &nroot, &nleaf).unwrap();
        assert_same(&g, &n);
        g.finish();
        n.finish();
        assert_same(&g, &n);
    }
}

#[test]
fn missing_values_are_assignment_missing() {
    let (_, mut n) = (fresh(), fresh());
    let root = AllocatedNum::alloc(&mut n, || Ok(Fr::ONE)).unwrap();
    let leaf = AllocatedNum::alloc(&mut n, || Ok(Fr::ONE)).unwrap();
    let path = vec![(vec![None], Some(0))];
    let err = native::tree_d_inclusion(&mut n, path, &root, &leaf).unwrap_err();
    assert!(matches!(err, bellperson::SynthesisError::AssignmentMissing));
}
