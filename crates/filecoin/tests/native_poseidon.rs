//! The native Poseidon twins against neptune's gadget as filecoin-hashers calls it: on two
//! ProvingAssignments with the same history, the gadget on one and the twin on the other
//! must leave equal assignments (aux values, a, b, densities) and equal results. The
//! same for the inclusion paths in Poseidon trees against storage-proofs' `PoRCircuit`.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use ff::Field;
use filecoin_hashers::poseidon::{PoseidonFunction, PoseidonHasher};
use filecoin_hashers::{HashFunction, Hasher, PoseidonArity};
use filprove_filecoin::native::{por, poseidon};
use filprove_groth16::{Fr, ProvingAssignment};
use generic_array::typenum::{Unsigned, U0, U11, U16, U2, U4, U8};
use merkletree::store::DiskStore;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::{MerkleTreeTrait, MerkleTreeWrapper};

#[path = "common/assign.rs"]
mod assign;

use assign::{assert_same, fresh};

/// How a preimage's numbers are allocated before the hash.
#[derive(Clone, Copy, Debug)]
enum Preimage {
    /// Distinct private numbers.
    Private,
    /// The first number public (an input variable), the rest private.
    FirstPublic,
    /// One private number, repeated.
    Repeated,
}

fn alloc_preimage(
    cs: &mut ProvingAssignment,
    values: &[Fr],
    kind: Preimage,
) -> Vec<AllocatedNum<Fr>> {
    match kind {
        Preimage::Repeated => {
            let n = AllocatedNum::alloc(&mut *cs, || Ok(values[0])).unwrap();
            vec![n; values.len()]
        }
        _ => values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if i == 0 && matches!(kind, Preimage::FirstPublic) {
                    AllocatedNum::alloc_input(&mut *cs, || Ok(v)).unwrap()
                } else {
                    AllocatedNum::alloc(&mut *cs, || Ok(v)).unwrap()
                }
            })
            .collect(),
    }
}

/// Hashes the same random preimage with the gadget and the twin, twice in a row (the
/// second hash's preimage holds the first's result), and compares everything.
fn check_arity<A: PoseidonArity>(seed: u64, kind: Preimage) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let values: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();
    let (mut g, mut n) = (fresh(), fresh());
    let gp = alloc_preimage(&mut g, &values, kind);
    let np = alloc_preimage(&mut n, &values, kind);
    assert_same(&g, &n);
    let gh =
        PoseidonFunction::hash_multi_leaf_circuit::<A, _>(g.namespace(|| "h"), &gp, 0).unwrap();
    let nh = poseidon::hash_multi_leaf::<A, _>(n.namespace(|| "h"), &np).unwrap();
    assert_eq!(gh.get_value(), nh.get_value(), "arity {}", A::to_usize());
    assert_eq!(gh.get_variable(), nh.get_variable());
    assert_same(&g, &n);

    let mut gp2 = gp;
    let mut np2 = np;
    gp2[A::to_usize() - 1] = gh;
    np2[A::to_usize() - 1] = nh;
    let gh =
        PoseidonFunction::hash_multi_leaf_circuit::<A, _>(g.namespace(|| "h2"), &gp2, 1).unwrap();
    let nh = poseidon::hash_multi_leaf::<A, _>(n.namespace(|| "h2"), &np2).unwrap();
    assert_eq!(gh.get_value(), nh.get_value());
    assert!(g.aux_assignment.len() > 2 * 300, "the hashes allocated");
    assert_same(&g, &n);
    g.finish();
    n.finish();
    assert_same(&g, &n);
}

fn check_all_preimages<A: PoseidonArity>(seed: u64) {
    for (i, kind) in [Preimage::Private, Preimage::FirstPublic, Preimage::Repeated]
        .into_iter()
        .enumerate()
    {
        check_arity::<A>(seed * 10 + i as u64, kind);
    }
}

#[test]
fn arity_2_matches_upstream() {
    check_all_preimages::<U2>(1);
}

#[test]
fn arity_8_matches_upstream() {
    check_all_preimages::<U8>(2);
}

#[test]
fn arity_11_matches_upstream() {
    check_all_preimages::<U11>(3);
}

#[test]
fn arities_4_and_16_match_upstream() {
    check_all_preimages::<U4>(4);
    check_all_preimages::<U16>(5);
}

