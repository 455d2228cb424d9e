//! Device-made synthetic inputs (src/synth.rs, kernels/synth.cu): the points are valid
//! subgroup points equal to T1[..] + T2[..] computed on the host, distinct, deterministic
//! for a seed and prefix-stable; the scalar mixes have the asked-for shares; the device
//! comparison finds differences.

mod common;

use std::collections::HashSet;

use blstrs::Scalar as Fr;
use cudarc::driver::CudaSlice;
use ff::Field;
use filprove_cuda::testing::field::bytes_of;
use filprove_cuda::testing::msm::{G1, G2};
use filprove_cuda::testing::synth::{self, Mismatch, ScalarMix, SynthCurve, Tables, T1_LG};
use filprove_cuda::testing::Gpu;
use rand::Rng;
use rayon::prelude::*;

/// Sizes around the batch (32 points per thread) and the T1 length (2^14).
fn small_sizes() -> Vec<usize> {
    let t = 1usize << T1_LG;
    vec![
        1,
        2,
        3,
        5,
        31,
        32,
        33,
        127,
        1000,
        4097,
        t - 1,
        t,
        t + 1,
        3 * t + 7,
    ]
}

/// Every point of `got` (made from `tables`) against the host sum, in parallel; panics with
/// the first bad index, expected and got.
fn check_points<C: SynthCurve>(
    what: &str,
    tables: &Tables<C::Affine>,
    got: &[C::Affine],
    idx: &[usize],
) where
    C::Affine: Send + Sync + PartialEq + std::fmt::Debug,
{
    let bad = idx.par_iter().find_first(|&&i| {
        let (p, q) = tables.parts(i);
        got[i] != C::add(&p, &q) || !C::is_valid(&got[i])
    });
    if let Some(&i) = bad {
        let (p, q) = tables.parts(i);
        panic!(
            "{what}: point {i} (T1[{}] + T2[{}]): valid {}, expected {:?}, got {:?}",
            i & ((1 << T1_LG) - 1),
            i >> T1_LG,
            C::is_valid(&got[i]),
            C::add(&p, &q),
            got[i]
        );
    }
}

/// All points of `v` have distinct x (so no two are equal or negatives of each other).
fn distinct_x<A: filprove_cuda::testing::field::Limbs>(what: &str, v: &[A], coord_bytes: usize) {
    let bytes = bytes_of(v);
    let size = std::mem::size_of::<A>();
    let mut seen = HashSet::with_capacity(v.len());
    for (i, p) in bytes.chunks_exact(size).enumerate() {
        assert!(
            seen.insert(&p[..coord_bytes]),
            "{what}: point {i} repeats the x of an earlier point"
        );
    }
}

fn small_sizes_match_tables<C: SynthCurve>(gpu: &Gpu, what: &str, seed: u64)
where
    C::Affine: Send + Sync + PartialEq + std::fmt::Debug,
{
    for n in small_sizes() {
        let tables = synth::tables::<C>(n, seed);
        assert_eq!(
            tables.t1.len(),
            n.min(1 << T1_LG),
            "{what} n = {n}: T1 length"
        );
        assert_eq!(
            tables.t2.len(),
            n.div_ceil(1 << T1_LG),
            "{what} n = {n}: T2 length"
        );
        let d = synth::points_from_tables::<C>(gpu, &tables).unwrap();
        assert_eq!(d.len(), n * C::AFFINE_BYTES, "{what} n = {n}: device bytes");
        let got = synth::download_points::<C>(gpu, &d, n).unwrap();
        let all: Vec<usize> = (0..n).collect();
        check_points::<C>(&format!("{what} n = {n} seed {seed}"), &tables, &got, &all);
    }
}

#[test]
fn g1_points_match_host_tables() {
    let Some(gpu) = common::gpu("g1_points_match_host_tables") else {
        return;
    };
    let seed = common::rng("g1_synth").gen();
    small_sizes_match_tables::<G1>(&gpu, "G1", seed);
}

#[test]
fn g2_points_match_host_tables() {
    let Some(gpu) = common::gpu("g2_points_match_host_tables") else {
        return;
    };
    let seed = common::rng("g2_synth").gen();
    small_sizes_match_tables::<G2>(&gpu, "G2", seed);
}

fn device_bytes(gpu: &Gpu, d: &CudaSlice<u8>) -> Vec<u8> {
    common::download(gpu, d)
}

