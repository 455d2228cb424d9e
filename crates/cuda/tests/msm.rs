//! Device MSMs (G1, G2, plain and split) against blstrs' multi_exp.

mod common;

use blstrs::{G1Affine, Scalar as Fr};
use ff::Field;
use filprove_cuda::testing::field::bytes_of;
use filprove_cuda::testing::msm::{
    fold_shift, msm_folded, msm_host, msm_host_with, upload_bases, G1, G2,
};
use filprove_cuda::testing::Gpu;
use filprove_cuda::{LeftoverReduce, MsmTuning};
use filprove_groth16::cpu;
use group::prime::PrimeCurveAffine;
use group::Curve;

#[test]
fn g1_msm_matches_cpu() {
    let Some(gpu) = common::gpu("g1_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("g1_msm");
    let max = 1usize << 20;
    let bases = common::g1_points(&mut rng, max);
    let scalars = common::scalars(&mut rng, max);
    for n in common::sizes(20) {
        let want = cpu::msm_g1(&bases[..n], &scalars[..n]).unwrap();
        for split in [false, true] {
            let got = msm_host::<G1>(&gpu, &bases[..n], &scalars[..n], split).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "G1 MSM of {n}, split {split}"
            );
        }
    }
}

#[test]
fn g2_msm_matches_cpu() {
    let Some(gpu) = common::gpu("g2_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("g2_msm");
    let max = 1usize << 16;
    let bases = common::g2_points(&mut rng, max);
    let scalars = common::scalars(&mut rng, max);
    for n in common::sizes(16) {
        let want = cpu::msm_g2(&bases[..n], &scalars[..n]).unwrap();
        for split in [false, true] {
            let got = msm_host::<G2>(&gpu, &bases[..n], &scalars[..n], split).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "G2 MSM of {n}, split {split}"
            );
        }
    }
}

/// Filecoin-like witnesses: half zeros, most of the rest ones; all-equal scalars; all zero.
#[test]
fn split_msm_edge_distributions() {
    let Some(gpu) = common::gpu("split_msm_edge_distributions") else {
        return;
    };
    let mut rng = common::rng("split");
    let n = 1 << 14;
    let bases = common::g1_points(&mut rng, n);
    let bases2 = common::g2_points(&mut rng, 1 << 10);
    let filecoin = common::filecoin_mix(&mut rng, n);
    let same = vec![Fr::random(&mut rng); n];
    let ones = vec![Fr::ONE; n];
    let zeros = vec![Fr::ZERO; n];
    let minus = vec![-Fr::ONE; n];
    for (name, s) in [
        ("filecoin", &filecoin),
        ("same", &same),
        ("ones", &ones),
        ("zeros", &zeros),
        ("minus-one", &minus),
    ] {
        let want = cpu::msm_g1(&bases, s).unwrap();
        for split in [false, true] {
            let got = msm_host::<G1>(&gpu, &bases, s, split).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "G1 {name}, split {split}"
            );
        }
        let m = bases2.len();
        let want2 = cpu::msm_g2(&bases2, &s[..m]).unwrap();
        let got2 = msm_host::<G2>(&gpu, &bases2, &s[..m], true).unwrap();
        assert_eq!(got2.to_affine(), want2.to_affine(), "G2 {name}");
    }
}

