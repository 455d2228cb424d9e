//! Large-size checks, each against the CPU reference (filprove_groth16::cpu) on
//! fresh random inputs (seeds printed; FILPROVE_TEST_SEED replays):
//! - NTT, iNTT, coset NTT, inverse coset NTT at 2^21..2^24 vs `Domain`;
//! - H (six transforms, c formed on the device) at lengths that are not powers of two
//!   from 2^20 to 2^27, vs `cpu::compute_h` (bellperson's seven transforms);
//! - NTT round trips (forward then inverse, coset then inverse coset) at every size
//!   2^0..2^27, compared with the original on the device;
//! - G1 MSM at 2^21, 2^24, 2^26, 2^27 and G2 MSM at 2^21, 2^25 vs the CPU MSM, plain
//!   (full-size scalars) and split (51 % zero / 47 % one / 2 % full), over distinct
//!   device-made points downloaded to the host. The CPU reference of each size is the
//!   previous size's plus the CPU MSM of the new range (the MSM is linear), so the CPU
//!   does 2^27 + 2^25 points of work, not the sum of all sizes.
//!
//! Sizes above 2^FILPROVE_LARGE_MAX_LG (default 27) are skipped, for smoke runs on
//! smaller machines. Needs about 30 GB of device memory and 25 GB of host memory at 2^27.
//! Expected on the H200 machine (16 cores), run one test at a time: about 3 minutes, most
//! of it the CPU MSMs (measured on 2 build cores at 2^20: blst G1 4.5 s, G2 11.5 s).

mod common;

use std::time::Instant;

use blstrs::Scalar as Fr;
use cudarc::driver::CudaSlice;
use ff::Field;
use filprove_cuda::testing::field::frs_from_bytes;
use filprove_cuda::testing::msm::{self, G1, G2};
use filprove_cuda::testing::ntt::{self, NttKind, NttPlan};
use filprove_cuda::testing::synth::{self, ScalarMix, SynthCurve};
use filprove_cuda::testing::Gpu;
use filprove_groth16::cpu::msm::MsmAffine;
use filprove_groth16::cpu::{self, Domain};
use filprove_groth16::ProvingAssignment;
use group::{Curve as _, Group};
use rand::Rng;
use rayon::prelude::*;

/// Largest log2 size these tests use (FILPROVE_LARGE_MAX_LG, default 27).
fn max_lg() -> u32 {
    std::env::var("FILPROVE_LARGE_MAX_LG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(27)
}

/// The sizes of `lgs` allowed by [`max_lg`]; prints the skipped ones.
fn allowed(test: &str, lgs: &[u32]) -> Vec<u32> {
    let max = max_lg();
    let (keep, skip): (Vec<u32>, Vec<u32>) = lgs.iter().partition(|&&lg| lg <= max);
    if !skip.is_empty() {
        eprintln!("{test}: skipping 2^{skip:?} (FILPROVE_LARGE_MAX_LG = {max})");
    }
    keep
}

fn secs(t: Instant) -> String {
    format!("{:.2} s", t.elapsed().as_secs_f64())
}

/// A device copy of `d`.
fn dup(gpu: &Gpu, d: &CudaSlice<u8>) -> CudaSlice<u8> {
    let mut out = gpu.alloc::<u8>(d.len()).unwrap();
    gpu.stream().memcpy_dtod(d, &mut out).unwrap();
    out
}

/// Element `i` (32 bytes) of a device Fr vector.
fn fr_at(gpu: &Gpu, d: &CudaSlice<u8>, i: usize) -> Fr {
    let mut b = [0u8; 32];
    gpu.stream()
        .memcpy_dtoh(&d.slice(i * 32..i * 32 + 32), &mut b)
        .unwrap();
    gpu.sync().unwrap();
    frs_from_bytes(&b)[0]
}

/// Panics with the first differing index, the values there and the number of differences.
fn assert_frs_eq(what: &str, got: &[Fr], want: &[Fr]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len())
        .into_par_iter()
        .find_first(|&i| got[i] != want[i])
    {
        let count = (0..got.len())
            .into_par_iter()
            .filter(|&i| got[i] != want[i])
            .count();
        panic!(
            "{what}: {count} of {} differ; first at {i}: expected {:?}, got {:?}",
            got.len(),
            want[i],
            got[i]
        );
    }
}

