//! The kernel modules: the fatbins build.rs compiled from `kernels/**/*.cu`, one per
//! source file (none without nvcc), and the manifest of the kernels each one holds, which
//! [`crate::gpu::Gpu::open`] loads.

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// How the kernels were built (or why not), for messages.
pub const BUILD_NOTE: &str = env!("FILPROVE_CUDA_BUILD_NOTE");

/// Whether this build carries kernels.
pub fn available() -> bool {
    !MODULES.is_empty()
}

/// One kernel module: the fatbin of `kernels/**/<name>.cu` and the kernels loaded from it
/// (its `extern "C"` names).
pub(crate) struct KernelModule {
    /// The source's file stem, which names its fatbin.
    pub name: &'static str,
    /// The kernels loaded from it.
    pub kernels: &'static [&'static str],
}

impl KernelModule {
    /// The module's fatbin in this build.
    pub fn image(&self) -> Option<&'static [u8]> {
        MODULES.iter().find(|(m, _)| *m == self.name).map(|m| m.1)
    }
}

/// The modules every device loads: each kernel here is on the production path.
pub(crate) const PRODUCTION: &[KernelModule] = &[
    KernelModule {
        name: "ntt",
        kernels: &[
            "ntt_powers",
            "ntt_bitrev",
            "ntt_bitrev_scale",
            "ntt_shared_dit",
            "ntt_shared_dif",
            "ntt_strided_dit",
            "ntt_strided_dif",
            "ntt_scale_table",
            "ntt_expand",
            "ntt_scale_const",
        ],
    },
    KernelModule {
        name: "scalars",
        kernels: &[
            "scan_blocks",
            "scan_sums",
            "scan_add",
            "density_popcount",
            "density_gather",
        ],
    },
    KernelModule {
        name: "msm_scalars",
        kernels: &[
            "classify_scalars",
            "msm_canonical",
            "msm_canonical_planes",
            "msm_bin_scatter",
            "msm_bin_count",
            "msm_bin_place",
        ],
    },
    KernelModule {
        name: "msm_g1",
        kernels: &[
            "g1_msm_count",
            "g1_msm_scatter",
            "g1_msm_chunk_sum",
            "g1_msm_chunk_fixup",
            "g1_msm_heavy_fixup",
            "g1_msm_bucket_reduce",
            "g1_msm_list_sum",
            "g1_xyzz_reduce",
            "g1_msm_affine_halve",
            "g1_msm_affine_level",
            "g1_msm_leftover_heavy_counts",
            "g1_msm_leftover_chunk_sum",
            "g1_msm_leftover_reduce",
        ],
    },
    KernelModule {
        name: "msm_g2",
        kernels: &[
            "g2_msm_count",
            "g2_msm_scatter",
            "g2_msm_chunk_sum",
            "g2_msm_chunk_fixup",
            "g2_msm_heavy_fixup",
            "g2_msm_bucket_reduce",
            "g2_msm_list_sum",
            "g2_xyzz_reduce",
            "g2_msm_affine_halve",
            "g2_msm_affine_level",
        ],
    },
    KernelModule {
        name: "fixed_base",
        kernels: &[
            "g1_fb_table",
            "g1_fb_mul",
            "g1_fb_affine",
            "g1_fb_shift",
            "g2_fb_table",
            "g2_fb_mul",
            "g2_fb_affine",
        ],
    },
    KernelModule {
        name: "synth",
        kernels: &[
            "g1_synth_points",
            "g2_synth_points",
            "synth_scalars",
            "synth_compare",
        ],
    },
];

/// The kernels off the production path (kernels/selftest.cu): the field self-tests and
/// gpu_bench's random scalars, loaded only by tests and gpu_bench
/// ([`crate::gpu::Gpu::open_selftest`]).
pub(crate) const SELFTEST: KernelModule = KernelModule {
    name: "selftest",
    kernels: &["fr_test_op", "fq_test_op", "fq2_test_op", "fr_random"],
};

/// The batch-affine level kernels (kernels/msm/msm_g1.cu, msm_g2.cu) with their dynamic
/// shared memory per thread: `aff_stage_bytes` in msm/affine_sums.cuh, two buffers of a
/// slot's two points and prefix, 15 16-byte pieces for G1 and 30 for G2.
pub(crate) const AFFINE_LEVELS: &[(&str, u32)] = &[
    ("g1_msm_affine_level", 2 * 15 * 16),
    ("g2_msm_affine_level", 2 * 30 * 16),
];

/// Kernels that take more dynamic shared memory than the default limit, with their bytes
/// per thread of a block of their launch bound: [`crate::gpu::Gpu::open`] allows them
/// that much.
pub(crate) const LARGE_SHARED: &[(&str, u32)] = AFFINE_LEVELS;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel name is listed once, and a build with kernels has exactly the modules
    /// of the manifest (none compiled and left unloaded).
    #[test]
    fn manifest_matches_the_build() {
        let all: Vec<&KernelModule> = PRODUCTION.iter().chain([&SELFTEST]).collect();
        let mut names: Vec<&str> = all.iter().flat_map(|m| m.kernels.iter().copied()).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a kernel is listed twice");
        for (kernel, _) in LARGE_SHARED {
            assert!(names.contains(kernel), "{kernel} is not in the manifest");
        }
        if available() {
            for m in &all {
                assert!(m.image().is_some(), "module {} was not built", m.name);
            }
            for (built, _) in MODULES {
                assert!(
                    all.iter().any(|m| m.name == *built),
                    "module {built} is built but not in the manifest"
                );
            }
        }
    }
}
