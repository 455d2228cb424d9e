//! Multi-scalar multiplication over G1 and G2, multi-threaded, with the split MSM for
//! mostly-0/1 Filecoin witnesses.
//!
//! Two bucket-method (Pippenger) engines run the full-size scalars ([`MsmEngine`]):
//! - [`MsmEngine::Blst`] (the default): blst's Pippenger through blstrs'
//!   `G1Projective::multi_exp` / `G2Projective::multi_exp`. blst's assembly and its XYZZ
//!   buckets make it about 1.5x faster than ours on this machine (`examples/cpu_bench.rs`),
//!   which is what decides the default for a reference *and* fallback prover. Its costs:
//!   blstrs takes projective bases, so each call copies up to [`BLST_CHUNK`] bases to
//!   projective form (bounded memory; negligible time next to the MSM), and blst runs on its
//!   own process-wide pool of one thread per CPU, not on the rayon pool of a
//!   [`crate::cpu::CpuBackend`];
//! - [`MsmEngine::Native`]: ours, in safe Rust over blstrs' group operations: signed window
//!   digits (half as many buckets), mixed additions into the buckets, a window size from a
//!   cost model, the points split into chunks across the caller's rayon threads. It obeys
//!   the backend's thread count and is the reference the tests check blst against.
//!
//! The split MSM ([`msm_split`]) first classifies the scalars in one parallel pass (on the
//! rayon pool): zeros are skipped, bases whose scalar is one are summed with mixed
//! additions in the same pass, and only the other scalars (1-8 % of a Filecoin witness, see
//! the design notes) go to a bucket-method engine, as `(base index, scalar)` pairs.

use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

use crate::density::DensityBits;
use crate::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, ProveError};

/// An affine point type the MSMs accept (G1 or G2 of BLS12-381).
pub trait MsmAffine: PrimeCurveAffine<Scalar = Fr> {
    /// blst's Pippenger over projective bases (blstrs' `multi_exp`); `bases` non-empty and
    /// as long as `scalars`.
    fn blst_multi_exp(bases: &[Self::Curve], scalars: &[Fr]) -> Self::Curve;
}

impl MsmAffine for G1Affine {
    fn blst_multi_exp(bases: &[G1Projective], scalars: &[Fr]) -> G1Projective {
        G1Projective::multi_exp(bases, scalars)
    }
}

impl MsmAffine for G2Affine {
    fn blst_multi_exp(bases: &[G2Projective], scalars: &[Fr]) -> G2Projective {
        G2Projective::multi_exp(bases, scalars)
    }
}

/// Which bucket-method implementation computes the full-size-scalar part of an MSM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MsmEngine {
    /// blst's Pippenger (via blstrs), on blst's own thread pool (see the module doc).
    #[default]
    Blst,
    /// Ours, in safe Rust, on the caller's rayon pool.
    Native,
}

/// Most bases one blst call takes (bounds the projective copy: 144 MiB in G1).
pub const BLST_CHUNK: usize = 1 << 20;

/// A scalar in canonical (non-Montgomery) form, little-endian 64-bit limbs.
type Limbs = [u64; 4];

/// Most points one task's bucket method handles (bounds the per-task limb buffer to
/// 64 MiB, and keeps the bucket reduction a few percent of the work).
const MAX_CHUNK: usize = 1 << 21;

/// Scalars classified per task by the split MSM (a multiple of 64: whole density words).
const CLASSIFY_CHUNK: usize = 1 << 14;

/// Below this many terms the MSM is a plain sum of scalar multiplications.
const NAIVE_BELOW: usize = 4;

/// Bits of a scalar (elements of Fr are below 2^255).
const SCALAR_BITS: usize = 255;

#[inline]
fn to_limbs(s: &Fr) -> Limbs {
    let b = s.to_repr();
    let b = b.as_ref();
    let mut out = [0u64; 4];
    for (i, limb) in out.iter_mut().enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8 * i..8 * i + 8]);
        *limb = u64::from_le_bytes(w);
    }
    out
}

