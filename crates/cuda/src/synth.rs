//! Synthetic inputs made on the device, for tests and benchmarks (kernels in
//! kernels/synth.cu): valid, distinct curve points in the layout the MSM kernels read, scalar
//! vectors with a chosen share of zeros and ones, and a device-side buffer comparison.
//!
//! Points: `P_i = T1[i mod 2^T1_LG] + T2[i >> T1_LG]`, added in affine form on the device
//! (one field inversion per [`BATCH`] points). The tables are subgroup points `s * G` made
//! on the host from scalars derived from `(seed, table, index)` alone, so the points of a
//! seed do not depend on `n`: the first `m` points for `n` are the points for `m`. The
//! host rejects table scalars with `s2 = +-s1` for any `s1` of T1, so no addition is a
//! doubling or has the identity as its sum, and every `P_i` lies in the prime-order
//! subgroup with the known discrete log `s1 + s2`. Distinct indices give distinct points
//! except with probability about `n^2 / r` (r the group order, about 2^255).

use std::collections::HashSet;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cudarc::driver::{CudaSlice, PushKernelArg};
use ff::Field;
use filprove_groth16::{Fr, ProveError};
use group::prime::PrimeCurveAffine;
use group::{Curve as _, Group};
use rayon::prelude::*;

use crate::field::{self, Limbs};
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{Curve, G1, G2};

/// log2 of the first table's length: `T1` has `min(n, 2^T1_LG)` points, `T2`
/// `ceil(n / 2^T1_LG)` (2^13 at n = 2^27).
pub const T1_LG: u32 = 14;
/// Points per device thread (`SYNTH_BATCH` in synth.cu): one inversion each.
pub const BATCH: usize = 32;
const THREADS: u32 = 128;
/// Most points one call makes (indices are 32-bit on the device).
pub const MAX_POINTS: usize = (u32::MAX as usize) - 4096;

/// A curve the point generator is instantiated for (G1, G2).
pub trait SynthCurve: Curve {
    /// `s * generator` for each scalar, in affine form (parallel).
    fn table(scalars: &[Fr]) -> Vec<Self::Affine>;
    /// `a + b` on the host (the reference for the device's additions).
    fn add(a: &Self::Affine, b: &Self::Affine) -> Self::Affine;
    /// On the curve, in the prime-order subgroup, not the identity.
    fn is_valid(p: &Self::Affine) -> bool;
    /// `n` identity points (all-zero limbs), filled in parallel.
    fn identities(n: usize) -> Vec<Self::Affine>;
}

macro_rules! synth_curve {
    ($c:ty, $aff:ty, $proj:ty) => {
        impl SynthCurve for $c {
            fn table(scalars: &[Fr]) -> Vec<$aff> {
                let proj: Vec<$proj> = scalars
                    .par_iter()
                    .map(|s| <$proj>::generator() * s)
                    .collect();
                let mut out = vec![<$aff>::identity(); proj.len()];
                out.par_chunks_mut(1024)
                    .zip(proj.par_chunks(1024))
                    .for_each(|(o, p)| <$proj>::batch_normalize(p, o));
                out
            }
            fn add(a: &$aff, b: &$aff) -> $aff {
                (<$proj>::from(*a) + b).to_affine()
            }
            fn is_valid(p: &$aff) -> bool {
                bool::from(p.is_on_curve())
                    && bool::from(p.is_torsion_free())
                    && !bool::from(p.is_identity())
            }
            fn identities(n: usize) -> Vec<$aff> {
                (0..n).into_par_iter().map(|_| <$aff>::identity()).collect()
            }
        }
    };
}
synth_curve!(G1, G1Affine, G1Projective);
synth_curve!(G2, G2Affine, G2Projective);

