//! Shared test helpers: the GPU or a printed skip, random data, device round trips.
#![allow(dead_code)]

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cudarc::driver::CudaSlice;
use ff::Field;
use filprove_cuda::Gpu;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The GPU, or None with a printed SKIP; panics instead when FILPROVE_REQUIRE_GPU=1.
pub fn gpu(test: &str) -> Option<Gpu> {
    match Gpu::open(0) {
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

/// Random scalars with a sprinkling of 0, 1 and -1.
/// n scalars in the Filecoin witness mix (docs/reference/circuits.md): 51 % zeros, 47 %
/// ones, 2 % random, in a fixed pattern of 100.
pub fn filecoin_mix(rng: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    (0..n)
        .map(|i| match i % 100 {
            0..=50 => Fr::ZERO,
            51..=97 => Fr::ONE,
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

pub fn scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    use rand::Rng;
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            2 => -Fr::ONE,
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

/// n G1 points, cheaply: a random walk over 16 random steps, with a duplicate, a negation
/// and the identity among the first ones.
pub fn g1_points(rng: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    let steps: Vec<G1Projective> = (0..16).map(|_| G1Projective::random(&mut *rng)).collect();
    let mut acc = G1Projective::random(&mut *rng);
    let mut v: Vec<G1Projective> = (0..n)
        .map(|i| {
            acc += steps[i % 16];
            acc
        })
        .collect();
    edge_points(&mut v);
    let mut out = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&v, &mut out);
    out
}

/// As [`g1_points`], in G2.
pub fn g2_points(rng: &mut ChaCha8Rng, n: usize) -> Vec<G2Affine> {
    let steps: Vec<G2Projective> = (0..16).map(|_| G2Projective::random(&mut *rng)).collect();
    let mut acc = G2Projective::random(&mut *rng);
    let mut v: Vec<G2Projective> = (0..n)
        .map(|i| {
            acc += steps[i % 16];
            acc
        })
        .collect();
    edge_points(&mut v);
    let mut out = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&v, &mut out);
    out
}

fn edge_points<G: Group>(v: &mut [G]) {
    if v.len() > 4 {
        v[1] = v[0];
        v[2] = -v[0];
        v[3] = G::identity();
    }
}

/// Reads a device byte buffer back.
pub fn download(gpu: &Gpu, d: &CudaSlice<u8>) -> Vec<u8> {
    let mut host = vec![0u8; d.len()];
    gpu.stream().memcpy_dtoh(d, &mut host).expect("download");
    gpu.sync().expect("sync");
    host
}

/// Sizes to test up to 2^max_lg: 1, 2, 3, 2^k - 1, 2^k, 2^k + 1 for several k.
pub fn sizes(max_lg: u32) -> Vec<usize> {
    let mut v = vec![1, 2, 3, 5, 7];
    let mut k = 3;
    while k <= max_lg {
        let n = 1usize << k;
        v.extend([n - 1, n, n + 1]);
        k += if k < 12 { 3 } else { 4 };
    }
    v.retain(|&n| n <= 1 << max_lg);
    v.sort();
    v.dedup();
    v
}

/// G1 projective to affine, for comparisons.
pub fn aff1(p: G1Projective) -> G1Affine {
    p.to_affine()
}
