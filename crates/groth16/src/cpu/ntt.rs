//! Radix-2 number-theoretic transforms over the BLS12-381 scalar field, multi-threaded.
//!
//! A [`Domain`] of size `n = 2^k` uses bellperson's root of unity (`ROOT_OF_UNITY` squared
//! `S - k` times) and its coset generator (`MULTIPLICATIVE_GENERATOR`), so polynomials it
//! produces are exactly bellperson's.
//!
//! Layout of the work:
//! - one twiddle table `omega^j, j < n/2` per domain (the inverse transform uses the same
//!   table: `omega^-j = -omega^(n/2 - j)`), built in parallel once per domain; domains up
//!   to 2^[`CACHE_MAX_LOG`] are cached process-wide ([`Domain::cached`]);
//! - decimation in time (bit-reversed input, natural output) and decimation in frequency
//!   (natural input, bit-reversed output), so a pipeline can chain DIF then DIT without any
//!   permutation (see [`crate::cpu::compute_h`]);
//! - cache blocking: the stages whose butterflies span less than [`BLOCK`] elements run
//!   block by block (a block of 2^13 elements is 256 KiB, it stays in L2), each block on one
//!   thread; the wider stages are one parallel pass each;
//! - nothing is allocated per element; the natural-order API (`fft`, `ifft`, `coset_fft`,
//!   `icoset_fft`) adds one in-place bit-reversal permutation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::{Fr, ProveError};

/// Largest log2 size kept in the process-wide domain cache (2^24: a 256 MiB table).
pub const CACHE_MAX_LOG: u32 = 24;

/// Butterfly stages spanning fewer elements than this run block-locally (elements).
const BLOCK_LOG: u32 = 13;
/// Block size in elements (see `BLOCK_LOG`).
pub const BLOCK: usize = 1 << BLOCK_LOG;

/// Inner loops shorter than this are not split further across threads.
const MIN_PAR: usize = 1 << 11;

/// Transform direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Forward,
    Inverse,
}

/// A radix-2 evaluation domain of size `2^log_n` with its precomputed twiddles.
#[derive(Debug)]
pub struct Domain {
    log_n: u32,
    n: usize,
    omega: Fr,
    omega_inv: Fr,
    n_inv: Fr,
    /// omega^j for j < n/2 (empty for n = 1).
    twiddles: Vec<Fr>,
}

impl Domain {
    /// A domain of size `2^log_n`; `log_n` must be below the field's 2-adicity (32).
    pub fn new(log_n: u32) -> Result<Self, ProveError> {
        if log_n >= Fr::S {
            return Err(ProveError::Invalid(format!(
                "evaluation domain 2^{log_n} exceeds the field's 2-adicity 2^{}",
                Fr::S - 1
            )));
        }
        let n = 1usize << log_n;
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        let omega_inv = Option::<Fr>::from(omega.invert())
            .ok_or_else(|| ProveError::Invalid("root of unity is zero".into()))?;
        let n_inv = Option::<Fr>::from(Fr::from(n as u64).invert())
            .ok_or_else(|| ProveError::Invalid("domain size is zero in the field".into()))?;
        let mut twiddles = vec![Fr::ZERO; n / 2];
        fill_powers(&mut twiddles, omega, Fr::ONE);
        Ok(Self {
            log_n,
            n,
            omega,
            omega_inv,
            n_inv,
            twiddles,
        })
    }

    /// The smallest domain holding `len` values (bellperson's rule: at least 1).
    pub fn for_len(len: usize) -> Result<Self, ProveError> {
        Self::new(log2_ceil(len))
    }

