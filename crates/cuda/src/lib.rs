//! filprove's GPU backend: CUDA kernels for BLS12-381 (Fr/Fq/Fq2 arithmetic, NTT, Pippenger
//! MSM over G1 and G2, the split MSM for 0/1-heavy witnesses) and [`CudaBackend`], the
//! Groth16 prover that drives them behind [`filprove_groth16::Backend`].
//!
//! Kernels are compiled by build.rs into fatbins embedded in the binary and loaded through
//! the CUDA driver API (cudarc, dynamic loading): a machine needs only the NVIDIA driver.
//! A build without nvcc, or a machine without a GPU, still builds and runs; the backend
//! then reports [`filprove_groth16::ProveError::Unavailable`] with the reason.
//!
//! This is the only crate of the workspace with `unsafe` code: the workspace denies
//! `unsafe_code`, this crate root allows it, and every unsafe block states why it is sound
//! in a `// SAFETY:` comment (clippy's `undocumented_unsafe_blocks` is denied).

// Kernel launches, pinned host memory and byte views of field elements need unsafe code;
// it is confined to this crate (the workspace lint table denies it everywhere else).
#![allow(unsafe_code)]

mod backend;
mod field;
mod fixed_base;
mod folded;
mod gpu;
mod host_marks;
pub mod kernels;
mod ledger;
mod msm;
mod ntt;
mod options;
mod pinned;
pub mod plan;
mod region;
mod resident;
mod stage;
mod synth;
mod work;

pub use backend::CudaBackend;
pub use fixed_base::{FixedBaseOptions, GpuFixedBase};
pub use gpu::device_count;
pub use msm::{LeftoverReduce, MsmTuning};
pub use options::{parse_bytes, CudaOptions, RegisterAt};
pub use plan::VramPlan;
pub use stage::HostPath;

/// The crate's internals for its integration tests and the bench crate (`filprove-bench`):
/// no stable interface.
#[doc(hidden)]
pub mod testing {
    pub use crate::gpu::{blocks, cfg, Gpu};

    /// Host-side field and point conversions.
    pub mod field {
        pub use crate::field::*;
    }
    /// The GPU fixed-base multiplication of parameter generation.
    pub mod fixed_base {
        pub use crate::fixed_base::*;
    }
    /// The folded H bases.
    pub mod folded {
        pub use crate::folded::*;
    }
    /// The MSM drivers.
    pub mod msm {
        pub use crate::msm::*;
    }
    /// The NTT and H drivers.
    pub mod ntt {
        pub use crate::ntt::*;
    }
    /// The modelled work of kernel steps (field products, bytes).
    pub mod work {
        pub use crate::work::*;
    }
    /// Pinned host memory and bounce buffers.
    pub mod pinned {
        pub use crate::pinned::*;
    }
    /// Parameters resident in device memory.
    pub mod resident {
        pub use crate::resident::*;
    }
    /// Staging of a partition's vectors.
    pub mod stage {
        pub use crate::stage::*;
    }
    /// Device-made points and scalars for benchmarks and tests.
    pub mod synth {
        pub use crate::synth::*;
    }
}
