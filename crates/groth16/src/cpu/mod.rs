//! The CPU reference backend: the oracle every GPU operation is compared against, and the
//! fallback prover where no GPU is available.
//!
//! - [`ntt`]: radix-2 NTTs over Fr (natural and bit-reversed orders, cosets);
//! - [`msm`]: G1/G2 multi-scalar multiplication, and the split MSM for 0/1 witnesses;
//! - [`prover`]: [`CpuBackend`] and [`compute_h`] (the shape check and the proof assembly
//!   are shared with every backend: [`crate::assemble()`]).

pub mod msm;
pub mod ntt;
pub mod prover;

pub use msm::{msm_g1, msm_g1_dense, msm_g2, msm_g2_dense, MsmEngine};
pub use ntt::Domain;
pub use prover::{compute_h, prove_one, prove_one_timed, prove_one_with, CpuBackend, PhaseTimes};