    /// A shared domain of size `2^log_n`; sizes up to 2^[`CACHE_MAX_LOG`] are built once
    /// per process, larger ones are built for each call (their tables are large).
    pub fn cached(log_n: u32) -> Result<Arc<Self>, ProveError> {
        if log_n > CACHE_MAX_LOG {
            return Self::new(log_n).map(Arc::new);
        }
        static CACHE: OnceLock<Mutex<HashMap<u32, Arc<Domain>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(d) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&log_n) {
            return Ok(d.clone());
        }
        // Built outside the lock; a concurrent builder of the same size just wastes work.
        let d = Arc::new(Self::new(log_n)?);
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.entry(log_n).or_insert(d).clone())
    }

    /// log2 of the size.
    pub fn log_size(&self) -> u32 {
        self.log_n
    }

    /// The size `n`.
    pub fn size(&self) -> usize {
        self.n
    }

    /// The primitive `n`-th root of unity used by the forward transform.
    pub fn omega(&self) -> Fr {
        self.omega
    }

    /// Its inverse.
    pub fn omega_inv(&self) -> Fr {
        self.omega_inv
    }

    /// `1/n`.
    pub fn size_inv(&self) -> Fr {
        self.n_inv
    }

    /// The coset generator (bellperson's `MULTIPLICATIVE_GENERATOR`).
    pub fn coset_generator() -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR
    }

    /// `Z(g) = g^n - 1` at the coset generator: the vanishing polynomial, which is constant
    /// on the coset.
    pub fn z_on_coset(&self) -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([self.n as u64]) - Fr::ONE
    }

    fn check_len(&self, v: &[Fr]) -> Result<(), ProveError> {
        if v.len() != self.n {
            return Err(ProveError::ShapeMismatch {
                what: "ntt length",
                params: self.n,
                circuit: v.len(),
            });
        }
        Ok(())
    }

    /// Evaluations at `omega^i` of the polynomial with coefficients `v` (natural order in
    /// and out).
    pub fn fft(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        bit_reverse(v);
        self.dit(v, Dir::Forward);
        Ok(())
    }

    /// Coefficients of the polynomial whose evaluations at `omega^i` are `v`.
    pub fn ifft(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        bit_reverse(v);
        self.dit(v, Dir::Inverse);
        scale(v, self.n_inv);
        Ok(())
    }

    /// Evaluations at `g omega^i` (g the coset generator) of the polynomial with
    /// coefficients `v`.
    pub fn coset_fft(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        distribute_powers(v, Fr::MULTIPLICATIVE_GENERATOR, Fr::ONE);
        self.fft(v)
    }

    /// Coefficients of the polynomial whose evaluations at `g omega^i` are `v`.
    pub fn icoset_fft(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        bit_reverse(v);
        self.dit(v, Dir::Inverse);
        distribute_powers(v, generator_inv(), self.n_inv);
        Ok(())
    }

    /// Inverse transform from natural-order evaluations to coefficients in bit-reversed
    /// order, *not* scaled by `1/n` (decimation in frequency).
    pub fn ifft_natural_to_bitrev_unscaled(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        self.dif(v, Dir::Inverse);
        Ok(())
    }

    /// Forward transform from coefficients in bit-reversed order to natural-order
    /// evaluations (decimation in time).
    pub fn fft_bitrev_to_natural(&self, v: &mut [Fr]) -> Result<(), ProveError> {
        self.check_len(v)?;
        self.dit(v, Dir::Forward);
        Ok(())
    }

    /// Multiplies the coefficient of index `i`, stored at bit-reversed position
    /// `rev(i)`, by `c * g^i`.
    pub fn distribute_powers_bitrev(&self, v: &mut [Fr], g: Fr, c: Fr) -> Result<(), ProveError> {
        self.check_len(v)?;
        distribute_powers_bitrev(v, self.log_n, g, c);
        Ok(())
    }

    /// Twiddle for butterfly `j` of a stage whose pairs are `half` apart.
    #[inline(always)]
    fn twiddle(&self, j: usize, half: usize, dir: Dir) -> Fr {
        let idx = j * (self.n / (2 * half));
        match dir {
            Dir::Forward => self.twiddles[idx],
            Dir::Inverse if idx == 0 => Fr::ONE,
            Dir::Inverse => -self.twiddles[self.n / 2 - idx],
        }
    }

    /// Decimation in time: bit-reversed input, natural output.
    fn dit(&self, v: &mut [Fr], dir: Dir) {
        if self.n < 2 {
            return;
        }
        let block = BLOCK.min(self.n);
        let local = self.local_table(block, dir);
        v.par_chunks_mut(block).for_each(|blk| {
            let mut half = 1;
            while half < block {
                let stride = block / (2 * half);
                for grp in blk.chunks_exact_mut(2 * half) {
                    let (lo, hi) = grp.split_at_mut(half);
                    // j = 0 has twiddle one.
                    let t = hi[0];
                    hi[0] = lo[0] - t;
                    lo[0] += t;
                    let tw = local.iter().step_by(stride).skip(1);
                    for ((x, y), w) in lo[1..].iter_mut().zip(hi[1..].iter_mut()).zip(tw) {
                        let t = *y * w;
                        *y = *x - t;
                        *x += t;
                    }
                }
                half *= 2;
            }
        });
        let mut half = block;
        while half < self.n {
            self.wide_stage(v, half, dir, |x, y, w| {
                let t = *y * w;
                *y = *x - t;
                *x += t;
            });
            half *= 2;
        }
    }

    /// Decimation in frequency: natural input, bit-reversed output.
    fn dif(&self, v: &mut [Fr], dir: Dir) {
        if self.n < 2 {
            return;
        }
        let block = BLOCK.min(self.n);
        let mut half = self.n / 2;
        while half >= block {
            self.wide_stage(v, half, dir, |x, y, w| {
                let t = *x - *y;
                *x += *y;
                *y = t * w;
            });
            half /= 2;
        }
        let local = self.local_table(block, dir);
        v.par_chunks_mut(block).for_each(|blk| {
            let mut half = block / 2;
            while half >= 1 {
                let stride = block / (2 * half);
                for grp in blk.chunks_exact_mut(2 * half) {
                    let (lo, hi) = grp.split_at_mut(half);
                    let t = lo[0] - hi[0];
                    lo[0] += hi[0];
                    hi[0] = t;
                    let tw = local.iter().step_by(stride).skip(1);
                    for ((x, y), w) in lo[1..].iter_mut().zip(hi[1..].iter_mut()).zip(tw) {
                        let t = *x - *y;
                        *x += *y;
                        *y = t * w;
                    }
                }
                half /= 2;
            }
        });
    }

    /// The twiddles of a transform of size `block` (`omega_block^j`, j < block/2), in the
    /// given direction: small and contiguous, so block-local stages stay in cache.
    fn local_table(&self, block: usize, dir: Dir) -> Vec<Fr> {
        (0..block / 2)
            .map(|j| self.twiddle(j, block / 2, dir))
            .collect()
    }

    /// One stage whose pairs are `half >= BLOCK` apart, in parallel over groups and within
    /// each group. The twiddle of butterfly `j` is `omega^(j * stride)` (forward) or its
    /// inverse `-omega^(n/2 - j * stride)` (`j > 0`), read from the one table.
    fn wide_stage<F>(&self, v: &mut [Fr], half: usize, dir: Dir, bf: F)
    where
        F: Fn(&mut Fr, &mut Fr, Fr) + Sync,
    {
        let chunk = (half / rayon::current_num_threads().max(1) / 4).clamp(MIN_PAR, half);
        let stride = self.n / (2 * half);
        let tw = &self.twiddles[..];
        let n2 = self.n / 2;
        v.par_chunks_mut(2 * half).for_each(|grp| {
            let (lo, hi) = grp.split_at_mut(half);
            lo.par_chunks_mut(chunk)
                .zip(hi.par_chunks_mut(chunk))
                .enumerate()
                .for_each(|(ci, (lo, hi))| {
                    let j0 = ci * chunk;
                    match dir {
                        Dir::Forward => {
                            let tw = tw[j0 * stride..].iter().step_by(stride);
                            for ((x, y), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
                                bf(x, y, *w);
                            }
                        }
                        Dir::Inverse => {
                            for (k, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                                let idx = (j0 + k) * stride;
                                let w = if idx == 0 { Fr::ONE } else { -tw[n2 - idx] };
                                bf(x, y, w);
                            }
                        }
                    }
                });
        });
    }
}

