//! The machine: the CUDA build, the GPUs the driver shows, host and cgroup memory.

use filprove_engine::gpu_inventory::{self, kernels_run_on};
use filprove_engine::{Budgets, HostMemory};

use super::report::{gib, Level, Report};
use crate::server::Config;

/// The nvcc targets this build's kernels carry (from the CUDA crate's build note,
/// "kernels built by NVCC for ARCH,ARCH,..."); empty without kernels.
fn built_archs() -> Vec<&'static str> {
    if !filprove_cuda::kernels::available() {
        return Vec::new();
    }
    filprove_cuda::kernels::BUILD_NOTE
        .rsplit_once(" for ")
        .map(|(_, archs)| archs.split(',').map(str::trim).collect())
        .unwrap_or_default()
}

/// The build: version and CUDA kernels.
pub fn build(r: &mut Report) {
    r.section("build");
    r.add(
        Level::Info,
        format!("filprove {}", env!("CARGO_PKG_VERSION")),
    );
    if filprove_cuda::kernels::available() {
        r.add(
            Level::Ok,
            format!("CUDA {}", filprove_cuda::kernels::BUILD_NOTE),
        );
    } else {
        r.add(
            Level::Warn,
            format!(
                "no CUDA kernels in this build ({}): only the CPU backend can prove",
                filprove_cuda::kernels::BUILD_NOTE
            ),
        );
    }
}

/// The GPUs NVML shows, and whether this build's kernels run on each.
pub fn gpus(r: &mut Report) {
    r.section("gpus");
    let inventory = match gpu_inventory::inventory() {
        Ok(i) => i,
        Err(e) => {
            r.add(Level::Warn, format!("{e}: no GPU information"));
            return;
        }
    };
    let cuda = inventory
        .cuda_driver_version
        .map(|(major, minor)| format!(", supports CUDA {major}.{minor}"))
        .unwrap_or_default();
    r.add(
        Level::Ok,
        format!("NVIDIA driver {}{cuda}", inventory.driver_version),
    );
    if inventory.devices.is_empty() {
        r.add(Level::Warn, "no visible GPU (CUDA_VISIBLE_DEVICES?)");
    }
    let archs = built_archs();
    for d in &inventory.devices {
        let (major, minor) = d.compute_capability;
        let text = format!(
            "cuda:{} {}: {} ({} free), compute capability {major}.{minor}",
            d.ordinal,
            d.name,
            gib(d.memory_total_bytes),
            gib(d.memory_free_bytes)
        );
        if archs.is_empty() {
            r.add(Level::Info, text);
        } else if kernels_run_on(&archs, d.compute_capability) {
            r.add(Level::Ok, format!("{text}; the kernels run on it"));
        } else {
            r.add(
                Level::Fail,
                format!(
                    "{text}; the kernels were built for {} only: rebuild with \
                     FILPROVE_CUDA_ARCHS=sm_{major}{minor}",
                    archs.join(",")
                ),
            );
        }
    }
}

/// Host memory, the cgroup limit and the budgets the engine would take.
pub fn memory(r: &mut Report, config: &Config) {
    r.section("memory");
    let host = HostMemory::detect();
    r.add(
        Level::Info,
        format!(
            "host: {} total, {} available",
            gib(host.total_bytes),
            gib(host.available_bytes)
        ),
    );
    match filprove_engine::cgroup::memory_limit() {
        Some(limit) => r.add(
            Level::Info,
            format!(
                "cgroup limit: {} ({})",
                gib(limit.bytes),
                limit.file.display()
            ),
        ),
        None => r.add(Level::Info, "cgroup limit: none (systemd MemoryMax= unset)"),
    }
    let configured = |b: &crate::server::config::ByteSize| b.resolve().ok().flatten();
    let budgets = Budgets::resolve(
        &host,
        configured(&config.memory.budget),
        configured(&config.srs.budget),
    );
    r.add(
        Level::Info,
        format!(
            "budgets: {} for resident parameters (srs.budget), {} for partitions in flight \
             (memory.budget), of an effective limit of {}",
            gib(budgets.srs_bytes),
            gib(budgets.partitions_bytes),
            gib(host.effective_limit())
        ),
    );
    if budgets.srs_bytes + budgets.partitions_bytes > host.effective_limit() {
        r.add(
            Level::Warn,
            "the budgets together exceed the effective memory limit: the kernel may kill \
             the daemon under load",
        );
    }
}
