//! SnapDeals at 2 KiB, end to end: fixture update proofs, generated parameters, the CPU
//! backend, filecoin-proofs' `verify_empty_sector_update_proof`.

mod common;

use filprove_filecoin::ProofKind;

#[test]
fn snap_2k_end_to_end() {
    let req = common::request(ProofKind::SnapDeals);
    assert_eq!(req.num_partitions(), 1);
    let proof = common::prove_cpu(&req, 6);
    assert_eq!(proof.len(), 192);
    assert!(req.verify(&proof).unwrap());
    for i in [0, 47, 48, 143, 144, 191] {
        assert!(
            !req.verify(&common::flip(&proof, i)).unwrap(),
            "flipped byte {i} verified"
        );
    }
}
