//! PoRep (C2) at 2 KiB, end to end: fixture C1, generated parameters, the CPU backend,
//! filecoin-proofs' `verify_seal`.

mod common;

use filprove_filecoin::{prove, ProofKind};
use filprove_groth16::cpu::CpuBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn porep_2k_end_to_end() {
    let req = common::request(ProofKind::PoRep);
    let srs = common::srs(&req.circuit());
    let proof = prove(
        &req,
        &CpuBackend::default(),
        &srs,
        &mut ChaCha8Rng::seed_from_u64(5),
    )
    .unwrap();
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
