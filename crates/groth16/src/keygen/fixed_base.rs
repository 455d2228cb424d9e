//! Fixed-base scalar multiplication: many scalars times one base point (the generator),
//! with precomputed window tables.
//!
//! A scalar is recoded into signed base-2^w digits in (-2^(w-1), 2^(w-1)]; window k's
//! table holds j * 2^(wk) * G for j = 1..=2^(w-1) as affine points, so a multiplication is
//! one mixed addition (or subtraction) per non-zero digit and no doubling. Results are
//! brought to affine form per chunk with one field inversion (Montgomery's trick) instead
//! of one per point.

use std::sync::{Arc, Mutex};

use ff::{BatchInvert, Field};
use group::prime::PrimeCurveAffine;
use group::Curve;
use rayon::prelude::*;

use crate::error::ParamsError;
use crate::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Multiples of the standard generators: the fixed-base part of parameter generation
/// (every point of a parameter set is `s * G1::generator()` or `s * G2::generator()` for
/// a scalar `s` computed from the toxic waste).
///
/// Implementations must return exactly what [`CpuFixedBase`] returns: affine points are
/// unique, and a zero scalar gives the identity as blstrs represents it
/// (`G1Affine::identity()`, all-zero limbs).
pub trait FixedBaseMul: Send + Sync {
    /// A name for logs ("cpu", "cuda:0 NVIDIA H200").
    fn name(&self) -> String;

    /// Announces one parameter generation: about `g1_points` G1 and `g2_points` G2
    /// multiplications follow, over several calls. Tables may be built here (sized for
    /// those counts); calls without it must work too.
    fn prepare(&self, g1_points: usize, g2_points: usize) -> Result<(), ParamsError> {
        let _ = (g1_points, g2_points);
        Ok(())
    }

    /// `s * G1::generator()` for each scalar, in order.
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, ParamsError>;

    /// `s * G2::generator()` for each scalar, in order.
    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, ParamsError>;

    /// The generation's points are made: tables and buffers may be freed (a later
    /// [`FixedBaseMul::prepare`] or call builds them again).
    fn release(&self) {}
}

/// The CPU implementation: signed-window tables of each generator (`FixedBaseTable`),
/// built at the first use (sized for [`FixedBaseMul::prepare`]'s counts when given) and
/// kept until [`FixedBaseMul::release`]; multiplications run on rayon's pool.
#[derive(Default)]
pub struct CpuFixedBase {
    /// Announced (G1, G2) point counts.
    hint: Mutex<(usize, usize)>,
    g1: Mutex<Option<Arc<FixedBaseTable<G1Projective>>>>,
    g2: Mutex<Option<Arc<FixedBaseTable<G2Projective>>>>,
}

impl CpuFixedBase {
    /// No tables yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The table in `slot`, built for about `n` multiplications when absent.
    fn table<G: JacobianCurve>(
        slot: &Mutex<Option<Arc<FixedBaseTable<G>>>>,
        n: usize,
    ) -> Result<Arc<FixedBaseTable<G>>, ParamsError>
    where
        G::AffineRepr: PrimeCurveAffine<Curve = G> + Send + Sync + Copy,
    {
        let mut guard = slot
            .lock()
            .map_err(|_| ParamsError::Generate("fixed-base table lock poisoned".into()))?;
        let table = guard.get_or_insert_with(|| Arc::new(FixedBaseTable::new(G::generator(), n)));
        Ok(Arc::clone(table))
    }

    fn hint(&self) -> (usize, usize) {
        self.hint.lock().map(|h| *h).unwrap_or((0, 0))
    }
}

impl FixedBaseMul for CpuFixedBase {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prepare(&self, g1_points: usize, g2_points: usize) -> Result<(), ParamsError> {
        if let Ok(mut h) = self.hint.lock() {
            *h = (g1_points, g2_points);
        }
        Ok(())
    }

    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, ParamsError> {
        if scalars.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.hint().0.max(scalars.len());
        Ok(Self::table(&self.g1, n)?.mul_all(scalars))
    }

    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, ParamsError> {
        if scalars.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.hint().1.max(scalars.len());
        Ok(Self::table(&self.g2, n)?.mul_all(scalars))
    }

