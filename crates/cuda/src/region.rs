//! [`Region`]: the kernel region of one proof, Groth16 step by step on the device.
//!
//! With the partition's vectors in device memory (staged) and the parameters resident or
//! streamed: H = (a*b - c)/Z by NTTs in place in the staged a, then the H MSM; the L MSM
//! over the aux witness; the A and B MSMs (B in G1 and in G2) over scalars gathered on the
//! device by the density bitmaps; one host wait for the five results; the proof assembled
//! from them ([`filprove_groth16::assemble`]). Everything is queued on the compute stream
//! in that order; the timing of each step is kept by [`PhaseClock`], beside the maths.

mod clock;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cudarc::driver::{CudaEvent, CudaSlice, PushKernelArg};
use filprove_groth16::{
    assemble, Direction, Fr, MsmResults, Proof, ProofInput, ProveError, ProveReport, Srs,
};

pub(crate) use clock::PhaseClock;

use crate::field::bytes_of;
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{self, msm_batched, Bases, Curve, MsmRun, Pending, G1, G2};
use crate::ntt::{self, NttPlan};
use crate::pinned::Bounce;
use crate::resident::{DeviceSrs, Lens};
use crate::stage::{self, StagedPartition};

/// Bytes per pinned bounce buffer (two per user).
pub(crate) const BOUNCE_CHUNK: usize = 64 << 20;

/// The pinned bounce buffers in `slot`, made on first use.
pub(crate) fn bounce<'s>(
    gpu: &Gpu,
    slot: &'s mut Option<Bounce>,
) -> Result<&'s mut Bounce, ProveError> {
    if slot.is_none() {
        *slot = Some(Bounce::new(gpu, BOUNCE_CHUNK)?);
    }
    slot.as_mut()
        .ok_or_else(|| ProveError::Invalid("bounce buffers".into()))
}

fn released() -> ProveError {
    ProveError::Invalid("the partition's a and b were already released".into())
}

/// How the MSMs run (from the device-memory plan and the options).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MsmSettings {
    /// Points per batch (0: all at once).
    pub batch: usize,
    /// Download and wait after every batch (the naive behaviour, for measurements).
    pub sync_per_batch: bool,
}

/// One proof's kernel region: the partition staged on the device, the parameters, how
/// the MSMs run, and the device's region lock.
pub(crate) struct Region<'a> {
    /// The device.
    pub gpu: &'a Gpu,
    /// The parameters (their host sections are read only when streamed).
    pub srs: &'a Srs,
    /// The assignment and its r, s.
    pub input: ProofInput<'a>,
    /// The parameters' section lengths.
    pub lens: Lens,
    /// log2 of the NTT domain.
    pub lg: u32,
    /// The parameters in device memory, or None when their bases are streamed.
    pub dev: Option<Arc<DeviceSrs>>,
    /// The partition's device buffers (a, b, aux, density words).
    pub part: Box<StagedPartition>,
    /// The pinned buffers that stream the bases when the parameters are not resident.
    pub bounce: &'a Mutex<Option<Bounce>>,
    /// Batches and synchronisation of the MSMs.
    pub msm: MsmSettings,
    /// Page-lock what staging left unregistered while the H MSM runs: None, or within
    /// the budget (None: all of it).
    pub register_behind_h: Option<Option<Duration>>,
    /// The device's region lock, released once the results are read back. The last
    /// field, so that on an error the partition's buffers are freed under it.
    pub lock: MutexGuard<'a, ()>,
}

/// The five MSMs, queued on the device.
struct Queued {
    h: Pending<G1>,
    l: Pending<G1>,
    a: Pending<G1>,
    b_g1: Pending<G1>,
    b_g2: Pending<G2>,
}

