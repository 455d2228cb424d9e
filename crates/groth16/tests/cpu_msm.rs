//! The CPU MSMs against the naive sum of scalar multiplications.

use ff::Field;
use filprove_groth16::cpu::msm::{
    msm, msm_split, msm_split_with, msm_with, naive, MsmAffine, MsmEngine,
};
use filprove_groth16::cpu::{msm_g1_dense, msm_g2_dense};
use filprove_groth16::density::DensityBits;
use filprove_groth16::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, ProveError};
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn g1_points(rng: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    // Random multiples of a few random points: cheaper than n hashes to the curve.
    let base: Vec<G1Projective> = (0..8).map(|_| G1Projective::random(&mut *rng)).collect();
    let proj: Vec<G1Projective> = (0..n)
        .map(|i| base[i % 8] * Fr::from(rng.gen::<u64>()) + base[(i + 3) % 8])
        .collect();
    let mut out = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&proj, &mut out);
    out
}

fn g2_points(rng: &mut ChaCha8Rng, n: usize) -> Vec<G2Affine> {
    let base: Vec<G2Projective> = (0..4).map(|_| G2Projective::random(&mut *rng)).collect();
    let proj: Vec<G2Projective> = (0..n)
        .map(|i| base[i % 4] * Fr::from(rng.gen::<u64>()) + base[(i + 1) % 4])
        .collect();
    let mut out = vec![G2Affine::default(); n];
    G2Projective::batch_normalize(&proj, &mut out);
    out
}

/// Filecoin-like scalars: about half zeros, 45 % ones, the rest random or -1.
fn mixed_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=49 => Fr::ZERO,
            50..=94 => Fr::ONE,
            95..=96 => -Fr::ONE,
            97 => Fr::from(rng.gen::<u64>()),
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

fn random_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

const ENGINES: [MsmEngine; 2] = [MsmEngine::Blst, MsmEngine::Native];

/// Checks the plain and the split MSM, with both engines, against the naive sum.
fn check_all<A: MsmAffine>(bases: &[A], scalars: &[Fr], what: &str) {
    let expect = naive(bases, scalars);
    for e in ENGINES {
        assert!(
            msm_with(e, bases, scalars).unwrap() == expect,
            "{what}: plain {e:?}"
        );
        let split = msm_split_with(e, bases, scalars, None).unwrap();
        assert!(split == expect, "{what}: split {e:?}");
    }
    assert!(
        msm(bases, scalars).unwrap() == expect,
        "{what}: default plain"
    );
    assert!(
        msm_split(bases, scalars, None).unwrap() == expect,
        "{what}: default split"
    );
}

const SIZES: &[usize] = &[
    0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096,
];

#[test]
fn g1_plain_and_split_match_naive() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let all = g1_points(&mut rng, 4096);
    for &n in SIZES {
        let bases = &all[..n];
        for scalars in [random_scalars(&mut rng, n), mixed_scalars(&mut rng, n)] {
            check_all(bases, &scalars, &format!("n={n}"));
        }
    }
}

#[test]
fn g1_edge_scalars_and_points() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let n = 1500;
    let bases = g1_points(&mut rng, n);
    let cases: Vec<(&str, Vec<Fr>)> = vec![
        ("zeros", vec![Fr::ZERO; n]),
        ("ones", vec![Fr::ONE; n]),
        ("minus one", vec![-Fr::ONE; n]),
        ("two", vec![Fr::from(2u64); n]),
        ("minus two", vec![-Fr::from(2u64); n]),
        (
            "powers of two",
            (0..n)
                .map(|i| Fr::from(2u64).pow_vartime([(i % 255) as u64]))
                .collect(),
        ),
    ];
    for (name, scalars) in &cases {
        check_all(&bases, scalars, name);
    }
    let ones_sum = bases.iter().fold(G1Projective::identity(), |a, b| a + b);
    assert_eq!(msm_split(&bases, &cases[1].1, None).unwrap(), ones_sum);
    assert!(bool::from(msm(&bases, &cases[0].1).unwrap().is_identity()));

    // Identity bases mixed in, and one point repeated many times.
    let mut with_id = bases.clone();
    for i in (0..n).step_by(7) {
        with_id[i] = G1Affine::default();
    }
    let rep = vec![bases[3]; n];
    for pts in [&with_id, &rep] {
        for scalars in [random_scalars(&mut rng, n), mixed_scalars(&mut rng, n)] {
            check_all(pts, &scalars, "identity / repeated bases");
        }
    }
    // Scalars that cancel: s and -s on the same point.
    let mut pts = vec![bases[0]; 64];
    pts.extend_from_slice(&vec![bases[1]; 64]);
    let half = random_scalars(&mut rng, 64);
    let scalars: Vec<Fr> = half
        .iter()
        .copied()
        .chain(half.iter().map(|s| -*s))
        .collect();
    let mut pts2 = vec![bases[0]; 128];
    pts2[64..].copy_from_slice(&vec![bases[0]; 64]);
    assert!(bool::from(msm(&pts2, &scalars).unwrap().is_identity()));
    assert_eq!(msm(&pts, &scalars).unwrap(), naive(&pts, &scalars));
}