    fn release(&self) {
        if let Ok(mut t) = self.g1.lock() {
            *t = None;
        }
        if let Ok(mut t) = self.g2.lock() {
            *t = None;
        }
    }
}

/// A projective (Jacobian) curve group whose coordinates are accessible, so that points can
/// be normalised in batches.
pub(crate) trait JacobianCurve: Curve + Send + Sync
where
    Self::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    /// The coordinate field.
    type Base: Field;
    /// Jacobian coordinates (X, Y, Z): affine (X/Z^2, Y/Z^3); Z = 0 is the identity.
    fn jacobian(&self) -> (Self::Base, Self::Base, Self::Base);
    /// The affine point (x, y), trusted to be on the curve.
    fn affine_from_xy(x: Self::Base, y: Self::Base) -> Self::AffineRepr;
    /// Coordinates of a non-identity affine point.
    fn affine_xy(p: &Self::AffineRepr) -> (Self::Base, Self::Base);
}

impl JacobianCurve for G1Projective {
    type Base = blstrs::Fp;
    fn jacobian(&self) -> (Self::Base, Self::Base, Self::Base) {
        (self.x(), self.y(), self.z())
    }
    fn affine_from_xy(x: Self::Base, y: Self::Base) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn affine_xy(p: &G1Affine) -> (Self::Base, Self::Base) {
        (p.x(), p.y())
    }
}

impl JacobianCurve for G2Projective {
    type Base = blstrs::Fp2;
    fn jacobian(&self) -> (Self::Base, Self::Base, Self::Base) {
        (self.x(), self.y(), self.z())
    }
    fn affine_from_xy(x: Self::Base, y: Self::Base) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn affine_xy(p: &G2Affine) -> (Self::Base, Self::Base) {
        (p.x(), p.y())
    }
}

/// Converts `p` to affine into `out` with one inversion for the whole slice.
pub(crate) fn batch_normalize<G: JacobianCurve>(p: &[G], out: &mut [G::AffineRepr])
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    debug_assert_eq!(p.len(), out.len());
    let mut zinv: Vec<G::Base> = p.iter().map(|q| q.jacobian().2).collect();
    // Zeros (identities) are left as zero.
    zinv.iter_mut().batch_invert();
    for ((q, zi), o) in p.iter().zip(&zinv).zip(out.iter_mut()) {
        if bool::from(zi.is_zero()) {
            *o = G::AffineRepr::identity();
        } else {
            let (x, y, _) = q.jacobian();
            let zi2 = zi.square();
            *o = G::affine_from_xy(x * zi2, y * zi2 * zi);
        }
    }
}

/// Bits of a scalar's canonical form.
const SCALAR_BITS: usize = 256;
/// Widest window chosen automatically (the G1 table is then 16 x 2^15 x 96 B = 48 MiB).
const MAX_WINDOW: u32 = 16;
/// Widest window accepted by [`FixedBaseTable::with_window`].
const MAX_WINDOW_EXPLICIT: u32 = 20;
/// Scalars per parallel task (and per batch inversion).
const CHUNK: usize = 2048;

/// Precomputed multiples of a base point for fixed-base multiplication.
pub(crate) struct FixedBaseTable<G: JacobianCurve>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    /// Window width in bits.
    w: u32,
    /// Number of windows: ceil(256 / w).
    windows: usize,
    /// 2^(w-1): entries per window.
    half: usize,
    /// Window k, entry j-1: j * 2^(wk) * base.
    points: Vec<G::AffineRepr>,
}

