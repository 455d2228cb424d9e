//! Synthesis time of PoRep's SHA-256 pieces, upstream gadgets against the native twins,
//! into a ProvingAssignment on one thread:
//!
//!     cargo run --release -p filprove-filecoin --example native_synth_bench [-- ITERS]
//!
//! Each piece starts from the same prepared system (its inputs allocated), whose vectors
//! are either grown as synthesis goes ("fresh") or reserved beforehand ("reserved", as
//! the engine's reused buffers are). Prints the best of ITERS runs (default 5).

use std::time::{Duration, Instant};

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::ConstraintSystem;
use ff::Field;
use filecoin_hashers::{sha256::Sha256Hasher, Hasher};
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

type TreeD =
    MerkleTreeWrapper<Sha256Hasher, DiskStore<<Sha256Hasher as Hasher>::Domain>, U2, U0, U0>;

/// Best time of `iters` runs of `f` on copies of `base`, and the number of constraints
/// it adds. "Fresh" copies grow their vectors as synthesis goes; "warm" ones are one
/// reused system, emptied and refilled with `base` (its memory allocated and touched
/// before, as the engine's reused buffers are).
fn best(
    base: &ProvingAssignment,
    iters: usize,
    warm: bool,
    mut f: impl FnMut(&mut ProvingAssignment),
) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut added = 0;
    let mut work = ProvingAssignment::default();
    for _ in 0..iters + warm as usize {
        if warm {
            work.clear();
            work.a.extend_from_slice(&base.a);
            work.b.extend_from_slice(&base.b);
            work.input_assignment
                .extend_from_slice(&base.input_assignment);
            work.aux_assignment.extend_from_slice(&base.aux_assignment);
            work.a_aux_density.append(&base.a_aux_density);
            work.b_input_density.append(&base.b_input_density);
            work.b_aux_density.append(&base.b_aux_density);
            assert!(work == *base);
        } else {
            work = base.clone();
        }
        let t = Instant::now();
        f(&mut work);
        best = best.min(t.elapsed());
        added = work.a.len() - base.a.len();
        std::hint::black_box(&work);
    }
    (best, added)
}

fn report(name: &str, gadget: (Duration, usize), native: (Duration, usize)) {
    assert_eq!(gadget.1, native.1, "{name}: constraint counts differ");
    let per = |d: Duration| d.as_nanos() as f64 / gadget.1 as f64;
    println!(
        "{name:<28} {:>8} constraints  gadget {:>9.2?} ({:>6.1} ns/c)  native {:>9.2?} ({:>5.1} ns/c)  x{:.1}",
        gadget.1,
        gadget.0,
        per(gadget.0),
        native.0,
        per(native.0),
        gadget.0.as_secs_f64() / native.0.as_secs_f64()
    );
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .map_or(5, |s| s.parse().expect("ITERS"));
    let mut rng = ChaCha8Rng::seed_from_u64(7);

    // A label of layer 2: replica id bits, 14 parents' bits, the node.
    let mut base = ProvingAssignment::default();
    base.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    let id = AllocatedNum::alloc(&mut base, || Ok(Fr::random(&mut rng))).unwrap();
    let replica_id = id.to_bits_le(&mut base).unwrap();
    let parents: Vec<Vec<Boolean>> = (0..14)
        .map(|_| {
            let p = AllocatedNum::alloc(&mut base, || Ok(Fr::random(&mut rng))).unwrap();
            reverse_bit_numbering(p.to_bits_le(&mut base).unwrap())
        })
        .collect();
    let node = UInt64::alloc(&mut base, Some(rng.gen::<u64>() >> 30)).unwrap();
    let mut expanded = parents.clone();
    expanded.extend_from_slice(&parents);
    expanded.extend_from_slice(&parents[..9]);

    // A tree D path of 30 levels.
    let path: Vec<(Vec<Option<Fr>>, Option<usize>)> = (0..30)
        .map(|l| {
            (
                vec![Some(Fr::random(&mut rng))],
                Some((0x2b5a_3c4d_usize >> l) & 1),
            )
        })
        .collect();
    let root = AllocatedNum::alloc(&mut base, || Ok(Fr::random(&mut rng))).unwrap();
    let leaf = AllocatedNum::alloc(&mut base, || Ok(Fr::random(&mut rng))).unwrap();

    if std::env::var("NATIVE_ONLY").is_ok() {
        // For profilers: native labels only, on a warm system.
        let n = best(&base, iters, true, |cs| {
            native::create_label(
                cs.namespace(|| "label"),
                &replica_id,
                expanded.clone(),
                2,
                &node,
            )
            .unwrap();
        });
        println!("native create_label {:?} for {} constraints", n.0, n.1);
        return;
    }

    for reserve in [false, true] {
        let tag = if reserve { "warm" } else { "fresh" };
        let g = best(&base, iters, reserve, |cs| {
            create_label_circuit(
                cs.namespace(|| "label"),
                &replica_id,
                expanded.clone(),
                UInt32::constant(2),
                node.clone(),
            )
            .unwrap();
        });
        let n = best(&base, iters, reserve, |cs| {
            native::create_label(
                cs.namespace(|| "label"),
                &replica_id,
                expanded.clone(),
                2,
                &node,
            )
            .unwrap();
        });
        report(&format!("create_label ({tag})"), g, n);

        let g = best(&base, iters, reserve, |cs| {
            PoRCircuit::<TreeD>::synthesize(
                cs.namespace(|| "comm_d"),
                Root::Var(leaf.clone()),
                AuthPath::from(path.clone()),
                Root::Var(root.clone()),
                true,
            )
            .unwrap();
        });
        let n = best(&base, iters, reserve, |cs| {
            native::tree_d_inclusion(cs.namespace(|| "comm_d"), path.clone(), &root, &leaf)
                .unwrap();
        });
        report(&format!("tree D, 30 levels ({tag})"), g, n);
    }
}
