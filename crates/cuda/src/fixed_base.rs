//! Fixed-base multiplication on the GPU for parameter generation (kernels in
//! kernels/fixed_base.cu): [`GpuFixedBase`] implements filprove-groth16's
//! [`FixedBaseMul`], so `keygen::generate_*_using` makes every parameter point here, with
//! the same bytes as the CPU ([`filprove_groth16::keygen::CpuFixedBase`]).
//!
//! # Design
//!
//! - **Table.** For a window of `w` bits, `ceil(256 / w)` rows of `2^(w-1)` affine points
//!   (row `k`, entry `j - 1`: `j 2^(w k) G`), in device memory. A scalar is recoded into
//!   signed digits in `(-2^(w-1), 2^(w-1)]` (the CPU recoding, digit for digit), so a
//!   multiplication is one mixed addition per non-zero digit and no doubling.
//!   The table is made on the device: with `j = a + b 2^lo`, entry `j` is the sum of two
//!   points of small host tables (`2^lo + 2^(w-1-lo) + 1` points per row, about 3,000 at
//!   `w = 22`), added in affine form with one inversion per 32 entries.
//! - **Window.** [`choose_window`] minimises `rows * (n + 2^(w-1))` (one mixed addition
//!   per point and row, plus the table, whose entries cost about as much as an addition
//!   each) under a byte cap ([`FixedBaseOptions::max_table_bytes`], and what the device
//!   has free). The table does not need to fit the L2 cache: the multiplication is bound by
//!   field products, not by table reads. One G1 addition in XYZZ form is 10 Fq products,
//!   ~18,000 multiply-add instructions per warp, against 32 gathered entries of 96 bytes
//!   (3 KiB): at the H200's ~1.8e10 Fq products/s that is ~0.2 TB/s of gathers, a small
//!   part of what HBM delivers even for scattered 64-byte reads. So a wide window, which
//!   saves additions, wins: for porep-32g's 427 M G1 points `w = 22` (12 rows of 2^21
//!   points, 2.25 GiB) costs 12 additions per point against 16 for `w = 16` (whose
//!   48 MiB table would fit L2). G2 (33 M points): `w = 22` too (4.5 GiB).
//! - **Multiplication.** One thread per scalar: out of Montgomery form, digits on the fly,
//!   the next row's entry loaded before the current addition, the sum in XYZZ coordinates
//!   (mixed addition 8M + 2S; doublings and cancellations handled).
//! - **To affine.** 32 points per thread share one inversion (Montgomery's trick on ZZZ;
//!   1/ZZ = (ZZ/ZZZ)^2): 7 products per point plus 1/32 of an inversion. The identity is
//!   all-zero limbs, blst's (and so blstrs') identity. Output: blstrs' `G1Affine` /
//!   `G2Affine` memory (Montgomery limbs), downloaded as is.
//! - **Pipeline.** Scalars go in chunks of [`FixedBaseOptions::chunk_points`] G1 points
//!   (half as many G2 points: the same bytes) through [`FixedBaseOptions::slots`] buffer
//!   sets. Per chunk: the host copies the scalars into a pinned buffer, an upload stream
//!   sends them, the compute stream multiplies and converts, the copy stream downloads
//!   into a second pinned buffer, and the host copies the points into the result vector
//!   (rayon). Chunk `i + slots - 1` is queued before the host waits for chunk `i`, so
//!   the GPU computes while earlier chunks travel and are copied out. The result vector
//!   is never a DMA target (it is freshly allocated, pageable memory).
//!
//! # Memory plan
//!
//! Device: the G1 and G2 tables (kept from the first use until
//! [`FixedBaseMul::release`]) plus `slots * chunk * 320` bytes (per G1 point: 32 B scalar,
//! 192 B XYZZ, 96 B affine; a G2 chunk of half the points needs 304 B per G1 point),
//! checked against the free memory before allocating: [`plan`]. Defaults (2^22 points,
//! 3 slots): 4.0 GiB of buffers, 6.75 GiB of tables at porep-32g's sizes. Pinned host
//! memory: `slots * chunk * 128` bytes (1.5 GiB).
//!
//! # Floor (projection, H200)
//!
//! Per G1 point: 12 additions x 10 products + 7 (affine) + 1 (Montgomery form of the
//! scalar, an Fr product) = ~128 Fq products at `w = 22`; per G2 point 12 x 28 + 21 =
//! ~357 Fq products (an Fq2 product is 3). porep-32g: 427.2 M G1 points -> 5.5e10
//! products, 33.1 M G2 points -> 1.2e10: 6.7e10 products / 1.8e10 per s = **3.7 s** of
//! GPU time (with `w = 16`: 16 additions, 4.9 s). The downloads (47 GB) take ~1 s at
//! ~50 GB/s and overlap the kernels; the host copies into the result (page faults of 47 GB
//! of fresh memory) are spread over 16 cores.

