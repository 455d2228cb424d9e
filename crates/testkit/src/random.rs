//! Random test data: scalars in the mixes provers meet, curve points, blinding factors,
//! parameters and sizes around powers of two. Everything is drawn from a caller's RNG, so
//! a printed seed replays a failure.

use bellperson::Circuit;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use filprove_groth16::keygen::generate_parameters;
use filprove_groth16::{Fr, ParamsError, Randomness, Srs};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A ChaCha8 RNG from `seed`.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `n` random scalars with a sprinkling of 0, 1 and -1 (a tenth each).
pub fn scalars<R: RngCore>(rng: &mut R, n: usize) -> Vec<Fr> {
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            2 => -Fr::ONE,
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

/// `n` scalars in the Filecoin witness mix (docs/reference/circuits.md): 51 % zeros,
/// 47 % ones, 2 % random, in a fixed pattern of 100.
pub fn filecoin_mix<R: RngCore>(rng: &mut R, n: usize) -> Vec<Fr> {
    (0..n)
        .map(|i| match i % 100 {
            0..=50 => Fr::ZERO,
            51..=97 => Fr::ONE,
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

/// `n` G1 points, cheaply: a random walk over 16 random steps, with a duplicate, a
/// negation and the identity among the first ones.
pub fn g1_points<R: RngCore>(rng: &mut R, n: usize) -> Vec<G1Affine> {
    let v = walk::<G1Projective, R>(rng, n);
    let mut out = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&v, &mut out);
    out
}

/// As [`g1_points`], in G2.
pub fn g2_points<R: RngCore>(rng: &mut R, n: usize) -> Vec<G2Affine> {
    let v = walk::<G2Projective, R>(rng, n);
    let mut out = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&v, &mut out);
    out
}

fn walk<G: Group, R: RngCore>(rng: &mut R, n: usize) -> Vec<G> {
    let steps: Vec<G> = (0..16).map(|_| G::random(&mut *rng)).collect();
    let mut acc = G::random(&mut *rng);
    let mut v: Vec<G> = (0..n)
        .map(|i| {
            acc += steps[i % 16];
            acc
        })
        .collect();
    if v.len() > 4 {
        v[1] = v[0];
        v[2] = -v[0];
        v[3] = G::identity();
    }
    v
}

/// Sizes to test up to 2^max_lg: 1, 2, 3, 5, 7 and 2^k - 1, 2^k, 2^k + 1 for several k.
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

/// `n` random blinding factors.
pub fn randomness<R: RngCore>(rng: &mut R, n: usize) -> Vec<Randomness> {
    (0..n).map(|_| Randomness::random(&mut *rng)).collect()
}

/// Parameters of `circuit` from toxic waste drawn from `seed` (the same seed, the same
/// parameters).
pub fn params<C: Circuit<Fr>>(circuit: C, seed: u64) -> Result<Srs, ParamsError> {
    generate_parameters(circuit, &mut rng(seed))
}