/// The window width minimising additions for `n` multiplications plus table building.
pub(crate) fn window_for(n: usize) -> u32 {
    (2..=MAX_WINDOW)
        .min_by_key(|&w| {
            let windows = SCALAR_BITS.div_ceil(w as usize) as u128;
            // Building an entry costs about two additions (add + its share of normalising).
            windows * (n as u128 + 2 * (1u128 << (w - 1)))
        })
        .unwrap_or(MAX_WINDOW)
}

impl<G: JacobianCurve> FixedBaseTable<G>
where
    G::AffineRepr: PrimeCurveAffine<Curve = G> + Send + Sync + Copy,
{
    /// Builds the table for `base`, sized for about `num_scalars` multiplications.
    pub(crate) fn new(base: G, num_scalars: usize) -> Self {
        Self::with_window(base, window_for(num_scalars))
    }

    /// Builds the table for `base` with windows of `w` bits (2..=20).
    pub(crate) fn with_window(base: G, w: u32) -> Self {
        let w = w.clamp(2, MAX_WINDOW_EXPLICIT);
        let windows = SCALAR_BITS.div_ceil(w as usize);
        let half = 1usize << (w - 1);
        let mut bases = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            bases.push(b);
            for _ in 0..w {
                b = b.double();
            }
        }
        let mut points = vec![G::AffineRepr::identity(); windows * half];
        points
            .par_chunks_mut(half)
            .zip(bases.par_iter())
            .for_each(|(out, b)| {
                let b_affine = b.to_affine();
                let mut proj = Vec::with_capacity(half);
                let mut acc = *b;
                proj.push(acc);
                for _ in 1..half {
                    acc += &b_affine;
                    proj.push(acc);
                }
                batch_normalize(&proj, out);
            });
        Self {
            w,
            windows,
            half,
            points,
        }
    }

    /// The signed base-2^w digits of `s`, least significant first, into `out`
    /// (`windows` entries), each in (-2^(w-1), 2^(w-1)].
    #[inline]
    fn digits(&self, s: &Fr, out: &mut [i32]) {
        let bytes = s.to_bytes_le();
        let mut limbs = [0u64; 5];
        for (l, c) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *l = u64::from_le_bytes(c.try_into().unwrap_or_default());
        }
        let w = self.w as usize;
        let mask = (1u64 << w) - 1;
        let half = self.half as i64;
        let mut carry = 0i64;
        for (k, o) in out.iter_mut().enumerate().take(self.windows) {
            let bit = k * w;
            let (li, sh) = (bit / 64, bit % 64);
            let mut v = limbs[li] >> sh;
            if sh + w > 64 {
                v |= limbs[li + 1] << (64 - sh);
            }
            let mut d = (v & mask) as i64 + carry;
            if d > half {
                d -= 1 << w;
                carry = 1;
            } else {
                carry = 0;
            }
            *o = d as i32;
        }
        // A canonical scalar is below 2^255, so the top window never carries out.
        debug_assert_eq!(carry, 0);
    }

    /// The table entry for digit `d` != 0 of window `k` (negated for negative digits).
    #[inline]
    fn entry(&self, k: usize, d: i32) -> G::AffineRepr {
        let e = self.points[k * self.half + d.unsigned_abs() as usize - 1];
        if d < 0 {
            -e
        } else {
            e
        }
    }

    /// `s` times the base, projective (one mixed addition per non-zero digit).
    #[cfg(test)]
    pub(crate) fn mul(&self, s: &Fr) -> G {
        let mut d = vec![0i32; self.windows];
        self.digits(s, &mut d);
        let mut acc = G::identity();
        for (k, &d) in d.iter().enumerate() {
            if d != 0 {
                acc += &self.entry(k, d);
            }
        }
        acc
    }

    /// Every scalar times the base, affine, in order (parallel).
    pub(crate) fn mul_all(&self, scalars: &[Fr]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        out.par_chunks_mut(CHUNK)
            .zip(scalars.par_chunks(CHUNK))
            .for_each(|(o, s)| {
                self.mul_chunk(s, o);
            });
        out
    }

    /// Multiplies a chunk of scalars with affine accumulators: per window, all the
    /// additions of the chunk share one field inversion (an affine addition then costs
    /// about 6 multiplications against 11 for a mixed Jacobian addition).
    fn mul_chunk(&self, scalars: &[Fr], out: &mut [G::AffineRepr]) {
        let n = scalars.len();
        let mut digits = vec![0i32; n * self.windows];
        for (s, d) in scalars.iter().zip(digits.chunks_exact_mut(self.windows)) {
            self.digits(s, d);
        }
        let mut acc = BatchAcc::<G>::new(n);
        let mut adds: Vec<(usize, G::AffineRepr)> = Vec::with_capacity(n);
        for k in 0..self.windows {
            adds.clear();
            adds.extend((0..n).filter_map(|i| {
                let d = digits[i * self.windows + k];
                (d != 0).then(|| (i, self.entry(k, d)))
            }));
            acc.add_batch(&adds);
        }
        acc.write(out);
    }
}