/// 2^20 points: random indices (and the ends and the T1 seams) against the host, every x
/// distinct, the same bytes again for the same seed, a prefix of them for a shorter n,
/// different points for another seed.
fn big_vector<C: SynthCurve>(gpu: &Gpu, what: &str, test: &str)
where
    C::Affine: Send + Sync + PartialEq + std::fmt::Debug,
{
    let mut rng = common::rng(test);
    let seed: u64 = rng.gen();
    let n = 1usize << 20;
    let t = std::time::Instant::now();
    let tables = synth::tables::<C>(n, seed);
    let host_s = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let d = synth::points_from_tables::<C>(gpu, &tables).unwrap();
    let dev_s = t.elapsed().as_secs_f64();
    eprintln!("{what}: 2^20 points, tables {host_s:.2} s, device {dev_s:.3} s");
    let got = synth::download_points::<C>(gpu, &d, n).unwrap();
    let seam = 1usize << T1_LG;
    let mut idx: Vec<usize> = vec![0, 1, 2, seam - 1, seam, seam + 1, n - 2, n - 1];
    idx.extend((0..4000).map(|_| rng.gen_range(0..n)));
    check_points::<C>(&format!("{what} 2^20 seed {seed}"), &tables, &got, &idx);
    distinct_x(what, &got, C::AFFINE_BYTES / 2);

    // Deterministic: the same seed gives the same device bytes, through the one-call API.
    let again = match C::PREFIX {
        "g1" => synth::g1_points(gpu, n, seed),
        _ => synth::g2_points(gpu, n, seed),
    }
    .unwrap();
    let diff = synth::compare(gpu, &d, &again, n, C::AFFINE_BYTES).unwrap();
    assert_eq!(diff, None, "{what}: same seed {seed}, different points");
    // Prefix-stable: the first 33 points for n = 33 are the first 33 for n = 2^20.
    let short = synth::points_from_tables::<C>(gpu, &synth::tables::<C>(33, seed)).unwrap();
    let short = device_bytes(gpu, &short);
    assert!(
        short[..] == bytes_of(&got[..33])[..],
        "{what}: the 33 points for n = 33 are not a prefix of those for n = 2^20"
    );
    // Another seed: every point differs.
    let other = synth::points_from_tables::<C>(gpu, &synth::tables::<C>(n, seed ^ 1)).unwrap();
    let diff = synth::compare(gpu, &d, &other, n, C::AFFINE_BYTES).unwrap();
    assert_eq!(
        diff.map(|m| m.count),
        Some(n as u64),
        "{what}: seeds {seed} and {} share points",
        seed ^ 1
    );
}

#[test]
fn g1_points_2e20() {
    let Some(gpu) = common::gpu("g1_points_2e20") else {
        return;
    };
    big_vector::<G1>(&gpu, "G1", "g1_synth_2e20");
}

#[test]
fn g2_points_2e20() {
    let Some(gpu) = common::gpu("g2_points_2e20") else {
        return;
    };
    big_vector::<G2>(&gpu, "G2", "g2_synth_2e20");
}

/// Tables that break the rule (T2[0] = T1[3] and T2[0] = -T1[5]) are reported, not turned
/// into wrong points silently.
#[test]
fn degenerate_tables_are_reported() {
    let Some(gpu) = common::gpu("degenerate_tables_are_reported") else {
        return;
    };
    let mut t = synth::tables::<G1>(40, 5);
    let q = t.t1[3];
    t.t2[0] = q;
    t.t1[5] = -q;
    let err = synth::points_from_tables::<G1>(&gpu, &t)
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 of 40 points"), "G1: {err}");
    let mut t = synth::tables::<G2>(40, 5);
    let q = t.t1[7];
    t.t2[0] = -q;
    let err = synth::points_from_tables::<G2>(&gpu, &t)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 of 40 points"), "G2: {err}");
}

/// Montgomery limbs below r (the value is canonical).
fn canonical(x: &Fr) -> bool {
    const R: [u64; 4] = [
        0xffff_ffff_0000_0001,
        0x53bd_a402_fffe_5bfe,
        0x3339_d808_09a1_d805,
        0x73ed_a753_299d_7d48,
    ];
    let b = bytes_of(std::slice::from_ref(x));
    let l: Vec<u64> = b
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for k in (0..4).rev() {
        if l[k] != R[k] {
            return l[k] < R[k];
        }
    }
    false
}

