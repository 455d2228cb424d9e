//! Device field arithmetic (Fr, Fq, Fq2) against blstrs on random and edge values.

// The kernel launches below need unsafe code; this test belongs to filprove-cuda, the one
// crate allowed it.
#![allow(unsafe_code)]

mod common;

use blstrs::{Fp, Fp2, Scalar as Fr};
use cudarc::driver::PushKernelArg;
use ff::{Field, PrimeField};
use filprove_cuda::testing::field::{bytes_of, frs_from_bytes};
use filprove_cuda::testing::Gpu;
use filprove_cuda::testing::{blocks, cfg};

fn run_op(gpu: &Gpu, kernel: &str, x: &[u8], y: &[u8], elem: usize, op: u32) -> Vec<u8> {
    assert_eq!(x.len(), y.len(), "operands of different lengths");
    let n = x.len() / elem;
    let dx = gpu.upload(x).unwrap();
    let dy = gpu.upload(y).unwrap();
    let mut out = gpu.upload(&vec![0xa5u8; x.len()]).unwrap(); // poisoned
    let n32 = n as u32;
    // SAFETY: the *_test_op kernels of selftest.cu take (T* out, const T* x, const T* y,
    // u32 n, u32 op), matching the arguments in order, and touch elements below n only;
    // out, dx and dy each hold n elements of `elem` bytes (n = x.len() / elem; y and out
    // are as long as x, asserted above) and live until after the download below waits for the stream.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func(kernel).unwrap())
            .arg(&mut out)
            .arg(&dx)
            .arg(&dy)
            .arg(&n32)
            .arg(&op)
            .launch(cfg(blocks(n, 128), 128, 0))
            .unwrap();
    }
    common::download(gpu, &out)
}

fn fp_bytes(v: &[Fp]) -> Vec<u8> {
    bytes_of(v).to_vec()
}

fn fp_from(b: &[u8]) -> Vec<Fp> {
    b.chunks_exact(48)
        .map(|c| {
            let mut l = [0u64; 6];
            for (k, x) in l.iter_mut().enumerate() {
                *x = u64::from_le_bytes(c[8 * k..8 * k + 8].try_into().unwrap());
            }
            Fp::from_raw_unchecked(l)
        })
        .collect()
}

