//! Device NTTs and the H polynomial against the CPU backend's domain and compute_h.

mod common;

use blstrs::Scalar as Fr;
use ff::Field;
use filprove_cuda::testing::field::frs_from_bytes;
use filprove_cuda::testing::ntt::{self, NttKind, NttPlan};
use filprove_cuda::testing::work::Work;
use filprove_groth16::cpu::{self, Domain};
use filprove_groth16::ProvingAssignment;

#[test]
fn ntt_kinds_match_cpu() {
    let Some(gpu) = common::gpu("ntt_kinds_match_cpu") else {
        return;
    };
    let mut rng = common::rng("ntt");
    // Every size to 2^20: the shared-memory kernel alone, with 8, 9 and 10 stages, and
    // strided passes of 3 to 6 stages (larger sizes only have more passes; large.rs).
    for lg in 0u32..=20 {
        let n = 1usize << lg;
        let v: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let plan = NttPlan::new(&gpu, lg).unwrap();
        let dom = Domain::new(lg).unwrap();
        for kind in [
            NttKind::Forward,
            NttKind::Inverse,
            NttKind::CosetForward,
            NttKind::CosetInverse,
        ] {
            let mut d = ntt::upload_padded(&gpu, &v, lg).unwrap();
            plan.run(&gpu, &mut d, kind).unwrap();
            let got = frs_from_bytes(&common::download(&gpu, &d));
            let mut want = v.clone();
            match kind {
                NttKind::Forward => dom.fft(&mut want),
                NttKind::Inverse => dom.ifft(&mut want),
                NttKind::CosetForward => dom.coset_fft(&mut want),
                NttKind::CosetInverse => dom.icoset_fft(&mut want),
            }
            .unwrap();
            assert!(
                got == want,
                "2^{lg} {kind:?}: first difference at {:?}",
                got.iter().zip(&want).position(|(a, b)| a != b)
            );
        }
    }
}

/// With probing on, a forward transform's steps carry its modelled work
/// (filprove_cuda::testing::work): half an Fr product per element and butterfly stage,
/// every step a pass of 2^lg Fr read and written.
#[test]
fn probes_carry_the_transforms_work() {
    let Some(gpu) = common::gpu("probes_carry_the_transforms_work") else {
        return;
    };
    let mut rng = common::rng("ntt work");
    for lg in [11u32, 20] {
        let n = 1usize << lg;
        let v: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let plan = NttPlan::new(&gpu, lg).unwrap();
        let mut d = ntt::upload_padded(&gpu, &v, lg).unwrap();
        gpu.set_probing(true);
        gpu.probe("start", Work::NONE).unwrap();
        plan.run(&gpu, &mut d, NttKind::Forward).unwrap();
        let steps = gpu.take_probe_sums().unwrap();
        gpu.set_probing(false);
        let fr: f64 = steps.iter().map(|s| s.work.fr).sum();
        assert_eq!(fr, (lg as usize * n / 2) as f64, "2^{lg}: {steps:?}");
        for s in &steps {
            let pass = (2 * n * 32) as f64;
            assert_eq!(s.work.bytes, pass * f64::from(s.calls), "2^{lg}: {s:?}");
            assert!(s.ms >= 0.0);
        }
    }
}

#[test]
fn h_matches_cpu_compute_h() {
    let Some(gpu) = common::gpu("h_matches_cpu_compute_h") else {
        return;
    };
    let mut rng = common::rng("h");
    for len in [
        1usize,
        2,
        3,
        5,
        1000,
        1023,
        1024,
        1025,
        4097,
        65535,
        65536,
        (1 << 20) - 3,
        1 << 20,
    ] {
        let a: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..len)
            .map(|i| {
                if i % 3 == 0 {
                    Fr::ONE
                } else {
                    Fr::random(&mut rng)
                }
            })
            .collect();
        // Both backends form c = a*b (a satisfying witness's C evaluations).
        let pa = ProvingAssignment {
            pins: Default::default(),
            a: a.clone(),
            b: b.clone(),
            ..Default::default()
        };
        let want = cpu::compute_h(&pa).unwrap();
        let d = ntt::compute_h(&gpu, &a, &b).unwrap();
        let got = frs_from_bytes(&common::download(&gpu, &d));
        let m = len.next_power_of_two();
        assert_eq!(want.len(), m - 1);
        assert!(
            got[..m - 1] == want[..],
            "h of {len}: first difference at {:?}",
            got.iter().zip(&want).position(|(x, y)| x != y)
        );
    }
}
