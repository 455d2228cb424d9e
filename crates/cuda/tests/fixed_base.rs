//! GPU fixed-base multiplication (src/fixed_base.rs, kernels/fixed_base.cu) against the
//! CPU's (`filprove_groth16::keygen::CpuFixedBase`): byte-identical affine points for
//! fresh random scalars and edge values, G1 and G2, several windows, chunk sizes and slot
//! counts, buffers poisoned before each run; the device table entry by entry; and whole
//! parameter generations byte-identical to the CPU path.
//!
//! ```text
//! cargo test --release -p filprove-cuda --test fixed_base
//! ```

mod common;

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use ff::Field;
use filprove_cuda::testing::field::{bytes_of, Limbs};
use filprove_cuda::testing::fixed_base::{self, FbCurve, FixedBaseOptions, GpuFixedBase};
use filprove_cuda::testing::msm::{G1, G2};
use filprove_cuda::testing::Gpu;
use filprove_groth16::keygen::{self, CpuFixedBase, FixedBaseMul, ToxicWaste};
use filprove_testkit::RandomR1cs;
use group::{Curve, Group};
use rand::seq::SliceRandom;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// The scalar whose canonical integer has the bits `bits` set (bits above 253 dropped, so
/// that it is below r).
fn from_bits(bits: impl IntoIterator<Item = usize>) -> Fr {
    let mut limbs = [0u64; 4];
    for b in bits.into_iter().filter(|&b| b < 254) {
        limbs[b / 64] |= 1 << (b % 64);
    }
    Option::from(Fr::from_u64s_le(&limbs)).expect("below 2^254 < r")
}

/// Edge values: 0, 1, 2, -1, -2, 1/2, -1/2, small integers, +-2^k for every k < 255,
/// and for each window in `windows` scalars whose every w-bit window holds the same value
/// (2^(w-1): the largest positive digit; 2^(w-1) + 1 and 2^w - 1: negative digits with
/// carries running through every window; 2^(w-1) - 1), and their negations (near r).
fn edge_scalars(windows: &[u32]) -> Vec<Fr> {
    let two = Fr::from(2u64);
    let half = two.invert().unwrap();
    let mut v = vec![Fr::ZERO, Fr::ONE, two, -Fr::ONE, -two, half, -half];
    v.extend((3..=64u64).map(Fr::from));
    for k in 0..255u64 {
        let p = two.pow_vartime([k]);
        v.push(p);
        v.push(-p);
        v.push(p - Fr::ONE);
    }
    for &w in windows {
        let w = w as usize;
        let h = 1u64 << (w - 1);
        for pattern in [h, h + 1, (1u64 << w) - 1, h - 1] {
            let s = from_bits((0..256 / w + 1).flat_map(|k| {
                (0..w)
                    .filter(move |b| pattern >> b & 1 == 1)
                    .map(move |b| k * w + b)
            }));
            v.push(s);
            v.push(-s);
        }
        // Every bit set up to a window boundary (runs of 2^w - 1 ending there).
        for k in 1..=256 / w {
            let s = from_bits(0..k * w);
            v.push(s);
            v.push(-s);
        }
    }
    v
}

/// `n` scalars: fresh random ones with the edge values at random positions (as many as fit).
fn test_scalars(rng: &mut ChaCha8Rng, n: usize, edges: &[Fr]) -> Vec<Fr> {
    let mut v: Vec<Fr> = (0..n).map(|_| Fr::random(&mut *rng)).collect();
    let mut pos: Vec<usize> = (0..n).collect();
    pos.shuffle(rng);
    for (p, e) in pos.iter().zip(edges) {
        v[*p] = *e;
    }
    v
}

/// Byte comparison with a useful message.
fn assert_same<T: Limbs + std::fmt::Debug>(what: &str, scalars: &[Fr], gpu: &[T], cpu: &[T]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    if bytes_of(gpu) != bytes_of(cpu) {
        let size = std::mem::size_of::<T>();
        let bad: Vec<usize> = (0..cpu.len())
            .filter(|&i| bytes_of(&gpu[i..i + 1]) != bytes_of(&cpu[i..i + 1]))
            .collect();
        let i = bad[0];
        panic!(
            "{what}: {} of {} points differ ({size} bytes each); first {i}: scalar {:?}, gpu {:?}, cpu {:?}",
            bad.len(),
            cpu.len(),
            scalars[i],
            gpu[i],
            cpu[i]
        );
    }
}