#[test]
fn ntt_kinds_match_cpu_2e21_to_2e24() {
    let test = "ntt_kinds_match_cpu_2e21_to_2e24";
    let Some(gpu) = common::gpu(test) else {
        return;
    };
    let mut rng = common::rng(test);
    for lg in allowed(test, &[21, 22, 23, 24]) {
        let t = Instant::now();
        let n = 1usize << lg;
        let seed: u64 = rng.gen();
        let d = synth::scalars(&gpu, n, seed, ScalarMix::Uniform).unwrap();
        let v = synth::download_scalars(&gpu, &d, n).unwrap();
        let plan = NttPlan::new(&gpu, lg).unwrap();
        let dom = Domain::new(lg).unwrap();
        for kind in [
            NttKind::Forward,
            NttKind::Inverse,
            NttKind::CosetForward,
            NttKind::CosetInverse,
        ] {
            let mut w = dup(&gpu, &d);
            plan.run(&gpu, &mut w, kind).unwrap();
            let got = synth::download_scalars(&gpu, &w, n).unwrap();
            drop(w);
            let mut want = v.clone();
            match kind {
                NttKind::Forward => dom.fft(&mut want),
                NttKind::Inverse => dom.ifft(&mut want),
                NttKind::CosetForward => dom.coset_fft(&mut want),
                NttKind::CosetInverse => dom.icoset_fft(&mut want),
            }
            .unwrap();
            assert_frs_eq(
                &format!("2^{lg} {kind:?} (scalar seed {seed})"),
                &got,
                &want,
            );
        }
        eprintln!("{test}: 2^{lg} ok in {}", secs(t));
    }
}

#[test]
fn h_matches_cpu_from_2e20_to_2e27() {
    let test = "h_matches_cpu_from_2e20_to_2e27";
    let Some(gpu) = common::gpu(test) else {
        return;
    };
    let mut rng = common::rng(test);
    let lens = [
        (1usize << 20) + 7,
        (1 << 22) - 3,
        (1 << 22) + 1,
        (1 << 23) - 1000,
        3 << 22,
        (1 << 24) - 1,
        (1 << 27) - 5,
    ];
    for len in lens {
        let lg = len.next_power_of_two().trailing_zeros();
        if lg > max_lg() {
            eprintln!("{test}: skipping length {len}");
            continue;
        }
        let t = Instant::now();
        let seeds: [u64; 2] = rng.gen();
        let get = |seed, mix| {
            let d = synth::scalars(&gpu, len, seed, mix).unwrap();
            synth::download_scalars(&gpu, &d, len).unwrap()
        };
        let a = get(seeds[0], ScalarMix::Uniform);
        let b = get(
            seeds[1],
            ScalarMix::Mix {
                zero_pct: 49.0,
                one_pct: 49.0,
            },
        );
        // Both backends form c = a*b (a satisfying witness's C evaluations).
        let d = ntt::compute_h(&gpu, &a, &b).unwrap();
        let m = 1usize << lg;
        let got = synth::download_scalars(&gpu, &d, m - 1).unwrap();
        drop(d);
        let pa = ProvingAssignment {
            pins: Default::default(),
            a,
            b,
            ..Default::default()
        };
        let want = cpu::compute_h(&pa).unwrap();
        assert_frs_eq(&format!("h of {len} (seeds {seeds:?})"), &got, &want);
        eprintln!("{test}: length {len} (2^{lg}) ok in {}", secs(t));
    }
}

/// Forward then inverse, and coset then inverse coset, give back the input, for every size
/// up to 2^27; the forward transform alone changes it (the transform is not a no-op).
#[test]
fn ntt_round_trips_every_size_to_2e27() {
    let test = "ntt_round_trips_every_size_to_2e27";
    let Some(gpu) = common::gpu(test) else {
        return;
    };
    let mut rng = common::rng(test);
    let t = Instant::now();
    for lg in allowed(test, &(0..=27).collect::<Vec<_>>()) {
        let n = 1usize << lg;
        let seed: u64 = rng.gen();
        let orig = synth::scalars(&gpu, n, seed, ScalarMix::Uniform).unwrap();
        let plan = NttPlan::new(&gpu, lg).unwrap();
        for (there, back) in [
            (NttKind::Forward, NttKind::Inverse),
            (NttKind::CosetForward, NttKind::CosetInverse),
        ] {
            let mut w = dup(&gpu, &orig);
            plan.run(&gpu, &mut w, there).unwrap();
            let moved = synth::compare(&gpu, &orig, &w, n, 32).unwrap();
            if lg >= 1 {
                assert!(
                    moved.is_some(),
                    "2^{lg} {there:?} left its input unchanged (seed {seed})"
                );
            }
            plan.run(&gpu, &mut w, back).unwrap();
            if let Some(m) = synth::compare(&gpu, &orig, &w, n, 32).unwrap() {
                let i = m.first as usize;
                panic!(
                    "2^{lg} {there:?} then {back:?} (scalar seed {seed}): {} of {n} differ; \
                     first at {i}: expected {:?}, got {:?}",
                    m.count,
                    fr_at(&gpu, &orig, i),
                    fr_at(&gpu, &w, i)
                );
            }
        }
    }
    eprintln!("{test}: ok in {}", secs(t));
}

