//! [`CudaBackend`]: Groth16 proving on one GPU, bellperson-compatible (same proof bytes as
//! the CPU backend for the same r and s).
//!
//! Per proof: the partition's vectors are staged (before the kernel lock on the copy
//! stream, from page-locked host memory, when the plan allows; see stage.rs); the
//! parameters are resident in device memory (uploaded once) or streamed per MSM batch;
//! under the device's region lock, [`Region`] runs the Groth16 steps (H by NTTs and its
//! MSM, the L, A and B MSMs, one host wait, the assembly). This file keeps what surrounds
//! the region: the device-memory budget and its reservations, resident parameters,
//! staging, and the [`Backend`] trait. Every phase is timed with device events and every
//! transfer counted ([`ProveReport`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, CudaSlice};

use filprove_groth16::{
    check_shapes, Backend, Direction, KeyShape, Proof, ProofInput, ProveError, ProveReport,
    ProvingAssignment, Srs, Staged,
};

use crate::gpu::Gpu;
use crate::ledger::{Ledger, Reservation};
use crate::options::{CudaOptions, RegisterAt};
use crate::pinned::Bounce;
use crate::plan::{self, PlanInput, Shape, VramPlan};
use crate::region::{self, MsmSettings, PhaseClock, Region};
use crate::resident::{srs_key, DeviceSrs, Lens};
use crate::stage::{self, HostPath, StagedPartition};

/// Device memory left to the driver, the allocator's pools and fragmentation.
const MARGIN_BYTES: u64 = 2 << 30;

/// How long a partition waits for its staging room between releases of finished
/// partitions, and in all (regions take seconds; past the limit the proof fails with
/// `DeviceOutOfMemory`).
const SLOT_WAIT_SLICE: Duration = Duration::from_millis(10);
const SLOT_WAIT_LIMIT: Duration = Duration::from_secs(300);

/// The GPU prover on one device.
pub struct CudaBackend {
    gpu: Gpu,
    opts: CudaOptions,
    memory: Ledger,
    // One kernel region at a time per device.
    region: Mutex<()>,
    stage_bounce: Mutex<Option<Bounce>>,
    region_bounce: Mutex<Option<Bounce>>,
    // Partitions whose proof completed, freed by `release_finished` outside the region.
    finished: Mutex<Vec<(Box<StagedPartition>, Reservation)>>,
    // a and b of partitions whose H MSM is queued, freed by `release_finished` once it
    // has run (a waiting partition's staging polls for them).
    spent: Mutex<Vec<Spent>>,
}

/// A partition's a and b once nothing queued after the H MSM reads them, and their
/// reservation: freed when `done` (recorded after that MSM) has completed.
struct Spent {
    done: CudaEvent,
    _ab: [CudaSlice<u8>; 2],
    _hold: Reservation,
}

impl Drop for Spent {
    fn drop(&mut self) {
        // At once from `release_finished`; otherwise (an error, the backend dropped) the
        // kernels reading the buffers must finish before they are freed.
        let _ = self.done.synchronize();
    }
}