#[test]
fn hash2_matches_upstream() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let (x, y) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let (mut g, mut n) = (fresh(), fresh());
    let ga = AllocatedNum::alloc(&mut g, || Ok(x)).unwrap();
    let gb = AllocatedNum::alloc(&mut g, || Ok(y)).unwrap();
    let na = AllocatedNum::alloc(&mut n, || Ok(x)).unwrap();
    let nb = AllocatedNum::alloc(&mut n, || Ok(y)).unwrap();
    let gh = PoseidonFunction::hash2_circuit(g.namespace(|| "h"), &ga, &gb).unwrap();
    let nh = poseidon::hash2(n.namespace(|| "h"), &na, &nb).unwrap();
    assert_eq!(gh.get_value(), nh.get_value());
    assert_same(&g, &n);
}

#[test]
fn bad_preimages_are_errors() {
    let mut n = fresh();
    let a = AllocatedNum::alloc(&mut n, || Ok(Fr::ONE)).unwrap();
    let Err(err) = poseidon::hash_multi_leaf::<U8, _>(&mut n, &[a.clone(), a]) else {
        panic!("a preimage of 2 numbers hashed at arity 8");
    };
    assert!(matches!(err, SynthesisError::IoError(_)), "{err:?}");
}

/// A random path of a tree of arities `base` (`levels` levels), `sub` and `top` (one level
/// each unless 0), as `MerkleProof::as_options` gives it.
fn random_path(
    rng: &mut ChaCha8Rng,
    levels: usize,
    arities: [usize; 3],
) -> Vec<(Vec<Option<Fr>>, Option<usize>)> {
    let [base, sub, top] = arities;
    let level_arities = std::iter::repeat_n(base, levels)
        .chain((sub > 0).then_some(sub))
        .chain((top > 0).then_some(top));
    level_arities
        .map(|arity| {
            let siblings = (1..arity).map(|_| Some(Fr::random(&mut *rng))).collect();
            (siblings, Some(rng.gen_range(0..arity)))
        })
        .collect()
}

fn check_tree<Tree: MerkleTreeTrait<Hasher = PoseidonHasher>>(seed: u64, levels: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let arities = [
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    ];
    let path = random_path(&mut rng, levels, arities);
    let (leaf, root) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let (mut g, mut n) = (fresh(), fresh());
    let groot = AllocatedNum::alloc(&mut g, || Ok(root)).unwrap();
    let nroot = AllocatedNum::alloc(&mut n, || Ok(root)).unwrap();
    let gleaf = AllocatedNum::alloc(&mut g, || Ok(leaf)).unwrap();
    let nleaf = AllocatedNum::alloc(&mut n, || Ok(leaf)).unwrap();
    PoRCircuit::<Tree>::synthesize(
        g.namespace(|| "inclusion"),
        Root::Var(gleaf),
        AuthPath::from(path.clone()),
        Root::Var(groot),
        true,
    )
    .unwrap();
    por::tree_inclusion::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
        n.namespace(|| "inclusion"),
        path,
        &nroot,
        &nleaf,
    )
    .unwrap();
    assert!(g.input_assignment.len() > 1, "the path bits are inputs");
    assert_same(&g, &n);
    g.finish();
    n.finish();
    assert_same(&g, &n);
}

type Tree<B, S, T> =
    MerkleTreeWrapper<PoseidonHasher, DiskStore<<PoseidonHasher as Hasher>::Domain>, B, S, T>;

#[test]
fn tree_inclusion_matches_upstream_at_porep_shapes() {
    // 2 KiB .. 512 MiB: base only; 32 GiB: base and sub; 64 GiB: base, sub and top.
    check_tree::<Tree<U8, U0, U0>>(7, 2);
    check_tree::<Tree<U8, U0, U0>>(8, 9);
    check_tree::<Tree<U8, U8, U0>>(9, 9);
    check_tree::<Tree<U8, U8, U2>>(10, 9);
}

#[test]
fn bad_paths_are_errors() {
    let mut n = fresh();
    let leaf = AllocatedNum::alloc(&mut n, || Ok(Fr::ONE)).unwrap();
    // Too few siblings at a level of arity 8.
    let short = vec![(vec![Some(Fr::ONE); 3], Some(0))];
    let err = por::tree_inclusion::<U8, U0, U0, _>(&mut n, short, &leaf, &leaf).unwrap_err();
    assert!(matches!(err, SynthesisError::IoError(_)), "{err:?}");
    // A path with no level for the top tree.
    let err = por::tree_inclusion::<U8, U8, U2, _>(&mut n, vec![], &leaf, &leaf).unwrap_err();
    assert!(matches!(err, SynthesisError::IoError(_)), "{err:?}");
    // A missing sibling.
    let missing = vec![(vec![None; 7], Some(0))];
    let err = por::tree_inclusion::<U8, U0, U0, _>(&mut n, missing, &leaf, &leaf).unwrap_err();
    assert!(matches!(err, SynthesisError::AssignmentMissing), "{err:?}");
}