/// The host tables behind a device point vector: `point(i) = t1[i mod 2^T1_LG] +
/// t2[i >> T1_LG]`, `t1[a] = s1[a] * G`, `t2[b] = s2[b] * G`.
pub struct Tables<A> {
    /// The first `min(n, 2^T1_LG)` points of T1.
    pub t1: Vec<A>,
    /// `ceil(n / 2^T1_LG)` points.
    pub t2: Vec<A>,
    /// Discrete logs of `t1`.
    pub s1: Vec<Fr>,
    /// Discrete logs of `t2`.
    pub s2: Vec<Fr>,
    /// Points these tables cover.
    pub n: usize,
}

impl<A: Copy> Tables<A> {
    /// The two table points whose sum is point `i`.
    pub fn parts(&self, i: usize) -> (A, A) {
        (self.t1[i & ((1 << T1_LG) - 1)], self.t2[i >> T1_LG])
    }

    /// The discrete log of point `i` (to the base of the group's generator).
    pub fn dlog(&self, i: usize) -> Fr {
        self.s1[i & ((1 << T1_LG) - 1)] + self.s2[i >> T1_LG]
    }
}

fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The `attempt`-th non-zero scalar of table `table`, entry `idx`, for `seed`.
fn table_scalar(seed: u64, table: u64, idx: u64, attempt: u64) -> Fr {
    let mut state = mix64(mix64(mix64(seed) ^ table) ^ idx) ^ mix64(attempt);
    loop {
        let mut w = [0u64; 4];
        for x in w.iter_mut() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            *x = mix64(state);
        }
        w[3] &= u64::MAX >> 1; // < 2^255: below r about 90 % of the time
        if let Some(s) = Option::<Fr>::from(Fr::from_u64s_le(&w)) {
            if !bool::from(s.is_zero()) {
                return s;
            }
        }
    }
}

/// The host tables for the first `n` points of `seed` (`n` at least 1).
pub fn tables<C: SynthCurve>(n: usize, seed: u64) -> Tables<C::Affine> {
    let n = n.max(1);
    // All of T1's scalars (cheap), so the rejection below does not depend on n.
    let all1: Vec<Fr> = (0..1u64 << T1_LG)
        .into_par_iter()
        .map(|a| table_scalar(seed, 1, a, 0))
        .collect();
    let mut forbidden: HashSet<[u8; 32]> = HashSet::with_capacity(2 << T1_LG);
    for s in &all1 {
        forbidden.insert(s.to_bytes_le());
        forbidden.insert((-*s).to_bytes_le());
    }
    let rows = n.div_ceil(1 << T1_LG);
    let s2: Vec<Fr> = (0..rows as u64)
        .into_par_iter()
        .map(|b| {
            (0..)
                .map(|attempt| table_scalar(seed, 2, b, attempt))
                .find(|s| !forbidden.contains(&s.to_bytes_le()))
                .unwrap_or(Fr::ONE) // the iterator is endless; a rejection has odds ~2^-240
        })
        .collect();
    let mut s1 = all1;
    s1.truncate(n.min(1 << T1_LG));
    Tables {
        t1: C::table(&s1),
        t2: C::table(&s2),
        s1,
        s2,
        n,
    }
}

/// The points of `tables` made on the device: `tables.n` affine points, blst layout
/// (Montgomery form, `C::AFFINE_BYTES` each), ready for [`crate::msm::msm`].
pub fn points_from_tables<C: SynthCurve>(
    gpu: &Gpu,
    tables: &Tables<C::Affine>,
) -> Result<CudaSlice<u8>, ProveError> {
    let n = tables.n;
    if n > MAX_POINTS {
        return Err(ProveError::Invalid(format!(
            "{n} synthetic points: at most {MAX_POINTS} per call"
        )));
    }
    let t1 = gpu.upload(field::bytes_of(&tables.t1))?;
    let t2 = gpu.upload(field::bytes_of(&tables.t2))?;
    let mut out = gpu.alloc::<u8>(n * C::AFFINE_BYTES)?;
    let mut bad = gpu.zeros::<u32>(1)?;
    let (k1, n32) = (T1_LG, n as u32);
    let kernel = format!("{}_synth_points", C::PREFIX);
    // SAFETY: signature (const A*, const A*, u32, u32, A*, u32*) as in synth.cu; t1 holds
    // min(n, 2^k1) points and t2 ceil(n / 2^k1), so every index i < n reads inside both;
    // out holds n points.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func(&kernel)?)
            .arg(&t1)
            .arg(&t2)
            .arg(&k1)
            .arg(&n32)
            .arg(&mut out)
            .arg(&mut bad)
            .launch(cfg(blocks(n.div_ceil(BATCH), THREADS), THREADS, 0))
    }
    .map_err(|e| gpu.err(&kernel, e))?;
    let mut nbad = [0u32];
    gpu.stream()
        .memcpy_dtoh(&bad, &mut nbad)
        .map_err(|e| gpu.err("download", e))?;
    gpu.sync()?;
    if nbad[0] != 0 {
        return Err(ProveError::Device {
            device: gpu.name().to_string(),
            message: format!(
                "{kernel}: {} of {n} points hit x1 == x2 (tables not as chosen)",
                nbad[0]
            ),
        });
    }
    Ok(out)
}