impl Region<'_> {
    /// Proves on the device: H's coefficients by NTTs, then the H, L, A, B_G1 and B_G2
    /// MSMs, one host wait for the five sums, and the proof assembled from them. `spend`
    /// takes the partition's a and b with an event recorded after the last kernel that
    /// reads them (the H MSM's), as soon as that MSM is queued. `retire` takes the rest of
    /// the partition once every kernel reading it has completed, before the lock is
    /// released; the device buffers of the results and the clock's events are freed after.
    pub fn prove(
        mut self,
        mut clock: PhaseClock<'_>,
        report: &mut ProveReport,
        spend: impl FnOnce([CudaSlice<u8>; 2], CudaEvent),
        retire: impl FnOnce(Box<StagedPartition>),
    ) -> Result<Proof, ProveError> {
        clock.begin(report)?;
        clock.phase("stage_wait", || self.wait_for_staging())?;
        clock.phase("ntt_h", || self.compute_h())?;
        let mut slot = self.bounce.lock().unwrap_or_else(|p| p.into_inner());
        let mut msms = self.msms(&mut slot)?;
        let h = clock.phase("msm_h", || self.msm_h(&mut msms, report))?;
        // Nothing after the H MSM reads a or b: their memory can take the next partition.
        if let Some(ab) = self.part.ab.take() {
            spend(ab, self.gpu.record(self.gpu.stream())?);
        }
        // The H MSM (the region's longest work) is queued and the host has nothing to do
        // until L's scalar counts.
        self.register_behind_h(report);
        let l = clock.phase("msm_l", || self.msm_l(&mut msms, report))?;
        let a = clock.phase("msm_a", || self.msm_a(&mut msms, report))?;
        let (b_g1, b_scalars) = clock.phase("msm_b_g1", || self.msm_b_g1(&mut msms, report))?;
        let b_g2 = clock.phase("msm_b_g2", || self.msm_b_g2(&b_scalars, &mut msms, report))?;
        drop(slot);
        let queued = Queued {
            h,
            l,
            a,
            b_g1,
            b_g2,
        };
        clock.host_wait(|| self.wait_for_kernels())?;
        let sums = self.read_back(&queued, report)?;
        clock.read(report, self.part.copy_events.as_ref())?;
        self.part.mark_completed();
        retire(self.part);
        clock.end(report);
        drop(self.lock);
        Ok(assemble(&self.srs.vk, self.input.randomness, &sums))
    }

    /// How the MSMs run; streamed bases pass through the bounce buffers in `slot`.
    fn msms<'s>(&self, slot: &'s mut Option<Bounce>) -> Result<Msms<'s>, ProveError>
    where
        Self: 's,
    {
        Ok(Msms {
            gpu: self.gpu,
            settings: self.msm,
            bounce: match self.dev {
                None => Some(bounce(self.gpu, slot)?),
                Some(_) => None,
            },
        })
    }

    /// The kernels wait for the staged copies (on the device, not the host).
    fn wait_for_staging(&self) -> Result<(), ProveError> {
        if let Some((_, ready)) = &self.part.copy_events {
            let gpu = self.gpu;
            gpu.stream()
                .wait(ready)
                .map_err(|e| gpu.err("wait for staging", e))?;
        }
        Ok(())
    }

    /// H's coefficients, in place in the staged a (b and c are scratch; c is the region's
    /// own memory, freed in stream order once the transforms are queued).
    fn compute_h(&mut self) -> Result<(), ProveError> {
        let plan = NttPlan::new(self.gpu, self.lg)?;
        let gpu = self.gpu;
        let mut c = gpu.alloc::<u8>((1usize << self.lg) * 32)?;
        let Some([a, b]) = self.part.ab.as_mut() else {
            return Err(released());
        };
        ntt::compute_h_in_place(gpu, &plan, [a, b, &mut c])
    }

    /// H's coefficients (in the staged a).
    fn h_coefficients(&self) -> Result<&CudaSlice<u8>, ProveError> {
        match &self.part.ab {
            Some([h, _]) => Ok(h),
            None => Err(released()),
        }
    }

    /// `<h, H's coefficients>` (m - 1 of them).
    fn msm_h(
        &self,
        msms: &mut Msms<'_>,
        report: &mut ProveReport,
    ) -> Result<Pending<G1>, ProveError> {
        let n = (1usize << self.lg) - 1;
        let folded = self.dev.as_deref().and_then(|d| d.folded_h(n));
        if let (Some(folded), false) = (folded, msms.settings.sync_per_batch) {
            return msms.run_folded(folded, self.h_coefficients()?, n);
        }
        let host = &self.srs.h[..self.srs.h.len().min(n)];
        let bases = self.g1(|d| &d.h, host);
        msms.run::<G1>(bases, self.h_coefficients()?, n, false, "msm_h", report)
    }

    /// Page-locks, piece by piece until the compute stream runs dry (where it delays no
    /// kernel), what staging left for later (later partitions refill the same vectors and
    /// copy from page-locked memory).
    fn register_behind_h(&self, report: &mut ProveReport) {
        if let Some(budget) = self.register_behind_h {
            stage::pin_unpinned(self.gpu, self.input.assignment, budget, report);
        }
    }

    /// `<l, aux>`.
    fn msm_l(
        &self,
        msms: &mut Msms<'_>,
        report: &mut ProveReport,
    ) -> Result<Pending<G1>, ProveError> {
        let bases = self.g1(|d| &d.l, &self.srs.l);
        msms.run::<G1>(bases, &self.part.aux, self.lens.l, true, "msm_l", report)
    }

    /// `<a, inputs ++ aux dense in A>`.
    fn msm_a(
        &self,
        msms: &mut Msms<'_>,
        report: &mut ProveReport,
    ) -> Result<Pending<G1>, ProveError> {
        let asg = self.input.assignment;
        let (scalars, up) = gather(
            self.gpu,
            &self.part.aux,
            asg.aux_assignment.len(),
            &self.part.a_words,
            asg.a_aux_density.count_ones(),
            &asg.input_assignment,
        )?;
        report.add_transfer("msm_a", Direction::HostToDevice, up, false);
        let bases = self.g1(|d| &d.a, &self.srs.a);
        msms.run::<G1>(bases, &scalars, self.lens.a, true, "msm_a", report)
    }

    /// `<b_g1, inputs dense in B ++ aux dense in B>`, and those scalars (for B in G2).
    fn msm_b_g1(
        &self,
        msms: &mut Msms<'_>,
        report: &mut ProveReport,
    ) -> Result<(Pending<G1>, CudaSlice<u8>), ProveError> {
        let asg = self.input.assignment;
        let inputs = &asg.input_assignment;
        let b_inputs: Vec<Fr> = asg
            .b_input_density
            .iter_ones()
            .filter_map(|i| inputs.get(i).copied())
            .collect();
        let (scalars, up) = gather(
            self.gpu,
            &self.part.aux,
            asg.aux_assignment.len(),
            &self.part.b_words,
            asg.b_aux_density.count_ones(),
            &b_inputs,
        )?;
        report.add_transfer("msm_b_g1", Direction::HostToDevice, up, false);
        let bases = self.g1(|d| &d.b_g1, &self.srs.b_g1);
        let b_g1 = msms.run::<G1>(bases, &scalars, self.lens.b, true, "msm_b_g1", report)?;
        Ok((b_g1, scalars))
    }

    /// `<b_g2, the B scalars>`.
    fn msm_b_g2(
        &self,
        scalars: &CudaSlice<u8>,
        msms: &mut Msms<'_>,
        report: &mut ProveReport,
    ) -> Result<Pending<G2>, ProveError> {
        let bases = match self.dev.as_ref() {
            Some(d) => Bases::Device(&d.b_g2),
            None => Bases::Host(bytes_of(&self.srs.b_g2)),
        };
        msms.run::<G2>(bases, scalars, self.lens.b, true, "msm_b_g2", report)
    }

    /// The one host synchronisation of the proof, on an event: a pageable download that
    /// waited for the kernels instead would hold the driver's staging path, and the other
    /// worker's staging copies would wait behind it (measured at 2 KiB: staging 290 ms
    /// beside a region instead of 25 ms).
    fn wait_for_kernels(&self) -> Result<(), ProveError> {
        let gpu = self.gpu;
        gpu.record(gpu.stream())?
            .synchronize()
            .map_err(|e| gpu.err("waiting for the proof's kernels", e))
    }

    /// The five sums, downloaded once the kernels completed.
    fn read_back(&self, q: &Queued, report: &mut ProveReport) -> Result<MsmResults, ProveError> {
        let gpu = self.gpu;
        let bytes = q.h.download_bytes()
            + q.l.download_bytes()
            + q.a.download_bytes()
            + q.b_g1.download_bytes()
            + q.b_g2.download_bytes();
        let results = MsmResults {
            h: q.h.resolve(gpu)?,
            l: q.l.resolve(gpu)?,
            a: q.a.resolve(gpu)?,
            b_g1: q.b_g1.resolve(gpu)?,
            b_g2: q.b_g2.resolve(gpu)?,
        };
        report.host_syncs += 1;
        report.add_transfer("result", Direction::DeviceToHost, bytes as u64, false);
        Ok(results)
    }

    /// A G1 section's bases: resident (`device` picks it) or streamed from `host`.
    fn g1<'x>(
        &'x self,
        device: impl FnOnce(&'x DeviceSrs) -> &'x CudaSlice<u8>,
        host: &'x [blstrs::G1Affine],
    ) -> Bases<'x> {
        match self.dev.as_deref() {
            Some(d) => Bases::Device(device(d)),
            None => Bases::Host(bytes_of(host)),
        }
    }
}

