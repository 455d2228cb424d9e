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
