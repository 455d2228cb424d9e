//! Backend selection at run time: `cpu`, `cuda` (fail loudly when unavailable) or `auto`.

use std::sync::Arc;

use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::Backend;

/// Why the CUDA backend cannot be used in this build or on this machine.
///
/// The hook for `filprove_cuda`: once that crate exposes device discovery, this returns
/// one backend per visible device (honouring `CUDA_VISIBLE_DEVICES` and `BELLMAN_NO_GPU`).
pub fn cuda_backends() -> Result<Vec<Arc<dyn Backend>>, String> {
    if std::env::var_os("BELLMAN_NO_GPU").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("BELLMAN_NO_GPU is set".into());
    }
    Err("this build of filprove has no CUDA backend yet (filprove-cuda exposes no devices)".into())
}

/// The backends for `kind` ("cpu", "cuda", "auto"), one per device.
pub fn build(kind: &str) -> anyhow::Result<Vec<Arc<dyn Backend>>> {
    let cpu = || -> anyhow::Result<Vec<Arc<dyn Backend>>> {
        Ok(vec![Arc::new(
            CpuBackend::new(None).map_err(|e| anyhow::anyhow!("{}: {e}", e.code()))?,
        )])
    };
    let backends = match kind {
        "cpu" => cpu()?,
        "cuda" => cuda_backends().map_err(|why| {
            anyhow::anyhow!("cuda unavailable: {why} (engine.backend = \"cuda\")")
        })?,
        "auto" => match cuda_backends() {
            Ok(b) if !b.is_empty() => b,
            Ok(_) => {
                tracing::warn!("cuda unavailable: no devices; proving on the CPU");
                cpu()?
            }
            Err(why) => {
                tracing::warn!("cuda unavailable: {why}; proving on the CPU");
                cpu()?
            }
        },
        other => anyhow::bail!("unknown backend {other:?} (cpu, cuda or auto)"),
    };
    for b in &backends {
        tracing::info!(backend = %b.name(), "using backend");
    }
    Ok(backends)
}
