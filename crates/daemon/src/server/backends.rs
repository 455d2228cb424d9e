//! Backend selection at run time: `cpu`, `cuda` (fail loudly when unavailable) or `auto`.

use std::sync::Arc;

use filprove_cuda::CudaOptions;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::Backend;

/// One CUDA backend per visible device (`CUDA_VISIBLE_DEVICES` is applied by the driver),
/// or why there is none: `BELLMAN_NO_GPU` set, a build without kernels, no driver, no
/// device, or a device that fails to initialize. `opts.staging_slots` (the engine's GPU
/// workers per device) is how many partitions each device plans to hold staged at once.
pub fn cuda_backends(opts: &CudaOptions) -> Result<Vec<Arc<dyn Backend>>, String> {
    if std::env::var_os("BELLMAN_NO_GPU").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("BELLMAN_NO_GPU is set".into());
    }
    let n = filprove_cuda::device_count().map_err(|e| e.to_string())?;
    (0..n)
        .map(|ordinal| {
            filprove_cuda::CudaBackend::with_options(ordinal, opts.clone())
                .map(|b| Arc::new(b) as Arc<dyn Backend>)
                .map_err(|e| format!("device {ordinal}: {e}"))
        })
        .collect()
}

/// The backends for `kind` ("cpu", "cuda", "auto"), one per device, each GPU opened with
/// `cuda` (its `staging_slots`: the engine's GPU workers per device).
pub fn build(kind: &str, cuda: &CudaOptions) -> anyhow::Result<Vec<Arc<dyn Backend>>> {
    let cpu = || -> anyhow::Result<Vec<Arc<dyn Backend>>> {
        Ok(vec![Arc::new(
            CpuBackend::new(None).map_err(|e| anyhow::anyhow!("{}: {e}", e.code()))?,
        )])
    };
    let backends = match kind {
        "cpu" => cpu()?,
        "cuda" => cuda_backends(cuda).map_err(|why| {
            anyhow::anyhow!("cuda unavailable: {why} (engine.backend = \"cuda\")")
        })?,
        "auto" => match cuda_backends(cuda) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_when_required_fails_loudly_and_auto_falls_back() {
        std::env::set_var("BELLMAN_NO_GPU", "1");
        let o = CudaOptions::default();
        let err = build("cuda", &o).err().unwrap().to_string();
        assert!(
            err.starts_with("cuda unavailable: BELLMAN_NO_GPU is set"),
            "{err}"
        );
        let auto = build("auto", &o).unwrap();
        assert_eq!(auto.iter().map(|b| b.name()).collect::<Vec<_>>(), ["cpu"]);
        assert_eq!(build("cpu", &o).unwrap().len(), 1);
        assert!(build("opencl", &o).is_err());
    }
}
