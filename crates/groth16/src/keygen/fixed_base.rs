//! Fixed-base scalar multiplication: many scalars times one base point (the generator),
//! with precomputed window tables.
//!
//! A scalar is recoded into signed base-2^w digits in (-2^(w-1), 2^(w-1)]; window k's
//! table holds j * 2^(wk) * G for j = 1..=2^(w-1) as affine points, so a multiplication is
//! one mixed addition (or subtraction) per non-zero digit and no doubling. Results are
//! brought to affine form per chunk with one field inversion (Montgomery's trick) instead
//! of one per point.

use ff::{BatchInvert, Field};
use group::prime::PrimeCurveAffine;
use group::Curve;
use rayon::prelude::*;

use crate::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

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
}

impl JacobianCurve for G1Projective {
    type Base = blstrs::Fp;
    fn jacobian(&self) -> (Self::Base, Self::Base, Self::Base) {
        (self.x(), self.y(), self.z())
    }
    fn affine_from_xy(x: Self::Base, y: Self::Base) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
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
/// Widest window used (the G1 table is then 16 x 2^15 x 96 B = 48 MiB).
const MAX_WINDOW: u32 = 16;
/// Scalars per parallel task (and per batch inversion).
const CHUNK: usize = 512;

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
        let w = window_for(num_scalars);
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

    /// `s` times the base, projective.
    #[inline]
    pub(crate) fn mul(&self, s: &Fr) -> G {
        let bytes = s.to_bytes_le();
        let mut limbs = [0u64; 5];
        for (l, c) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *l = u64::from_le_bytes(c.try_into().unwrap_or_default());
        }
        let w = self.w as usize;
        let mask = (1u64 << w) - 1;
        let half = self.half as i64;
        let mut acc = G::identity();
        let mut carry = 0i64;
        for k in 0..self.windows {
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
            let row = &self.points[k * self.half..];
            if d > 0 {
                acc += &row[(d - 1) as usize];
            } else if d < 0 {
                acc -= &row[(-d - 1) as usize];
            }
        }
        // A canonical scalar is below 2^255, so the top window never carries out.
        debug_assert_eq!(carry, 0);
        acc
    }

    /// Every scalar times the base, affine, in order (parallel).
    pub(crate) fn mul_all(&self, scalars: &[Fr]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        out.par_chunks_mut(CHUNK)
            .zip(scalars.par_chunks(CHUNK))
            .for_each(|(o, s)| {
                let proj: Vec<G> = s.iter().map(|s| self.mul(s)).collect();
                batch_normalize(&proj, o);
            });
        out
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
    }
}
