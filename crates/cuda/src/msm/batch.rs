//! MSMs in batches: bases resident on the device or streamed from the host through pinned
//! bounce buffers (double-buffered on the copy stream), batch results kept on the device
//! and reduced there with one synchronisation at the end. `sync_per_batch` restores the
//! naive behaviour (download and wait after every batch) so its cost can be measured.

use cudarc::driver::{CudaEvent, CudaSlice};
use filprove_groth16::{Direction, ProveError, ProveReport};

use crate::gpu::Gpu;
use crate::pinned::Bounce;

use super::{msm, msm_view, Curve, DeviceMsm};

/// Where the bases of an MSM are.
pub enum Bases<'a> {
    /// In device memory (resident parameters).
    Device(&'a CudaSlice<u8>),
    /// In host memory (affine points, device layout): streamed per batch.
    Host(&'a [u8]),
}

/// How to run an MSM, and where to account for it.
pub struct MsmRun<'a> {
    /// Points per batch (0: all at once).
    pub batch: usize,
    /// Download and wait after every batch (the naive behaviour).
    pub sync_per_batch: bool,
    /// Pinned buffers for streamed bases.
    pub bounce: Option<&'a mut Bounce>,
    /// Timing line and transfer inventory of the proof.
    pub report: &'a mut ProveReport,
    /// Phase the transfers and syncs are counted in.
    pub phase: &'static str,
}

/// An MSM result: on the device (every batch's window sums, read after the proof's one
/// sync) or already on the host (naive per-batch mode).
pub enum Pending<C: Curve> {
    /// Per batch, window sums in device memory.
    Device(Vec<DeviceMsm>),
    /// Summed on the host.
    Host(C::Projective),
}

impl<C: Curve> Pending<C> {
    /// The value; downloads (after the stream's earlier work) when still on the device.
    pub fn resolve(&self, gpu: &Gpu) -> Result<C::Projective, ProveError> {
        match self {
            Pending::Device(parts) => {
                let mut sum = <C::Projective as group::Group>::identity();
                for p in parts {
                    sum += p.download::<C>(gpu)?;
                }
                Ok(sum)
            }
            Pending::Host(p) => Ok(*p),
        }
    }

    /// Device-to-host bytes of [`Pending::resolve`].
    pub fn download_bytes(&self) -> usize {
        match self {
            Pending::Device(parts) => parts.iter().map(|p| p.bytes::<C>()).sum(),
            Pending::Host(_) => 0,
        }
    }
}

/// sum `scalars[i] * bases[i]`, i < n, in batches of `run.batch` points.
pub fn msm_batched<C: Curve>(
    gpu: &Gpu,
    bases: Bases<'_>,
    scalars: &CudaSlice<u8>,
    n: usize,
    split: bool,
    run: &mut MsmRun<'_>,
) -> Result<Pending<C>, ProveError> {
    let ab = C::AFFINE_BYTES;
    let avail = match &bases {
        Bases::Device(d) => d.len(),
        Bases::Host(h) => h.len(),
    };
    if avail < n * ab || scalars.len() < n * 32 {
        return Err(ProveError::Invalid(format!(
            "MSM of {n} with {avail} base / {} scalar bytes",
            scalars.len()
        )));
    }
    let batch = if run.batch == 0 { n.max(1) } else { run.batch };
    let nbatches = n.div_ceil(batch).max(1);
    if let (1, Bases::Device(d), false) = (nbatches, &bases, run.sync_per_batch) {
        run.report.count_reads += u32::from(split && n > 0);
        return msm::<C>(gpu, d, scalars, n, split).map(|r| Pending::Device(vec![r]));
    }
    let s = gpu.stream();
    let copy = gpu.copy_stream();
    let mut results = Vec::with_capacity(nbatches);
    let mut host_sum = <C::Projective as group::Group>::identity();
    // Streamed bases: two device slots filled in turn on the copy stream.
    let mut slots: Vec<CudaSlice<u8>> = Vec::new();
    let mut slot_free: [Option<CudaEvent>; 2] = [None, None];
    if let Bases::Host(_) = bases {
        for _ in 0..2 {
            slots.push(gpu.alloc_on::<u8>(copy, batch.min(n) * ab)?);
        }
    }
    for k in 0..nbatches {
        let lo = k * batch;
        let len = batch.min(n - lo);
        let sc = scalars.slice(lo * 32..(lo + len) * 32);
        let r = match &bases {
            Bases::Device(d) => {
                let b = d.slice(lo * ab..(lo + len) * ab);
                msm_view::<C>(gpu, &b, &sc, len, split)?
            }
            Bases::Host(h) => {
                let slot = k % 2;
                if let Some(e) = slot_free[slot].take() {
                    copy.wait(&e).map_err(|e| gpu.err("copy wait", e))?;
                }
                let bounce = run.bounce.as_deref_mut().ok_or_else(|| {
                    ProveError::Invalid("streamed MSM without bounce buffers".into())
                })?;
                let bytes = &h[lo * ab..(lo + len) * ab];
                let mut dst = slots[slot].slice_mut(0..bytes.len());
                bounce.upload(gpu, copy, bytes, &mut dst)?;
                run.report.add_transfer(
                    run.phase,
                    Direction::HostToDevice,
                    bytes.len() as u64,
                    true,
                );
                let ready = gpu.record(copy)?;
                s.wait(&ready).map_err(|e| gpu.err("stream wait", e))?;
                let b = slots[slot].slice(0..bytes.len());
                let r = msm_view::<C>(gpu, &b, &sc, len, split)?;
                slot_free[slot] = Some(gpu.record(s)?);
                r
            }
        };
        if split {
            run.report.count_reads += 1;
        }
        if run.sync_per_batch {
            host_sum += r.download::<C>(gpu)?;
            run.report.host_syncs += 1;
            run.report.add_transfer(
                run.phase,
                Direction::DeviceToHost,
                r.bytes::<C>() as u64,
                false,
            );
        } else {
            results.push(r);
        }
    }
    if let Some(b) = run.bounce.as_deref_mut() {
        b.drain(gpu)?;
    }
    // The slots were allocated on the copy stream; free them only after the compute
    // stream is done reading them.
    if !slots.is_empty() {
        let done = gpu.record(s)?;
        copy.wait(&done).map_err(|e| gpu.err("copy wait", e))?;
        drop(slots);
    }
    if run.sync_per_batch {
        return Ok(Pending::Host(host_sum));
    }
    Ok(Pending::Device(results))
}
