//! The Groth16 proof and its bellperson encoding: A (48-byte compressed G1), B (96-byte
//! compressed G2), C (48-byte compressed G1), 192 bytes in all.

use group::GroupEncoding;

use crate::error::ProofDecodeError;
use crate::{G1Affine, G2Affine};

/// A Groth16 proof over BLS12-381.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The A element (G1).
    pub a: G1Affine,
    /// The B element (G2).
    pub b: G2Affine,
    /// The C element (G1).
    pub c: G1Affine,
}

impl Proof {
    /// Encoded size in bytes.
    pub const SIZE: usize = 192;

    /// Encodes as bellperson does.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..48].copy_from_slice(self.a.to_bytes().as_ref());
        out[48..144].copy_from_slice(self.b.to_bytes().as_ref());
        out[144..].copy_from_slice(self.c.to_bytes().as_ref());
        out
    }

    /// Decodes one proof; points must be valid, in the subgroup and not the identity.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProofDecodeError> {
        if bytes.len() != Self::SIZE {
            return Err(ProofDecodeError::Length {
                expected: Self::SIZE,
                got: bytes.len(),
            });
        }
        let mut a = <G1Affine as GroupEncoding>::Repr::default();
        a.as_mut().copy_from_slice(&bytes[..48]);
        let mut b = <G2Affine as GroupEncoding>::Repr::default();
        b.as_mut().copy_from_slice(&bytes[48..144]);
        let mut c = <G1Affine as GroupEncoding>::Repr::default();
        c.as_mut().copy_from_slice(&bytes[144..]);
        let a = Option::<G1Affine>::from(G1Affine::from_bytes(&a))
            .ok_or(ProofDecodeError::Point("A"))?;
        let b = Option::<G2Affine>::from(G2Affine::from_bytes(&b))
            .ok_or(ProofDecodeError::Point("B"))?;
        let c = Option::<G1Affine>::from(G1Affine::from_bytes(&c))
            .ok_or(ProofDecodeError::Point("C"))?;
        Ok(Self { a, b, c })
    }

    /// Concatenates proofs in order (a multi-partition PoRep proof is 10 of these).
    pub fn concat(proofs: &[Proof]) -> Vec<u8> {
        proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }

    /// Splits a concatenation of proofs.
    pub fn split(bytes: &[u8]) -> Result<Vec<Proof>, ProofDecodeError> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(Self::SIZE) {
            return Err(ProofDecodeError::Length {
                expected: Self::SIZE * (bytes.len() / Self::SIZE).max(1),
                got: bytes.len(),
            });
        }
        bytes.chunks(Self::SIZE).map(Self::from_bytes).collect()
    }
}