use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice, PushKernelArg};
use filprove_groth16::keygen::FixedBaseMul;
use filprove_groth16::{Fr, ParamsError, ProveError};
use group::Curve as _;
use rayon::prelude::*;

use crate::field::{self, Limbs};
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{Curve, G1, G2};

mod plan;
pub use plan::{
    choose_window, plan, rows, small_tables, split_bits, table_bytes, FixedBaseOptions,
    FixedBasePlan, BATCH, DEVICE_RESERVE, MAX_WINDOW, MIN_WINDOW, SLOT_DEVICE_BYTES_PER_POINT,
    SLOT_PINNED_BYTES_PER_POINT,
};

const THREADS: u32 = 128;
/// Bytes per piece of the host's parallel copies.
const COPY_PIECE: usize = 1 << 20;

/// A curve the fixed-base kernels are instantiated for.
pub trait FbCurve: Curve {
    /// The projective type whose affine form is `Self::Affine`.
    type Proj: group::Curve<AffineRepr = Self::Affine> + Send + Sync;
    /// log2 of G1 points per point of this curve in a chunk (G2 points take twice the room).
    const CHUNK_SHIFT: u32;
    /// "G1" or "G2", for messages.
    const NAME: &'static str;
}

impl FbCurve for G1 {
    type Proj = G1Projective;
    const CHUNK_SHIFT: u32 = 0;
    const NAME: &'static str = "G1";
}

impl FbCurve for G2 {
    type Proj = G2Projective;
    const CHUNK_SHIFT: u32 = 1;
    const NAME: &'static str = "G2";
}

/// What the last multiplication call did (for benchmarks and logs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixedBaseStats {
    /// Points made.
    pub points: u64,
    /// Chunks.
    pub chunks: u64,
    /// Window bits of the table used.
    pub window: u32,
    /// Wall time of the call, seconds (table build excluded).
    pub wall_s: f64,
    /// GPU time of the multiplication and to-affine kernels, ms (CUDA events).
    pub kernel_ms: f64,
    /// Host time copying scalars into and points out of the pinned buffers, seconds.
    pub host_copy_s: f64,
    /// Host time waiting for downloads, seconds.
    pub host_wait_s: f64,
}

/// A table held by [`GpuFixedBase`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableInfo {
    /// Window bits.
    pub window: u32,
    /// Time it took to build, ms.
    pub build_ms: f64,
}

/// A generator's table in device memory.
struct DeviceTable {
    w: u32,
    points: CudaSlice<u8>,
    /// Time it took to build, ms.
    build_ms: f64,
}

/// One buffer set of the pipeline.
struct Slot {
    scalars: CudaSlice<u8>,
    xyzz: CudaSlice<u8>,
    affine: CudaSlice<u8>,
    host_in: PinnedHostSlice<u8>,
    host_out: PinnedHostSlice<u8>,
    /// The chunk in flight: (first point, points, download done, kernel start/end).
    pending: Option<Pending>,
}

struct Pending {
    lo: usize,
    len: usize,
    downloaded: CudaEvent,
    start: CudaEvent,
    end: CudaEvent,
}

#[derive(Default)]
struct State {
    /// Announced (G1, G2) points.
    hint: (usize, usize),
    g1: Option<DeviceTable>,
    g2: Option<DeviceTable>,
    slots: Vec<Slot>,
    stats: FixedBaseStats,
}

/// Fixed-base multiplication of the standard generators on one GPU (see the module doc).
pub struct GpuFixedBase {
    gpu: Arc<Gpu>,
    opts: FixedBaseOptions,
    /// Uploads of scalars (the compute stream runs kernels, the copy stream downloads).
    up: Arc<CudaStream>,
    state: Mutex<State>,
}

