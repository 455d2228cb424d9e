//! Shared test fixtures: one directory under the target dir, made once (under a file lock)
//! and reused by every test binary and every run.
//!
//! - `<target>/tmp/filprove-test-fixtures/2k/`: request files of all four kinds (2 KiB);
//! - `<target>/tmp/filprove-test-fixtures/params/`: generated test parameters. The tests set
//!   `FIL_PROOFS_PARAMETER_CACHE` to it (and `FIL_PROOFS_PARENT_CACHE` next to it unless set)
//!   before any filecoin-proofs call, so production parameters are never touched.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use filprove_filecoin::fixtures::FixtureSet;
use filprove_filecoin::shared_fixtures::SharedFixtures;
use filprove_filecoin::{CircuitSpec, ProofKind, ProofRequest};
use filprove_groth16::Srs;

pub struct Env {
    pub root: PathBuf,
    pub params: PathBuf,
    pub set_2k: FixtureSet,
    shared: SharedFixtures,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filprove-test-fixtures")
}

/// The shared environment; call first in every test.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let shared = SharedFixtures::open_and_export(&root()).unwrap();
        let set_2k = shared.set("2k", 2048).unwrap();
        Env {
            root: shared.root.clone(),
            params: shared.params.clone(),
            set_2k,
            shared,
        }
    })
}

/// The 8 MiB fixtures (made on first use; about a minute on 2 cores).
pub fn set_8m() -> FixtureSet {
    env().shared.set("8m", 8 << 20).unwrap()
}

/// Makes sure the test parameters of `spec` exist (generating them once, under the lock).
pub fn ensure_params(spec: &CircuitSpec) {
    env().shared.ensure_params(spec).unwrap();
}

/// The parameters of `spec` (generated if needed).
pub fn srs(spec: &CircuitSpec) -> Srs {
    ensure_params(spec);
    spec.load_srs(&env().params, false).unwrap()
}

/// The 2 KiB request of `kind`.
pub fn request(kind: ProofKind) -> ProofRequest {
    env().set_2k.request(kind).unwrap()
}

/// The 2 KiB synthetic-PoRep request (sealed with the synthetic seal proof on first use).
pub fn synthetic_porep_request() -> ProofRequest {
    let path = env().shared.synthetic_porep("2k", 2048).unwrap();
    ProofRequest::from_request_json(&std::fs::read(path).unwrap()).unwrap()
}

/// The 2 KiB non-interactive PoRep request (sealed with the NI seal proof on first use).
pub fn non_interactive_porep_request() -> ProofRequest {
    let path = env().shared.non_interactive_porep("2k", 2048).unwrap();
    ProofRequest::from_request_json(&std::fs::read(path).unwrap()).unwrap()
}

/// `req` proved on the CPU backend with its parameters and r, s from `seed`.
pub fn prove_cpu(req: &ProofRequest, seed: u64) -> Vec<u8> {
    use rand::SeedableRng;
    let srs = srs(&req.circuit());
    filprove_filecoin::prove(
        req,
        &filprove_groth16::cpu::CpuBackend::default(),
        &srs,
        &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed),
    )
    .unwrap()
}

/// A copy of `bytes` with one bit of byte `i` flipped.
pub fn flip(bytes: &[u8], i: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[i] ^= 0x01;
    b
}
