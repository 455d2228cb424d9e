//! Per-partition staging: the host vectors the kernels read (a, b, the aux witness and the
//! density bitmaps) copied into device buffers sized by the plan (c is formed by the
//! kernels from a and b in the region's own memory: a satisfying witness has c = a*b; the
//! host holds no c). Pre-staged, this
//! runs before the kernel lock on the copy stream from page-locked memory (registered in
//! place, or through pinned bounce buffers) and the kernels wait on its event, not on the
//! host; naive, it runs inside the kernel region on the compute stream from pageable
//! memory.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, CudaViewMut};

use filprove_groth16::recycle::HostPins;
use filprove_groth16::{Direction, Fr, ProveError, ProveReport, ProvingAssignment};

use crate::field::bytes_of;
use crate::gpu::Gpu;
use crate::host_marks::HostMarks;
use crate::pinned::{piece_chunks, Bounce, RegisteredPieces};

/// How staged bytes leave the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostPath {
    /// Register the host vectors in place, then copy at pinned speed.
    Register,
    /// Copy through pinned bounce buffers (CPU threads fill them).
    Bounce,
    /// Copy from pageable memory (the driver stages it at a fraction of PCIe speed).
    Pageable,
}

impl HostPath {
    /// The name used in switches and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            HostPath::Register => "register",
            HostPath::Bounce => "bounce",
            HostPath::Pageable => "pageable",
        }
    }
}

/// A partition's device buffers.
pub struct StagedPartition {
    /// log2 of the domain.
    pub lg: u32,
    /// a and b, each 2^lg Fr, zero padded (H's coefficients end in a). The region takes
    /// them once the H MSM is queued: the next partition's staging may use their memory
    /// as soon as that MSM has run.
    pub ab: Option<[CudaSlice<u8>; 2]>,
    /// The aux witness.
    pub aux: CudaSlice<u8>,
    /// Density bitmap words (A aux, B aux).
    pub a_words: CudaSlice<u64>,
    /// See `a_words`.
    pub b_words: CudaSlice<u64>,
    /// Timing events on the staging stream before the first and after the last copy
    /// (None: staged in order on the compute stream).
    pub copy_events: Option<(CudaEvent, CudaEvent)>,
    /// What staging cost (phase "stage" or "upload", transfers).
    pub report: ProveReport,
    /// The compute stream, synchronised before the buffers are freed unless the proof
    /// that used them is known to have completed (the stream may be running another
    /// partition's kernels by then).
    compute: Arc<CudaStream>,
    completed: bool,
}

impl StagedPartition {
    /// Records that every copy and kernel reading these buffers has completed (the proof
    /// waited for its final event), so dropping need not wait for the compute stream.
    pub fn mark_completed(&mut self) {
        self.completed = true;
    }
}

impl Drop for StagedPartition {
    fn drop(&mut self) {
        // On the normal path both waits return at once (the proof synchronised); on an
        // error path they keep in-flight copies and kernels from outliving the buffers
        // and the host registrations.
        if self.completed {
            return;
        }
        if let Some((_, end)) = &self.copy_events {
            let _ = end.synchronize();
        }
        let _ = self.compute.synchronize();
    }
}

/// Page-locks more of `v`'s allocation in place, piece by piece from where its pins end,
/// while `more` says so before each piece (timed as `phase`; the pins stay with the
/// assignment). Returns the byte range registered by this call: it ends where the
/// allocation's page-locked prefix ends now (its whole capacity when done) and is empty
/// when nothing was added.
pub fn pin_more(
    gpu: &Gpu,
    pins: &HostPins,
    v: &Vec<Fr>,
    report: &mut ProveReport,
    phase: &'static str,
    more: &mut dyn FnMut() -> bool,
) -> Result<std::ops::Range<usize>, String> {
    let (ptr, bytes) = (v.as_ptr().cast::<u8>(), v.capacity() * size_of::<Fr>());
    let from = pins.pinned_prefix(ptr, bytes);
    if from >= bytes {
        return Ok(bytes..bytes);
    }
    let t = Instant::now();
    // SAFETY: `v`'s allocation is live; its pins are released before it reallocates or
    // is freed (the assignment's contract), and the assignment outlives this partition's
    // copies (stage's caller contract).
    let (pieces, to) = unsafe { RegisteredPieces::new_while(gpu, ptr, bytes, from, more) }?;
    if to > from {
        pins.attach_range(ptr, bytes, from..to, Box::new(pieces));
        report.add_phase(phase, t.elapsed());
    }
    Ok(from..to)
}