impl GpuFixedBase {
    /// On an open GPU.
    pub fn new(gpu: Arc<Gpu>, opts: FixedBaseOptions) -> Result<Self, ProveError> {
        opts.validate()?;
        gpu.bind()?;
        let up = gpu
            .context()
            .new_stream()
            .map_err(|e| gpu.err("cuStreamCreate", e))?;
        Ok(Self {
            gpu,
            opts,
            up,
            state: Mutex::new(State::default()),
        })
    }

    /// Opens device `ordinal` ([`Gpu::open`]) for fixed-base multiplication.
    pub fn open(ordinal: usize, opts: FixedBaseOptions) -> Result<Self, ProveError> {
        Self::new(Arc::new(Gpu::open(ordinal)?), opts)
    }

    /// The GPU.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The options.
    pub fn options(&self) -> &FixedBaseOptions {
        &self.opts
    }

    /// What the last multiplication call did.
    pub fn last_stats(&self) -> FixedBaseStats {
        self.lock().map(|s| s.stats.clone()).unwrap_or_default()
    }

    /// The G1 and G2 tables currently held.
    pub fn tables(&self) -> (Option<TableInfo>, Option<TableInfo>) {
        self.lock()
            .map(|s| {
                let f = |t: &Option<DeviceTable>| {
                    t.as_ref().map(|t| TableInfo {
                        window: t.w,
                        build_ms: t.build_ms,
                    })
                };
                (f(&s.g1), f(&s.g2))
            })
            .unwrap_or((None, None))
    }

    /// The table of `C` downloaded (row-major, `rows(w) * 2^(w-1)` points), for tests;
    /// builds it for `n` points when absent.
    pub fn download_table<C: FbCurve>(&self, n: usize) -> Result<(u32, Vec<C::Affine>), ProveError>
    where
        C::Affine: Send + Sync,
    {
        let mut st = self.lock()?;
        self.gpu.bind()?;
        self.ensure_table::<C>(&mut st, n)?;
        let table = Self::table_of::<C>(&mut st)?;
        let count = table.points.len() / C::AFFINE_BYTES;
        let mut host: Vec<C::Affine> =
            vec![<C::Proj as group::Group>::identity().to_affine(); count];
        let w = table.w;
        self.gpu
            .stream()
            .memcpy_dtoh(&table.points, bytes_of_mut(&mut host))
            .map_err(|e| self.gpu.err("table download", e))?;
        self.gpu.sync()?;
        Ok((w, host))
    }

