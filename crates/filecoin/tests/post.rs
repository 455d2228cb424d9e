//! WindowPoSt and WinningPoSt at 2 KiB, end to end: fixtures, generated parameters, the CPU
//! backend, filecoin-proofs' verifiers; and filecoin-proofs' own prover on the same files.

mod common;

use filprove_filecoin::{prove, prove_with_randomness, ProofKind, RequestBody};
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::Randomness;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn check_flips(req: &filprove_filecoin::ProofRequest, proof: &[u8]) {
    for i in [0, 20, 47, 48, 100, 143, 144, 170, 191] {
        assert!(
            !req.verify(&common::flip(proof, i)).unwrap(),
            "flipped byte {i} verified"
        );
    }
    assert!(!req.verify(&proof[..191]).unwrap());
}

#[test]
fn window_post_2k_end_to_end() {
    let req = common::request(ProofKind::WindowPoSt);
    let srs = common::srs(&req.circuit());
    let backend = CpuBackend::default();
    let proof = prove(&req, &backend, &srs, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(req.verify(&proof).unwrap());
    check_flips(&req, &proof);
    // Synthesized by the circuit twin (none of this binary's tests falls back).
    assert_eq!(filprove_filecoin::twin_fallbacks(), 0);

    // Deterministic with given r, s.
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let r = [Randomness::random(&mut rng)];
    let a = prove_with_randomness(&req, &backend, &srs, &r).unwrap();
    let b = prove_with_randomness(&req, &backend, &srs, &r).unwrap();
    assert_eq!(a, b);

    // filecoin-proofs' own prover reads the same parameter files; both proofs verify.
    let RequestBody::WindowPoSt {
        registered,
        randomness,
        vanilla_proofs,
        ..
    } = req.body()
    else {
        unreachable!()
    };
    let theirs = filecoin_proofs_api::post::generate_single_window_post_with_vanilla(
        *registered,
        randomness,
        req.prover_id().unwrap(),
        vanilla_proofs,
        0,
    )
    .unwrap();
    assert!(req.verify(&theirs.0).unwrap());
}

#[test]
fn window_post_verifier_prepared_ahead() {
    // The WindowPoSt key is prepared in filecoin-proofs' cache through a proof that must
    // not verify; a second call finds it there; a real proof then verifies against it.
    let req = common::request(ProofKind::WindowPoSt);
    let spec = req.circuit();
    common::ensure_params(&spec);
    assert!(spec.prepare_verifier().unwrap());
    assert!(spec.prepare_verifier().unwrap());
    let proof = common::prove_cpu(&req, 5);
    assert!(req.verify(&proof).unwrap());
    // Nothing to prepare for WinningPoSt: its key is small.
    let winning = common::request(ProofKind::WinningPoSt).circuit();
    assert!(!winning.prepare_verifier().unwrap());
}

#[test]
fn window_post_2k_later_partition() {
    // With WindowPoSt V1_2 the challenges do not depend on the partition index, so the same
    // vanilla proofs make a valid partition 1: with its sectors in order it verifies as a
    // deadline of its own (filecoin-proofs' `verify_window_post`), in reverse order
    // through the per-partition public inputs and the process's prepared key (twice: the
    // second verification finds the key prepared). Each proof is well formed for the other
    // request, whose public inputs differ, and is refused there.
    let base = common::request(ProofKind::WindowPoSt);
    let RequestBody::WindowPoSt {
        registered,
        miner_id,
        randomness,
        vanilla_proofs,
        ..
    } = base.body().clone()
    else {
        unreachable!()
    };
    assert_eq!(vanilla_proofs.len(), 2);
    let reversed: Vec<_> = vanilla_proofs.iter().rev().cloned().collect();
    let mut proved = Vec::new();
    for (seed, vanilla_proofs) in [(3, vanilla_proofs), (5, reversed)] {
        let req = filprove_filecoin::ProofRequest::new(RequestBody::WindowPoSt {
            registered,
            miner_id,
            randomness,
            partition_index: 1,
            vanilla_proofs,
        })
        .unwrap();
        let srs = common::srs(&req.circuit());
        let proof = prove(
            &req,
            &CpuBackend::default(),
            &srs,
            &mut ChaCha8Rng::seed_from_u64(seed),
        )
        .unwrap();
        assert!(req.verify(&proof).unwrap());
        check_flips(&req, &proof);
        assert!(req.verify(&proof).unwrap());
        proved.push((req, proof));
    }
    let [(sorted, sorted_proof), (reversed, reversed_proof)] = &proved[..] else {
        unreachable!()
    };
    assert!(!sorted.verify(reversed_proof).unwrap());
    assert!(!reversed.verify(sorted_proof).unwrap());
}

#[test]
fn winning_post_2k_end_to_end() {
    let req = common::request(ProofKind::WinningPoSt);
    let srs = common::srs(&req.circuit());
    let proof = prove(
        &req,
        &CpuBackend::default(),
        &srs,
        &mut ChaCha8Rng::seed_from_u64(4),
    )
    .unwrap();
    assert_eq!(proof.len(), 192);
    assert!(req.verify(&proof).unwrap());
    check_flips(&req, &proof);
    assert_eq!(
        filprove_filecoin::twin_fallbacks(),
        0,
        "synthesized by the twin"
    );

    let RequestBody::WinningPoSt {
        registered,
        randomness,
        vanilla_proofs,
        ..
    } = req.body()
    else {
        unreachable!()
    };
    let theirs = filecoin_proofs_api::post::generate_winning_post_with_vanilla(
        *registered,
        randomness,
        req.prover_id().unwrap(),
        vanilla_proofs,
    )
    .unwrap();
    assert!(req.verify(&theirs[0].1).unwrap());
}

#[test]
fn blank_shapes_match_synthesis_and_published_figures() {
    // (kind, constraints, inputs incl. ONE, aux) of 2 KiB circuits, from the design facts
    // (section 1), whose constraint counts exclude the one constraint per input bellperson adds.
    for (kind, constraints, inputs, aux) in [
        (ProofKind::WindowPoSt, 21_866, 23, 22_128),
        (ProofKind::WinningPoSt, 90_750, 133, 91_674),
    ] {
        let req = common::request(kind);
        let shape = req.circuit().blank_shape().unwrap();
        let part = req.synthesize(0).unwrap();
        assert_eq!(
            shape.constraints,
            part.assignment.num_constraints(),
            "{kind}"
        );
        assert_eq!(
            shape.inputs,
            part.assignment.input_assignment.len(),
            "{kind}"
        );
        assert_eq!(shape.aux, part.assignment.aux_assignment.len(), "{kind}");
        assert_eq!(part.public_inputs.len() + 1, shape.inputs, "{kind}");
        assert_eq!(
            (shape.constraints - shape.inputs, shape.inputs, shape.aux),
            (constraints, inputs, aux),
            "{kind}"
        );
    }
}

/// Constraints of one Poseidon hash of `arity` numbers through filecoin-hashers' gadget.
fn poseidon_constraints(arity: usize) -> u64 {
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use filecoin_hashers::poseidon::PoseidonFunction;
    use filecoin_hashers::HashFunction;
    use filprove_groth16::{Fr, ProvingAssignment};
    use generic_array::typenum::{U2, U8};
    let mut cs = ProvingAssignment::default();
    cs.alloc_input(|| "one", || Ok(<Fr as ff::Field>::ONE))
        .unwrap();
    let leaves: Vec<_> = (0..arity as u64)
        .map(|i| AllocatedNum::alloc(cs.namespace(|| format!("l{i}")), || Ok(Fr::from(i))).unwrap())
        .collect();
    let before = cs.a.len();
    match arity {
        2 => PoseidonFunction::hash_multi_leaf_circuit::<U2, _>(&mut cs, &leaves, 0),
        8 => PoseidonFunction::hash_multi_leaf_circuit::<U8, _>(&mut cs, &leaves, 0),
        _ => unreachable!(),
    }
    .unwrap();
    (cs.a.len() - before) as u64
}

#[test]
fn constraint_profiles_add_up_to_the_circuits() {
    use filprove_filecoin::{CircuitSpec, GadgetFamily};
    // (circuit, sectors, challenges per sector, levels of arity 8 per path)
    for (name, sectors, challenges, levels) in [
        ("wpost-2k", 2u64, 10u64, 2u64),
        ("winning-2k", 66, 1, 2),
        ("wpost-8m", 2, 10, 6),
    ] {
        let spec = CircuitSpec::from_short_name(name).unwrap();
        let profile = spec.constraint_profile().unwrap();
        let shape = spec.blank_shape().unwrap();
        assert_eq!(profile.constraints(), shape.constraints as u64, "{name}");
        assert_eq!(profile.aux(), shape.aux as u64, "{name}");
        assert_eq!(profile.inputs, shape.inputs as u64, "{name}");
        assert_eq!(profile.parts as u64, sectors, "{name}");
        let family = |f| profile.families.get(&f).copied().unwrap_or_default();
        let hashes = sectors * (challenges * levels * poseidon_constraints(8));
        let comm_r = sectors * poseidon_constraints(2);
        assert_eq!(
            family(GadgetFamily::Poseidon).constraints,
            hashes + comm_r,
            "{name}"
        );
        assert_eq!(
            family(GadgetFamily::PathBits).constraints,
            sectors * challenges * levels * 3,
            "{name}"
        );
        // One root check per path; per sector comm_r against its hash and its input.
        assert_eq!(
            family(GadgetFamily::Equality).constraints,
            sectors * (challenges + 2),
            "{name}"
        );
    }
    assert!(CircuitSpec::from_short_name("porep-2k")
        .unwrap()
        .constraint_profile()
        .is_err());
}