/// Affine accumulators that add points in batches sharing one inversion.
pub(crate) struct BatchAcc<G: JacobianCurve>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    x: Vec<G::Base>,
    y: Vec<G::Base>,
    /// Whether accumulator i is the identity (then x, y are meaningless).
    inf: Vec<bool>,
    /// Scratch: pending additions (accumulator, point, denominator).
    pending: Vec<(usize, G::Base, G::Base)>,
    den: Vec<G::Base>,
    prefix: Vec<G::Base>,
}

impl<G: JacobianCurve> BatchAcc<G>
where
    G::AffineRepr: PrimeCurveAffine<Curve = G> + Send + Sync + Copy,
{
    /// `n` accumulators, all the identity.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            x: vec![G::Base::ZERO; n],
            y: vec![G::Base::ZERO; n],
            inf: vec![true; n],
            pending: Vec::with_capacity(n),
            den: Vec::with_capacity(n),
            prefix: Vec::with_capacity(n),
        }
    }

    /// Adds `p` to accumulator `i` for each `(i, p)` (each `i` at most once, `p` never
    /// the identity).
    pub(crate) fn add_batch(&mut self, adds: &[(usize, G::AffineRepr)]) {
        self.pending.clear();
        self.den.clear();
        for &(i, p) in adds {
            let (px, py) = G::affine_xy(&p);
            if self.inf[i] {
                (self.x[i], self.y[i], self.inf[i]) = (px, py, false);
            } else if self.x[i] == px {
                // Doubling or cancellation: rare; done alone, in projective form.
                let a = G::affine_from_xy(self.x[i], self.y[i]);
                let mut q: G = a.to_curve();
                q += &p;
                let q = q.to_affine();
                if bool::from(q.is_identity()) {
                    self.inf[i] = true;
                } else {
                    (self.x[i], self.y[i]) = G::affine_xy(&q);
                }
            } else {
                self.den.push(px - self.x[i]);
                self.pending.push((i, px, py));
            }
        }
        if self.pending.is_empty() {
            return;
        }
        // Batch inversion: prefix products, one inversion, then back.
        self.prefix.clear();
        let mut run = G::Base::ONE;
        for d in &self.den {
            self.prefix.push(run);
            run *= d;
        }
        let mut inv = run.invert().unwrap_or(G::Base::ZERO);
        for j in (0..self.den.len()).rev() {
            let d_inv = inv * self.prefix[j];
            inv *= self.den[j];
            let (i, px, py) = self.pending[j];
            let (x1, y1) = (self.x[i], self.y[i]);
            let lambda = (py - y1) * d_inv;
            let x3 = lambda.square() - x1 - px;
            self.y[i] = lambda * (x1 - x3) - y1;
            self.x[i] = x3;
        }
    }

    /// The accumulators as affine points.
    pub(crate) fn write(&self, out: &mut [G::AffineRepr]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = if self.inf[i] {
                G::AffineRepr::identity()
            } else {
                G::affine_from_xy(self.x[i], self.y[i])
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Group;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn fixed_base_matches_plain_multiplication() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut scalars: Vec<Fr> = (0..300).map(|_| Fr::random(&mut rng)).collect();
        scalars.extend([
            Fr::ZERO,
            Fr::ONE,
            -Fr::ONE,
            Fr::from(2u64),
            -Fr::from(12345u64),
        ]);
        for n in [1, 100, 5000, 1 << 20] {
            let t1 = FixedBaseTable::new(G1Projective::generator(), n);
            let t2 = FixedBaseTable::new(G2Projective::generator(), n.min(5000));
            let g1 = t1.mul_all(&scalars);
            let g2 = t2.mul_all(&scalars);
            for (i, s) in scalars.iter().enumerate() {
                assert_eq!(
                    g1[i],
                    (G1Projective::generator() * s).to_affine(),
                    "g1 {n} {i}"
                );
                assert_eq!(
                    g2[i],
                    (G2Projective::generator() * s).to_affine(),
                    "g2 {n} {i}"
                );
            }
        }
        assert!(window_for(1) >= 2 && window_for(10_000_000) == MAX_WINDOW);
        let t1 = FixedBaseTable::new(G1Projective::generator(), 1000);
        for s in &scalars[..20] {
            assert_eq!(t1.mul(s), G1Projective::generator() * s);
        }
    }

    #[test]
    fn cpu_fixed_base_keeps_its_tables_until_released() {
        let fb = CpuFixedBase::new();
        assert!(fb.g1(&[]).unwrap().is_empty());
        assert!(fb.g2(&[]).unwrap().is_empty());
        assert!(
            fb.g1.lock().unwrap().is_none(),
            "no table for an empty call"
        );
        fb.prepare(1 << 20, 10).unwrap();
        let s = [Fr::from(3u64), Fr::ZERO, -Fr::from(7u64)];
        let g1 = fb.g1(&s).unwrap();
        let w = fb.g1.lock().unwrap().as_ref().map(|t| t.w);
        assert_eq!(
            w,
            Some(window_for(1 << 20)),
            "sized for the announced count"
        );
        assert_eq!(fb.g1(&s).unwrap(), g1);
        let g2 = fb.g2(&s).unwrap();
        for (i, x) in s.iter().enumerate() {
            assert_eq!(g1[i], (G1Projective::generator() * x).to_affine());
            assert_eq!(g2[i], (G2Projective::generator() * x).to_affine());
        }
        assert_eq!(g1[1], G1Affine::identity());
        assert_eq!(g2[1], G2Affine::identity());
        fb.release();
        assert!(fb.g1.lock().unwrap().is_none() && fb.g2.lock().unwrap().is_none());
        assert_eq!(fb.g1(&s).unwrap(), g1);
        assert_eq!(fb.name(), "cpu");
    }

    #[test]
    fn batch_accumulator_doubling_and_cancellation() {
        let g = G1Projective::generator();
        let p = (g * Fr::from(5u64)).to_affine();
        let q = (g * Fr::from(9u64)).to_affine();
        let mut acc = BatchAcc::<G1Projective>::new(4);
        acc.add_batch(&[(0, p), (1, p), (2, p), (3, q)]);
        // 0: p + p (doubling), 1: p - p (identity), 2: p + q (generic), 3: untouched.
        acc.add_batch(&[(0, p), (1, -p), (2, q)]);
        let mut out = vec![G1Affine::identity(); 4];
        acc.write(&mut out);
        assert_eq!(out[0], (g * Fr::from(10u64)).to_affine());
        assert!(bool::from(out[1].is_identity()));
        assert_eq!(out[2], (g * Fr::from(14u64)).to_affine());
        assert_eq!(out[3], q);
        // Identity accumulator then generic addition again.
        acc.add_batch(&[(1, q), (0, q)]);
        acc.write(&mut out);
        assert_eq!(out[1], q);
        assert_eq!(out[0], (g * Fr::from(19u64)).to_affine());
    }
}