/// The binned scatter (msm.cuh, step 3) forced on at every size, G1 and G2, plain and
/// split: random scalars, one heavy bucket, the Filecoin mix, -1 (every window's top
/// bucket) and small integers (window 0's low bins only, the others empty). Every other
/// compiled shape of its bin pass on G1 at a few sizes (partial tiles, several tiles).
#[test]
fn binned_scatter_matches_cpu() {
    let Some(gpu) = common::gpu("binned_scatter_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("binned_scatter");
    let max = 1usize << 16;
    let max2 = 1usize << 12;
    let bases = common::g1_points(&mut rng, max);
    let bases2 = common::g2_points(&mut rng, max2);
    let random = common::scalars(&mut rng, max);
    let same = vec![Fr::random(&mut rng); max];
    let filecoin = common::filecoin_mix(&mut rng, max);
    let minus = vec![-Fr::ONE; max];
    let small: Vec<Fr> = (0..max).map(|i| Fr::from((i % 300) as u64)).collect();
    let kinds = [
        ("random", &random),
        ("same", &same),
        ("filecoin", &filecoin),
        ("minus-one", &minus),
        ("small", &small),
    ];
    let binned = MsmTuning {
        binned_min: 0,
        ..MsmTuning::PRODUCTION
    };
    for n in common::sizes(16) {
        for (name, s) in kinds {
            let want = cpu::msm_g1(&bases[..n], &s[..n]).unwrap();
            let want2 = (n <= max2).then(|| cpu::msm_g2(&bases2[..n], &s[..n]).unwrap());
            for split in [false, true] {
                let got = msm_host_with::<G1>(&gpu, &bases[..n], &s[..n], split, &binned).unwrap();
                assert_eq!(
                    got.to_affine(),
                    want.to_affine(),
                    "G1 {name} of {n}, split {split}"
                );
                if let Some(want2) = want2 {
                    let got2 =
                        msm_host_with::<G2>(&gpu, &bases2[..n], &s[..n], split, &binned).unwrap();
                    assert_eq!(
                        got2.to_affine(),
                        want2.to_affine(),
                        "G2 {name} of {n}, split {split}"
                    );
                }
            }
        }
    }
}

/// The G1 MSM of `s` over `bases` with `sums`, plain and split, equals the CPU's.
fn g1_plain_and_split_match(gpu: &Gpu, bases: &[G1Affine], s: &[Fr], sums: &MsmTuning, what: &str) {
    let want = cpu::msm_g1(bases, s).unwrap();
    for split in [false, true] {
        let got = msm_host_with::<G1>(gpu, bases, s, split, sums).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "{what}, split {split}");
    }
}

/// n bases from 7 distinct points: mostly the points themselves, some negated, some the
/// identity, in a fixed pattern.
fn repeat_negate_identity<P: PrimeCurveAffine>(distinct: &[P], n: usize) -> Vec<P> {
    (0..n)
        .map(|i| match (i * 7 + i / 3) % 11 {
            0..=6 => distinct[i % 7],
            7..=8 => -distinct[i % 7],
            _ => P::identity(),
        })
        .collect()
}

/// Bases that repeat, cancel and include the identity, under few distinct scalars: a
/// bucket then meets the same point twice (the addition's doubling case), a point and its
/// negation (the sum becomes the identity) and the identity itself.
#[test]
fn repeated_opposite_and_identity_bases() {
    let Some(gpu) = common::gpu("repeated_opposite_and_identity_bases") else {
        return;
    };
    let mut rng = common::rng("repeated");
    let distinct = common::g1_points(&mut rng, 7);
    let distinct2 = common::g2_points(&mut rng, 7);
    let picks = [
        Fr::random(&mut rng),
        Fr::random(&mut rng),
        Fr::ONE,
        -Fr::ONE,
    ];
    for n in [2usize, 3, 64, 1000, 1 << 14] {
        let bases = repeat_negate_identity(&distinct, n);
        let bases2 = repeat_negate_identity(&distinct2, n);
        let scalars: Vec<Fr> = (0..n).map(|i| picks[(i / 7) % picks.len()]).collect();
        let want = cpu::msm_g1(&bases, &scalars).unwrap();
        let want2 = cpu::msm_g2(&bases2, &scalars).unwrap();
        for split in [false, true] {
            let got = msm_host::<G1>(&gpu, &bases, &scalars, split).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "G1 of {n}, split {split}"
            );
            let got2 = msm_host::<G2>(&gpu, &bases2, &scalars, split).unwrap();
            assert_eq!(
                got2.to_affine(),
                want2.to_affine(),
                "G2 of {n}, split {split}"
            );
        }
    }
}

