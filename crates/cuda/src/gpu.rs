//! The device handle: one CUDA context and stream, the loaded kernel modules, typed
//! allocations and launches. Every driver error becomes a [`ProveError`]; running out of
//! device memory is [`ProveError::DeviceOutOfMemory`].

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::{CUfunction_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError,
    LaunchConfig, PinnedHostSlice, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use filprove_groth16::ProveError;

use crate::kernels::{self, KernelModule};
use crate::work::{sum_steps, StepSum, Work};

/// A probe: its step's label, the event that closes the step and the step's work.
type Probe = (&'static str, CudaEvent, Work);

/// An open GPU: context, a compute stream, a copy stream, the kernels of the manifest
/// (`kernels::PRODUCTION`).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    funcs: HashMap<String, CudaFunction>,
    name: String,
    /// Labelled timing events of the compute stream, when probing is on (benchmarks).
    probes: std::sync::Mutex<Option<Vec<Probe>>>,
    /// Streaming multiprocessors (for one-wave launch sizes).
    sms: usize,
    /// Pinned landing place for [`Gpu::read_counts`] (allocated on first use).
    counts_host: std::sync::Mutex<Option<PinnedHostSlice<u32>>>,
    /// Settings of the drivers above this layer for this device (the MSM's tuning), one
    /// value per type: the device layer keeps them without knowing their types.
    settings: Vec<Box<dyn Any + Send + Sync>>,
}

fn unavailable(why: String) -> ProveError {
    ProveError::Unavailable {
        backend: "cuda".into(),
        why,
    }
}

/// Number of CUDA devices, or why there are none usable.
pub fn device_count() -> Result<usize, ProveError> {
    if !kernels::available() {
        return Err(unavailable(format!(
            "built without CUDA kernels: {} (install nvcc with scripts/install-cuda-toolchain.sh and rebuild)",
            kernels::BUILD_NOTE
        )));
    }
    // SAFETY: only probes whether libcuda can be dlopen'ed.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(unavailable(
            "no CUDA driver (libcuda) on this machine".into(),
        ));
    }
    let n = guard(CudaContext::device_count)
        .map_err(|e| unavailable(format!("cuInit/cuDeviceGetCount: {e}")))?;
    if n <= 0 {
        return Err(unavailable("no CUDA device".into()));
    }
    Ok(n as usize)
}

/// Configures the device's memory pool so that staging on the copy stream never waits for
/// the other worker's kernels: no reuse through inserted stream dependencies
/// (`REUSE_ALLOW_INTERNAL_DEPENDENCIES` off; memory freed after a completed
/// synchronisation is still reused) and no release of pooled memory at synchronisations
/// (measured at 2 KiB: staging 25 ms alone, 290 ms beside a kernel region). Best effort:
/// a driver without pools keeps its defaults.
fn isolate_streams_in_pool(ctx: &Arc<CudaContext>) {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: plain driver calls on this context's device; `value` outlives the call.
    unsafe {
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) != CUresult::CUDA_SUCCESS {
            return;
        }
        let mut value: i32 = 0;
        let r = sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            (&mut value as *mut i32).cast(),
        );
        if r != CUresult::CUDA_SUCCESS {
            log::warn!("cuMemPoolSetAttribute(REUSE_ALLOW_INTERNAL_DEPENDENCIES): {r:?}");
        }
        // Keep freed memory in the pool: returning it at every synchronisation means
        // mapping it again for the next partition, and mapping waits for running kernels.
        let mut keep: u64 = u64::MAX;
        let r = sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        );
        if r != CUresult::CUDA_SUCCESS {
            log::warn!("cuMemPoolSetAttribute(RELEASE_THRESHOLD): {r:?}");
        }
    }
}

/// Allows the kernels of [`kernels::LARGE_SHARED`] their dynamic shared memory: the bytes
/// per thread for a block of their launch bound.
fn allow_large_shared(funcs: &HashMap<String, CudaFunction>) -> Result<(), ProveError> {
    for &(name, per_thread) in kernels::LARGE_SHARED {
        let Some(f) = funcs.get(name) else { continue };
        let set = || {
            let threads = f.max_threads_per_block()?.max(32) as u32;
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                (per_thread * threads) as i32,
            )
        };
        set().map_err(|e| {
            unavailable(format!(
                "kernel {name}: shared memory limit: {}",
                describe(&e)
            ))
        })?;
    }
    Ok(())
}

/// Runs a cudarc call that may panic (missing driver symbols) and turns a panic into an error.
fn guard<T>(f: impl FnOnce() -> Result<T, DriverError>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(describe(&e)),
        Err(_) => Err("the CUDA driver library is missing a required function".into()),
    }
}

fn describe(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name} ({:?})", e.0)
}

