//! SnapDeals at 2 KiB, end to end: fixture update proofs, generated parameters, the CPU
//! backend, filecoin-proofs' `verify_empty_sector_update_proof`.

mod common;

use filprove_filecoin::{prove, ProofKind};
use filprove_groth16::cpu::CpuBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn snap_2k_end_to_end() {
    let req = common::request(ProofKind::SnapDeals);
    assert_eq!(req.num_partitions(), 1);
    let srs = common::srs(&req.circuit());
    let proof = prove(
        &req,
        &CpuBackend::default(),
        &srs,
        &mut ChaCha8Rng::seed_from_u64(6),
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
}