/// The scalar sets of the level tests, `max` each: random, all equal (one heavy bucket), the
/// Filecoin mix, and heavy and light buckets side by side after the levels (two thirds of
/// the scalars from 37 values, a third small integers: window 0's low buckets only).
fn level_scalar_sets(rng: &mut impl rand::RngCore, max: usize) -> [(&'static str, Vec<Fr>); 4] {
    let scalars = common::scalars(&mut *rng, max);
    let same = vec![Fr::random(&mut *rng); max];
    let filecoin = common::filecoin_mix(&mut *rng, max);
    let values: Vec<Fr> = (0..37).map(|_| Fr::random(&mut *rng)).collect();
    let few: Vec<Fr> = (0..max)
        .map(|i| {
            if i % 3 == 0 {
                Fr::from((i % 1000 + 2) as u64)
            } else {
                values[i % values.len()]
            }
        })
        .collect();
    [
        ("random", scalars),
        ("same", same),
        ("filecoin", filecoin),
        ("few", few),
    ]
}

/// The batch-affine levels of the G1 bucket sums, forced on at every size and for 1 to 6
/// levels: random points and scalars, one heavy bucket (all scalars equal), the Filecoin
/// mix through the split MSM, heavy and light buckets mixed (the leftover reduction's
/// two paths), and bases that repeat, cancel and include the identity (the pairs'
/// tangent, identity and pass-through cases).
#[test]
fn affine_levels_match_cpu() {
    let Some(gpu) = common::gpu("affine_levels_match_cpu") else {
        return;
    };
    let mut rng = common::rng("affine_levels");
    let max = 1usize << 17;
    let bases = common::g1_points(&mut rng, max);
    let sets = level_scalar_sets(&mut rng, max);
    let distinct = common::g1_points(&mut rng, 7);
    let picks = [Fr::random(&mut rng), Fr::random(&mut rng), -Fr::ONE];
    // Slots per thread and round: 1, an odd count, and the default; the leftover
    // reduction forced on (its light and heavy buckets at every size), and off; the
    // scatter binned at every size, and direct.
    for (levels, slots, leftover, binned_min) in [
        (1u32, 1u32, LeftoverReduce::Always, 0),
        (2, 5, LeftoverReduce::Never, usize::MAX),
        (3, MsmTuning::SLOTS, LeftoverReduce::Always, usize::MAX),
        (6, 2, LeftoverReduce::Always, 0),
    ] {
        let affine = MsmTuning {
            levels,
            min_entries: 0,
            slots,
            leftover,
            binned_min,
        };
        for n in common::sizes(17) {
            for (name, s) in &sets {
                let what = format!("{levels} levels, {leftover:?}, {name} of {n}");
                g1_plain_and_split_match(&gpu, &bases[..n], &s[..n], &affine, &what);
            }
        }
        for n in [2usize, 3, 64, 1000, 1 << 14] {
            let b = repeat_negate_identity(&distinct, n);
            let s: Vec<Fr> = (0..n).map(|i| picks[(i / 7) % picks.len()]).collect();
            let want = cpu::msm_g1(&b, &s).unwrap();
            let got = msm_host_with::<G1>(&gpu, &b, &s, false, &affine).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "{levels} levels, repeated bases of {n}"
            );
        }
    }
}

/// The batch-affine levels of the G2 bucket sums (Fq2 slopes, the norm's inversion),
/// forced on at every size for 1 to 6 levels, plain and split, on the scalar sets of
/// `level_scalar_sets` and random points, then bases that repeat,
/// cancel and include the identity. What the levels leave goes through the XYZZ chunk
/// sums (G2 has no leftover reduction, even where the tuning asks for it).
#[test]
fn g2_affine_levels_match_cpu() {
    let Some(gpu) = common::gpu("g2_affine_levels_match_cpu") else {
        return;
    };
    let mut rng = common::rng("g2_affine_levels");
    let max = 1usize << 13;
    let bases = common::g2_points(&mut rng, max);
    let sets = level_scalar_sets(&mut rng, max);
    let distinct = common::g2_points(&mut rng, 7);
    let picks = [Fr::random(&mut rng), Fr::random(&mut rng), -Fr::ONE];
    for (levels, slots, leftover) in [
        (1u32, 1u32, LeftoverReduce::Always),
        (2, 5, LeftoverReduce::Never),
        (6, MsmTuning::SLOTS, LeftoverReduce::Auto),
    ] {
        let affine = MsmTuning {
            levels,
            min_entries: 0,
            slots,
            leftover,
            binned_min: usize::MAX,
        };
        for n in common::sizes(13) {
            for (name, s) in &sets {
                let want = cpu::msm_g2(&bases[..n], &s[..n]).unwrap();
                for split in [false, true] {
                    let got =
                        msm_host_with::<G2>(&gpu, &bases[..n], &s[..n], split, &affine).unwrap();
                    assert_eq!(
                        got.to_affine(),
                        want.to_affine(),
                        "{levels} levels, {name} of {n}, split {split}"
                    );
                }
            }
        }
        for n in [2usize, 3, 64, 1000] {
            let b = repeat_negate_identity(&distinct, n);
            let s: Vec<Fr> = (0..n).map(|i| picks[(i / 7) % picks.len()]).collect();
            let want = cpu::msm_g2(&b, &s).unwrap();
            let got = msm_host_with::<G2>(&gpu, &b, &s, false, &affine).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "{levels} levels, repeated bases of {n}"
            );
        }
    }
}

