//! PoRep (C2) at 2 KiB, end to end: fixture C1, generated parameters, the CPU backend,
//! filecoin-proofs' `verify_seal`.

mod common;

use filprove_filecoin::ProofKind;

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