/// What [`CudaBackend::stage`] hands to [`CudaBackend::prove_staged`].
enum StagedState {
    Ready(Box<StagedPartition>, Reservation),
    /// Uploaded inside the region (pre-staging off, or no memory for a slot).
    Deferred,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CudaBackend {
    /// Opens GPU `ordinal` with the default options; fails with
    /// [`ProveError::Unavailable`] (and the reason) when the build has no kernels, there is
    /// no driver or no such device.
    pub fn new(ordinal: usize) -> Result<Self, ProveError> {
        Self::with_options(ordinal, CudaOptions::default())
    }

    /// Opens GPU `ordinal` with explicit switches.
    pub fn with_options(ordinal: usize, opts: CudaOptions) -> Result<Self, ProveError> {
        let gpu = Gpu::open(ordinal)?.with_msm_tuning(opts.msm);
        gpu.set_probing(opts.step_timings);
        gpu.release_pooled();
        let (free, _) = gpu.mem_info()?;
        let auto = (free as u64).saturating_sub(MARGIN_BYTES + free as u64 / 50);
        let budget = opts.vram_budget.map_or(auto, |b| b.min(auto));
        log::info!(
            "{}: device-memory budget {:.1} GiB of {:.1} GiB free; {}",
            gpu.name(),
            budget as f64 / (1u64 << 30) as f64,
            free as f64 / (1u64 << 30) as f64,
            opts.describe()
        );
        Ok(Self {
            gpu,
            opts,
            memory: Ledger::new(budget),
            region: Mutex::new(()),
            stage_bounce: Mutex::new(None),
            region_bounce: Mutex::new(None),
            finished: Mutex::new(Vec::new()),
            spent: Mutex::new(Vec::new()),
        })
    }

    /// The device handle (for tests and benchmarks).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The switches in force.
    pub fn options(&self) -> &CudaOptions {
        &self.opts
    }

    /// Device bytes this backend plans with.
    pub fn budget(&self) -> u64 {
        self.memory.budget()
    }

    /// The memory plan of a partition of `shape` on this device.
    pub fn plan(&self, shape: Shape) -> Result<VramPlan, ProveError> {
        plan::plan(
            shape,
            PlanInput {
                budget: self.budget(),
                staging_slots: if self.opts.prestage {
                    self.opts.staging_slots
                } else {
                    0
                },
                allow_resident: self.opts.resident_srs,
                allow_folded_h: self.opts.fold_h,
                max_batch: self.opts.max_batch,
            },
        )
        .map_err(|why| ProveError::DeviceOutOfMemory {
            device: format!("{} ({why})", self.gpu.name()),
            needed: shape.staged_bytes(),
            free: self.budget(),
        })
    }

    /// Makes a parameter set that exists only on the device (a benchmark workload)
    /// resident under the key of `host` (whose vk identifies it; its sections may be
    /// empty). It is never evicted.
    pub fn install_device_srs(&self, host: &Srs, mut dev: DeviceSrs) -> Result<(), ProveError> {
        dev.key = srs_key(host);
        dev.device_only = true;
        let l = dev.lens;
        let shape = Shape::from_srs_lengths(l.h as u64, l.l as u64, l.a as u64, l.b as u64);
        if self.plan(shape)?.folded_h {
            dev.fold_h(&self.gpu)?;
        }
        let needed = dev.bytes();
        self.memory
            .insert_resident(dev)
            .map_err(|free| ProveError::DeviceOutOfMemory {
                device: self.gpu.name().to_string(),
                needed,
                free,
            })
    }

    /// The parameter set's key, lengths and device copy (when resident). A set without
    /// its host sections must be held here ([`Backend::hold_parameters`]).
    fn lookup(&self, srs: &Srs) -> Result<(u64, Lens, Option<Arc<DeviceSrs>>), ProveError> {
        let key = srs_key(srs);
        let dev = self.memory.state().resident.get(key);
        if dev.is_none() && !srs.has_sections() {
            return Err(ProveError::ParametersOffHost {
                backend: self.gpu.name().to_string(),
            });
        }
        let lens = dev.as_ref().map_or_else(|| Lens::of(srs), |d| d.lens);
        Ok((key, lens, dev))
    }

    /// Device bytes the parameter set `key` will still take: its size when the plan keeps
    /// parameters resident and they are not yet.
    fn srs_to_come(&self, key: u64, plan: &VramPlan) -> u64 {
        if plan.resident && self.memory.state().resident.get(key).is_none() {
            plan.srs_bytes
        } else {
            0
        }
    }

    /// The resident copy of `srs`, uploading it when the plan keeps parameters resident
    /// and they fit; None when they are streamed.
    fn resident_for(
        &self,
        srs: &Srs,
        key: u64,
        plan: &VramPlan,
        report: &mut ProveReport,
    ) -> Result<Option<Arc<DeviceSrs>>, ProveError> {
        if let Some(d) = self.memory.state().resident.get(key) {
            return Ok(Some(d));
        }
        if !srs.has_sections() {
            // Held, then evicted since the lookup.
            return Err(ProveError::ParametersOffHost {
                backend: self.gpu.name().to_string(),
            });
        }
        if !plan.resident {
            return Ok(None);
        }
        let Some(hold) = self.memory.reserve(plan.srs_bytes, true) else {
            report
                .fallbacks
                .push("parameters streamed: device memory is reserved by other work".into());
            return Ok(None);
        };
        let t = Instant::now();
        let mut guard = lock(&self.region_bounce);
        let bounce = region::bounce(&self.gpu, &mut guard)?;
        let dev = DeviceSrs::upload(&self.gpu, srs, bounce, plan.folded_h)?;
        report.add_phase("srs_upload", t.elapsed());
        report.add_transfer("srs_upload", Direction::HostToDevice, dev.bytes(), true);
        report.host_syncs += 1;
        log::info!(
            "{}: parameters resident ({:.2} GiB uploaded in {:.2} s)",
            self.gpu.name(),
            dev.bytes() as f64 / (1u64 << 30) as f64,
            dev.upload_time.as_secs_f64()
        );
        let dev = Arc::new(dev);
        // The reservation becomes the resident entry (released and inserted together).
        self.memory.make_resident(hold, dev.clone());
        Ok(Some(dev))
    }

    /// The partition's shape, once `asg` is checked against the parameters (the CPU
    /// backend's check: the same request gets the same error on either).
    fn shape_of(srs: &Srs, lens: &Lens, asg: &ProvingAssignment) -> Result<Shape, ProveError> {
        let key = KeyShape {
            h: lens.h,
            l: lens.l,
            a: lens.a,
            b_g1: lens.b,
            b_g2: lens.b,
        };
        let lg = check_shapes(&srs.vk, &key, asg)?;
        Ok(Shape {
            lg,
            n_aux: lens.l as u64,
            a_len: lens.a as u64,
            b_len: lens.b as u64,
        })
    }

    /// Pre-stages `asg` on the copy stream when the plan has a slot for it.
    fn stage_partition(
        &self,
        srs: &Srs,
        asg: &ProvingAssignment,
    ) -> Result<(StagedState, ProveReport), ProveError> {
        // Free what earlier proofs left for after their region (also when the caller
        // never calls release_finished): staging may need their memory.
        self.release_finished();
        let mut report = ProveReport::default();
        if !self.opts.prestage {
            return Ok((StagedState::Deferred, report));
        }
        let (key, lens, _) = self.lookup(srs)?;
        let shape = Self::shape_of(srs, &lens, asg)?;
        let plan = self.plan(shape)?;
        if plan.staging_slots == 0 {
            report
                .fallbacks
                .push("uploads inside the kernel region: no device memory to pre-stage".into());
            return Ok((StagedState::Deferred, report));
        }
        // Room for this partition, and for the parameters when they are still to come;
        // after it one region's working memory must still fit (the one that runs now,
        // already reserved, or the next), and every partition waiting for its room. Else
        // it waits here, before the caller's kernel lock, holding nothing: the other
        // worker's partition frees its a and b once its region's H MSM has run, the rest
        // once the region has ended.
        let (hold, waited) = self
            .memory
            .reserve_slot(
                plan.staged_bytes,
                plan.working_extra(),
                SLOT_WAIT_SLICE,
                SLOT_WAIT_LIMIT,
                || {
                    // The other worker's proved partition may be waiting for its release;
                    // the parameters may have become resident meanwhile.
                    self.release_finished();
                    self.srs_to_come(key, &plan)
                },
            )
            .ok_or_else(|| self.oom(plan.staged_bytes))?;
        if !waited.is_zero() {
            report.add_phase("slot_wait", waited);
        }
        self.gpu.bind()?;
        let mut guard = lock(&self.stage_bounce);
        let bounce = match self.opts.host_path {
            HostPath::Pageable => None,
            _ => Some(region::bounce(&self.gpu, &mut guard)?),
        };
        // Registering at staging delays the partition's own proof (~0.45 s per GB of
        // fresh memory) and slows a region running meanwhile: only when told to.
        let at = self.opts.register_at;
        let mut register = || at == RegisterAt::Staging;
        let mut part = stage::stage(
            &self.gpu,
            self.gpu.copy_stream(),
            asg,
            shape.lg,
            self.opts.host_path,
            bounce,
            "stage",
            &mut register,
        )?;
        report.merge(std::mem::take(&mut part.report));
        // The kernel lock is for kernels: the staging worker waits here, outside it, until
        // its copies have landed (a region that took the lock first would only wait for
        // them on the device, keeping the other worker out meanwhile).
        if let Some((_, end)) = &part.copy_events {
            let t = Instant::now();
            end.synchronize()
                .map_err(|e| self.gpu.err("wait for the staged copies", e))?;
            report.add_phase("stage_copy_wait", t.elapsed());
        }
        Ok((StagedState::Ready(Box::new(part), hold), report))
    }

    /// The kernel region of one proof: the device's lock, the plan, the parameters, the
    /// partition (staged, or uploaded here) and the working memory, then [`Region::prove`].
    fn prove_region(
        &self,
        srs: &Srs,
        input: &ProofInput<'_>,
        staged: Option<(Box<StagedPartition>, Reservation)>,
        report: &mut ProveReport,
    ) -> Result<Proof, ProveError> {
        let asg = input.assignment;
        let (key, lens, _) = self.lookup(srs)?;
        let shape = Self::shape_of(srs, &lens, asg)?;
        let plan = self.plan(shape)?;
        let requested = Instant::now();
        let region_lock = lock(&self.region);
        let clock = PhaseClock::locked(&self.gpu, requested);
        self.gpu.bind()?;
        report.peak_device_bytes = report.peak_device_bytes.max(plan.peak());
        for n in &plan.notes {
            if !report.fallbacks.contains(n) {
                report.fallbacks.push(n.clone());
            }
        }
        let dev = self.resident_for(srs, key, &plan, report)?;
        let (part, mut part_hold) = match staged {
            Some(staged) => staged,
            None => self.upload_in_region(asg, shape, plan.staged_bytes, report)?,
        };
        // a and b's bytes are released once the H MSM has run, but for those the later
        // phases take over as working memory (held with the aux witness to the end).
        let ab_hold = part_hold.split_off(plan.released_after_h());
        let work_hold = self
            .memory
            .reserve_working(plan.working_extra())
            .ok_or_else(|| self.oom(plan.working_extra()))?;
        let region = Region {
            gpu: &self.gpu,
            srs,
            input: *input,
            lens,
            lg: shape.lg,
            dev,
            part,
            bounce: &self.region_bounce,
            msm: MsmSettings {
                batch: plan.batch as usize,
                sync_per_batch: self.opts.sync_per_batch,
            },
            register_behind_h: self.register_behind_h(),
            lock: region_lock,
        };
        region.prove(
            clock,
            report,
            |ab, done| {
                lock(&self.spent).push(Spent {
                    done,
                    _ab: ab,
                    _hold: ab_hold,
                })
            },
            |part| self.retire(part, part_hold, work_hold),
        )
    }

    /// Uploads the partition inside the region (without pre-staging, or without memory
    /// for a staging slot), on the compute stream. Nothing else holds partition memory
    /// then but partitions whose region has ended, freed first.
    fn upload_in_region(
        &self,
        asg: &ProvingAssignment,
        shape: Shape,
        need: u64,
        report: &mut ProveReport,
    ) -> Result<(Box<StagedPartition>, Reservation), ProveError> {
        self.release_finished();
        let room = self
            .memory
            .reserve(need, true)
            .ok_or_else(|| self.oom(need))?;
        let path = if self.opts.prestage {
            self.opts.host_path
        } else {
            HostPath::Pageable
        };
        let mut guard = lock(&self.region_bounce);
        let bounce = match path {
            HostPath::Pageable => None,
            _ => Some(region::bounce(&self.gpu, &mut guard)?),
        };
        // Page-locking here would hold the region for ~0.45 s per fresh GB (16.7 GB of a
        // 32 GiB partition: 6.7 s measured on the H200); the bounce buffers send it at copy
        // speed, and a later region registers it in pieces while its kernels run
        // (`pin_unpinned`).
        let gpu = &self.gpu;
        let mut p = stage::stage(
            gpu,
            gpu.stream(),
            asg,
            shape.lg,
            path,
            bounce,
            "upload",
            &mut || false,
        )?;
        if !self.opts.prestage {
            report
                .fallbacks
                .push("uploads inside the kernel region: pre-staging switched off".into());
        }
        report.merge(std::mem::take(&mut p.report));
        Ok((Box::new(p), room))
    }

    /// Whether a region page-locks, behind its H MSM, what staging left unregistered (and
    /// within which budget; None: all of it).
    fn register_behind_h(&self) -> Option<Option<Duration>> {
        let at = self.opts.register_at;
        let later = at != RegisterAt::Staging
            && self.opts.prestage
            && self.opts.host_path == HostPath::Register;
        later.then(|| {
            (at == RegisterAt::Auto).then(|| Duration::from_millis(self.opts.register_budget_ms))
        })
    }

    /// A partition whose proof completed: freeing its buffers waits for
    /// `release_finished`, after the caller's kernel lock; it still counts against the
    /// budget until then. (The host registrations stay with the assignment,
    /// filprove_groth16::recycle.) The region's working memory is released now.
    fn retire(&self, part: Box<StagedPartition>, part_hold: Reservation, work_hold: Reservation) {
        {
            let mut finished = lock(&self.finished);
            // Bounded for callers that never release: at most staging_slots + 1 wait here
            // (the engine releases after every region, so one at most).
            while finished.len() > self.opts.staging_slots as usize {
                finished.remove(0);
            }
            finished.push((part, part_hold));
        }
        drop(work_hold);
    }

    fn oom(&self, needed: u64) -> ProveError {
        ProveError::DeviceOutOfMemory {
            device: self.gpu.name().to_string(),
            needed,
            free: self.memory.free(),
        }
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        self.gpu.name().to_string()
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        inputs
            .iter()
            .map(|i| {
                let proved = self.prove_staged(srs, *i, None).map(|(p, _)| p);
                self.release_finished();
                proved
            })
            .collect()
    }

    fn release_finished(&self) {
        let spent: Vec<Spent> = {
            let mut all = lock(&self.spent);
            let (done, running) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|s| s.done.is_complete());
            *all = running;
            done
        };
        drop(spent);
        let parts = std::mem::take(&mut *lock(&self.finished));
        if parts.is_empty() {
            return;
        }
        let t = Instant::now();
        let n = parts.len();
        drop(parts);
        log::debug!(
            "{}: released {n} finished partition(s) in {:.1} ms",
            self.gpu.name(),
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    fn stage<'a>(
        &self,
        srs: &Srs,
        assignment: &'a ProvingAssignment,
    ) -> Result<Option<Staged<'a>>, ProveError> {
        let (state, report) = self.stage_partition(srs, assignment)?;
        Ok(Some(Staged::new(assignment, Box::new(state), report)))
    }