#[test]
fn fr_ops_match_blstrs() {
    let Some(gpu) = common::gpu_selftest("fr_ops_match_blstrs") else {
        return;
    };
    let mut rng = common::rng("fr_ops");
    let mut x: Vec<Fr> = (0..5000).map(|_| Fr::random(&mut rng)).collect();
    let mut y: Vec<Fr> = (0..5000).map(|_| Fr::random(&mut rng)).collect();
    let edge = [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64), -Fr::from(2u64)];
    for (i, a) in edge.iter().enumerate() {
        for (j, b) in edge.iter().enumerate() {
            x[i * 5 + j] = *a;
            y[i * 5 + j] = *b;
        }
    }
    let (bx, by) = (bytes_of(&x), bytes_of(&y));
    let expect: [Box<dyn Fn(Fr, Fr) -> Fr>; 4] = [
        Box::new(|a, b| a * b),
        Box::new(|a, b| a + b),
        Box::new(|a, b| a - b),
        Box::new(|a, _| -a),
    ];
    for (op, f) in expect.iter().enumerate() {
        let got = frs_from_bytes(&run_op(&gpu, "fr_test_op", bx, by, 32, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = frs_from_bytes(&run_op(&gpu, "fr_test_op", bx, by, 32, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
    let inv = frs_from_bytes(&run_op(&gpu, "fr_test_op", bx, by, 32, 7));
    for (i, a) in x.iter().enumerate() {
        assert_eq!(inv[i], a.invert().unwrap_or(Fr::ZERO), "inverse at {i}");
    }
    // from_mont gives the canonical little-endian integer; to_mont inverts it.
    let canon = run_op(&gpu, "fr_test_op", bx, by, 32, 4);
    for (i, a) in x.iter().enumerate() {
        assert_eq!(
            &canon[32 * i..32 * i + 32],
            a.to_repr().as_ref(),
            "from_mont at {i}"
        );
    }
    let back = frs_from_bytes(&run_op(&gpu, "fr_test_op", &canon, by, 32, 5));
    assert_eq!(back, x);
}

#[test]
fn fq_ops_match_blstrs() {
    let Some(gpu) = common::gpu_selftest("fq_ops_match_blstrs") else {
        return;
    };
    let mut rng = common::rng("fq_ops");
    let mut x: Vec<Fp> = (0..3000).map(|_| Fp::random(&mut rng)).collect();
    let y: Vec<Fp> = (0..3000).map(|_| Fp::random(&mut rng)).collect();
    x[0] = Fp::ZERO;
    x[1] = Fp::ONE;
    x[2] = -Fp::ONE;
    // Inversion edge values: small integers, powers of two, their negations, and values
    // whose Montgomery form is a small integer or a power of two (its first step shifts
    // whole words).
    let r_inv = Fp::from(2u64).pow_vartime([384u64]).invert().unwrap();
    let extra = [
        Fp::from(2u64),
        Fp::from(3u64),
        -Fp::from(2u64),
        Fp::from(2u64).pow_vartime([200u64]),
        r_inv,
        r_inv * Fp::from(2u64),
        r_inv * Fp::from(2u64).pow_vartime([100u64]),
        r_inv * Fp::from(2u64).pow_vartime([380u64]),
        -r_inv,
    ];
    for (i, e) in extra.iter().enumerate() {
        x[3 + i] = *e;
    }
    let (bx, by) = (fp_bytes(&x), fp_bytes(&y));
    let expect: [Box<dyn Fn(Fp, Fp) -> Fp>; 4] = [
        Box::new(|a, b| a * b),
        Box::new(|a, b| a + b),
        Box::new(|a, b| a - b),
        Box::new(|a, _| -a),
    ];
    for (op, f) in expect.iter().enumerate() {
        let got = fp_from(&run_op(&gpu, "fq_test_op", &bx, &by, 48, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = fp_from(&run_op(&gpu, "fq_test_op", &bx, &by, 48, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
    let inv = fp_from(&run_op(&gpu, "fq_test_op", &bx, &by, 48, 7));
    for (i, a) in x.iter().enumerate() {
        assert_eq!(inv[i], a.invert().unwrap_or(Fp::ZERO), "inverse at {i}");
    }
    let canon = run_op(&gpu, "fq_test_op", &bx, &by, 48, 4);
    let back = fp_from(&run_op(&gpu, "fq_test_op", &canon, &by, 48, 5));
    assert_eq!(back, x);
    for (i, a) in x.iter().enumerate() {
        let mut le = a.to_bytes_be();
        le.reverse();
        assert_eq!(&canon[48 * i..48 * i + 48], &le[..], "from_mont at {i}");
    }
}

#[test]
fn fq2_ops_match_blstrs() {
    let Some(gpu) = common::gpu_selftest("fq2_ops_match_blstrs") else {
        return;
    };
    let mut rng = common::rng("fq2_ops");
    let mut x: Vec<Fp2> = (0..2000).map(|_| Fp2::random(&mut rng)).collect();
    let y: Vec<Fp2> = (0..2000).map(|_| Fp2::random(&mut rng)).collect();
    x[0] = Fp2::ZERO;
    x[1] = Fp2::ONE;
    let flat =
        |v: &[Fp2]| -> Vec<u8> { v.iter().flat_map(|e| fp_bytes(&[e.c0(), e.c1()])).collect() };
    let unflat =
        |b: &[u8]| -> Vec<Fp2> { fp_from(b).chunks(2).map(|c| Fp2::new(c[0], c[1])).collect() };
    let (bx, by) = (flat(&x), flat(&y));
    let expect: [Box<dyn Fn(Fp2, Fp2) -> Fp2>; 4] = [
        Box::new(|a, b| a * b),
        Box::new(|a, b| a + b),
        Box::new(|a, b| a - b),
        Box::new(|a, _| -a),
    ];
    for (op, f) in expect.iter().enumerate() {
        let got = unflat(&run_op(&gpu, "fq2_test_op", &bx, &by, 96, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = unflat(&run_op(&gpu, "fq2_test_op", &bx, &by, 96, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
}