fn density(rng: &mut ChaCha8Rng, n: usize, p: f64) -> DensityBits {
    let mut d = DensityBits::new();
    for _ in 0..n {
        if rng.gen_bool(p) {
            d.push_set();
        } else {
            d.push_clear();
        }
    }
    d
}

#[test]
fn density_selected_subsets() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let all = g1_points(&mut rng, 40_000);
    for (n, p) in [
        (0usize, 0.5),
        (1, 1.0),
        (1, 0.0),
        (63, 0.5),
        (64, 0.9),
        (65, 0.1),
        (3000, 0.75),
        (20_000, 0.3),
        (40_000, 0.97),
    ] {
        let d = density(&mut rng, n, p);
        let scalars = mixed_scalars(&mut rng, n);
        let bases = &all[..d.count_ones()];
        let selected: Vec<Fr> = d.iter_ones().map(|i| scalars[i]).collect();
        let expect = naive(bases, &selected);
        assert_eq!(
            msm_g1_dense(bases, &scalars, Some(&d)).unwrap(),
            expect,
            "n={n} p={p}"
        );
        let native = msm_split_with(MsmEngine::Native, bases, &scalars, Some(&d)).unwrap();
        assert_eq!(native, expect, "native n={n} p={p}");
    }
}

#[test]
fn g2_matches_naive() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let all = g2_points(&mut rng, 1100);
    for n in [0usize, 1, 2, 5, 64, 257, 1025] {
        let bases = &all[..n];
        for scalars in [random_scalars(&mut rng, n), mixed_scalars(&mut rng, n)] {
            check_all(bases, &scalars, &format!("g2 n={n}"));
            assert_eq!(
                msm_g2_dense(bases, &scalars, None).unwrap(),
                naive(bases, &scalars)
            );
        }
    }
    let d = density(&mut rng, 1500, 0.6);
    let scalars = mixed_scalars(&mut rng, 1500);
    let bases = &all[..d.count_ones().min(1100)];
    if bases.len() == d.count_ones() {
        let selected: Vec<Fr> = d.iter_ones().map(|i| scalars[i]).collect();
        assert_eq!(
            msm_g2_dense(bases, &scalars, Some(&d)).unwrap(),
            naive(bases, &selected)
        );
    }
    assert_eq!(
        msm_g2_dense(&all[..10], &scalars[..10], None)
            .unwrap()
            .to_affine(),
        naive(&all[..10], &scalars[..10]).to_affine()
    );
}

#[test]
fn shape_mismatches_are_errors() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let bases = g1_points(&mut rng, 10);
    let scalars = random_scalars(&mut rng, 11);
    assert!(matches!(
        msm(&bases, &scalars),
        Err(ProveError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        msm_split(&bases, &scalars, None),
        Err(ProveError::ShapeMismatch { .. })
    ));
    let d = density(&mut rng, 11, 0.5);
    let wrong = &bases[..(d.count_ones() + 1).min(10)];
    if wrong.len() != d.count_ones() {
        assert!(matches!(
            msm_g1_dense(wrong, &scalars, Some(&d)),
            Err(ProveError::ShapeMismatch { .. })
        ));
    }
    let d12 = density(&mut rng, 12, 0.5);
    assert!(matches!(
        msm_g1_dense(&bases, &scalars, Some(&d12)),
        Err(ProveError::ShapeMismatch { .. })
    ));
}