    /// Fills every device and pinned buffer of the pipeline with `byte` (allocating them
    /// first), so that a test sees stale or unwritten bytes as wrong points.
    pub fn poison_buffers(&self, byte: u8) -> Result<(), ProveError> {
        use cudarc::driver::DevicePtrMut;
        let mut st = self.lock()?;
        self.gpu.bind()?;
        self.ensure_slots(&mut st)?;
        let s = self.gpu.stream();
        for slot in &mut st.slots {
            for buf in [&mut slot.scalars, &mut slot.xyzz, &mut slot.affine] {
                let bytes = buf.len();
                let (ptr, _guard) = buf.device_ptr_mut(s);
                // SAFETY: `bytes` bytes from the start of a live allocation of that size,
                // queued on the stream that allocated it; no copy is in flight (the
                // state's lock is held and every call leaves its chunks finished).
                unsafe { cudarc::driver::result::memset_d8_async(ptr, byte, bytes, s.cu_stream()) }
                    .map_err(|e| self.gpu.err("cuMemsetD8Async", e))?;
            }
            for host in [&mut slot.host_in, &mut slot.host_out] {
                host.as_mut_slice()
                    .map_err(|e| self.gpu.err("pinned buffer", e))?
                    .fill(byte);
            }
        }
        self.gpu.sync()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, ProveError> {
        self.state
            .lock()
            .map_err(|_| self.gpu.fault("fixed-base state lock poisoned".into()))
    }

    fn table_of<C: FbCurve>(st: &mut State) -> Result<&mut DeviceTable, ProveError> {
        let t = if C::CHUNK_SHIFT == 0 {
            &mut st.g1
        } else {
            &mut st.g2
        };
        t.as_mut()
            .ok_or_else(|| ProveError::Invalid(format!("no {} table", C::NAME)))
    }

    /// Builds `C`'s table for about `n` multiplications unless one is held.
    fn ensure_table<C: FbCurve>(&self, st: &mut State, n: usize) -> Result<(), ProveError>
    where
        C::Affine: Send + Sync,
    {
        let have = if C::CHUNK_SHIFT == 0 { &st.g1 } else { &st.g2 };
        if have.is_some() {
            return Ok(());
        }
        let (free, _) = self.gpu.mem_info()?;
        // What the buffers will take when not allocated yet.
        let buffers = if st.slots.is_empty() {
            self.opts.slots as u64 * self.opts.chunk_points as u64 * SLOT_DEVICE_BYTES_PER_POINT
        } else {
            0
        };
        let left = (free as u64).saturating_sub(DEVICE_RESERVE + buffers);
        let explicit = if C::CHUNK_SHIFT == 0 {
            self.opts.g1_window
        } else {
            self.opts.g2_window
        };
        let w = explicit.unwrap_or_else(|| {
            choose_window(n, C::AFFINE_BYTES, self.opts.max_table_bytes.min(left))
        });
        let table = self.build_table::<C>(w)?;
        if C::CHUNK_SHIFT == 0 {
            st.g1 = Some(table);
        } else {
            st.g2 = Some(table);
        }
        Ok(())
    }

    fn build_table<C: FbCurve>(&self, w: u32) -> Result<DeviceTable, ProveError>
    where
        C::Affine: Send + Sync,
    {
        let t = Instant::now();
        let gpu = &*self.gpu;
        let bytes = table_bytes(w, C::AFFINE_BYTES);
        gpu.ensure_free(bytes as usize + DEVICE_RESERVE as usize)?;
        let (ta, tb) = small_tables::<C::Proj>(w);
        let lo = split_bits(w);
        let nb = (1u32 << (w - 1 - lo)) + 1;
        let half = 1u32 << (w - 1);
        let nrows = rows(w);
        let d_a = gpu.upload(field::bytes_of(&ta))?;
        let d_b = gpu.upload(field::bytes_of(&tb))?;
        let mut points = gpu.alloc::<u8>(bytes as usize)?;
        let mut bad = gpu.zeros::<u32>(1)?;
        let total = nrows as usize * half as usize;
        let kernel = format!("{}_fb_table", C::PREFIX);
        // SAFETY: signature (const A*, const A*, u32 lo, u32 nb, u32 half, u32 rows, A*,
        // u32*) as in fixed_base.cu; d_a holds rows * 2^lo points and d_b rows * nb
        // (small_tables), every entry index a < 2^lo and b <= half >> lo < nb; points holds
        // rows * half points; bad one u32.
        unsafe {
            gpu.stream()
                .launch_builder(gpu.func(&kernel)?)
                .arg(&d_a)
                .arg(&d_b)
                .arg(&lo)
                .arg(&nb)
                .arg(&half)
                .arg(&nrows)
                .arg(&mut points)
                .arg(&mut bad)
                .launch(cfg(blocks(total.div_ceil(BATCH), THREADS), THREADS, 0))
        }
        .map_err(|e| gpu.err(&kernel, e))?;
        let mut nbad = [0u32];
        gpu.stream()
            .memcpy_dtoh(&bad, &mut nbad)
            .map_err(|e| gpu.err("download", e))?;
        gpu.sync()?;
        if nbad[0] != 0 {
            return Err(gpu.fault(format!(
                "{kernel}: {} of {total} table entries hit a zero denominator",
                nbad[0]
            )));
        }
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        log::info!(
            "fixed-base {} table on {}: w = {w}, {nrows} x {half} points ({:.2} GiB) in {build_ms:.1} ms",
            C::NAME,
            gpu.name(),
            bytes as f64 / f64::from(1u32 << 30),
        );
        Ok(DeviceTable {
            w,
            points,
            build_ms,
        })
    }

    /// Allocates the slots unless present.
    fn ensure_slots(&self, st: &mut State) -> Result<(), ProveError> {
        if !st.slots.is_empty() {
            return Ok(());
        }
        let gpu = &*self.gpu;
        let c = self.opts.chunk_points;
        gpu.ensure_free(
            (self.opts.slots as u64 * c as u64 * SLOT_DEVICE_BYTES_PER_POINT + DEVICE_RESERVE)
                as usize,
        )?;
        let mut slots = Vec::with_capacity(self.opts.slots);
        for _ in 0..self.opts.slots {
            // SAFETY: alloc_pinned leaves the memory uninitialised; every byte of host_in
            // is written by the host copy of a chunk's scalars before the upload reads it.
            let host_in = unsafe { gpu.context().alloc_pinned::<u8>(c * 32) }
                .map_err(|e| gpu.err("cuMemHostAlloc (fixed-base scalars)", e))?;
            // SAFETY: as for host_in: host_out is read only after the download of a
            // chunk's affine points has written it.
            let host_out = unsafe { gpu.context().alloc_pinned::<u8>(c * G1::AFFINE_BYTES) }
                .map_err(|e| gpu.err("cuMemHostAlloc (fixed-base points)", e))?;
            slots.push(Slot {
                scalars: gpu.alloc::<u8>(c * 32)?,
                xyzz: gpu.alloc::<u8>(c * G1::XYZZ_BYTES)?,
                affine: gpu.alloc::<u8>(c * G1::AFFINE_BYTES)?,
                host_in,
                host_out,
                pending: None,
            });
        }
        // The buffers were allocated in the compute stream's order; the other streams use
        // them only after that.
        gpu.sync()?;
        st.slots = slots;
        Ok(())
    }

    /// `s * generator` for each scalar, in `C`.
    pub fn multiply<C: FbCurve>(&self, scalars: &[Fr]) -> Result<Vec<C::Affine>, ProveError>
    where
        C::Affine: Send + Sync,
    {
        if scalars.is_empty() {
            return Ok(Vec::new());
        }
        let mut st = self.lock()?;
        self.gpu.bind()?;
        let hint = if C::CHUNK_SHIFT == 0 {
            st.hint.0
        } else {
            st.hint.1
        };
        self.ensure_slots(&mut st)?;
        self.ensure_table::<C>(&mut st, hint.max(scalars.len()))?;
        let result = self.run::<C>(&mut st, scalars);
        if result.is_err() {
            // Nothing may still be copying into or out of the buffers kept for later.
            self.drain(&mut st);
        }
        result
    }

    /// Waits for every stream and forgets the chunks in flight (after an error).
    fn drain(&self, st: &mut State) {
        let _ = self.up.synchronize();
        let _ = self.gpu.stream().synchronize();
        let _ = self.gpu.copy_stream().synchronize();
        for s in &mut st.slots {
            s.pending = None;
        }
    }

    fn run<C: FbCurve>(&self, st: &mut State, scalars: &[Fr]) -> Result<Vec<C::Affine>, ProveError>
    where
        C::Affine: Send + Sync,
    {
        let t0 = Instant::now();
        let n = scalars.len();
        let chunk = self.opts.chunk_points >> C::CHUNK_SHIFT;
        let nchunks = n.div_ceil(chunk);
        let State {
            g1,
            g2,
            slots,
            stats,
            ..
        } = st;
        let table = if C::CHUNK_SHIFT == 0 { g1 } else { g2 }
            .as_ref()
            .ok_or_else(|| ProveError::Invalid(format!("no {} table", C::NAME)))?;
        *stats = FixedBaseStats {
            points: n as u64,
            chunks: nchunks as u64,
            window: table.w,
            ..Default::default()
        };
        let mut out: Vec<C::Affine> = Vec::with_capacity(n);
        let depth = slots.len();
        {
            let dst = spare_bytes(&mut out, n);
            for i in 0..nchunks.min(depth - 1) {
                self.enqueue::<C>(
                    &mut slots[i % depth],
                    table,
                    scalars,
                    i * chunk,
                    chunk,
                    stats,
                )?;
            }
            for i in 0..nchunks {
                let next = i + depth - 1;
                if next < nchunks {
                    self.enqueue::<C>(
                        &mut slots[next % depth],
                        table,
                        scalars,
                        next * chunk,
                        chunk,
                        stats,
                    )?;
                }
                self.finish::<C>(&mut slots[i % depth], dst, stats)?;
            }
        }
        // SAFETY: `finish` wrote the bytes of every point [0, n) (the chunks tile it), and
        // affine points are plain limbs, valid for any bytes.
        unsafe { out.set_len(n) };
        stats.wall_s = t0.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Queues the chunk of `scalars` from `lo` (at most `chunk` points) on `slot`, whose
    /// previous chunk is finished.
    fn enqueue<C: FbCurve>(
        &self,
        slot: &mut Slot,
        table: &DeviceTable,
        scalars: &[Fr],
        lo: usize,
        chunk: usize,
        stats: &mut FixedBaseStats,
    ) -> Result<(), ProveError> {
        let gpu = &*self.gpu;
        let len = chunk.min(scalars.len() - lo);
        let ab = C::AFFINE_BYTES;
        let t = Instant::now();
        let host_in = slot
            .host_in
            .as_mut_slice()
            .map_err(|e| gpu.err("pinned buffer", e))?;
        par_copy(
            &mut host_in[..len * 32],
            field::bytes_of(&scalars[lo..lo + len]),
        );
        stats.host_copy_s += t.elapsed().as_secs_f64();
        // The slot's previous chunk finished (its download completed, hence its kernels and
        // upload did): the buffers are free. The pinned source stays untouched until this
        // chunk's download completed (the slot is reused only after `finish`).
        self.up
            .memcpy_htod(
                &host_in[..len * 32],
                &mut slot.scalars.slice_mut(0..len * 32),
            )
            .map_err(|e| gpu.err("fixed-base scalar upload", e))?;
        let uploaded = gpu.record(&self.up)?;
        let s = gpu.stream();
        s.wait(&uploaded).map_err(|e| gpu.err("stream wait", e))?;
        let start = gpu.record_timed(s)?;
        let (w, nrows, n32) = (table.w, rows(table.w), len as u32);
        let mul = format!("{}_fb_mul", C::PREFIX);
        // SAFETY: signature (const A* table, u32 w, u32 rows, const Fr*, u32 n, X* out) as
        // in fixed_base.cu; the table holds rows * 2^(w-1) points and every digit
        // magnitude is 1..=2^(w-1); scalars hold len Fr, xyzz len points (chunk <= the
        // slot's capacity: G2 chunks are half as many points of twice the size).
        unsafe {
            s.launch_builder(gpu.func(&mul)?)
                .arg(&table.points)
                .arg(&w)
                .arg(&nrows)
                .arg(&slot.scalars)
                .arg(&n32)
                .arg(&mut slot.xyzz)
                .launch(cfg(blocks(len, THREADS), THREADS, 0))
        }
        .map_err(|e| gpu.err(&mul, e))?;
        let aff = format!("{}_fb_affine", C::PREFIX);
        // SAFETY: signature (const X*, u32 n, A*) as in fixed_base.cu; xyzz holds len
        // points written above, affine room for len; the grid has at least len / BATCH
        // threads, each taking BATCH points at a stride of the grid.
        unsafe {
            s.launch_builder(gpu.func(&aff)?)
                .arg(&slot.xyzz)
                .arg(&n32)
                .arg(&mut slot.affine)
                .launch(cfg(blocks(len.div_ceil(BATCH), THREADS), THREADS, 0))
        }
        .map_err(|e| gpu.err(&aff, e))?;
        let end = gpu.record_timed(s)?;
        let copy = gpu.copy_stream();
        copy.wait(&end).map_err(|e| gpu.err("copy wait", e))?;
        let host_out = slot
            .host_out
            .as_mut_slice()
            .map_err(|e| gpu.err("pinned buffer", e))?;
        copy.memcpy_dtoh(&slot.affine.slice(0..len * ab), &mut host_out[..len * ab])
            .map_err(|e| gpu.err("fixed-base point download", e))?;
        slot.pending = Some(Pending {
            lo,
            len,
            downloaded: gpu.record(copy)?,
            start,
            end,
        });
        Ok(())
    }

    /// Waits for `slot`'s chunk and copies its points into `dst` (the result's bytes).
    fn finish<C: FbCurve>(
        &self,
        slot: &mut Slot,
        dst: &mut [MaybeUninit<u8>],
        stats: &mut FixedBaseStats,
    ) -> Result<(), ProveError> {
        let gpu = &*self.gpu;
        let p = slot
            .pending
            .take()
            .ok_or_else(|| gpu.fault("fixed-base slot without a chunk".into()))?;
        let t = Instant::now();
        p.downloaded
            .synchronize()
            .map_err(|e| gpu.err("fixed-base download wait", e))?;
        stats.host_wait_s += t.elapsed().as_secs_f64();
        stats.kernel_ms += f64::from(
            p.start
                .elapsed_ms(&p.end)
                .map_err(|e| gpu.err("cuEventElapsedTime", e))?,
        );
        let ab = C::AFFINE_BYTES;
        let t = Instant::now();
        let host_out = slot
            .host_out
            .as_slice()
            .map_err(|e| gpu.err("pinned buffer", e))?;
        par_copy_uninit(
            &mut dst[p.lo * ab..(p.lo + p.len) * ab],
            &host_out[..p.len * ab],
        );
        stats.host_copy_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    fn set_hint(&self, g1: usize, g2: usize) -> Result<(), ProveError> {
        self.lock()?.hint = (g1, g2);
        Ok(())
    }
}

impl FixedBaseMul for GpuFixedBase {
    fn name(&self) -> String {
        self.gpu.name().to_string()
    }

    /// Records the counts and builds both tables now (so that their time is the
    /// preparation's), and the buffers.
    fn prepare(&self, g1_points: usize, g2_points: usize) -> Result<(), ParamsError> {
        self.set_hint(g1_points, g2_points)?;
        let mut st = self.lock()?;
        self.gpu.bind()?;
        self.ensure_slots(&mut st)?;
        if g1_points > 0 {
            self.ensure_table::<G1>(&mut st, g1_points)?;
        }
        if g2_points > 0 {
            self.ensure_table::<G2>(&mut st, g2_points)?;
        }
        Ok(())
    }

    fn g1(&self, scalars: &[Fr]) -> Result<Vec<blstrs::G1Affine>, ParamsError> {
        Ok(self.multiply::<G1>(scalars)?)
    }

    fn g2(&self, scalars: &[Fr]) -> Result<Vec<blstrs::G2Affine>, ParamsError> {
        Ok(self.multiply::<G2>(scalars)?)
    }

    /// Frees the tables and buffers (device and pinned memory).
    fn release(&self) {
        if let Ok(mut st) = self.lock() {
            self.drain(&mut st);
            st.g1 = None;
            st.g2 = None;
            st.slots.clear();
            st.hint = (0, 0);
        }
    }
}

/// The bytes of the first `n` elements of `v`'s spare capacity (`n` at most the spare
/// capacity).
fn spare_bytes<T: Limbs>(v: &mut Vec<T>, n: usize) -> &mut [MaybeUninit<u8>] {
    let spare = v.spare_capacity_mut();
    let n = n.min(spare.len());
    // SAFETY: `MaybeUninit<T>` has `T`'s layout and `Limbs` types have no padding, so the
    // first n elements are n * size_of::<T>() bytes; `MaybeUninit<u8>` has no validity
    // requirement and alignment 1; the borrow of `v` carries over.
    unsafe {
        std::slice::from_raw_parts_mut(
            spare.as_mut_ptr().cast::<MaybeUninit<u8>>(),
            n * std::mem::size_of::<T>(),
        )
    }
}

/// The mutable bytes of a slice of limb values.
fn bytes_of_mut<T: Limbs>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: `Limbs` types are padding-free plain limbs, valid for every bit pattern; u8
    // has alignment 1; the borrow of `v` carries over.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// `dst = src` by rayon's threads (same lengths).
fn par_copy(dst: &mut [u8], src: &[u8]) {
    dst.par_chunks_mut(COPY_PIECE)
        .zip(src.par_chunks(COPY_PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// `dst = src` into uninitialised bytes, by rayon's threads (same lengths).
fn par_copy_uninit(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    dst.par_chunks_mut(COPY_PIECE)
        .zip(src.par_chunks(COPY_PIECE))
        .for_each(|(d, s)| {
            let len = d.len().min(s.len());
            // SAFETY: both pieces hold at least `len` bytes and do not overlap (a pinned
            // buffer and the result vector).
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast::<u8>(), len) }
        });
}

#[cfg(test)]
mod tests;