/// The MSMs of one region: where streamed bases pass, and how they are batched.
struct Msms<'b> {
    gpu: &'b Gpu,
    settings: MsmSettings,
    bounce: Option<&'b mut Bounce>,
}

impl Msms<'_> {
    /// `sum scalars[i] * bases[i]`, i < n, queued (split: the scalars are mostly 0 and 1);
    /// transfers counted in `phase`.
    fn run<C: Curve>(
        &mut self,
        bases: Bases<'_>,
        scalars: &CudaSlice<u8>,
        n: usize,
        split: bool,
        phase: &'static str,
        report: &mut ProveReport,
    ) -> Result<Pending<C>, ProveError> {
        let mut run = MsmRun {
            batch: self.settings.batch,
            sync_per_batch: self.settings.sync_per_batch,
            bounce: self.bounce.as_deref_mut(),
            report,
            phase,
        };
        msm_batched::<C>(self.gpu, bases, scalars, n, split, &mut run)
    }

    /// The H MSM over folded bases (resident, in one batch: no transfers, no sync).
    fn run_folded(
        &mut self,
        bases: &CudaSlice<u8>,
        scalars: &CudaSlice<u8>,
        n: usize,
    ) -> Result<Pending<G1>, ProveError> {
        let gpu = self.gpu;
        let r = msm::msm_folded::<G1>(
            gpu,
            &bases.as_view(),
            &scalars.as_view(),
            n,
            &gpu.msm_tuning(),
        )?;
        Ok(Pending::Device(vec![r]))
    }
}

