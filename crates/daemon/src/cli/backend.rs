//! Choosing the prover backend at run time, and loading parameters for it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use filprove_filecoin::CircuitSpec;
use filprove_groth16::params::{ParamsHeader, ReadOptions};
use filprove_groth16::{Backend, Srs};

use super::progress::Unit;
use super::stage::Stage;

/// Which prover to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// The GPU when one is usable, else the CPU (and say so).
    Auto,
    /// The CPU reference backend.
    Cpu,
    /// The CUDA backend; fails if no GPU is usable.
    Cuda,
}

/// Options shared by the commands that prove.
#[derive(Args, Clone, Debug)]
pub struct ProverOpts {
    /// Prover backend.
    #[arg(long, value_enum, default_value = "auto", env = "FILPROVE_BACKEND")]
    pub backend: BackendChoice,
    /// Parameter directory. Defaults to FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters.
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    /// Check every parameter point (on the curve, in the subgroup) while loading.
    #[arg(long)]
    pub validate_params: bool,
}

/// Resolves the parameter directory. An explicit `--params-dir` is exported as
/// FIL_PROOFS_PARAMETER_CACHE for this process (filecoin-proofs' verifiers read it), and a
/// conflicting value already in the environment is reported, never silently replaced.
pub fn resolve_params_dir(explicit: Option<&Path>) -> PathBuf {
    const VAR: &str = "FIL_PROOFS_PARAMETER_CACHE";
    match explicit {
        Some(dir) => {
            if let Some(old) = std::env::var_os(VAR) {
                if Path::new(&old) != dir {
                    log::warn!(
                        "parameter directory {} overrides {VAR}={} for this run",
                        dir.display(),
                        Path::new(&old).display()
                    );
                }
            }
            // Single-threaded at this point: set before any filecoin-proofs call.
            std::env::set_var(VAR, dir);
            dir.to_path_buf()
        }
        None => filprove_filecoin::parameter_cache_dir(),
    }
}

/// Builds the chosen backend (the first device's, for one-shot commands) with the daemon's
/// selection rules: `auto` falls back to the CPU only when no GPU is usable, and says why.
pub fn select(choice: BackendChoice) -> Result<Arc<dyn Backend>> {
    let kind = match choice {
        BackendChoice::Auto => "auto",
        BackendChoice::Cpu => "cpu",
        BackendChoice::Cuda => "cuda",
    };
    // One-shot commands prove one partition at a time: one staging slot.
    let cuda = filprove_cuda::CudaOptions {
        staging_slots: 1,
        ..filprove_cuda::CudaOptions::default()
    };
    crate::server::backends::build(kind, &cuda)?
        .into_iter()
        .next()
        .context("no backend available")
}

/// Loads the parameters of `spec` from `dir` (checking the digest against the network
/// manifest when FIL_PROOFS_VERIFY_PRODUCTION_PARAMS is set).
pub fn load_srs(spec: &CircuitSpec, dir: &Path, validate: bool) -> Result<Srs> {
    let path = filprove_filecoin::params::check_params_present(spec, dir)?;
    if verify_production_params() {
        super::params::check_digest(&path)?;
    }
    let sections: u64 = ParamsHeader::read(&path)
        .map(|h| h.sections().iter().map(|s| s.byte_len()).sum())
        .unwrap_or(0);
    let stage = Stage::counted(
        format!("loading parameters {}", path.display()),
        sections,
        Unit::Bytes,
    );
    let bar = stage.progress();
    let srs = Srs::read_file_observed(&path, &ReadOptions { validate }, &|n| bar.inc(n))
        .with_context(|| format!("loading parameters for {}", spec.short_name))?;
    stage.done(&format!(
        "{} h, {} l, {} a points",
        srs.h.len(),
        srs.l.len(),
        srs.a.len()
    ));
    Ok(srs)
}

/// Whether FIL_PROOFS_VERIFY_PRODUCTION_PARAMS asks for digest checks.
pub fn verify_production_params() -> bool {
    matches!(
        std::env::var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}