    fn prove_staged(
        &self,
        srs: &Srs,
        input: ProofInput<'_>,
        staged: Option<Staged<'_>>,
    ) -> Result<(Proof, ProveReport), ProveError> {
        let (state, mut report) = match staged {
            Some(s) => {
                let (inner, report) = s.into_parts();
                let state = inner
                    .downcast::<StagedState>()
                    .map_err(|_| ProveError::Invalid("staged by another backend".into()))?;
                (*state, report)
            }
            None => (StagedState::Deferred, ProveReport::default()),
        };
        let staged = match state {
            StagedState::Ready(p, hold) => Some((p, hold)),
            StagedState::Deferred => None,
        };
        let proof = self.prove_region(srs, &input, staged, &mut report)?;
        Ok((proof, report))
    }

    fn load_parameters(&self, srs: &Srs) -> Result<bool, ProveError> {
        // As a region would: under the region lock (the upload uses the region's bounce
        // buffers and the compute stream), planned for the set's own shape.
        let _region = lock(&self.region);
        self.gpu.bind()?;
        let (key, lens, _) = self.lookup(srs)?;
        let shape =
            Shape::from_srs_lengths(lens.h as u64, lens.l as u64, lens.a as u64, lens.b as u64);
        let plan = self.plan(shape)?;
        let mut report = ProveReport::default();
        Ok(self.resident_for(srs, key, &plan, &mut report)?.is_some())
    }

    fn hold_parameters(&self, full: &Srs, vk_only: &Srs) -> bool {
        let held = self
            .memory
            .state()
            .resident
            .hold(srs_key(full), srs_key(vk_only));
        if held {
            log::info!(
                "{}: parameters held in device memory for good (the host may release them)",
                self.gpu.name()
            );
        }
        held
    }

    fn evict(&self, srs: &Srs) {
        let key = srs_key(srs);
        if let Some(bytes) = self.memory.state().resident.remove(key) {
            log::info!(
                "{}: parameters evicted from device memory ({:.2} GiB)",
                self.gpu.name(),
                bytes as f64 / (1u64 << 30) as f64
            );
        }
    }

    fn device_memory(&self) -> Option<(u64, u64)> {
        self.gpu
            .mem_info()
            .ok()
            .map(|(free, total)| (free as u64, total as u64))
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<CudaBackend>();
}
