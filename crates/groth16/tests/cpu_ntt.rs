//! The CPU NTT against the definition: naive DFTs at small sizes, round trips, cosets.

use ff::{Field, PrimeField};
use filprove_groth16::cpu::ntt::{bit_reverse, naive_dft, Domain};
use filprove_groth16::Fr;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_vec(rng: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

#[test]
fn omega_is_bellpersons_root() {
    for log_n in [0u32, 1, 5, 17, 20] {
        let d = Domain::new(log_n).unwrap();
        let mut w = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            w = w.square();
        }
        assert_eq!(d.omega(), w);
        assert_eq!(d.omega() * d.omega_inv(), Fr::ONE);
        assert_eq!(d.omega().pow_vartime([d.size() as u64]), Fr::ONE);
        if log_n > 0 {
            assert_eq!(d.omega().pow_vartime([d.size() as u64 / 2]), -Fr::ONE);
        }
    }
}

#[test]
fn too_large_domain_is_an_error() {
    assert!(Domain::new(Fr::S).is_err());
    let d = Domain::new(3).unwrap();
    let mut v = vec![Fr::ONE; 7];
    assert!(d.fft(&mut v).is_err());
}

#[test]
fn fft_matches_naive_dft() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for n in [1usize, 2, 4, 8, 16, 64, 256] {
        let d = Domain::for_len(n).unwrap();
        assert_eq!(d.size(), n);
        let coeffs = random_vec(&mut rng, n);

        let mut v = coeffs.clone();
        d.fft(&mut v).unwrap();
        assert_eq!(v, naive_dft(&coeffs, d.omega()), "fft n={n}");

        // ifft of evaluations gives the coefficients: check against the inverse DFT.
        let mut v = coeffs.clone();
        d.ifft(&mut v).unwrap();
        let inv: Vec<Fr> = naive_dft(&coeffs, d.omega_inv())
            .iter()
            .map(|x| *x * d.size_inv())
            .collect();
        assert_eq!(v, inv, "ifft n={n}");

        // Coset: evaluations at g omega^i.
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        let mut v = coeffs.clone();
        d.coset_fft(&mut v).unwrap();
        let shifted: Vec<Fr> = coeffs
            .iter()
            .enumerate()
            .map(|(i, c)| *c * g.pow_vartime([i as u64]))
            .collect();
        let expect = naive_dft(&shifted, d.omega());
        assert_eq!(v, expect, "coset_fft n={n}");
        // Evaluate directly at g * omega^i too.
        for (i, e) in expect.iter().enumerate().take(4) {
            let x = g * d.omega().pow_vartime([i as u64]);
            let direct = coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c);
            assert_eq!(*e, direct);
        }

        d.icoset_fft(&mut v).unwrap();
        assert_eq!(v, coeffs, "icoset_fft n={n}");
    }
}

#[test]
fn round_trips_at_random_sizes() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut sizes: Vec<u32> = (0..=16).collect();
    for _ in 0..4 {
        sizes.push(rng.gen_range(0..=16));
    }
    for log_n in sizes {
        let d = Domain::cached(log_n).unwrap();
        let coeffs = random_vec(&mut rng, d.size());
        let mut v = coeffs.clone();
        d.fft(&mut v).unwrap();
        d.ifft(&mut v).unwrap();
        assert_eq!(v, coeffs, "fft/ifft 2^{log_n}");
        d.coset_fft(&mut v).unwrap();
        d.icoset_fft(&mut v).unwrap();
        assert_eq!(v, coeffs, "coset round trip 2^{log_n}");
    }
}

#[test]
fn bitrev_pipeline_matches_natural_api() {
    // DIF (natural -> bit-reversed) then DIT (bit-reversed -> natural), as compute_h uses.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for log_n in [0u32, 1, 2, 5, 12, 13, 14, 15] {
        let d = Domain::new(log_n).unwrap();
        let evals = random_vec(&mut rng, d.size());
        let mut expect = evals.clone();
        d.ifft(&mut expect).unwrap();
        d.coset_fft(&mut expect).unwrap();

        let mut v = evals.clone();
        d.ifft_natural_to_bitrev_unscaled(&mut v).unwrap();
        let mut natural = v.clone();
        bit_reverse(&mut natural);
        let mut check = evals.clone();
        d.ifft(&mut check).unwrap();
        let unscaled: Vec<Fr> = check
            .iter()
            .map(|x| *x * Fr::from(d.size() as u64))
            .collect();
        assert_eq!(natural, unscaled, "dif 2^{log_n}");
        d.distribute_powers_bitrev(&mut v, Fr::MULTIPLICATIVE_GENERATOR, d.size_inv())
            .unwrap();
        d.fft_bitrev_to_natural(&mut v).unwrap();
        assert_eq!(v, expect, "coset pipeline 2^{log_n}");
    }
}