/// A curve with its CPU reference.
trait Reference: FbCurve {
    fn cpu(cpu: &CpuFixedBase, s: &[Fr]) -> Vec<Self::Affine>;
}

impl Reference for G1 {
    fn cpu(cpu: &CpuFixedBase, s: &[Fr]) -> Vec<G1Affine> {
        cpu.g1(s).expect("cpu g1")
    }
}

impl Reference for G2 {
    fn cpu(cpu: &CpuFixedBase, s: &[Fr]) -> Vec<G2Affine> {
        cpu.g2(s).expect("cpu g2")
    }
}

/// Poisons the GPU's buffers, multiplies on both sides, compares bytes.
fn check<C: Reference>(what: &str, fb: &GpuFixedBase, cpu: &CpuFixedBase, scalars: &[Fr])
where
    C::Affine: Send + Sync + std::fmt::Debug,
{
    fb.poison_buffers(0xa5).expect("poison");
    let got = fb.multiply::<C>(scalars).expect("gpu multiply");
    let want = C::cpu(cpu, scalars);
    assert_eq!(fb.last_stats().points, scalars.len() as u64, "{what}");
    assert_same(what, scalars, &got, &want);
}

fn gpu_or_skip(test: &str) -> Option<Arc<Gpu>> {
    common::gpu(test).map(Arc::new)
}

#[test]
fn g1_g2_match_cpu_default_options() {
    let Some(gpu) = gpu_or_skip("g1_g2_match_cpu_default_options") else {
        return;
    };
    let mut rng = common::rng("g1_g2_match_cpu_default_options");
    let fb = GpuFixedBase::new(gpu, FixedBaseOptions::default()).unwrap();
    let cpu = CpuFixedBase::new();
    for n in [1usize, 2, 1000, 65_537, (1 << 20) + 3] {
        // The automatic window for n (the edges cover it and its neighbours).
        let w1 = fixed_base::choose_window(n, 96, 6 << 30);
        let w2 = fixed_base::choose_window(n, 192, 6 << 30);
        let edges = edge_scalars(&[w1 - 1, w1, w1 + 1, w2 - 1, w2, w2 + 1]);
        let s = test_scalars(&mut rng, n, &edges);
        fb.release(); // the table is sized for this n
        check::<G1>(&format!("G1 n={n}"), &fb, &cpu, &s);
        check::<G2>(&format!("G2 n={n}"), &fb, &cpu, &s);
        let (t1, t2) = fb.tables();
        assert_eq!(t1.map(|t| t.window), Some(w1), "G1 window for {n}");
        assert_eq!(t2.map(|t| t.window), Some(w2), "G2 window for {n}");
    }
    // Every edge value on its own, through the widest automatic window.
    let edges = edge_scalars(&[22]);
    fb.release();
    fb.prepare(400_000_000, 33_000_000).unwrap();
    let (t1, t2) = fb.tables();
    assert_eq!(
        (t1.map(|t| t.window), t2.map(|t| t.window)),
        (Some(22), Some(22))
    );
    check::<G1>("G1 edges, w = 22", &fb, &cpu, &edges);
    check::<G2>("G2 edges, w = 22", &fb, &cpu, &edges);
    assert!(fb.multiply::<G1>(&[]).unwrap().is_empty());
    fb.release();
    assert_eq!(fb.tables(), (None, None));
}

#[test]
fn windows_chunks_and_slots() {
    let Some(gpu) = gpu_or_skip("windows_chunks_and_slots") else {
        return;
    };
    let mut rng = common::rng("windows_chunks_and_slots");
    let cpu = CpuFixedBase::new();
    // Explicit windows, small chunks (many chunks, a partial last one) and 2 or 3 slots.
    for (w1, w2, chunk, slots) in [
        (2, 2, 4096, 2),
        (7, 3, 4096, 3),
        (13, 11, 1000, 2),
        (16, 16, 1 << 16, 3),
        (22, 22, 1 << 22, 3),
        (23, 19, 3000, 4),
    ] {
        let opts = FixedBaseOptions {
            g1_window: Some(w1),
            g2_window: Some(w2),
            chunk_points: chunk,
            slots,
            ..Default::default()
        };
        let fb = GpuFixedBase::new(gpu.clone(), opts).unwrap();
        let edges = edge_scalars(&[w1, w2]);
        for n in [1usize, 2, 1000, 65_537] {
            let s = test_scalars(&mut rng, n, &edges);
            let what = format!("w {w1}/{w2}, chunk {chunk}, {slots} slots, n={n}");
            check::<G1>(&format!("G1 {what}"), &fb, &cpu, &s);
            check::<G2>(&format!("G2 {what}"), &fb, &cpu, &s);
        }
        check::<G1>(&format!("G1 edges w {w1}"), &fb, &cpu, &edges);
        check::<G2>(&format!("G2 edges w {w2}"), &fb, &cpu, &edges);
        let st = fb.last_stats();
        assert_eq!(st.window, w2);
        assert_eq!(st.chunks as usize, edges.len().div_ceil(chunk / 2));
    }
}