/// `ceil(log2(len))`, with 0 for `len <= 1`.
pub fn log2_ceil(len: usize) -> u32 {
    len.max(1).next_power_of_two().trailing_zeros()
}

/// The inverse of the coset generator.
pub(crate) fn generator_inv() -> Fr {
    // The generator (7) is non-zero, so the inverse exists.
    Fr::MULTIPLICATIVE_GENERATOR.invert().unwrap_or(Fr::ONE)
}

/// `v[i] = c * g^i`, in parallel.
fn fill_powers(v: &mut [Fr], g: Fr, c: Fr) {
    v.par_chunks_mut(MIN_PAR)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let mut acc = c * g.pow_vartime([(ci * MIN_PAR) as u64]);
            for x in chunk {
                *x = acc;
                acc *= g;
            }
        });
}

/// `v[i] *= c * g^i`, in parallel.
pub fn distribute_powers(v: &mut [Fr], g: Fr, c: Fr) {
    v.par_chunks_mut(MIN_PAR)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let mut acc = c * g.pow_vartime([(ci * MIN_PAR) as u64]);
            for x in chunk {
                *x *= acc;
                acc *= g;
            }
        });
}

/// `v[i] *= c`, in parallel.
pub fn scale(v: &mut [Fr], c: Fr) {
    v.par_chunks_mut(MIN_PAR)
        .for_each(|chunk| chunk.iter_mut().for_each(|x| *x *= c));
}