/// Page-locks more of the assignment's staged vectors (the parts [`stage`] sent through the
/// bounce buffers because registering then would have delayed a region), timed as phase
/// "region_register": called once the region's H MSM is queued, it registers piece by piece
/// while the compute stream is busy and stops when the stream runs dry, so the driver time
/// it holds delays no kernel of its own region (what is left waits for a later region of
/// the same, refilled, assignment), or when `budget` (if any) is spent: registering while
/// kernels run still slows them a little (~1 % of an H MSM that runs beside 1.3 s of
/// registration on the H200; docs/decisions/009-host-registration-piece-by-piece.md).
/// Vectors too small to register stay as they are. Returns the bytes registered.
pub fn pin_unpinned(
    gpu: &Gpu,
    asg: &ProvingAssignment,
    budget: Option<std::time::Duration>,
    report: &mut ProveReport,
) -> usize {
    let t = Instant::now();
    let mut busy = || !gpu.compute_idle() && budget.is_none_or(|b| t.elapsed() < b);
    let mut registered = 0;
    for v in [&asg.a, &asg.b, &asg.aux_assignment] {
        if bytes_of(v).len() < crate::pinned::MIN_REGISTER_BYTES {
            continue;
        }
        match pin_more(gpu, &asg.pins, v, report, "region_register", &mut busy) {
            Ok(added) => {
                registered += added.len();
                if added.end < v.capacity() * size_of::<Fr>() {
                    break; // the compute stream ran dry or the budget is spent
                }
            }
            Err(why) => log::debug!("{}: not registered in the region: {why}", gpu.name()),
        }
    }
    registered
}

/// Queues `host` -> `dst` on `stream`: its first `direct` bytes straight from page-locked
/// memory (registered by [`pin_more`] in pieces from the vector's start: one copy per
/// piece), the rest through the bounce buffers when `rest` is [`HostPath::Bounce`] and
/// there are some, else from pageable memory.
fn copy_in(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    direct: usize,
    rest: HostPath,
    bounce: Option<&mut Bounce>,
    host: &[u8],
    dst: &mut CudaViewMut<'_, u8>,
) -> Result<(), ProveError> {
    let direct = direct.min(host.len());
    for (off, len) in piece_chunks(direct) {
        let mut d = dst.slice_mut(off..off + len);
        stream
            .memcpy_htod(&host[off..off + len], &mut d)
            .map_err(|e| gpu.err("upload", e))?;
    }
    if direct == host.len() {
        return Ok(());
    }
    let (tail, mut d) = (&host[direct..], dst.slice_mut(direct..host.len()));
    match (rest, bounce) {
        (HostPath::Bounce, Some(b)) => b.upload(gpu, stream, tail, &mut d),
        _ => stream
            .memcpy_htod(tail, &mut d)
            .map_err(|e| gpu.err("upload", e)),
    }
}