/// The device table, entry by entry: row k, entry j - 1 is j 2^(w k) G.
fn check_table<C: FbCurve>(fb: &GpuFixedBase, w: u32)
where
    C::Affine: Send + Sync + PartialEq + std::fmt::Debug,
    C::Proj: Group<Scalar = Fr>,
{
    let (got_w, table) = fb.download_table::<C>(1000).expect("table");
    assert_eq!(got_w, w);
    let half = 1usize << (w - 1);
    assert_eq!(table.len(), fixed_base::rows(w) as usize * half);
    let two = Fr::from(2u64);
    for (e, p) in table.iter().enumerate() {
        let (k, j) = (e / half, e % half + 1);
        let s = two.pow_vartime([(w as usize * k) as u64]) * Fr::from(j as u64);
        assert_eq!(
            *p,
            (C::Proj::generator() * s).to_affine(),
            "w {w} row {k} entry {j}"
        );
    }
}

#[test]
fn device_tables_hold_the_multiples() {
    let Some(gpu) = gpu_or_skip("device_tables_hold_the_multiples") else {
        return;
    };
    for (w1, w2) in [(2, 2), (9, 7), (10, 6)] {
        let fb = GpuFixedBase::new(
            gpu.clone(),
            FixedBaseOptions {
                g1_window: Some(w1),
                g2_window: Some(w2),
                ..Default::default()
            },
        )
        .unwrap();
        check_table::<G1>(&fb, w1);
        check_table::<G2>(&fb, w2);
    }
}

#[test]
fn options_are_checked_before_the_device_is_used() {
    let Some(gpu) = gpu_or_skip("options_are_checked_before_the_device_is_used") else {
        return;
    };
    let bad = FixedBaseOptions {
        g1_window: Some(30),
        ..Default::default()
    };
    let err = GpuFixedBase::new(gpu, bad)
        .err()
        .expect("window 30 refused");
    assert_eq!(err.code(), "prove_invalid");
}

fn srs_bytes(srs: &filprove_groth16::Srs) -> Vec<u8> {
    let mut v = Vec::new();
    srs.write_to(&mut v).expect("write");
    v
}

#[test]
fn whole_keygen_is_byte_identical_to_the_cpu() {
    let Some(gpu) = gpu_or_skip("whole_keygen_is_byte_identical_to_the_cpu") else {
        return;
    };
    let mut rng = common::rng("whole_keygen_is_byte_identical_to_the_cpu");
    let seed = rng.next_u64();
    for (inputs, constraints, only_b, opts) in [
        (1, 10, 0, FixedBaseOptions::default()),
        (5, 3_000, 40, FixedBaseOptions::default()),
        (
            3,
            70_000,
            500,
            FixedBaseOptions {
                chunk_points: 5_000,
                slots: 2,
                ..Default::default()
            },
        ),
        (40, 70_000, 2_000, FixedBaseOptions::default()),
    ] {
        let c = RandomR1cs {
            only_b,
            ..RandomR1cs::new(seed, inputs, constraints)
        };
        let toxic = ToxicWaste::random(&mut rng);
        let cpu = keygen::generate_parameters_with(c.clone(), &toxic).expect("cpu keygen");
        let fb = GpuFixedBase::new(gpu.clone(), opts).unwrap();
        fb.poison_buffers(0x5a).unwrap();
        let gpu_srs = keygen::generate_parameters_using(c, &toxic, &fb).expect("gpu keygen");
        assert!(
            srs_bytes(&gpu_srs) == srs_bytes(&cpu),
            "{constraints} constraints: parameters differ (h {} l {} a {} b {})",
            cpu.h.len(),
            cpu.l.len(),
            cpu.a.len(),
            cpu.b_g2.len()
        );
        // The generation released the tables.
        assert_eq!(fb.tables(), (None, None));
    }
}
