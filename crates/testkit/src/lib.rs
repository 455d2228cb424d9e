//! filprove's shared test kit (a dev-dependency only):
//!
//! - [`circuits`]: the small circuits the crates' tests prove (a squaring chain, a mix of
//!   bits and products, inputs only, random R1CS);
//! - [`random`]: random scalars, points, witnesses, blinding factors and parameters;
//! - [`conformance`]: [`check_backend`], the suite every [`filprove_groth16::Backend`]
//!   passes: byte-identical proofs with fixed r, s against the CPU reference,
//!   verification, typed shape errors, degenerate circuits, staged equals unstaged.

pub mod circuits;
pub mod conformance;
pub mod random;

pub use circuits::{Chain, InputsOnly, Mix, RandomR1cs};
pub use conformance::{check_backend, Cases, Failure, Summary};