/// `n` distinct G1 points for `seed` on the device (see the module doc), 96 bytes each.
pub fn g1_points(gpu: &Gpu, n: usize, seed: u64) -> Result<CudaSlice<u8>, ProveError> {
    points_from_tables::<G1>(gpu, &tables::<G1>(n, seed))
}

/// `n` distinct G2 points for `seed` on the device, 192 bytes each.
pub fn g2_points(gpu: &Gpu, n: usize, seed: u64) -> Result<CudaSlice<u8>, ProveError> {
    points_from_tables::<G2>(gpu, &tables::<G2>(n, seed))
}

/// The mutable raw bytes of a slice of limb values.
fn bytes_of_mut<T: Limbs>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: `Limbs` types are padding-free plain limbs, valid for every bit pattern; u8
    // has alignment 1; the borrow of `v` is carried over.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Downloads the first `n` affine points of a device vector (waits for the stream).
pub fn download_points<C: SynthCurve>(
    gpu: &Gpu,
    d: &CudaSlice<u8>,
    n: usize,
) -> Result<Vec<C::Affine>, ProveError> {
    if d.len() < n * C::AFFINE_BYTES {
        return Err(ProveError::Invalid(format!(
            "download of {n} points from {} bytes",
            d.len()
        )));
    }
    let mut host = C::identities(n);
    if n > 0 {
        let src = d.slice(0..n * C::AFFINE_BYTES);
        gpu.stream()
            .memcpy_dtoh(&src, bytes_of_mut(&mut host))
            .map_err(|e| gpu.err("download", e))?;
    }
    gpu.sync()?;
    Ok(host)
}

/// [`download_points`] for G1.
pub fn download_g1(gpu: &Gpu, d: &CudaSlice<u8>, n: usize) -> Result<Vec<G1Affine>, ProveError> {
    download_points::<G1>(gpu, d, n)
}

/// [`download_points`] for G2.
pub fn download_g2(gpu: &Gpu, d: &CudaSlice<u8>, n: usize) -> Result<Vec<G2Affine>, ProveError> {
    download_points::<G2>(gpu, d, n)
}

/// The share of zeros and ones in a synthetic scalar vector; the rest are full-size
/// (255 random bits reduced once mod r: every value below r, not exactly uniform).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarMix {
    /// Full-size values only.
    Uniform,
    /// A Filecoin PoRep witness: 51 % zero, 47 % one, 2 % full-size
    /// (docs/reference/circuits.md).
    Filecoin,
    /// `zero_pct` % zeros, `one_pct` % ones, the rest full-size.
    Mix {
        /// Percent of zeros.
        zero_pct: f64,
        /// Percent of ones.
        one_pct: f64,
    },
}

impl ScalarMix {
    /// (zero %, one %).
    pub fn percents(&self) -> (f64, f64) {
        match *self {
            ScalarMix::Uniform => (0.0, 0.0),
            ScalarMix::Filecoin => (51.0, 47.0),
            ScalarMix::Mix { zero_pct, one_pct } => (zero_pct, one_pct),
        }
    }