/// For C (G1 or G2): device-made points of the largest size, downloaded; full-size and
/// Filecoin-mix scalars made on the device, downloaded; at each size the GPU MSM (plain
/// over the full-size scalars, split over the mix) against the CPU MSM.
fn msm_large<C>(test: &str, lgs: &[u32])
where
    C: SynthCurve,
    C::Affine: MsmAffine<Curve = C::Projective>,
    C::Projective:
        group::Group<Scalar = Fr> + group::Curve<AffineRepr = C::Affine> + std::fmt::Debug,
{
    let Some(gpu) = common::gpu(test) else {
        return;
    };
    let lgs = allowed(test, lgs);
    let Some(&top) = lgs.last() else {
        return;
    };
    let mut rng = common::rng(test);
    let big = 1usize << top;
    let (pseed, useed, mseed): (u64, u64, u64) = rng.gen();
    let name = C::PREFIX.to_uppercase();
    eprintln!("{test}: point seed {pseed}, scalar seeds {useed} (full) {mseed} (mix)");

    let t = Instant::now();
    let tables = synth::tables::<C>(big, pseed);
    let d_bases = synth::points_from_tables::<C>(&gpu, &tables).unwrap();
    let bases = synth::download_points::<C>(&gpu, &d_bases, big).unwrap();
    // A few points against the host tables (tests/synth.rs checks the generator in depth).
    for _ in 0..16 {
        let i = rng.gen_range(0..big);
        let (p, q) = tables.parts(i);
        assert!(
            bases[i] == C::add(&p, &q),
            "{name} point {i} (seed {pseed})"
        );
    }
    let d_full = synth::scalars(&gpu, big, useed, ScalarMix::Uniform).unwrap();
    let d_mix = synth::scalars(&gpu, big, mseed, ScalarMix::Filecoin).unwrap();
    let full = synth::download_scalars(&gpu, &d_full, big).unwrap();
    let mix = synth::download_scalars(&gpu, &d_mix, big).unwrap();
    eprintln!(
        "{test}: 2^{top} points and scalars made and downloaded in {}",
        secs(t)
    );

    let mut want_plain = C::Projective::identity();
    let mut want_split = C::Projective::identity();
    let mut done = 0usize;
    for lg in lgs {
        let n = 1usize << lg;
        let t = Instant::now();
        want_plain += cpu::msm::msm(&bases[done..n], &full[done..n]).unwrap();
        let cpu_plain = secs(t);
        let t = Instant::now();
        want_split += cpu::msm::msm_split(&bases[done..n], &mix[done..n], None).unwrap();
        let cpu_split = secs(t);
        done = n;
        for (split, scalars, want, host) in [
            (false, &d_full, &want_plain, &full),
            (true, &d_mix, &want_split, &mix),
        ] {
            let t = Instant::now();
            let r = msm::msm::<C>(&gpu, &d_bases, scalars, n, split).unwrap();
            let got = r.download::<C>(&gpu).unwrap();
            let gpu_s = secs(t);
            if got.to_affine() != want.to_affine() {
                // Which side is wrong: the points' discrete logs give a third answer.
                let dl: Fr = (0..n)
                    .into_par_iter()
                    .map(|i| host[i] * tables.dlog(i))
                    .reduce(|| Fr::ZERO, |a, b| a + b);
                let third = C::Projective::generator() * dl;
                panic!(
                    "{name} MSM of 2^{lg}, split {split} (seeds {pseed}/{useed}/{mseed}): \
                     GPU {:?}, CPU {:?}; discrete-log reference agrees with the {}",
                    got.to_affine(),
                    want.to_affine(),
                    if third == *want {
                        "CPU"
                    } else if third == got {
                        "GPU"
                    } else {
                        "neither"
                    }
                );
            }
            eprintln!(
                "{test}: {name} 2^{lg} split {split} ok (GPU {gpu_s} incl. download; CPU for \
                 the new range {})",
                if split { &cpu_split } else { &cpu_plain }
            );
        }
    }
}

#[test]
fn g1_msm_matches_cpu_2e21_to_2e27() {
    msm_large::<G1>("g1_msm_matches_cpu_2e21_to_2e27", &[21, 24, 26, 27]);
}

#[test]
fn g2_msm_matches_cpu_2e21_and_2e25() {
    msm_large::<G2>("g2_msm_matches_cpu_2e21_and_2e25", &[21, 25]);
}