impl Gpu {
    /// Opens device `ordinal` and loads the kernels of [`kernels::PRODUCTION`].
    pub fn open(ordinal: usize) -> Result<Self, ProveError> {
        Self::open_with(ordinal, &[])
    }

    /// As [`Gpu::open`], with the kernels off the production path too
    /// ([`kernels::SELFTEST`]: field self-tests, random scalars; tests and gpu_bench only).
    pub fn open_selftest(ordinal: usize) -> Result<Self, ProveError> {
        Self::open_with(ordinal, &[&kernels::SELFTEST])
    }

    /// Opens device `ordinal` with the production kernels and the modules `extra`.
    fn open_with(ordinal: usize, extra: &[&KernelModule]) -> Result<Self, ProveError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(unavailable(format!(
                "device {ordinal} requested, {count} present"
            )));
        }
        let ctx = guard(|| CudaContext::new(ordinal))
            .map_err(|e| unavailable(format!("cuda:{ordinal}: {e}")))?;
        let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        // Cross-stream ordering is explicit: buffers filled on the copy stream are used on
        // the compute stream only after it waited on the copy's event, and freed only
        // after the compute stream was synchronised (see stage.rs).
        // SAFETY: with event tracking off, cudarc no longer orders a buffer's uses across
        // streams; the explicit ordering described above does, and the context has no
        // stream or buffer yet when it is turned off.
        unsafe { ctx.disable_event_tracking() };
        let new_stream = || {
            ctx.new_stream()
                .map_err(|e| unavailable(format!("cuStreamCreate: {}", describe(&e))))
        };
        let stream = new_stream()?;
        let copy = new_stream()?;
        isolate_streams_in_pool(&ctx);
        let mut funcs = HashMap::new();
        for module in kernels::PRODUCTION.iter().chain(extra.iter().copied()) {
            let name = module.name;
            let image = module.image().ok_or_else(|| {
                unavailable(format!("kernel module {name} missing from this build"))
            })?;
            let m = ctx
                .load_module(Ptx::from_binary(image.to_vec()))
                .map_err(|e| {
                    unavailable(format!(
                        "loading module {name}: {} (no SASS or PTX for this GPU?)",
                        describe(&e)
                    ))
                })?;
            for n in module.kernels.iter().copied() {
                let f = m
                    .load_function(n)
                    .map_err(|e| unavailable(format!("kernel {n}: {}", describe(&e))))?;
                funcs.insert(n.to_string(), f);
            }
        }
        allow_large_shared(&funcs)?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| unavailable(format!("cuDeviceGetAttribute: {}", describe(&e))))?;
        Ok(Self {
            sms: sms.max(1) as usize,
            ctx,
            stream,
            copy,
            funcs,
            name: format!("cuda:{ordinal} {name}"),
            probes: std::sync::Mutex::new(None),
            settings: Vec::new(),
            counts_host: std::sync::Mutex::new(None),
        })
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<(), ProveError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.err("cuCtxSetCurrent", e))
    }

    /// "cuda:<ordinal> <device name>".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The compute stream: every kernel runs on it.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The copy stream: uploads that overlap kernels (staging, parameter loads).
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copy
    }

    /// The context (for pinned allocations and host registration).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Uninitialised device memory for `n` values of `T`, allocated in `stream`'s order.
    pub fn alloc_on<T: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<CudaSlice<T>, ProveError> {
        // SAFETY: cudarc marks the allocation unsafe because the memory is uninitialised.
        // It is device memory: Rust code reads it only through a download, which copies
        // bytes into a host value of a DeviceRepr type (plain integers and limb arrays
        // here, valid for any bit pattern), and the callers write every element before
        // they rely on its value.
        unsafe { stream.alloc::<T>(n.max(1)) }
            .map_err(|e| self.oom(e, n * std::mem::size_of::<T>()))
    }

    /// An event without timing, recorded on `stream` now.
    pub fn record(
        &self,
        stream: &Arc<CudaStream>,
    ) -> Result<cudarc::driver::CudaEvent, ProveError> {
        stream
            .record_event(None)
            .map_err(|e| self.err("cuEventRecord", e))
    }

    /// A timing event recorded on `stream` now.
    pub fn record_timed(
        &self,
        stream: &Arc<CudaStream>,
    ) -> Result<cudarc::driver::CudaEvent, ProveError> {
        let e = self.timing_event()?;
        e.record(stream).map_err(|e| self.err("cuEventRecord", e))?;
        Ok(e)
    }

    /// A timing event recorded on the compute stream now.
    pub fn mark(&self) -> Result<cudarc::driver::CudaEvent, ProveError> {
        let e = self.timing_event()?;
        e.record(&self.stream)
            .map_err(|e| self.err("cuEventRecord", e))?;
        Ok(e)
    }

    /// Whether the compute stream has finished all work queued on it (cuStreamQuery).
    pub fn compute_idle(&self) -> bool {
        // SAFETY: a query of this context's live stream.
        let r = unsafe { cudarc::driver::sys::cuStreamQuery(self.stream.cu_stream()) };
        r == CUresult::CUDA_SUCCESS
    }

    /// This device with `value` as its setting of type `T` (replacing an earlier one).
    pub fn with_setting<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.settings.retain(|s| !(**s).is::<T>());
        self.settings.push(Box::new(value));
        self
    }

    /// This device's setting of type `T`, when one was given.
    pub fn setting<T: Any>(&self) -> Option<&T> {
        self.settings.iter().find_map(|s| (**s).downcast_ref::<T>())
    }

    /// Starts (or stops) collecting [`Gpu::probe`] events; starting drops earlier ones.
    pub fn set_probing(&self, on: bool) {
        if let Ok(mut p) = self.probes.lock() {
            *p = on.then(Vec::new);
        }
    }

    /// Whether probing is on.
    pub fn probing(&self) -> bool {
        self.probes.lock().map(|p| p.is_some()).unwrap_or(false)
    }

    /// Marks the end of a kernel step named `label`, which did `work` (its launches since
    /// the previous probe, by the kernel's model: crate::work), on the compute stream when
    /// probing is on (a no-op otherwise): [`Gpu::take_probes`] attributes the time since
    /// the previous probe to it. Used by `gpu_bench --breakdown` and the region's step
    /// timings.
    pub fn probe(&self, label: &'static str, work: Work) -> Result<(), ProveError> {
        let Ok(mut p) = self.probes.lock() else {
            return Ok(());
        };
        if let Some(v) = p.as_mut() {
            v.push((label, self.mark()?, work));
        }
        Ok(())
    }

    /// Waits for the stream and returns (label, ms since the previous probe, work) for
    /// every probe after the first; probing stays on with an empty list.
    pub fn take_probes(&self) -> Result<Vec<(&'static str, f64, Work)>, ProveError> {
        let events = match self.probes.lock() {
            Ok(mut p) => p.as_mut().map(std::mem::take).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        self.sync()?;
        let mut out = Vec::new();
        for w in events.windows(2) {
            let ms = w[0]
                .1
                .elapsed_ms(&w[1].1)
                .map_err(|e| self.err("cuEventElapsedTime", e))?;
            out.push((w[1].0, ms as f64, w[1].2));
        }
        Ok(out)
    }

    /// [`Gpu::take_probes`] summed per step name, in order of first appearance.
    pub fn take_probe_sums(&self) -> Result<Vec<StepSum>, ProveError> {
        Ok(sum_steps(self.take_probes()?))
    }

    /// Reads two u32 the compute stream's queued work writes to `dev`: a copy into pinned
    /// memory queued behind that work, then a wait on the copy's event. Work queued later
    /// keeps the GPU busy meanwhile; nothing else is synchronised.
    pub fn read_counts(&self, dev: &CudaSlice<u32>) -> Result<[u32; 2], ProveError> {
        let mut guard = self
            .counts_host
            .lock()
            .map_err(|_| self.fault("count buffer lock poisoned".into()))?;
        if guard.is_none() {
            // SAFETY: the buffer is written by the copy below before it is read.
            let buf = unsafe { self.ctx.alloc_pinned::<u32>(2) }
                .map_err(|e| self.err("cuMemHostAlloc", e))?;
            *guard = Some(buf);
        }
        let host = guard
            .as_mut()
            .ok_or_else(|| self.fault("no count buffer".into()))?;
        self.stream
            .memcpy_dtoh(&dev.slice(0..2), host)
            .map_err(|e| self.err("count download", e))?;
        // An explicit event: with event tracking off, the pinned slice's own event is not
        // recorded by the copy (and waiting on it would return at once).
        self.record(&self.stream)?
            .synchronize()
            .map_err(|e| self.err("count download wait", e))?;
        let v = host
            .as_slice()
            .map_err(|e| self.err("count download read", e))?;
        Ok([v[0], v[1]])
    }

    /// Threads of kernel `name` (blocks of `block`) the whole GPU holds at once: one wave.
    pub fn resident_threads(&self, name: &str, block: u32) -> Result<usize, ProveError> {
        self.resident_threads_with(name, block, 0)
    }

    /// As [`Self::resident_threads`], for blocks that also take `dynamic_shared` bytes of
    /// dynamic shared memory.
    pub fn resident_threads_with(
        &self,
        name: &str,
        block: u32,
        dynamic_shared: u32,
    ) -> Result<usize, ProveError> {
        let per_sm = self
            .func(name)?
            .occupancy_max_active_blocks_per_multiprocessor(block, dynamic_shared as usize, None)
            .map_err(|e| self.err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok((per_sm.max(1) as usize) * self.sms * block as usize)
    }

    /// A device-side inconsistency (a kernel produced impossible values).
    pub fn fault(&self, message: String) -> ProveError {
        ProveError::Device {
            device: self.name.clone(),
            message,
        }
    }

    /// Gives the device's memory pool's unused memory back to the driver (the pool keeps
    /// freed memory, `isolate_streams_in_pool`): memory that earlier work in this process
    /// (parameter generation) freed counts as free again. Best effort.
    pub fn release_pooled(&self) {
        use cudarc::driver::sys;
        if self.bind().is_err() || self.ctx.synchronize().is_err() {
            return;
        }
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: plain driver calls on this context's device; trimming releases only
        // memory no allocation holds.
        unsafe {
            if sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device())
                == CUresult::CUDA_SUCCESS
            {
                let r = sys::cuMemPoolTrimTo(pool, 0);
                if r != CUresult::CUDA_SUCCESS {
                    log::debug!("{}: cuMemPoolTrimTo: {r:?}", self.name);
                }
            }
        }
    }

    /// (free, total) device memory in bytes.
    pub fn mem_info(&self) -> Result<(usize, usize), ProveError> {
        self.ctx
            .mem_get_info()
            .map_err(|e| self.err("cuMemGetInfo", e))
    }

    /// Fails with [`ProveError::DeviceOutOfMemory`] unless `bytes` are free now.
    pub fn ensure_free(&self, bytes: usize) -> Result<(), ProveError> {
        let (free, _) = self.mem_info()?;
        if bytes > free {
            return Err(ProveError::DeviceOutOfMemory {
                device: self.name.clone(),
                needed: bytes as u64,
                free: free as u64,
            });
        }
        Ok(())
    }

    /// Maps a driver error (OOM is its own variant).
    pub fn err(&self, what: &str, e: DriverError) -> ProveError {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let free = self.ctx.mem_get_info().map(|m| m.0 as u64).unwrap_or(0);
            return ProveError::DeviceOutOfMemory {
                device: self.name.clone(),
                needed: 0,
                free,
            };
        }
        ProveError::Device {
            device: self.name.clone(),
            message: format!("{what}: {}", describe(&e)),
        }
    }

    /// Uninitialised device memory for `n` values of `T`.
    pub fn alloc<T: DeviceRepr>(&self, n: usize) -> Result<CudaSlice<T>, ProveError> {
        // SAFETY: cudarc marks the allocation unsafe because the memory is uninitialised.
        // It is device memory: Rust code reads it only through a download, which copies
        // bytes into a host value of a DeviceRepr type (plain integers and limb arrays
        // here, valid for any bit pattern), and the callers write every element before
        // they rely on its value.
        unsafe { self.stream.alloc::<T>(n.max(1)) }
            .map_err(|e| self.oom(e, n * std::mem::size_of::<T>()))
    }

    /// Zeroed device memory for `n` values of `T`.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, ProveError> {
        self.stream
            .alloc_zeros::<T>(n.max(1))
            .map_err(|e| self.oom(e, n * std::mem::size_of::<T>()))
    }

    /// Copies `host` into new device memory.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, ProveError> {
        let mut d = self.alloc::<T>(host.len())?;
        if !host.is_empty() {
            self.stream
                .memcpy_htod(host, &mut d)
                .map_err(|e| self.err("upload", e))?;
        }
        Ok(d)
    }

    fn oom(&self, e: DriverError, bytes: usize) -> ProveError {
        match self.err("alloc", e) {
            ProveError::DeviceOutOfMemory { device, free, .. } => ProveError::DeviceOutOfMemory {
                device,
                needed: bytes as u64,
                free,
            },
            other => other,
        }
    }

    /// The kernel `name` (loaded at open).
    pub fn func(&self, name: &str) -> Result<&CudaFunction, ProveError> {
        self.funcs
            .get(name)
            .ok_or_else(|| self.fault(format!("no kernel {name}")))
    }

    /// A CUDA event that records time, for benchmarks.
    pub fn timing_event(&self) -> Result<cudarc::driver::CudaEvent, ProveError> {
        self.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| self.err("cuEventCreate", e))
    }

    /// Waits for all queued work; reports asynchronous kernel faults.
    pub fn sync(&self) -> Result<(), ProveError> {
        self.stream
            .synchronize()
            .map_err(|e| self.err("synchronize", e))
    }
}

/// A 1-D launch shape.
pub fn cfg(grid: usize, block: u32, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid.clamp(1, i32::MAX as usize) as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared,
    }
}

/// Grid size for `n` items at `block` threads each.
pub fn blocks(n: usize, block: u32) -> usize {
    n.div_ceil(block as usize).max(1)
}
