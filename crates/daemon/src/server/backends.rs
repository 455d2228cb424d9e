//! Backend selection at run time: `cpu`, `cuda` (fail loudly when unavailable) or `auto`,
//! on the devices `[devices]` selects, each with its settings.

use std::sync::Arc;

use filprove_cuda::CudaOptions;
use filprove_engine::DevicePolicy;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::Backend;

use super::devices_config::{DevicesSection, PlannedDevice};

/// The backends the engine proves on, one per device, and each one's policy (same order).
pub struct Planned {
    /// One per device.
    pub backends: Vec<Arc<dyn Backend>>,
    /// What each device is for.
    pub policies: Vec<DevicePolicy>,
}

/// The UUIDs of the visible GPUs by CUDA ordinal (NVML), for a configuration that names
/// devices by UUID.
fn visible_uuids() -> Result<Vec<String>, String> {
    let inventory = filprove_engine::gpu_inventory::inventory()?;
    Ok(inventory.devices.into_iter().map(|d| d.uuid).collect())
}

/// The CUDA devices `devices` selects (`CUDA_VISIBLE_DEVICES` is applied by the driver),
/// with their settings, or why there is none: `BELLMAN_NO_GPU` set, a build without
/// kernels, no driver, no device, a configuration naming devices that do not exist.
pub fn cuda_plan(devices: &DevicesSection) -> Result<Vec<PlannedDevice>, String> {
    if std::env::var_os("BELLMAN_NO_GPU").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("BELLMAN_NO_GPU is set".into());
    }
    let n = filprove_cuda::device_count().map_err(|e| e.to_string())?;
    let uuids = if devices.names_uuids() {
        visible_uuids()?
    } else {
        Vec::new()
    };
    devices.plan(n, &uuids)
}

/// One CUDA backend per planned device, each opened with `opts` (its `staging_slots`: the
/// engine's GPU workers per device) and its own VRAM budget when it has one.
fn open_cuda(plan: &[PlannedDevice], opts: &CudaOptions) -> Result<Planned, String> {
    let mut out = Planned {
        backends: Vec::new(),
        policies: Vec::new(),
    };
    for p in plan {
        let opts = CudaOptions {
            vram_budget: p.vram_budget.or(opts.vram_budget),
            ..opts.clone()
        };
        let b = filprove_cuda::CudaBackend::with_options(p.ordinal, opts)
            .map_err(|e| format!("device {}: {e}", p.ordinal))?;
        out.backends.push(Arc::new(b));
        out.policies.push(p.policy.clone());
    }
    Ok(out)
}

/// One CUDA backend per visible device with the same options, or why there is none.
pub fn cuda_backends(opts: &CudaOptions) -> Result<Vec<Arc<dyn Backend>>, String> {
    let plan = cuda_plan(&DevicesSection::default())?;
    Ok(open_cuda(&plan, opts)?.backends)
}

/// `devices.cpu_devices` CPU backends (one without a `[devices]` section), with the
/// settings `[devices]` gives them by position.
fn cpu(devices: &DevicesSection) -> anyhow::Result<Planned> {
    let plan = devices
        .plan(devices.cpu_devices, &[])
        .map_err(anyhow::Error::msg)?;
    let mut out = Planned {
        backends: Vec::new(),
        policies: Vec::new(),
    };
    for p in plan {
        let b = CpuBackend::new(None).map_err(|e| anyhow::anyhow!("{}: {e}", e.code()))?;
        out.backends.push(Arc::new(b));
        out.policies.push(p.policy);
    }
    Ok(out)
}

/// The backends for `kind` ("cpu", "cuda", "auto"), one per device `devices` selects,
/// each GPU opened with `cuda` (its `staging_slots`: the engine's GPU workers per device)
/// and its own VRAM budget. A GPU configuration that falls back to the CPU (`auto`) gets
/// one CPU device per `devices.cpu_devices`, with default policies when its device
/// settings do not fit the CPU devices.
pub fn build_planned(
    kind: &str,
    cuda: &CudaOptions,
    devices: &DevicesSection,
) -> anyhow::Result<Planned> {
    let gpus = || cuda_plan(devices).and_then(|plan| open_cuda(&plan, cuda));
    let fallback = || {
        cpu(devices).or_else(|e| {
            tracing::warn!(error = %e, "[devices] does not fit the CPU devices: they take any work");
            cpu(&DevicesSection {
                cpu_devices: devices.cpu_devices,
                ..DevicesSection::default()
            })
        })
    };
    let planned = match kind {
        "cpu" => cpu(devices)?,
        "cuda" => gpus().map_err(|why| {
            anyhow::anyhow!("cuda unavailable: {why} (engine.backend = \"cuda\")")
        })?,
        "auto" => match gpus() {
            Ok(b) if !b.backends.is_empty() => b,
            Ok(_) => {
                tracing::warn!("cuda unavailable: no devices; proving on the CPU");
                fallback()?
            }
            Err(why) => {
                tracing::warn!("cuda unavailable: {why}; proving on the CPU");
                fallback()?
            }
        },
        other => anyhow::bail!("unknown backend {other:?} (cpu, cuda or auto)"),
    };
    for (b, p) in planned.backends.iter().zip(&planned.policies) {
        tracing::info!(backend = %b.name(), urgent_only = p.urgent_only, circuits = ?p.circuits, "using backend");
    }
    Ok(planned)
}

/// The backends for `kind` ("cpu", "cuda", "auto") on every visible device, each GPU
/// opened with `cuda`: what the one-shot commands prove on.
pub fn build(kind: &str, cuda: &CudaOptions) -> anyhow::Result<Vec<Arc<dyn Backend>>> {
    Ok(build_planned(kind, cuda, &DevicesSection::default())?.backends)
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

    #[test]
    fn the_cpu_backend_gives_as_many_devices_as_configured() {
        let devices = crate::server::Config::from_toml(
            "[devices]\ncpu_devices = 3\n[[devices.device]]\nid = 2\nreserve = \"post\"\n",
        )
        .unwrap()
        .devices;
        let p = build_planned("cpu", &CudaOptions::default(), &devices).unwrap();
        assert_eq!(p.backends.len(), 3);
        assert_eq!(
            p.policies.iter().map(|p| p.urgent_only).collect::<Vec<_>>(),
            [false, false, true]
        );
        let bad = DevicesSection {
            select: vec![super::super::devices_config::DeviceId::Ordinal(4)],
            ..DevicesSection::default()
        };
        assert!(build_planned("cpu", &CudaOptions::default(), &bad).is_err());
    }
}