/// Reverses the lowest `bits` bits of `i`.
#[inline]
pub fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

/// The in-place bit-reversal permutation of a power-of-two-length slice (single pass).
pub fn bit_reverse(v: &mut [Fr]) {
    let n = v.len();
    if n <= 2 {
        return;
    }
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = bitrev(i, bits);
        if i < j {
            v.swap(i, j);
        }
    }
}

/// `v[p] *= c * g^rev(p)`: the coset shift of coefficients stored in bit-reversed order.
///
/// With positions split as `p = hi * 2^k + lo`, `rev(p) = rev_k(lo) * 2^(log_n - k) +
/// rev(hi)`, so the factor is `T_lo[lo] * T_hi[hi]` from two small tables: two
/// multiplications per element, fully parallel.
fn distribute_powers_bitrev(v: &mut [Fr], log_n: u32, g: Fr, c: Fr) {
    let k = log_n.min(BLOCK_LOG);
    let rest = log_n - k;
    // T_lo[lo] = g^(rev_k(lo) << rest)
    let g_step = g.pow_vartime([1u64 << rest]);
    let mut natural = vec![Fr::ZERO; 1 << k];
    fill_powers(&mut natural, g_step, Fr::ONE);
    let t_lo: Vec<Fr> = (0..1usize << k).map(|lo| natural[bitrev(lo, k)]).collect();
    // T_hi[hi] = c * g^rev_rest(hi)
    let mut natural = vec![Fr::ZERO; 1 << rest];
    fill_powers(&mut natural, g, c);
    let t_hi: Vec<Fr> = (0..1usize << rest)
        .map(|hi| natural[bitrev(hi, rest)])
        .collect();
    v.par_chunks_mut(1 << k)
        .zip(t_hi.par_iter())
        .for_each(|(chunk, th)| {
            for (x, tl) in chunk.iter_mut().zip(t_lo.iter()) {
                *x *= *th * tl;
            }
        });
}

/// Naive O(n^2) evaluation of the polynomial with coefficients `coeffs` at `x^i` for each
/// `i < coeffs.len()` (for tests and debugging).
pub fn naive_dft(coeffs: &[Fr], x: Fr) -> Vec<Fr> {
    let mut out = Vec::with_capacity(coeffs.len());
    let mut xi = Fr::ONE;
    for _ in 0..coeffs.len() {
        let mut acc = Fr::ZERO;
        let mut pow = Fr::ONE;
        for c in coeffs {
            acc += *c * pow;
            pow *= xi;
        }
        out.push(acc);
        xi *= x;
    }
    out
}
