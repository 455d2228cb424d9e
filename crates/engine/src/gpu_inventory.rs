//! What the NVIDIA driver says about the visible GPUs, through NVML: driver and CUDA
//! versions, and each device's name, memory and compute capability (for `filprove
//! doctor`). Devices follow `CUDA_VISIBLE_DEVICES` as CUDA numbers them.

use nvml_wrapper::Nvml;

/// One visible GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// CUDA ordinal (position in `CUDA_VISIBLE_DEVICES`, else NVML index).
    pub ordinal: u64,
    /// Marketing name.
    pub name: String,
    /// UUID as nvidia-smi prints it ("GPU-8f3e...").
    pub uuid: String,
    /// Device memory, bytes.
    pub memory_total_bytes: u64,
    /// Device memory free when read, bytes.
    pub memory_free_bytes: u64,
    /// Compute capability (major, minor), e.g. (9, 0) for an H100 or H200.
    pub compute_capability: (u32, u32),
}

/// The driver and its visible GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInventory {
    /// The NVIDIA driver's version, e.g. "580.65.06".
    pub driver_version: String,
    /// The newest CUDA version the driver supports (major, minor).
    pub cuda_driver_version: Option<(u32, u32)>,
    /// The visible GPUs.
    pub devices: Vec<GpuInfo>,
}

/// Reads the inventory; the error says why NVML cannot tell (no driver, no
/// `libnvidia-ml.so.1`, a device that does not answer).
pub fn inventory() -> Result<GpuInventory, String> {
    let nvml = Nvml::init().map_err(|e| format!("NVML unavailable: {e}"))?;
    let driver_version = nvml
        .sys_driver_version()
        .map_err(|e| format!("NVML: driver version: {e}"))?;
    let cuda_driver_version = nvml.sys_cuda_driver_version().ok().map(|v| {
        (
            nvml_wrapper::cuda_driver_version_major(v) as u32,
            nvml_wrapper::cuda_driver_version_minor(v) as u32,
        )
    });
    let devices = crate::gpu_sampler::visible_devices(&nvml)
        .map_err(|e| format!("NVML: cannot list GPUs: {e}"))?
        .into_iter()
        .map(|(ordinal, index)| {
            let fail = |what: &str, e: nvml_wrapper::error::NvmlError| {
                format!("NVML: device {ordinal}: {what}: {e}")
            };
            let d = nvml.device_by_index(index).map_err(|e| fail("open", e))?;
            let memory = d.memory_info().map_err(|e| fail("memory", e))?;
            let cc = d
                .cuda_compute_capability()
                .map_err(|e| fail("compute capability", e))?;
            Ok(GpuInfo {
                ordinal,
                name: d.name().map_err(|e| fail("name", e))?,
                uuid: d.uuid().map_err(|e| fail("uuid", e))?,
                memory_total_bytes: memory.total,
                memory_free_bytes: memory.free,
                compute_capability: (cc.major as u32, cc.minor as u32),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(GpuInventory {
        driver_version,
        cuda_driver_version,
        devices,
    })
}

/// Whether kernels built for `archs` (nvcc targets: `sm_XY` machine code, which runs on
/// devices of the same major version and a minor at least Y; `compute_XY` PTX, which the
/// driver compiles for any device of capability X.Y or newer) run on a device of
/// `capability`.
pub fn kernels_run_on(archs: &[&str], capability: (u32, u32)) -> bool {
    let parse = |digits: &str| -> Option<(u32, u32)> {
        let n: u32 = digits.parse().ok()?;
        Some((n / 10, n % 10))
    };
    archs.iter().any(|arch| {
        let arch = arch.trim();
        if let Some(cc) = arch.strip_prefix("sm_").and_then(parse) {
            cc.0 == capability.0 && cc.1 <= capability.1
        } else if let Some(cc) = arch.strip_prefix("compute_").and_then(parse) {
            cc <= capability
        } else {
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_code_runs_within_its_major_version_and_ptx_on_newer_devices() {
        let default = ["sm_80", "sm_89", "sm_90", "compute_90"];
        assert!(kernels_run_on(&default, (9, 0)));
        assert!(kernels_run_on(&default, (8, 6)), "sm_80 code runs on 8.6");
        assert!(
            kernels_run_on(&default, (10, 0)),
            "compute_90 PTX runs on 10.0"
        );
        assert!(!kernels_run_on(&default, (7, 5)));
        assert!(!kernels_run_on(&["sm_90"], (10, 0)));
        assert!(!kernels_run_on(&["sm_89"], (8, 6)));
        assert!(!kernels_run_on(&[], (9, 0)));
        assert!(!kernels_run_on(&["bogus"], (9, 0)));
    }

    #[test]
    fn inventory_never_panics() {
        // Without a driver this is an error that says so; with one, every device answers.
        match inventory() {
            Ok(inv) => assert!(!inv.driver_version.is_empty()),
            Err(e) => assert!(e.starts_with("NVML"), "{e}"),
        }
    }
}
