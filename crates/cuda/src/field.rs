//! Host-side views of blstrs values as the raw limbs the kernels use (blst's layout:
//! Montgomery form, little-endian u64 limbs, read on the device as u32 limbs).

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cudarc::driver::DeviceRepr;
use ff::Field;
use group::prime::PrimeCurveAffine;

/// One Fr passed by value to a kernel (8 x u32, Montgomery form).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DevFr(pub [u64; 4]);
// SAFETY: plain old data with the kernel's `Fr` layout (32 bytes, 4-byte aligned suffices).
unsafe impl DeviceRepr for DevFr {}

impl From<Fr> for DevFr {
    fn from(x: Fr) -> Self {
        DevFr(
            bytes_of(std::slice::from_ref(&x))
                .chunks(8)
                .map(le_u64)
                .collect::<Vec<_>>()
                .try_into()
                .unwrap_or([0; 4]),
        )
    }
}

fn le_u64(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

/// Marker for blstrs types whose memory is exactly their blst limbs.
///
/// # Safety
/// Implementors must be `repr(transparent)` over plain limb arrays with no padding.
pub unsafe trait Limbs: Copy {}
// SAFETY: blstrs's Scalar is repr(transparent) over blst_fr, a repr(C) struct of [u64; 4]:
// 32 bytes, no padding, every bit pattern a valid value of the type.
unsafe impl Limbs for Fr {}
// SAFETY: G1Affine is repr(transparent) over blst_p1_affine, repr(C) { x, y: blst_fp }
// with blst_fp a [u64; 6]: 96 bytes of u64 limbs, no padding.
unsafe impl Limbs for G1Affine {}
// SAFETY: G2Affine is repr(transparent) over blst_p2_affine, repr(C) { x, y: blst_fp2 }
// with blst_fp2 two blst_fp of [u64; 6]: 192 bytes of u64 limbs, no padding.
unsafe impl Limbs for G2Affine {}
// SAFETY: Fp is repr(transparent) over blst_fp, a [u64; 6]: 48 bytes, no padding.
unsafe impl Limbs for Fp {}

/// The raw bytes of a slice of limb values.
pub fn bytes_of<T: Limbs>(v: &[T]) -> &[u8] {
    // SAFETY: `Limbs` types are padding-free plain data; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn fp_at(b: &[u8], i: usize) -> Fp {
    let mut l = [0u64; 6];
    for (k, limb) in l.iter_mut().enumerate() {
        *limb = le_u64(&b[48 * i + 8 * k..48 * i + 8 * k + 8]);
    }
    Fp::from_raw_unchecked(l)
}

/// Reads Fr values (Montgomery limbs) from device bytes.
pub fn frs_from_bytes(b: &[u8]) -> Vec<Fr> {
    b.chunks_exact(32)
        .map(|c| {
            let mut l = [0u64; 4];
            for (k, limb) in l.iter_mut().enumerate() {
                *limb = le_u64(&c[8 * k..8 * k + 8]);
            }
            limbs_to_fr(l)
        })
        .collect()
}

/// The device's bytes are blstrs' own memory (Montgomery limbs): copy them in.
fn limbs_to_fr(l: [u64; 4]) -> Fr {
    let mut out = Fr::ZERO;
    // SAFETY: Fr is repr(transparent) over blst_fr, whose memory is these 4 limbs.
    unsafe {
        std::ptr::copy_nonoverlapping(
            l.as_ptr().cast::<u8>(),
            (&mut out as *mut Fr).cast::<u8>(),
            32,
        )
    };
    out
}

/// An XYZZ G1 point (4 x 48 bytes: X, Y, ZZ, ZZZ) from the device, as a projective point.
pub fn g1_from_xyzz(b: &[u8]) -> G1Projective {
    let (x, y, zz, zzz) = (fp_at(b, 0), fp_at(b, 1), fp_at(b, 2), fp_at(b, 3));
    let (Some(zzi), Some(zzzi)) = (
        Option::<Fp>::from(zz.invert()),
        Option::<Fp>::from(zzz.invert()),
    ) else {
        return G1Projective::from(G1Affine::identity());
    };
    G1Projective::from(G1Affine::from_raw_unchecked(x * zzi, y * zzzi, false))
}

/// An XYZZ G2 point (4 x 96 bytes) from the device, as a projective point.
pub fn g2_from_xyzz(b: &[u8]) -> G2Projective {
    let f2 = |i: usize| Fp2::new(fp_at(b, 2 * i), fp_at(b, 2 * i + 1));
    let (x, y, zz, zzz) = (f2(0), f2(1), f2(2), f2(3));
    let (Some(zzi), Some(zzzi)) = (
        Option::<Fp2>::from(zz.invert()),
        Option::<Fp2>::from(zzz.invert()),
    ) else {
        return G2Projective::from(G2Affine::identity());
    };
    G2Projective::from(G2Affine::from_raw_unchecked(x * zzi, y * zzzi, false))
}
