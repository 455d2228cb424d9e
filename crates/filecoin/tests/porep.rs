//! PoRep (C2) at 2 KiB, end to end: fixture C1, generated parameters, the CPU backend,
//! filecoin-proofs' `verify_seal`.

mod common;

use filprove_filecoin::fixtures::{FIXTURE_MINER_ID, FIXTURE_SECTOR_NUMBER};
use filprove_filecoin::{ProofKind, ProofRequest, RequestBody, SynthesisPath};
use filprove_groth16::keygen::R1csAssembly;

#[test]
fn porep_2k_end_to_end() {
    let req = common::request(ProofKind::PoRep);
    let proof = common::prove_cpu(&req, 5);
    assert_eq!(proof.len(), 192);
    assert!(req.verify(&proof).unwrap());
    for i in [0, 47, 48, 143, 144, 191] {
        assert!(
            !req.verify(&common::flip(&proof, i)).unwrap(),
            "flipped byte {i} verified"
        );
    }
    assert!(!req
        .verify(&[proof.clone(), proof.clone()].concat())
        .unwrap());
}

/// A sector sealed with the synthetic-PoRep seal proof (its C1 opens the synthetic
/// challenges filecoin-proofs kept in the cache): our C2 uses the same circuit and
/// parameters, and filecoin-proofs' `verify_seal` accepts the proof for that seal proof.
#[test]
fn synthetic_porep_2k_end_to_end() {
    let req = common::synthetic_porep_request();
    let filprove_filecoin::RequestBody::PoRep { c1, .. } = req.body() else {
        panic!("not a PoRep request");
    };
    assert_eq!(
        c1.registered_proof,
        filprove_filecoin::RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep
    );
    // The same circuit and parameter file as the plain V1_1 seal proof.
    assert_eq!(
        req.circuit().cache_id,
        common::request(ProofKind::PoRep).circuit().cache_id
    );
    let proof = common::prove_cpu(&req, 6);
    assert!(req.verify(&proof).unwrap());
    assert!(!req.verify(&common::flip(&proof, 100)).unwrap());
}

/// Non-interactive PoRep (2 KiB: 13 partitions of the plain PoRep circuit, same
/// parameters): every partition synthesizes with the public inputs the verifier computes
/// for it, no two partitions alike, and the last partition's proof from the CPU backend
/// verifies against its own public inputs and not against another partition's. (The
/// fixture, the SnarkPack SRS, the aggregation and `verify_seal`'s rejections are
/// `inputs::non_interactive_porep_inputs`; proving all 13 partitions would take minutes.)
#[test]
fn non_interactive_porep_2k_partitions_prove_their_own_inputs() {
    use filprove_groth16::{Backend, ProofInput, Randomness};
    use rand::SeedableRng;

    let req = common::non_interactive_porep_request();
    assert_eq!(req.num_partitions(), 13);
    let expected = req.public_inputs().unwrap();
    assert_eq!(expected.len(), 13);
    for k in 0..13 {
        for j in 0..k {
            assert_ne!(expected[j], expected[k], "partitions {j} and {k}");
        }
    }
    let last = 12;
    let mut proved = None;
    for (k, want) in expected.iter().enumerate() {
        let part = req.synthesize(k).unwrap();
        assert_eq!(&part.public_inputs, want, "partition {k}");
        assert_eq!(
            &part.assignment.input_assignment[1..],
            &want[..],
            "partition {k}: the witness's inputs"
        );
        if k == last {
            proved = Some(part);
        }
    }
    let part = proved.unwrap();
    let srs = common::srs(&req.circuit());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let input = ProofInput {
        assignment: &part.assignment,
        randomness: Randomness::random(&mut rng),
    };
    let proof = filprove_groth16::cpu::CpuBackend::default()
        .prove(&srs, &[input])
        .unwrap()
        .pop()
        .unwrap();
    assert!(srs.vk.verify(&proof, &expected[last]));
    assert!(!srs.vk.verify(&proof, &expected[last - 1]));
    assert!(!srs.vk.verify(&proof, &expected[0]));
}