    /// The kernel's thresholds on a 32-bit draw: (zero below, one below).
    fn thresholds(&self) -> Result<(u64, u64), ProveError> {
        let (z, o) = self.percents();
        if !(0.0..=100.0).contains(&z) || !(0.0..=100.0).contains(&o) || z + o > 100.0 {
            return Err(ProveError::Invalid(format!(
                "scalar mix of {z} % zeros and {o} % ones"
            )));
        }
        let t = |pct: f64| ((pct / 100.0 * 4_294_967_296.0).round() as u64).min(1 << 32);
        Ok((t(z), t(z + o)))
    }
}

/// `n` scalars (Montgomery form, 32 bytes each) on the device, deterministic for
/// `(seed, index)` and the mix (a prefix of a longer vector is the shorter one).
pub fn scalars(
    gpu: &Gpu,
    n: usize,
    seed: u64,
    mix: ScalarMix,
) -> Result<CudaSlice<u8>, ProveError> {
    let (zero_below, one_below) = mix.thresholds()?;
    if n > u32::MAX as usize {
        return Err(ProveError::Invalid(format!("{n} synthetic scalars")));
    }
    let mut d = gpu.alloc::<u8>(n * 32)?;
    let n32 = n as u32;
    // SAFETY: signature (Fr*, u32, u64, u64, u64) as in synth.cu; d holds n Fr.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func("synth_scalars")?)
            .arg(&mut d)
            .arg(&n32)
            .arg(&seed)
            .arg(&zero_below)
            .arg(&one_below)
            .launch(cfg(blocks(n, 256), 256, 0))
    }
    .map_err(|e| gpu.err("synth_scalars", e))?;
    Ok(d)
}

/// `n` scalars (Montgomery form, 32 bytes each) on the device from the selftest kernel
/// `fr_random`, deterministic for `(seed, index)`: uniform, or with `filecoin_mix` a
/// witness-like mix of 51 % zeros, 47 % ones and 2 % uniform values.
pub fn fr_random(
    gpu: &Gpu,
    n: usize,
    seed: u64,
    filecoin_mix: bool,
) -> Result<CudaSlice<u8>, ProveError> {
    let n32 = u32::try_from(n).map_err(|_| ProveError::Invalid(format!("{n} random scalars")))?;
    let mode = u32::from(filecoin_mix);
    let mut d = gpu.alloc::<u8>(n * 32)?;
    // SAFETY: fr_random(Fr* out, u32 n, u64 seed, u32 mode) in selftest.cu; the argument
    // types match in order. The kernel writes out[i] for i < n only, and d was allocated
    // with n * 32 bytes (n Fr) just above; d is owned here and returned, so it outlives
    // the kernel queued on gpu's stream.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func("fr_random")?)
            .arg(&mut d)
            .arg(&n32)
            .arg(&seed)
            .arg(&mode)
            .launch(cfg(blocks(n, 256), 256, 0))
    }
    .map_err(|e| gpu.err("fr_random", e))?;
    Ok(d)
}

/// Downloads the first `n` scalars of a device vector (waits for the stream).
pub fn download_scalars(gpu: &Gpu, d: &CudaSlice<u8>, n: usize) -> Result<Vec<Fr>, ProveError> {
    if d.len() < n * 32 {
        return Err(ProveError::Invalid(format!(
            "download of {n} scalars from {} bytes",
            d.len()
        )));
    }
    let mut host: Vec<Fr> = (0..n).into_par_iter().map(|_| Fr::ZERO).collect();
    if n > 0 {
        let src = d.slice(0..n * 32);
        gpu.stream()
            .memcpy_dtoh(&src, bytes_of_mut(&mut host))
            .map_err(|e| gpu.err("download", e))?;
    }
    gpu.sync()?;
    Ok(host)
}

/// Where two device vectors of `n` elements of `elem_bytes` bytes differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Elements that differ.
    pub count: u64,
    /// The first one.
    pub first: u64,
}

