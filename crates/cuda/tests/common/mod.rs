//! Shared test helpers: the GPU or a printed skip, a replayable RNG, random data (from
//! the test kit), device round trips.
#![allow(dead_code)]

use blstrs::{G1Affine, G1Projective};
use cudarc::driver::CudaSlice;
use filprove_cuda::testing::Gpu;
use group::Curve;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The GPU, or None with a printed SKIP; panics instead when FILPROVE_REQUIRE_GPU=1.
pub fn gpu(test: &str) -> Option<Gpu> {
    opened(test, Gpu::open(0))
}

/// As [`gpu`], with the field self-test kernels loaded too.
pub fn gpu_selftest(test: &str) -> Option<Gpu> {
    opened(test, Gpu::open_selftest(0))
}

fn opened(test: &str, gpu: Result<Gpu, filprove_groth16::ProveError>) -> Option<Gpu> {
    match gpu {
        Ok(g) => Some(g),
        Err(e) => {
            if std::env::var("FILPROVE_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: FILPROVE_REQUIRE_GPU=1 but the GPU is unusable: {e}");
            }
            // Written to the stderr handle directly, not with eprintln!, so the test
            // harness does not capture it: a skip must be visible in CI's log.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIP {test}: {e}");
            None
        }
    }
}

/// A fresh RNG, seeded from the clock (printed so a failure can be replayed).
pub fn rng(test: &str) -> ChaCha8Rng {
    let seed = std::env::var("FILPROVE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("{test}: seed {seed}");
    ChaCha8Rng::seed_from_u64(seed)
}

#[allow(unused_imports)] // each test binary uses some
pub use filprove_testkit::random::{filecoin_mix, g1_points, g2_points, scalars, sizes};

/// Reads a device byte buffer back.
pub fn download(gpu: &Gpu, d: &CudaSlice<u8>) -> Vec<u8> {
    let mut host = vec![0u8; d.len()];
    gpu.stream().memcpy_dtoh(d, &mut host).expect("download");
    gpu.sync().expect("sync");
    host
}

/// G1 projective to affine, for comparisons.
pub fn aff1(p: G1Projective) -> G1Affine {
    p.to_affine()
}