/// The challenges of a PoRep partition synthesized in parallel give the assignment that
/// ordered synthesis gives, field for field and bit for bit, through the upstream gadgets
/// and through the circuit twin (which never falls back here): the first time a seal proof
/// is seen (challenge 0 in order, the shape learnt) and after (every challenge in
/// parallel); for the interactive, synthetic and non-interactive seal proofs (the last
/// with several partitions; at 2 KiB each partition has 2 challenges). Ordered synthesis
/// is checked against the circuit's R1CS (the keygen capture): a and b are A w and B w,
/// and (A w)(B w) = C w on every row.
#[test]
fn parted_porep_synthesis_equals_ordered() {
    let ni = common::non_interactive_porep_request();
    let fallbacks = filprove_filecoin::twin_fallbacks();
    for (name, req) in [
        ("porep", common::request(ProofKind::PoRep)),
        ("synthetic", common::synthetic_porep_request()),
        ("non-interactive", ni),
    ] {
        let last = req.num_partitions() - 1;
        let r1cs = req.circuit().blank_r1cs().unwrap();
        for first in [SynthesisPath::Twin, SynthesisPath::Gadgets] {
            filprove_groth16::parts::forget_shapes();
            for k in [0, last, 0] {
                check_parted(name, &req, &r1cs, k, first);
            }
        }
    }
    assert_eq!(filprove_filecoin::twin_fallbacks(), fallbacks);
}

/// A virtual 8 MiB sector (2 challenges of 1.9 M constraints, 2 layers): ordered synthesis
/// satisfies the circuit's R1CS, and the twin gives what it gives, learning the shape and
/// then with every challenge twin.
#[test]
fn twin_synthesis_of_a_virtual_8m_partition_equals_ordered() {
    let c1 = filprove_filecoin::virtual_sector::porep_c1(8 << 20, 21).unwrap();
    let req = ProofRequest::new(RequestBody::PoRep {
        c1: Box::new(c1),
        sector_number: FIXTURE_SECTOR_NUMBER,
        miner_id: FIXTURE_MINER_ID,
    })
    .unwrap();
    let fallbacks = filprove_filecoin::twin_fallbacks();
    let want = req.synthesize_in_order(0).unwrap();
    let r1cs = req.circuit().blank_r1cs().unwrap();
    r1cs.check_assignment(&want.assignment).unwrap();
    drop(r1cs);
    filprove_groth16::parts::forget_shapes();
    for _ in 0..2 {
        let got = req.synthesize_with(0, SynthesisPath::Twin).unwrap();
        assert!(got.assignment == want.assignment, "8 MiB: the twin differs");
        assert_eq!(got.public_inputs, want.public_inputs);
    }
    assert_eq!(filprove_filecoin::twin_fallbacks(), fallbacks);
}

/// Partition `k` of `req` through `first` then the other parted path, each equal to
/// ordered synthesis, which satisfies `r1cs`.
fn check_parted(
    name: &str,
    req: &ProofRequest,
    r1cs: &R1csAssembly,
    k: usize,
    first: SynthesisPath,
) {
    let want = req.synthesize_in_order(k).unwrap();
    r1cs.check_assignment(&want.assignment)
        .unwrap_or_else(|e| panic!("{name} partition {k}: {e}"));
    let other = match first {
        SynthesisPath::Twin => SynthesisPath::Gadgets,
        _ => SynthesisPath::Twin,
    };
    for path in [first, other] {
        let got = req.synthesize_with(k, path).unwrap();
        assert!(
            got.assignment == want.assignment,
            "{name} partition {k} ({path:?}): parted synthesis differs ({} / {} constraints)",
            got.assignment.num_constraints(),
            want.assignment.num_constraints()
        );
        assert_eq!(got.public_inputs, want.public_inputs);
    }
}
