//! Groth16 parameters (the SRS) in bellperson's / Filecoin's on-disk format.
//!
//! A `.params` file is the verifying key followed by five sections, each a big-endian u32
//! count and that many uncompressed points: h (G1, domain-1), l (G1, aux), a (G1,
//! inputs + aux dense in A), b_g1 (G1, inputs + aux dense in B), b_g2 (G2, likewise).
//! A `.vk` file is the verifying key alone: alpha_g1, beta_g1, beta_g2, gamma_g2,
//! delta_g1, delta_g2, then a u32 count and the ic points (G1).

use crate::{G1Affine, G2Affine};

/// The verifying key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// alpha in G1.
    pub alpha_g1: G1Affine,
    /// beta in G1.
    pub beta_g1: G1Affine,
    /// beta in G2.
    pub beta_g2: G2Affine,
    /// gamma in G2.
    pub gamma_g2: G2Affine,
    /// delta in G1.
    pub delta_g1: G1Affine,
    /// delta in G2.
    pub delta_g2: G2Affine,
    /// One point per public input (ONE first).
    pub ic: Vec<G1Affine>,
}

/// A whole parameter set, decoded into memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srs {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// tau^i t(tau) / delta, i < domain - 1.
    pub h: Vec<G1Affine>,
    /// (beta A_i + alpha B_i + C_i) / delta for every aux variable.
    pub l: Vec<G1Affine>,
    /// A_i(tau) for all inputs, then the aux variables dense in A.
    pub a: Vec<G1Affine>,
    /// B_i(tau) in G1 for inputs and aux variables dense in B.
    pub b_g1: Vec<G1Affine>,
    /// B_i(tau) in G2, likewise.
    pub b_g2: Vec<G2Affine>,
}

impl Srs {
    /// The same parameter set without its proving sections (h, l, a, b_g1, b_g2): the
    /// verifying key alone. An engine keeps this on the host once every device holds the
    /// sections for good ([`crate::Backend::hold_parameters`]); a backend that is given it
    /// and does not hold the sections answers [`crate::ProveError::ParametersOffHost`].
    pub fn verifying_key_only(&self) -> Srs {
        Srs {
            vk: self.vk.clone(),
            h: Vec::new(),
            l: Vec::new(),
            a: Vec::new(),
            b_g1: Vec::new(),
            b_g2: Vec::new(),
        }
    }

    /// Whether the proving sections are here (false for [`Srs::verifying_key_only`]).
    pub fn has_sections(&self) -> bool {
        !(self.h.is_empty()
            && self.l.is_empty()
            && self.a.is_empty()
            && self.b_g1.is_empty()
            && self.b_g2.is_empty())
    }
}

mod bellperson_compat;
mod digest;
mod header;
mod read;
mod write;

pub use digest::{
    file_digest, file_digest_cached, Checked, Manifest, ManifestEntry, DIGEST_HEX_LEN,
};
pub use header::{
    ParamsHeader, ParamsShape, SectionInfo, VkHeader, G1_BYTES, G2_BYTES, VK_FIXED_BYTES,
};
pub use read::{OnBytes, ReadOptions};
pub use write::{temp_path, write_atomic};