#[test]
fn scalar_mixes() {
    let Some(gpu) = common::gpu("scalar_mixes") else {
        return;
    };
    let seed: u64 = common::rng("scalar_mixes").gen();
    let n = (1usize << 20) + 3;
    for (mix, zero, one) in [
        (ScalarMix::Uniform, 0.0, 0.0),
        (ScalarMix::Filecoin, 51.0, 47.0),
        (
            ScalarMix::Mix {
                zero_pct: 10.0,
                one_pct: 25.0,
            },
            10.0,
            25.0,
        ),
        (
            ScalarMix::Mix {
                zero_pct: 0.0,
                one_pct: 100.0,
            },
            0.0,
            100.0,
        ),
        (
            ScalarMix::Mix {
                zero_pct: 100.0,
                one_pct: 0.0,
            },
            100.0,
            0.0,
        ),
    ] {
        let d = synth::scalars(&gpu, n, seed, mix).unwrap();
        let v = synth::download_scalars(&gpu, &d, n).unwrap();
        let zeros = v.iter().filter(|x| bool::from(x.is_zero())).count();
        let ones = v.iter().filter(|x| **x == Fr::ONE).count();
        let pct = |k: usize| 100.0 * k as f64 / n as f64;
        // 2^20 draws: the standard deviation of a share is at most 0.05 %.
        assert!(
            (pct(zeros) - zero).abs() < 0.5 && (pct(ones) - one).abs() < 0.5,
            "{mix:?}: {:.3} % zeros, {:.3} % ones",
            pct(zeros),
            pct(ones)
        );
        if let Some(i) = v.iter().position(|x| !canonical(x)) {
            panic!("{mix:?}: scalar {i} is not below r: {:?}", v[i]);
        }
        let full: Vec<&Fr> = v
            .iter()
            .filter(|x| !bool::from(x.is_zero()) && **x != Fr::ONE)
            .collect();
        let small = full.iter().filter(|x| x.num_bits() < 200).count();
        assert!(
            small * 1000 <= full.len().max(1000),
            "{mix:?}: {small} of {} full-size values below 2^200",
            full.len()
        );
        // Deterministic, and a prefix of a longer vector.
        let short = synth::scalars(&gpu, 1000, seed, mix).unwrap();
        let short = synth::download_scalars(&gpu, &short, 1000).unwrap();
        assert!(
            short[..] == v[..1000],
            "{mix:?}: n = 1000 is not a prefix of n = 2^20 + 3"
        );
        let again = synth::scalars(&gpu, n, seed, mix).unwrap();
        assert_eq!(
            synth::compare(&gpu, &d, &again, n, 32).unwrap(),
            None,
            "{mix:?}: same seed"
        );
    }
    assert!(synth::scalars(
        &gpu,
        10,
        seed,
        ScalarMix::Mix {
            zero_pct: 60.0,
            one_pct: 60.0
        }
    )
    .is_err());
}

#[test]
fn compare_finds_differences() {
    let Some(gpu) = common::gpu("compare_finds_differences") else {
        return;
    };
    let n = 100_000usize;
    for elem in [4usize, 32, 96] {
        let a: Vec<u8> = (0..n * elem).map(|i| (i * 7 + 3) as u8).collect();
        let mut b = a.clone();
        let da = gpu.upload(&a).unwrap();
        let db = gpu.upload(&b).unwrap();
        assert_eq!(
            synth::compare(&gpu, &da, &db, n, elem).unwrap(),
            None,
            "{elem}"
        );
        for &(i, k) in &[(n - 1, elem - 1), (77_777, 0), (7, elem / 2)] {
            b[i * elem + k] ^= 0x10;
        }
        let db = gpu.upload(&b).unwrap();
        assert_eq!(
            synth::compare(&gpu, &da, &db, n, elem).unwrap(),
            Some(Mismatch { count: 3, first: 7 }),
            "{elem}-byte elements"
        );
        // Only the first n - 1 elements: two differences.
        assert_eq!(
            synth::compare(&gpu, &da, &db, n - 1, elem)
                .unwrap()
                .map(|m| m.count),
            Some(2),
            "{elem}-byte elements, n - 1"
        );
    }
    assert!(synth::compare(
        &gpu,
        &gpu.zeros::<u8>(8).unwrap(),
        &gpu.zeros::<u8>(8).unwrap(),
        3,
        4
    )
    .is_err());
}
