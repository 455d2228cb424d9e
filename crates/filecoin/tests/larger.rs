//! Larger sectors and filecoin-proofs' own prover: 8 MiB fixtures of every kind, WindowPoSt /
//! WinningPoSt proofs at 8 MiB, SnapDeals partitions at 8 MiB, and filecoin-proofs' prover
//! reading the parameter files we generate.

mod common;

use std::time::Instant;

use filprove_filecoin::{prove, ProofKind};
use filprove_groth16::cpu::CpuBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn fixtures_and_post_8m() {
    let set = common::set_8m();
    for kind in ProofKind::ALL {
        let req = set.request(kind).unwrap();
        assert_eq!(req.circuit().sector_size, 8 << 20);
    }
    for kind in [ProofKind::WindowPoSt, ProofKind::WinningPoSt] {
        let req = set.request(kind).unwrap();
        let srs = common::srs(&req.circuit());
        let proof = prove(
            &req,
            &CpuBackend::default(),
            &srs,
            &mut ChaCha8Rng::seed_from_u64(8),
        )
        .unwrap();
        assert!(req.verify(&proof).unwrap());
    }
}

/// SnapDeals at 8 MiB has 4 partitions: synthesized in parallel, each satisfying the
/// circuit's R1CS (a and b are A w and B w, (A w)(B w) = C w on every row), and each one's
/// circuit inputs equal the verifier's public inputs (the partition index is one).
#[test]
fn snap_8m_partitions_are_consistent() {
    let req = common::set_8m().request(ProofKind::SnapDeals).unwrap();
    assert_eq!(req.num_partitions(), 4);
    let t = Instant::now();
    let parts = req.synthesize_all().unwrap();
    eprintln!("synthesized 4 snap-8m partitions in {:.1?}", t.elapsed());
    let publics = req.public_inputs().unwrap();
    let r1cs = req.circuit().blank_r1cs().unwrap();
    for (k, part) in parts.iter().enumerate() {
        let a = &part.assignment;
        assert_eq!(
            &a.input_assignment[1..],
            &part.public_inputs[..],
            "partition {k}"
        );
        assert_eq!(part.public_inputs, publics[k]);
        r1cs.check_assignment(a)
            .unwrap_or_else(|e| panic!("partition {k}: {e}"));
    }
    assert_ne!(publics[0], publics[1]);
}

/// filecoin-proofs' own C2 and update prover read the parameter files we generate, and
/// their proofs pass our verification (about two minutes on 2 cores).
#[test]
fn filecoin_proofs_prover_uses_our_params() {
    use filprove_filecoin::RequestBody;
    let req = common::request(ProofKind::PoRep);
    common::ensure_params(&req.circuit());
    let RequestBody::PoRep {
        c1, sector_number, ..
    } = req.body()
    else {
        unreachable!()
    };
    let out = filecoin_proofs_api::seal::seal_commit_phase2(
        (**c1).clone(),
        req.prover_id().unwrap(),
        (*sector_number).into(),
    )
    .unwrap();
    assert!(req.verify(&out.proof).unwrap());

    let req = common::request(ProofKind::SnapDeals);
    common::ensure_params(&req.circuit());
    let RequestBody::SnapDeals {
        registered,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs,
    } = req.body()
    else {
        unreachable!()
    };
    let out = filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
        *registered,
        vanilla_proofs
            .iter()
            .cloned()
            .map(filecoin_proofs_api::PartitionProofBytes)
            .collect(),
        *comm_r_old,
        *comm_r_new,
        *comm_d_new,
    )
    .unwrap();
    assert!(req.verify(&out.0).unwrap());
}