/// `[prefix..., aux[i] for every set bit i of the density words]` as a new device
/// vector; also returns the host bytes uploaded (the prefix).
fn gather(
    gpu: &Gpu,
    aux: &CudaSlice<u8>,
    n_aux: usize,
    words: &CudaSlice<u64>,
    count: usize,
    prefix: &[Fr],
) -> Result<(CudaSlice<u8>, u64), ProveError> {
    let total = prefix.len() + count;
    let mut out = gpu.alloc::<u8>(total.max(1) * 32)?;
    let s = gpu.stream();
    if !prefix.is_empty() {
        let mut head = out.slice_mut(0..prefix.len() * 32);
        s.memcpy_htod(bytes_of(prefix), &mut head)
            .map_err(|e| gpu.err("upload inputs", e))?;
    }
    let up = (prefix.len() * 32) as u64;
    let nbits = n_aux.min(words.len() * 64);
    if count == 0 || nbits == 0 {
        return Ok((out, up));
    }
    let nwords = words.len();
    let mut pop = gpu.alloc::<u32>(nwords)?;
    let mut pre = gpu.alloc::<u32>(nwords)?;
    let nw32 = nwords as u32;
    // SAFETY: signatures as in scalars.cu; pop/pre hold nwords u32, out holds total Fr.
    unsafe {
        s.launch_builder(gpu.func("density_popcount")?)
            .arg(words)
            .arg(&nw32)
            .arg(&mut pop)
            .launch(cfg(blocks(nwords, 256), 256, 0))
    }
    .map_err(|e| gpu.err("density_popcount", e))?;
    msm::scan_u32(gpu, &pop, &mut pre, nwords)?;
    let nbits32 = nbits as u32;
    let mut tail = out.slice_mut(prefix.len() * 32..);
    // SAFETY: density_gather(const Fr* src, const u64* words, const u32* prefix, u32 nbits,
    // Fr* out) as in scalars.cu, arguments in that order; its threads read bits below nbits
    // of the nwords density words and src (aux, n_aux Fr) at those set bits, and write
    // each one's Fr at its rank from pre (the scan of pop) into tail, which holds the
    // `count` set bits' Fr. pre and pop live to the end of this function, after the launch
    // that reads them is queued on s.
    unsafe {
        s.launch_builder(gpu.func("density_gather")?)
            .arg(aux)
            .arg(words)
            .arg(&pre)
            .arg(&nbits32)
            .arg(&mut tail)
            .launch(cfg(blocks(nbits, 256), 256, 0))
    }
    .map_err(|e| gpu.err("density_gather", e))?;
    Ok((out, up))
}