/// `c` bits of `l` starting at bit `off` (bits above 255 read as zero).
#[inline(always)]
fn window_bits(l: &Limbs, off: usize, c: usize) -> u64 {
    let (limb, sh) = (off / 64, off % 64);
    if limb >= 4 {
        return 0;
    }
    let mut v = l[limb] >> sh;
    if sh + c > 64 && limb + 1 < 4 {
        v |= l[limb + 1] << (64 - sh);
    }
    v & ((1u64 << c) - 1)
}

/// Window size and window count for `n` points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    c: usize,
    windows: usize,
}

impl Plan {
    /// Windows of `c` bits: `ceil(255 / c)`, plus one for the final carry when the top
    /// window is a full `c` bits (a partial top window absorbs the carry: it stays within
    /// the `2^(c-1)` buckets).
    fn windows(c: usize) -> usize {
        SCALAR_BITS.div_ceil(c) + usize::from(SCALAR_BITS.is_multiple_of(c))
    }

    /// Minimises `windows * (n mixed additions + 2^c bucket-sum additions)`.
    fn for_points(n: usize) -> Self {
        let mut best = Plan {
            c: 1,
            windows: Self::windows(1),
        };
        let mut best_cost = f64::INFINITY;
        for c in 1..=22usize {
            let windows = Self::windows(c);
            // A projective addition costs about 1.3 mixed additions.
            let cost = windows as f64 * (n as f64 + 1.3 * (1u64 << c) as f64);
            if cost < best_cost {
                best_cost = cost;
                best = Plan { c, windows };
            }
        }
        best
    }
}

/// The bucket method on one thread: `sum_i base(i) * limbs[i]`.
fn pippenger_serial<'a, A, F>(limbs: &[Limbs], base: F) -> A::Curve
where
    A: MsmAffine,
    F: Fn(usize) -> &'a A,
{
    let n = limbs.len();
    let Plan { c, windows } = Plan::for_points(n);
    let half = 1usize << (c - 1);
    let full = 1i64 << c;
    let mut buckets = vec![A::Curve::identity(); half];
    let mut carry = vec![0u8; n];
    let mut window_sums = Vec::with_capacity(windows);
    for w in 0..windows {
        let top = w + 1 == windows;
        buckets.iter_mut().for_each(|b| *b = A::Curve::identity());
        for (i, (l, cy)) in limbs.iter().zip(carry.iter_mut()).enumerate() {
            let raw = (window_bits(l, w * c, c) + u64::from(*cy)) as i64;
            let digit = if !top && raw > half as i64 {
                *cy = 1;
                raw - full
            } else {
                *cy = 0;
                raw
            };
            if digit > 0 {
                buckets[digit as usize - 1] += base(i);
            } else if digit < 0 {
                buckets[(-digit) as usize - 1] -= base(i);
            }
        }
        // sum_k k * bucket[k-1], by running sums from the top bucket down.
        let mut running = A::Curve::identity();
        let mut sum = A::Curve::identity();
        for b in buckets.iter().rev() {
            running += b;
            sum += running;
        }
        window_sums.push(sum);
    }
    let mut acc = A::Curve::identity();
    for s in window_sums.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += s;
    }
    acc
}

/// Splits `n` terms into tasks for the current rayon pool: at least one per thread (when
/// there are enough terms), at most [`MAX_CHUNK`] terms each.
fn task_size(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let tasks = threads.max(n.div_ceil(MAX_CHUNK));
    n.div_ceil(tasks).max(256)
}

