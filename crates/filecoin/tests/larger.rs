//! Larger sectors, run on request (`cargo test -p filprove-filecoin --test larger -- --ignored`):
//! 8 MiB fixtures of every kind, and WindowPoSt / WinningPoSt proofs at 8 MiB.

mod common;

use std::time::Instant;

use filprove_filecoin::fixtures;
use filprove_filecoin::{prove, ProofKind};
use filprove_groth16::cpu::CpuBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
#[ignore = "seals 8 MiB sectors (tens of seconds on 2 cores)"]
fn fixtures_and_post_8m() {
    let env = common::env();
    let dir = env.root.join("8m");
    let t = Instant::now();
    let set = fixtures::make(&dir, 8 << 20, &ProofKind::ALL, 8).unwrap();
    eprintln!("made 8 MiB fixtures in {:.1?}", t.elapsed());
    for kind in ProofKind::ALL {
        let req = set.request(kind).unwrap();
        assert_eq!(req.circuit().sector_size, 8 << 20);
    }
    assert_eq!(
        set.request(ProofKind::SnapDeals).unwrap().num_partitions(),
        4
    );
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

/// filecoin-proofs' own C2 and update prover read the parameter files we generate, and
/// their proofs pass our verification (about two minutes on 2 cores).
#[test]
#[ignore = "runs filecoin-proofs' own CPU prover (minutes)"]
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
