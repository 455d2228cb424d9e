//! The curve groups the MSM kernels are instantiated for.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

use crate::field::{self, Limbs};
use crate::work::{Work, MIXED_ADD_FQ, XYZZ_ADD_FQ};

/// A curve group the MSM kernels are instantiated for.
pub trait Curve {
    /// Kernel name prefix ("g1", "g2").
    const PREFIX: &'static str;
    /// Bytes of one affine point on the device (blst layout).
    const AFFINE_BYTES: usize;
    /// Bytes of one XYZZ accumulator.
    const XYZZ_BYTES: usize;
    /// Threads per block for the reductions (bounded by registers and shared memory).
    const REDUCE_THREADS: u32;
    /// Whether what the batch-affine levels (affine.rs) leave can be reduced straight into the running sums
    /// (leftover.rs; G1 only: G2's goes through the XYZZ chunk sums).
    const LEFTOVER_REDUCE: bool;
    /// Fq products per product of the coordinates' field (Fq: 1, Fq2: 3 by Karatsuba), for
    /// the modelled work of the kernels (crate::work).
    const FQ_PER_PRODUCT: f64;
    /// Host affine type.
    type Affine: Limbs;
    /// Host projective type.
    type Projective: group::Group;
    /// Converts one downloaded XYZZ point.
    fn from_xyzz(bytes: &[u8]) -> Self::Projective;
}

/// BLS12-381 G1.
pub struct G1;
/// BLS12-381 G2.
pub struct G2;

impl Curve for G1 {
    const PREFIX: &'static str = "g1";
    const AFFINE_BYTES: usize = 96;
    const XYZZ_BYTES: usize = 192;
    const REDUCE_THREADS: u32 = 128;
    const LEFTOVER_REDUCE: bool = true;
    const FQ_PER_PRODUCT: f64 = 1.0;
    type Affine = G1Affine;
    type Projective = G1Projective;
    fn from_xyzz(bytes: &[u8]) -> G1Projective {
        field::g1_from_xyzz(bytes)
    }
}

impl Curve for G2 {
    const PREFIX: &'static str = "g2";
    const AFFINE_BYTES: usize = 192;
    const XYZZ_BYTES: usize = 384;
    const REDUCE_THREADS: u32 = 64;
    const LEFTOVER_REDUCE: bool = false;
    const FQ_PER_PRODUCT: f64 = 3.0;
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn from_xyzz(bytes: &[u8]) -> G2Projective {
        field::g2_from_xyzz(bytes)
    }
}

/// Modelled work (crate::work) of `adds` mixed XYZZ additions of points of `C` read from
/// device memory with a 4-byte index each.
pub fn mixed_adds<C: Curve>(adds: f64) -> Work {
    Work::fq(adds * MIXED_ADD_FQ * C::FQ_PER_PRODUCT).and_bytes(adds * (C::AFFINE_BYTES + 4) as f64)
}

/// Modelled work of `adds` XYZZ + XYZZ additions of `C`, one accumulator read per addition.
pub fn xyzz_adds<C: Curve>(adds: f64) -> Work {
    Work::fq(adds * XYZZ_ADD_FQ * C::FQ_PER_PRODUCT).and_bytes(adds * C::XYZZ_BYTES as f64)
}