/// `sum_k bases[idx[k]] * scalars[k]` (or `bases[k]` when `idx` is `None`) with `engine`.
fn bucket_msm<A: MsmAffine>(
    engine: MsmEngine,
    bases: &[A],
    idx: Option<&[u32]>,
    scalars: &[Fr],
) -> A::Curve {
    let n = scalars.len();
    let base = |k: usize| match idx {
        Some(idx) => &bases[idx[k] as usize],
        None => &bases[k],
    };
    if n < NAIVE_BELOW {
        return (0..n).fold(A::Curve::identity(), |acc, k| acc + *base(k) * scalars[k]);
    }
    match engine {
        MsmEngine::Blst => {
            let mut acc = A::Curve::identity();
            let mut pts: Vec<A::Curve> = Vec::with_capacity(n.min(BLST_CHUNK));
            for (ci, s) in scalars.chunks(BLST_CHUNK).enumerate() {
                let start = ci * BLST_CHUNK;
                pts.clear();
                (start..start + s.len())
                    .into_par_iter()
                    .map(|k| base(k).to_curve())
                    .collect_into_vec(&mut pts);
                acc += A::blst_multi_exp(&pts, s);
            }
            acc
        }
        MsmEngine::Native => {
            let chunk = task_size(n);
            scalars
                .par_chunks(chunk)
                .enumerate()
                .map(|(ci, s)| {
                    let start = ci * chunk;
                    let limbs: Vec<Limbs> = s.iter().map(to_limbs).collect();
                    pippenger_serial(&limbs, |k| base(start + k))
                })
                .reduce(A::Curve::identity, |a, b| a + b)
        }
    }
}

/// `sum_i bases[i] * scalars[i]` for full-size scalars (the H query), multi-threaded, with
/// the default engine. Lengths must be equal.
pub fn msm<A: MsmAffine>(bases: &[A], scalars: &[Fr]) -> Result<A::Curve, ProveError> {
    msm_with(MsmEngine::default(), bases, scalars)
}

/// [`msm`] with a chosen engine.
pub fn msm_with<A: MsmAffine>(
    engine: MsmEngine,
    bases: &[A],
    scalars: &[Fr],
) -> Result<A::Curve, ProveError> {
    if bases.len() != scalars.len() {
        return Err(ProveError::ShapeMismatch {
            what: "msm bases vs scalars",
            params: bases.len(),
            circuit: scalars.len(),
        });
    }
    Ok(bucket_msm(engine, bases, None, scalars))
}

/// The split MSM: `sum_j bases[j] * scalars[i_j]`, where `i_j` is the `j`-th index whose
/// density bit is set (every index when `density` is `None`).
///
/// Zero scalars are skipped, bases of one scalars are summed with mixed additions, and
/// only the remaining scalars go to the bucket method. Errors when `bases` does not have
/// exactly one point per selected scalar.
pub fn msm_split<A: MsmAffine>(
    bases: &[A],
    scalars: &[Fr],
    density: Option<&DensityBits>,
) -> Result<A::Curve, ProveError> {
    msm_split_with(MsmEngine::default(), bases, scalars, density)
}

/// [`msm_split`] with a chosen engine for the full-size scalars.
pub fn msm_split_with<A: MsmAffine>(
    engine: MsmEngine,
    bases: &[A],
    scalars: &[Fr],
    density: Option<&DensityBits>,
) -> Result<A::Curve, ProveError> {
    let selected = match density {
        Some(d) => {
            if d.len() != scalars.len() {
                return Err(ProveError::ShapeMismatch {
                    what: "density bits vs scalars",
                    params: d.len(),
                    circuit: scalars.len(),
                });
            }
            d.count_ones()
        }
        None => scalars.len(),
    };
    if bases.len() != selected {
        return Err(ProveError::ShapeMismatch {
            what: "msm bases vs selected scalars",
            params: bases.len(),
            circuit: selected,
        });
    }
    if u32::try_from(bases.len()).is_err() {
        return Err(ProveError::Invalid(format!(
            "msm over {} bases exceeds 2^32",
            bases.len()
        )));
    }
    // First base index of each classification chunk.
    let starts: Vec<usize> = match density {
        Some(d) => {
            let words = d.words();
            let per = CLASSIFY_CHUNK / 64;
            let mut acc = 0usize;
            words
                .chunks(per)
                .map(|w| {
                    let s = acc;
                    acc += w.iter().map(|x| x.count_ones() as usize).sum::<usize>();
                    s
                })
                .collect()
        }
        None => (0..scalars.len().div_ceil(CLASSIFY_CHUNK))
            .map(|c| c * CLASSIFY_CHUNK)
            .collect(),
    };
    let one = Fr::ONE;
    let parts: Vec<(A::Curve, Vec<u32>, Vec<Fr>)> = scalars
        .par_chunks(CLASSIFY_CHUNK)
        .zip(starts.par_iter())
        .enumerate()
        .map(|(ci, (chunk, &start))| {
            let mut ones = A::Curve::identity();
            let mut idx = Vec::new();
            let mut full = Vec::new();
            let mut bi = start;
            for (k, s) in chunk.iter().enumerate() {
                if let Some(d) = density {
                    if !d.get(ci * CLASSIFY_CHUNK + k) {
                        continue;
                    }
                }
                let b = bi;
                bi += 1;
                if bool::from(s.is_zero()) {
                    continue;
                }
                if *s == one {
                    ones += &bases[b];
                } else {
                    // b < bases.len() <= u32::MAX, checked above.
                    idx.push(b as u32);
                    full.push(*s);
                }
            }
            (ones, idx, full)
        })
        .collect();
    let mut ones = A::Curve::identity();
    let total: usize = parts.iter().map(|p| p.1.len()).sum();
    let mut idx = Vec::with_capacity(total);
    let mut full = Vec::with_capacity(total);
    for (o, i, f) in parts {
        ones += o;
        idx.extend_from_slice(&i);
        full.extend_from_slice(&f);
    }
    log::trace!(
        "split msm: {} scalars, {} selected, {} full",
        scalars.len(),
        selected,
        total
    );
    Ok(ones + bucket_msm(engine, bases, Some(&idx), &full))
}

