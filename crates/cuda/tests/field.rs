//! Device field arithmetic (Fr, Fq, Fq2) against blstrs on random and edge values: on the
//! GPU (the selftest kernels), and on every machine through a host build of the same
//! device code (tests/host/field_ops.cpp: kernels/ff compiled by the host's C++ compiler,
//! the PTX primitives in portable C++), so a machine without a GPU checks the arithmetic
//! of every product form too.

// The kernel launches below need unsafe code; this test belongs to filprove-cuda, the one
// crate allowed it.
#![allow(unsafe_code)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use blstrs::{Fp, Fp2, Scalar as Fr};
use cudarc::driver::PushKernelArg;
use ff::{Field, PrimeField};
use filprove_cuda::testing::field::{bytes_of, frs_from_bytes};
use filprove_cuda::testing::Gpu;
use filprove_cuda::testing::{blocks, cfg};

/// Where the field code runs.
enum Runner {
    /// The selftest kernels (`fr_test_op`, `fq_test_op`, `fq2_test_op`).
    Gpu(Gpu),
    /// The host build of kernels/ff.
    Host(&'static Path),
}

impl Runner {
    /// op(x[i], y[i]) over `field` (fr, fq or fq2) for elements of `elem` bytes.
    fn run(&self, field: &str, x: &[u8], y: &[u8], elem: usize, op: u32) -> Vec<u8> {
        assert_eq!(x.len(), y.len(), "operands of different lengths");
        match self {
            Runner::Gpu(gpu) => gpu_op(gpu, &format!("{field}_test_op"), x, y, elem, op),
            Runner::Host(bin) => host_op(bin, field, x, y, elem, op),
        }
    }
}

fn gpu_op(gpu: &Gpu, kernel: &str, x: &[u8], y: &[u8], elem: usize, op: u32) -> Vec<u8> {
    let n = x.len() / elem;
    let dx = gpu.upload(x).unwrap();
    let dy = gpu.upload(y).unwrap();
    let mut out = gpu.upload(&vec![0xa5u8; x.len()]).unwrap(); // poisoned
    let n32 = n as u32;
    // SAFETY: the *_test_op kernels of selftest.cu take (T* out, const T* x, const T* y,
    // u32 n, u32 op), matching the arguments in order, and touch elements below n only;
    // out, dx and dy each hold n elements of `elem` bytes (n = x.len() / elem; y and out
    // are as long as x, asserted by the caller) and live until after the download below
    // waits for the stream.
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

/// The host build of the field code, compiled once per test process with the C++
/// compiler of `CXX` (default `c++`).
fn host_build() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("field_ops_host");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let out = Command::new(&cxx)
            .args(["-O1", "-std=c++17", "-I"])
            .arg(crate_dir.join("kernels"))
            .arg("-o")
            .arg(&bin)
            .arg(crate_dir.join("tests/host/field_ops.cpp"))
            .output()
            .unwrap_or_else(|e| {
                panic!("the host build of kernels/ff needs a C++ compiler ({cxx}): {e}")
            });
        assert!(
            out.status.success(),
            "{cxx} failed on tests/host/field_ops.cpp:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
}

fn host_op(bin: &Path, field: &str, x: &[u8], y: &[u8], elem: usize, op: u32) -> Vec<u8> {
    let n = x.len() / elem;
    let mut child = Command::new(bin)
        .args([field, &op.to_string(), &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = [x, y].concat();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "field_ops {field} {op} {n}: {}",
        out.status
    );
    assert_eq!(
        out.stdout.len(),
        x.len(),
        "field_ops {field} {op}: short output"
    );
    out.stdout
}

/// The GPU runner, or None (a skip) without a usable GPU.
fn gpu(test: &str) -> Option<Runner> {
    common::gpu_selftest(test).map(Runner::Gpu)
}

fn host() -> Runner {
    Runner::Host(host_build())
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

/// n random pairs of Fr operands, the first 25 x `copies` replaced by every pair of edge
/// values (0, 1, -1, 2, -2), each pair `copies` times in a row.
fn fr_operands(seed: &str, n: usize, copies: usize) -> (Vec<Fr>, Vec<Fr>) {
    let mut rng = common::rng(seed);
    let mut x: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
    let mut y: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
    let edge = [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64), -Fr::from(2u64)];
    for (i, a) in edge.iter().enumerate() {
        for (j, b) in edge.iter().enumerate() {
            for k in 0..copies {
                x[copies * (i * 5 + j) + k] = *a;
                y[copies * (i * 5 + j) + k] = *b;
            }
        }
    }
    (x, y)
}

fn check_fr_ops(r: &Runner) {
    let (x, y) = fr_operands("fr_ops", 5000, 1);
    let (bx, by) = (bytes_of(&x), bytes_of(&y));
    let expect: [Box<dyn Fn(Fr, Fr) -> Fr>; 4] = [
        Box::new(|a, b| a * b),
        Box::new(|a, b| a + b),
        Box::new(|a, b| a - b),
        Box::new(|a, _| -a),
    ];
    for (op, f) in expect.iter().enumerate() {
        let got = frs_from_bytes(&r.run("fr", bx, by, 32, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = frs_from_bytes(&r.run("fr", bx, by, 32, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
    let inv = frs_from_bytes(&r.run("fr", bx, by, 32, 7));
    for (i, a) in x.iter().enumerate() {
        assert_eq!(inv[i], a.invert().unwrap_or(Fr::ZERO), "inverse at {i}");
    }
    // from_mont gives the canonical little-endian integer; to_mont inverts it.
    let canon = r.run("fr", bx, by, 32, 4);
    for (i, a) in x.iter().enumerate() {
        assert_eq!(
            &canon[32 * i..32 * i + 32],
            a.to_repr().as_ref(),
            "from_mont at {i}"
        );
    }
    let back = frs_from_bytes(&r.run("fr", &canon, by, 32, 5));
    assert_eq!(back, x);
}

/// a + b or a - b (a + !b + 1) on 256-bit little-endian integers, modulo 2^256.
fn wide_add_sub(a: [u64; 4], b: [u64; 4], sub: bool) -> [u64; 4] {
    let mut r = [0u64; 4];
    let mut carry = sub;
    for k in 0..4 {
        let (s, c1) = a[k].overflowing_add(if sub { !b[k] } else { b[k] });
        let (s, c2) = s.overflowing_add(carry as u64);
        r[k] = s;
        carry = c1 || c2;
    }
    r
}

/// The NTT's arithmetic on values below 2p (a value v and v + p stand for the same
/// element): results below 2p and equal to blstrs' mod p, for operands lifted by p or not,
/// random and edge values.
fn check_fr_below_2p_ops(r: &Runner) {
    // Little-endian u64 limbs of a value's Montgomery form.
    let limbs = |b: &[u8]| -> [u64; 4] {
        std::array::from_fn(|k| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap()))
    };
    let less = |a: [u64; 4], b: [u64; 4]| a.iter().rev().cmp(b.iter().rev()).is_lt();
    let add = |a, b| wide_add_sub(a, b, false);
    // p = (p - 1) + 1 from the canonical integer of -1.
    let p = add(limbs((-Fr::ONE).to_repr().as_ref()), [1, 0, 0, 0]);
    let two_p = add(p, p);
    let (x, y) = fr_operands("fr_below_2p", 4000, 4);
    // Operand i is lifted by p in x when bit 0 of i is set, in y when bit 1 is.
    let lifted = |v: &[Fr], bit: usize| -> Vec<u8> {
        let mut out = Vec::with_capacity(32 * v.len());
        for (i, e) in v.iter().enumerate() {
            let mut l = limbs(bytes_of(std::slice::from_ref(e)));
            if i >> bit & 1 == 1 {
                l = add(l, p);
            }
            out.extend(l.iter().flat_map(|w| w.to_le_bytes()));
        }
        out
    };
    let (bx, by) = (bytes_of(&x).to_vec(), lifted(&y, 1));
    let bx_lifted = lifted(&x, 0);
    for op in [8u32, 9, 10] {
        // The product takes its first operand below p.
        let xs = if op == 8 { &bx } else { &bx_lifted };
        let f = |a: Fr, b: Fr| match op {
            8 => a * b,
            9 => a + b,
            _ => a - b,
        };
        let got = r.run("fr", xs, &by, 32, op);
        for (i, r) in got.chunks_exact(32).enumerate() {
            let r = limbs(r);
            assert!(less(r, two_p), "op {op} at {i}: {r:x?} not below 2p");
            let r = if less(r, p) {
                r
            } else {
                wide_add_sub(r, p, true)
            };
            let want = limbs(bytes_of(&[f(x[i], y[i])]));
            assert_eq!(r, want, "op {op} at {i}");
        }
    }
}

fn check_fq_ops(r: &Runner) {
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
        let got = fp_from(&r.run("fq", &bx, &by, 48, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = fp_from(&r.run("fq", &bx, &by, 48, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
    let inv = fp_from(&r.run("fq", &bx, &by, 48, 7));
    for (i, a) in x.iter().enumerate() {
        assert_eq!(inv[i], a.invert().unwrap_or(Fp::ZERO), "inverse at {i}");
    }
    let canon = r.run("fq", &bx, &by, 48, 4);
    let back = fp_from(&r.run("fq", &canon, &by, 48, 5));
    assert_eq!(back, x);
    for (i, a) in x.iter().enumerate() {
        let mut le = a.to_bytes_be();
        le.reverse();
        assert_eq!(&canon[48 * i..48 * i + 48], &le[..], "from_mont at {i}");
    }
}

fn check_fq2_ops(r: &Runner) {
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
        let got = unflat(&r.run("fq2", &bx, &by, 96, op as u32));
        for i in 0..x.len() {
            assert_eq!(got[i], f(x[i], y[i]), "op {op} at {i}");
        }
    }
    let sq = unflat(&r.run("fq2", &bx, &by, 96, 6));
    assert!(sq.iter().zip(&x).all(|(s, a)| *s == a.square()));
}

/// Each check as two tests: on the GPU (skipped without a usable one) and on the host
/// build of the same code.
macro_rules! on_the_gpu_and_the_host {
    ($($check:ident: $gpu_test:ident, $host_test:ident;)*) => {$(
        #[test]
        fn $gpu_test() {
            if let Some(r) = gpu(stringify!($gpu_test)) {
                $check(&r);
            }
        }

        #[test]
        fn $host_test() {
            $check(&host());
        }
    )*};
}

on_the_gpu_and_the_host! {
    check_fr_ops: fr_ops_match_blstrs, fr_ops_on_the_host_match_blstrs;
    check_fr_below_2p_ops: fr_below_2p_ops_match_blstrs, fr_below_2p_ops_on_the_host_match_blstrs;
    check_fq_ops: fq_ops_match_blstrs, fq_ops_on_the_host_match_blstrs;
    check_fq2_ops: fq2_ops_match_blstrs, fq2_ops_on_the_host_match_blstrs;
}