/// Copies the assignment's vectors into new device buffers on `stream`. `phase` names the
/// timing and transfer entries ("stage" before the lock, "upload" inside it). Host memory
/// that cannot be registered falls back to the bounce buffers (the report says why).
/// With [`HostPath::Register`], the parts of vectors not page-locked yet are registered
/// piece by piece while `register` says so before each piece (it says no while a region
/// runs that the driver time would delay); what is left goes through the bounce buffers
/// ([`pin_unpinned`] registers it at a better time). Without bounce buffers everything is
/// registered.
#[allow(clippy::too_many_arguments)]
pub fn stage(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    asg: &ProvingAssignment,
    lg: u32,
    path: HostPath,
    mut bounce: Option<&mut Bounce>,
    phase: &'static str,
    register: &mut dyn FnMut() -> bool,
) -> Result<StagedPartition, ProveError> {
    let t = Instant::now();
    let m = 1usize << lg;
    let on_compute = Arc::ptr_eq(stream, gpu.stream());
    let started = if on_compute {
        None
    } else {
        Some(gpu.record_timed(stream)?)
    };
    let mut report = ProveReport::default();
    // Host time inside the driver's calls, by kind (logged at debug level).
    let mut calls = HostMarks::new(t);
    calls.mark("start");
    // How bytes that cannot be registered in place leave the host.
    let unregistered = if bounce.is_some() {
        HostPath::Bounce
    } else {
        HostPath::Pageable
    };
    // The density bitmaps first, through the pinned bounce buffers when there are any: a
    // pageable copy queued behind the big ones would make the driver wait for them (~0.35
    // s for a 32 GiB partition) while blocking the other worker's calls, the kernel
    // region's first ones included (measured on the H200: its start delayed by 0.27-0.59 s
    // in 4 of 10 regions).
    let mut words = |w: &[u64], report: &mut ProveReport| {
        let mut d = gpu.alloc_on::<u64>(stream, w.len())?;
        let bytes = std::mem::size_of_val(w);
        if !w.is_empty() {
            // SAFETY: u64 words are plain data; u8 has alignment 1.
            let host = unsafe { std::slice::from_raw_parts(w.as_ptr().cast::<u8>(), bytes) };
            // SAFETY: the u64 device buffer viewed as its bytes, for a byte copy.
            let mut view = unsafe { d.transmute_mut::<u8>(bytes) }
                .ok_or_else(|| ProveError::Invalid("density words view".into()))?;
            copy_in(
                gpu,
                stream,
                0,
                unregistered,
                bounce.as_deref_mut(),
                host,
                &mut view,
            )?;
        }
        let pinned = unregistered != HostPath::Pageable;
        report.add_transfer(phase, Direction::HostToDevice, bytes as u64, pinned);
        Ok::<_, ProveError>(d)
    };
    let a_words = words(asg.a_aux_density.words(), &mut report)?;
    let b_words = words(asg.b_aux_density.words(), &mut report)?;
    calls.mark("words");
    let mut always = || true;
    let register: &mut dyn FnMut() -> bool = if unregistered == HostPath::Bounce {
        register
    } else {
        &mut always
    };
    let mut send = |v: &Vec<Fr>, dst: &mut CudaSlice<u8>, report: &mut ProveReport| {
        let host = bytes_of(v);
        if host.is_empty() {
            return Ok(());
        }
        let mut view = dst.slice_mut(0..host.len());
        // Bytes from the start sent straight from page-locked memory.
        let mut direct = 0;
        if path == HostPath::Register {
            match pin_more(gpu, &asg.pins, v, report, "stage_register", &mut *register) {
                Ok(added) => direct = added.end.min(host.len()),
                Err(why) => {
                    if host.len() >= crate::pinned::MIN_REGISTER_BYTES {
                        report
                            .fallbacks
                            .push(format!("{why}; sent via {}", unregistered.as_str()));
                    }
                }
            }
        }
        copy_in(
            gpu,
            stream,
            direct,
            unregistered,
            bounce.as_deref_mut(),
            host,
            &mut view,
        )?;
        let rest = (host.len() - direct) as u64;
        report.add_transfer(phase, Direction::HostToDevice, direct as u64, true);
        let pinned = unregistered != HostPath::Pageable;
        report.add_transfer(phase, Direction::HostToDevice, rest, pinned);
        Ok::<(), ProveError>(())
    };
    let mut ab = Vec::with_capacity(2);
    for v in [&asg.a, &asg.b] {
        if v.len() > m {
            return Err(ProveError::Invalid(format!(
                "{} constraint values for a domain of 2^{lg}",
                v.len()
            )));
        }
        let mut d = gpu.alloc_on::<u8>(stream, m * 32)?;
        let bytes = v.len() * 32;
        if bytes < m * 32 {
            let mut tail = d.slice_mut(bytes..);
            stream
                .memset_zeros(&mut tail)
                .map_err(|e| gpu.err("memset", e))?;
        }
        calls.mark("alloc");
        send(v, &mut d, &mut report)?;
        calls.mark("copy");
        ab.push(d);
    }
    let mut aux = gpu.alloc_on::<u8>(stream, asg.aux_assignment.len() * 32)?;
    calls.mark("alloc");
    send(&asg.aux_assignment, &mut aux, &mut report)?;
    calls.mark("copy");
    if let Some(b) = bounce {
        // The bounce buffers are reused by the next caller: wait until they are sent.
        b.drain(gpu)?;
    }
    let copy_events = match started {
        Some(s0) => Some((s0, gpu.record_timed(stream)?)),
        None => None,
    };
    report.add_phase(phase, t.elapsed());
    calls.mark("end");
    log::debug!(
        "{}: {phase} host calls (ms from its start): {}",
        gpu.name(),
        calls.render()
    );
    let [a, b]: [CudaSlice<u8>; 2] = ab
        .try_into()
        .map_err(|_| ProveError::Invalid("staging a, b".into()))?;
    Ok(StagedPartition {
        lg,
        ab: Some([a, b]),
        aux,
        a_words,
        b_words,
        copy_events,
        report,
        compute: gpu.stream().clone(),
        completed: false,
    })
}