/// The reference: `sum_i bases[i] * scalars[i]` by one scalar multiplication per term
/// (over the shorter of the two slices). For tests and tiny inputs.
pub fn naive<A: MsmAffine>(bases: &[A], scalars: &[Fr]) -> A::Curve {
    bases
        .iter()
        .zip(scalars)
        .fold(A::Curve::identity(), |acc, (b, s)| acc + *b * s)
}

/// G1 MSM over full-size scalars (see [`msm`]).
pub fn msm_g1(bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, ProveError> {
    msm(bases, scalars)
}

/// G2 MSM over full-size scalars (see [`msm`]).
pub fn msm_g2(bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, ProveError> {
    msm(bases, scalars)
}

/// Density-aware split G1 MSM: `bases` are the points of the set bits of `density` over
/// `scalars` (all of them when `None`). See [`msm_split`].
pub fn msm_g1_dense(
    bases: &[G1Affine],
    scalars: &[Fr],
    density: Option<&DensityBits>,
) -> Result<G1Projective, ProveError> {
    msm_split(bases, scalars, density)
}

/// Density-aware split G2 MSM (see [`msm_g1_dense`]).
pub fn msm_g2_dense(
    bases: &[G2Affine],
    scalars: &[Fr],
    density: Option<&DensityBits>,
) -> Result<G2Projective, ProveError> {
    msm_split(bases, scalars, density)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_limbs(l: &Limbs) -> Fr {
        let mut repr = <Fr as PrimeField>::Repr::default();
        for (i, limb) in l.iter().enumerate() {
            repr.as_mut()[8 * i..8 * i + 8].copy_from_slice(&limb.to_le_bytes());
        }
        // The limbs came from a canonical scalar.
        Option::<Fr>::from(Fr::from_repr(repr)).unwrap_or(Fr::ZERO)
    }

    #[test]
    fn plans_are_sane() {
        for n in [1usize, 2, 10, 1000, 1 << 16, 1 << 20, 1 << 27] {
            let p = Plan::for_points(n);
            assert!(p.c >= 1 && p.c <= 22);
            assert!(p.c * p.windows >= SCALAR_BITS);
        }
        assert_eq!(Plan::windows(15), 18);
        assert_eq!(Plan::windows(16), 16);
    }

    #[test]
    fn limbs_round_trip() {
        let s = -Fr::ONE;
        assert_eq!(from_limbs(&to_limbs(&s)), s);
        assert_eq!(to_limbs(&Fr::from(5u64)), [5, 0, 0, 0]);
        let l = [u64::MAX, 1, 0, 0];
        assert_eq!(window_bits(&l, 60, 8), 0x1f);
        assert_eq!(window_bits(&l, 250, 10), 0);
        assert_eq!(window_bits(&l, 256, 10), 0);
    }
}
