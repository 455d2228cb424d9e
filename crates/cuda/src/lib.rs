//! filprove's GPU backend: CUDA kernels for BLS12-381 (Fr/Fq/Fq2 arithmetic, NTT, Pippenger
//! MSM over G1 and G2, the split MSM for 0/1-heavy witnesses) and [`CudaBackend`], the
//! Groth16 prover that drives them behind [`filprove_groth16::Backend`].
//!
//! Kernels are compiled by build.rs into fatbins embedded in the binary and loaded through
//! the CUDA driver API (cudarc, dynamic loading): a machine needs only the NVIDIA driver.
//! A build without nvcc, or a machine without a GPU, still builds and runs; the backend
//! then reports [`filprove_groth16::ProveError::Unavailable`] with the reason.
//!
//! This is the only crate of the workspace with `unsafe` code.

pub mod backend;
pub mod field;
pub mod fixed_base;
pub mod gpu;
mod host_marks;
pub mod kernels;
pub mod msm;
pub mod ntt;
pub mod options;
pub mod pinned;
pub mod plan;
pub mod resident;
pub mod stage;
pub mod synth;
pub mod workload;

pub use backend::CudaBackend;
pub use fixed_base::{FixedBaseOptions, GpuFixedBase};
pub use gpu::Gpu;
pub use options::CudaOptions;
