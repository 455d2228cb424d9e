//! The fatbins build.rs compiled from `kernels/*.cu`, one per module (empty without nvcc).

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// How the kernels were built (or why not), for messages.
pub const BUILD_NOTE: &str = env!("FILPROVE_CUDA_BUILD_NOTE");

/// Whether this build carries kernels.
pub fn available() -> bool {
    !MODULES.is_empty()
}
