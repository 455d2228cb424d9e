//! `[cuda]`: the operator's knobs of the GPU backend. Everything else about the kernels is
//! fixed in the build; the transfer switches are modes of `filprove synthetic-bench`.

use filprove_cuda::CudaOptions;
use serde::Deserialize;

use super::config::ByteSize;

/// `[cuda]` in the daemon's configuration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CudaSection {
    /// Device bytes each GPU may use; "auto": what is free at start, less a margin. A
    /// smaller budget leaves room for other processes (and simulates a smaller GPU).
    pub vram_budget: ByteSize,
    /// Largest MSM batch in points; 0: as large as the memory plan allows.
    pub max_msm_batch: u64,
    /// Milliseconds a kernel region may spend page-locking fresh host memory behind its
    /// queued kernels (the first partitions of a process); 0: none.
    pub register_budget_ms: u64,
    /// Time every kernel step of each proof and log the sums (a little slower).
    pub step_timings: bool,
    /// Keep resident H bases folded (2^132 multiples beside them: 12 GiB more for a 32 GiB
    /// PoRep, the H MSM ~40 ms faster) when the memory plan allows.
    pub fold_h: bool,
}

impl Default for CudaSection {
    fn default() -> Self {
        let d = CudaOptions::default();
        Self {
            vram_budget: ByteSize::Auto,
            max_msm_batch: d.max_batch,
            register_budget_ms: d.register_budget_ms,
            step_timings: d.step_timings,
            fold_h: d.fold_h,
        }
    }
}

impl CudaSection {
    /// The backend options for devices that hold `staging_slots` partitions staged at once
    /// (the engine's GPU workers per device).
    pub fn options(&self, staging_slots: usize) -> Result<CudaOptions, String> {
        let vram_budget = self
            .vram_budget
            .resolve()
            .map_err(|e| format!("cuda.vram_budget: {e}"))?;
        if vram_budget == Some(0) {
            return Err("cuda.vram_budget must be more than 0 bytes".into());
        }
        Ok(CudaOptions {
            staging_slots: staging_slots.max(1) as u64,
            vram_budget,
            max_batch: self.max_msm_batch,
            register_budget_ms: self.register_budget_ms,
            step_timings: self.step_timings,
            fold_h: self.fold_h,
            ..CudaOptions::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::config::Config;

    #[test]
    fn the_cuda_section_maps_onto_the_backend_options() {
        let c = Config::from_toml(
            "[cuda]\nvram_budget = \"24GiB\"\nmax_msm_batch = 16777216\nregister_budget_ms = 0\nstep_timings = true\nfold_h = false\n",
        )
        .unwrap();
        let o = c.cuda.options(2).unwrap();
        assert_eq!(o.vram_budget, Some(24 << 30));
        assert_eq!((o.max_batch, o.register_budget_ms), (1 << 24, 0));
        assert!(o.step_timings && !o.fold_h);
        assert_eq!(o.staging_slots, 2);
        let d = Config::default().cuda.options(1).unwrap();
        assert_eq!(
            d,
            CudaOptions {
                staging_slots: 1,
                ..CudaOptions::default()
            }
        );
        assert!(Config::from_toml("[cuda]\nvram_budget = \"lots\"\n").is_err());
        assert!(Config::from_toml("[cuda]\nvram_budget = 0\n").is_err());
        assert!(Config::from_toml("[cuda]\nprestage = false\n").is_err());
    }
}