/// The folded G1 MSM (two windows per bucket group over bases and their 2^fold_shift
/// multiples) equals the CPU's MSM over the n bases, on the level tests' scalar sets and
/// -1 (every window's top bucket), with the levels off, on (leftover reduction forced on
/// at every size) and at six levels.
#[test]
fn folded_msm_matches_cpu() {
    let Some(gpu) = common::gpu("folded_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("folded_msm");
    let max = 1usize << 16;
    let bases = common::g1_points(&mut rng, max);
    let [random, same, filecoin, few] = level_scalar_sets(&mut rng, max);
    let minus = ("minus-one", vec![-Fr::ONE; max]);
    let sets = [random, same, filecoin, few, minus];
    let tunings = [
        MsmTuning::OFF,
        MsmTuning {
            min_entries: 0,
            leftover: LeftoverReduce::Always,
            ..MsmTuning::PRODUCTION
        },
        MsmTuning {
            levels: 6,
            min_entries: 0,
            slots: 3,
            ..MsmTuning::PRODUCTION
        },
    ];
    for n in common::sizes(16) {
        let shift = Fr::from(2u64).pow_vartime([u64::from(fold_shift(n))]);
        let mut folded = bases[..n].to_vec();
        folded.extend(bases[..n].iter().map(|b| (*b * shift).to_affine()));
        let db = upload_bases::<G1>(&gpu, &folded).unwrap();
        for (name, s) in &sets {
            let want = cpu::msm_g1(&bases[..n], &s[..n]).unwrap();
            let ds = gpu.upload(bytes_of(&s[..n])).unwrap();
            for t in &tunings {
                let got = msm_folded::<G1>(&gpu, &db.as_view(), &ds.as_view(), n, t)
                    .and_then(|r| r.download::<G1>(&gpu))
                    .unwrap();
                assert_eq!(
                    got.to_affine(),
                    want.to_affine(),
                    "folded {name} of {n}, levels {}",
                    t.levels
                );
            }
        }
    }
}

/// The folded bases' second half made on the device (2^fold_shift(n) times each point,
/// doubled in XYZZ form and taken to affine form) equals the CPU's, the identity included,
/// in one launch and in several.
#[test]
fn folded_bases_match_cpu() {
    use filprove_cuda::testing::folded::{fill_second_half_in, fold_shift};
    use filprove_cuda::testing::msm::Curve as _;
    let Some(gpu) = common::gpu("folded_bases_match_cpu") else {
        return;
    };
    let mut rng = common::rng("folded_bases");
    let mut bases = common::g1_points(&mut rng, 3000);
    bases[17] = G1Affine::identity();
    let ab = G1::AFFINE_BYTES;
    for (n, chunk) in [
        (1usize, 1usize),
        (2, 1),
        (33, 7),
        (3000, 1000),
        (3000, 1 << 22),
    ] {
        let shift = fold_shift(n);
        let k = Fr::from(2u64).pow_vartime([u64::from(shift)]);
        let want: Vec<G1Affine> = bases[..n].iter().map(|b| (*b * k).to_affine()).collect();
        let mut d = gpu.alloc::<u8>(2 * n * ab).unwrap();
        let first = upload_bases::<G1>(&gpu, &bases[..n]).unwrap();
        gpu.stream()
            .memcpy_dtod(&first, &mut d.slice_mut(0..n * ab))
            .unwrap();
        fill_second_half_in(&gpu, gpu.stream(), &mut d, n, chunk).unwrap();
        gpu.sync().unwrap();
        let got = common::download(&gpu, &d);
        assert_eq!(
            &got[n * ab..],
            bytes_of(&want),
            "second half of {n} (2^{shift}) in chunks of {chunk}"
        );
    }
}
