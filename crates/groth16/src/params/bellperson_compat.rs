//! Conversions to and from bellperson's parameter types (used by tests and by callers
//! that verify with bellperson / filecoin-proofs).

use std::sync::Arc;

use bellperson::groth16;

use crate::{Bls12, Srs, VerifyingKey};

impl From<&groth16::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: &groth16::VerifyingKey<Bls12>) -> Self {
        Self {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<&VerifyingKey> for groth16::VerifyingKey<Bls12> {
    fn from(vk: &VerifyingKey) -> Self {
        Self {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<&groth16::Parameters<Bls12>> for Srs {
    fn from(p: &groth16::Parameters<Bls12>) -> Self {
        Self {
            vk: (&p.vk).into(),
            h: p.h.to_vec(),
            l: p.l.to_vec(),
            a: p.a.to_vec(),
            b_g1: p.b_g1.to_vec(),
            b_g2: p.b_g2.to_vec(),
        }
    }
}

impl From<&Srs> for groth16::Parameters<Bls12> {
    fn from(s: &Srs) -> Self {
        Self {
            vk: (&s.vk).into(),
            h: Arc::new(s.h.clone()),
            l: Arc::new(s.l.clone()),
            a: Arc::new(s.a.clone()),
            b_g1: Arc::new(s.b_g1.clone()),
            b_g2: Arc::new(s.b_g2.clone()),
        }
    }
}

impl VerifyingKey {
    /// Verifies `proof` against `public_inputs` (without the ONE input) with bellperson's
    /// verifier.
    pub fn verify(&self, proof: &crate::Proof, public_inputs: &[crate::Fr]) -> bool {
        let vk: groth16::VerifyingKey<Bls12> = self.into();
        let pvk = groth16::prepare_verifying_key(&vk);
        let proof = groth16::Proof::<Bls12> {
            a: proof.a,
            b: proof.b,
            c: proof.c,
        };
        groth16::verify_proof(&pvk, &proof, public_inputs).unwrap_or(false)
    }
}
