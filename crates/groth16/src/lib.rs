//! Backend-agnostic Groth16 over BLS12-381, in bellperson's formats.
//!
//! - [`assignment`]: a `ConstraintSystem` that captures what a prover needs from a circuit
//!   (the A and B evaluations, the assignments, the A/B densities; backends form c = a*b);
//! - [`params`]: bellperson / Filecoin `.params` and `.vk` files (read, validate, write);
//! - [`keygen`]: fast parameter generation for test sizes;
//! - [`proof`]: the 192-byte proof and its encoding;
//! - [`backend`]: the [`backend::Backend`] trait every prover implements;
//! - [`assemble`](mod@assemble): what every backend shares around its NTTs and MSMs: the shape check of
//!   an assignment against a proving key and the proof's assembly from the MSM results;
//! - [`report`]: what one proof cost (phases, transfers, host syncs);
//! - [`parts`]: circuits of a head and equal parts (PoRep's challenges) synthesized part by
//!   part in parallel;
//! - [`sink`]: the seam through which native (gadget-free) witness code appends to a
//!   constraint system;
//! - [`native`]: native twins of bellperson's SHA-256 gadgets, writing through [`sink`];
//! - [`recycle`]: partition buffers reused between syntheses (and kept page-locked);
//! - [`progress`]: how long work reports how far it got (drawn by the binary);
//! - [`cpu`]: the CPU reference backend (NTT, MSM, prover).

pub mod assemble;
pub mod assignment;
pub mod backend;
pub mod cancel;
pub mod cpu;
pub mod density;
pub mod error;
pub mod keygen;
pub mod native;
pub mod params;
pub mod parts;
pub mod progress;
pub mod proof;
pub mod recycle;
pub mod report;
pub mod sink;

pub use assemble::{assemble, check_shapes, KeyShape, MsmResults};
pub use assignment::ProvingAssignment;
pub use backend::{Backend, ProofInput, Randomness, Staged};
pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
pub use error::{ParamsError, ProveError};
pub use params::{Srs, VerifyingKey};
pub use proof::Proof;
pub use report::{Direction, ProveReport, Transfer};