/// Compares the first `n` elements of `a` and `b` on the device (`elem_bytes` a multiple
/// of 4); `None` when equal. Waits for the stream.
pub fn compare(
    gpu: &Gpu,
    a: &CudaSlice<u8>,
    b: &CudaSlice<u8>,
    n: usize,
    elem_bytes: usize,
) -> Result<Option<Mismatch>, ProveError> {
    let bytes = n * elem_bytes;
    if elem_bytes == 0 || !elem_bytes.is_multiple_of(4) || a.len() < bytes || b.len() < bytes {
        return Err(ProveError::Invalid(format!(
            "compare {n} x {elem_bytes} bytes in buffers of {} and {}",
            a.len(),
            b.len()
        )));
    }
    let mut result = gpu.upload(&[0u64, u64::MAX])?;
    let (n64, words) = (n as u64, (elem_bytes / 4) as u32);
    // SAFETY: signature (const u32*, const u32*, u64, u32, u64*) as in synth.cu; a and b
    // hold n * words u32 each, result two u64.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func("synth_compare")?)
            .arg(a)
            .arg(b)
            .arg(&n64)
            .arg(&words)
            .arg(&mut result)
            .launch(cfg(blocks(n, 256).min(132 * 16), 256, 0))
    }
    .map_err(|e| gpu.err("synth_compare", e))?;
    let mut host = [0u64; 2];
    gpu.stream()
        .memcpy_dtoh(&result, &mut host)
        .map_err(|e| gpu.err("download", e))?;
    gpu.sync()?;
    Ok((host[0] != 0).then_some(Mismatch {
        count: host[0],
        first: host[1],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table scalars are non-zero, depend only on (seed, table, index), and T2's avoid
    /// +-T1's; the host tables agree with their scalars.
    #[test]
    fn tables_are_prefix_stable_and_collision_free() {
        let small = tables::<G1>(5, 7);
        let big = tables::<G1>((1 << T1_LG) * 2 + 3, 7);
        assert_eq!(small.t1.len(), 5);
        assert_eq!(small.t2.len(), 1);
        assert_eq!(big.t1.len(), 1 << T1_LG);
        assert_eq!(big.t2.len(), 3);
        assert_eq!(small.s1[..], big.s1[..5]);
        assert_eq!(small.s2[0], big.s2[0]);
        assert_eq!(small.t1[..], big.t1[..5]);
        let other = tables::<G1>(5, 8);
        assert_ne!(other.s1[0], small.s1[0]);
        for b in &big.s2 {
            assert!(!bool::from(b.is_zero()));
            assert!(big.s1.iter().all(|a| *a != *b && *a != -*b));
        }
        for i in [0usize, 4, (1 << T1_LG) - 1, 1 << T1_LG, (2 << T1_LG) + 2] {
            let (p, q) = big.parts(i);
            let sum = G1::add(&p, &q);
            assert!(G1::is_valid(&sum), "point {i}");
            assert_eq!(
                sum,
                (G1Projective::generator() * big.dlog(i)).to_affine(),
                "point {i}"
            );
        }
        let g2 = tables::<G2>(3, 7);
        assert_eq!(
            G2::add(&g2.t1[2], &g2.t2[0]),
            (G2Projective::generator() * g2.dlog(2)).to_affine()
        );
    }

    #[test]
    fn mix_thresholds() {
        assert_eq!(ScalarMix::Uniform.thresholds().unwrap(), (0, 0));
        let (z, o) = ScalarMix::Filecoin.thresholds().unwrap();
        assert_eq!(z, (0.51f64 * 4294967296.0).round() as u64);
        assert_eq!(o, (0.98f64 * 4294967296.0).round() as u64);
        let all = ScalarMix::Mix {
            zero_pct: 40.0,
            one_pct: 60.0,
        };
        assert_eq!(all.thresholds().unwrap().1, 1 << 32);
        for bad in [(-1.0, 0.0), (50.0, 51.0), (f64::NAN, 0.0)] {
            let m = ScalarMix::Mix {
                zero_pct: bad.0,
                one_pct: bad.1,
            };
            assert!(m.thresholds().is_err(), "{bad:?}");
        }
    }
}
