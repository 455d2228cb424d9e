//! [`CudaBackend`]: Groth16 proving on one GPU, bellperson-compatible (same proof bytes as
//! the CPU backend for the same r and s).
//!
//! Per proof: the partition's vectors are staged (before the kernel lock on the copy
//! stream, from page-locked host memory, when the plan allows; see stage.rs); the
//! parameters are resident in device memory (uploaded once) or streamed per MSM batch;
//! inside the kernel region H = (a*b - c)/Z is computed by NTTs in place and fed to the H
//! MSM, then L, A and B (G1, G2) run as split MSMs over scalars gathered on the device by
//! the density bitmaps. The host waits once, for the five results. Every phase is timed
//! with device events and every transfer counted ([`ProveReport`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, CudaSlice, PushKernelArg};
use filprove_groth16::{
    Backend, Direction, Fr, G1Projective, G2Projective, Proof, ProofInput, ProveError, ProveReport,
    ProvingAssignment, Srs, Staged,
};
use group::Curve as _;

use crate::field::bytes_of;
use crate::gpu::{blocks, cfg, Gpu};
use crate::host_marks::HostMarks;
use crate::msm::{self, msm_batched, Bases, MsmRun, G1, G2};
use crate::ntt::{self, NttPlan};
use crate::options::{CudaOptions, RegisterAt};
use crate::pinned::Bounce;
use crate::plan::{self, PlanInput, Shape, VramPlan};
use crate::resident::{srs_key, DeviceSrs, Lens, ResidentSet};
use crate::stage::{self, HostPath, StagedPartition};

/// Bytes per pinned bounce buffer (two per user).
const BOUNCE_CHUNK: usize = 64 << 20;
/// Device memory left to the driver, the allocator's pools and fragmentation.
const MARGIN_BYTES: u64 = 2 << 30;

/// The GPU prover on one device.
pub struct CudaBackend {
    gpu: Gpu,
    opts: CudaOptions,
    budget: u64,
    // One kernel region at a time per device.
    region: Mutex<()>,
    state: Arc<Mutex<State>>,
    stage_bounce: Mutex<Option<Bounce>>,
    region_bounce: Mutex<Option<Bounce>>,
    // Partitions whose proof completed, freed by `release_finished` outside the region.
    finished: Mutex<Vec<(Box<StagedPartition>, Reservation)>>,
}

/// Device memory accounting: resident parameters plus reservations.
#[derive(Default)]
struct State {
    resident: ResidentSet,
    /// Every reservation, the running region's working memory included.
    reserved: u64,
    /// Of `reserved`, the working memory of the region that runs (one at a time).
    working: u64,
}

/// Bytes reserved against the budget until dropped.
struct Reservation {
    state: Arc<Mutex<State>>,
    bytes: u64,
    /// A region's working memory (counted in `State::working` too).
    working: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.reserved = st.reserved.saturating_sub(self.bytes);
        if self.working {
            st.working = st.working.saturating_sub(self.bytes);
        }
    }
}

/// What [`CudaBackend::stage`] hands to [`CudaBackend::prove_staged`].
enum StagedState {
    Ready(Box<StagedPartition>, Reservation),
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
            budget,
            region: Mutex::new(()),
            state: Arc::new(Mutex::new(State::default())),
            stage_bounce: Mutex::new(None),
            region_bounce: Mutex::new(None),
            finished: Mutex::new(Vec::new()),
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
        self.budget
    }

    /// The memory plan of a partition of `shape` on this device.
    pub fn plan(&self, shape: Shape) -> Result<VramPlan, ProveError> {
        plan::plan(
            shape,
            PlanInput {
                budget: self.budget,
                staging_slots: if self.opts.prestage {
                    self.opts.staging_slots
                } else {
                    0
                },
                allow_resident: self.opts.resident_srs,
                max_batch: self.opts.max_batch,
            },
        )
        .map_err(|why| ProveError::DeviceOutOfMemory {
            device: format!("{} ({why})", self.gpu.name()),
            needed: shape.staged_bytes(),
            free: self.budget,
        })
    }

    /// Makes a parameter set that exists only on the device (a benchmark workload)
    /// resident under the key of `host` (whose vk identifies it; its sections may be
    /// empty). It is never evicted.
    pub fn install_device_srs(&self, host: &Srs, mut dev: DeviceSrs) -> Result<(), ProveError> {
        dev.key = srs_key(host);
        dev.device_only = true;
        let mut st = lock(&self.state);
        if st.resident.bytes() + st.reserved + dev.bytes() > self.budget {
            return Err(ProveError::DeviceOutOfMemory {
                device: self.gpu.name().to_string(),
                needed: dev.bytes(),
                free: self
                    .budget
                    .saturating_sub(st.resident.bytes() + st.reserved),
            });
        }
        st.resident.insert(Arc::new(dev));
        Ok(())
    }

    /// The parameter set's key, lengths and device copy (when resident).
    fn lookup(&self, srs: &Srs) -> (u64, Lens, Option<Arc<DeviceSrs>>) {
        let key = srs_key(srs);
        let dev = lock(&self.state).resident.get(key);
        let lens = dev.as_ref().map_or_else(|| Lens::of(srs), |d| d.lens);
        (key, lens, dev)
    }

    /// Reserves `bytes`, evicting idle resident parameters if needed.
    fn reserve(&self, bytes: u64, evict: bool) -> Option<Reservation> {
        self.reserve_as(bytes, evict, false)
    }

    /// [`Self::reserve`], for a region's working memory when `working`.
    fn reserve_as(&self, bytes: u64, evict: bool, working: bool) -> Option<Reservation> {
        let mut st = lock(&self.state);
        while st.resident.bytes() + st.reserved + bytes > self.budget {
            if !evict || st.resident.evict_one().is_none() {
                return None;
            }
        }
        st.reserved += bytes;
        if working {
            st.working += bytes;
        }
        Some(Reservation {
            state: self.state.clone(),
            bytes,
            working,
        })
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
        if let Some(d) = lock(&self.state).resident.get(key) {
            return Ok(Some(d));
        }
        if !plan.resident {
            return Ok(None);
        }
        let Some(hold) = self.reserve(plan.srs_bytes, true) else {
            report
                .fallbacks
                .push("parameters streamed: device memory is reserved by other work".into());
            return Ok(None);
        };
        let t = Instant::now();
        let mut guard = lock(&self.region_bounce);
        let bounce = self.bounce(&mut guard)?;
        let dev = DeviceSrs::upload(&self.gpu, srs, bounce)?;
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
        let mut hold = hold;
        let mut st = lock(&self.state);
        st.reserved = st.reserved.saturating_sub(hold.bytes);
        hold.bytes = 0;
        st.resident.insert(dev.clone());
        drop(st);
        drop(hold);
        Ok(Some(dev))
    }

    fn bounce<'a>(&self, slot: &'a mut Option<Bounce>) -> Result<&'a mut Bounce, ProveError> {
        if slot.is_none() {
            *slot = Some(Bounce::new(&self.gpu, BOUNCE_CHUNK)?);
        }
        slot.as_mut()
            .ok_or_else(|| ProveError::Invalid("bounce buffers".into()))
    }

    fn shape_of(lens: &Lens, asg: &ProvingAssignment) -> Result<Shape, ProveError> {
        let lg = check_shapes(lens, asg)?;
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
        let (_, lens, dev) = self.lookup(srs);
        let shape = Self::shape_of(&lens, asg)?;
        let plan = self.plan(shape)?;
        if plan.staging_slots == 0 {
            report
                .fallbacks
                .push("uploads inside the kernel region: no device memory to pre-stage".into());
            return Ok((StagedState::Deferred, report));
        }
        // Room for this partition, and for the parameters when they are still to come.
        let srs_to_come = if dev.is_none() && plan.resident {
            plan.srs_bytes
        } else {
            0
        };
        let need = plan.staged_bytes;
        {
            // After this staging, one region's working memory must still fit: the one
            // that runs now (already reserved) or the next.
            let st = lock(&self.state);
            let others = st.reserved - st.working;
            let working = st.working.max(plan.working_extra());
            if st.resident.bytes() + others + need + srs_to_come + working > self.budget {
                report
                    .fallbacks
                    .push("uploads inside the kernel region: the staging slots are in use".into());
                return Ok((StagedState::Deferred, report));
            }
        }
        let Some(hold) = self.reserve(need, false) else {
            report
                .fallbacks
                .push("uploads inside the kernel region: device memory reserved".into());
            return Ok((StagedState::Deferred, report));
        };
        self.gpu.bind()?;
        let mut guard = lock(&self.stage_bounce);
        let bounce = match self.opts.host_path {
            HostPath::Pageable => None,
            _ => Some(self.bounce(&mut guard)?),
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

    /// The kernel region of one proof.
    fn prove_region(
        &self,
        srs: &Srs,
        input: &ProofInput<'_>,
        staged: Option<(Box<StagedPartition>, Reservation)>,
        report: &mut ProveReport,
    ) -> Result<Proof, ProveError> {
        let t_lock = Instant::now();
        let region = lock(&self.region);
        let t_region = Instant::now();
        let mut hm = HostMarks::new(t_lock);
        hm.mark("region_lock");
        let gpu = &self.gpu;
        gpu.bind()?;
        let asg = input.assignment;
        let (key, lens, _) = self.lookup(srs);
        let shape = Self::shape_of(&lens, asg)?;
        let plan = self.plan(shape)?;
        report.peak_device_bytes = report.peak_device_bytes.max(plan.peak());
        for n in &plan.notes {
            if !report.fallbacks.contains(n) {
                report.fallbacks.push(n.clone());
            }
        }
        let dev = self.resident_for(srs, key, &plan, report)?;
        let s = gpu.stream();

        // The partition's buffers: pre-staged (wait on the copy's event) or uploaded here.
        let (mut part, part_hold) = match staged {
            Some((p, hold)) => (p, hold),
            None => {
                // Uploads inside the region (the slow path anyway): earlier partitions'
                // memory may be needed now.
                self.release_finished();
                let hold = self
                    .reserve(plan.staged_bytes, true)
                    .ok_or_else(|| self.oom(plan.staged_bytes))?;
                let path = if self.opts.prestage {
                    self.opts.host_path
                } else {
                    HostPath::Pageable
                };
                let mut guard = lock(&self.region_bounce);
                let bounce = match path {
                    HostPath::Pageable => None,
                    _ => Some(self.bounce(&mut guard)?),
                };
                // Page-locking here would hold the region for ~0.45 s per fresh GB (16.7
                // GB of a 32 GiB partition: 6.7 s measured on the H200); the bounce
                // buffers send it at copy speed, and a later region registers it in
                // pieces while its kernels run (`pin_unpinned`).
                let mut p =
                    stage::stage(gpu, s, asg, shape.lg, path, bounce, "upload", &mut || false)?;
                if !self.opts.prestage {
                    report
                        .fallbacks
                        .push("uploads inside the kernel region: pre-staging switched off".into());
                }
                report.merge(std::mem::take(&mut p.report));
                (Box::new(p), hold)
            }
        };
        let work_hold = self
            .reserve_as(plan.working_extra(), true, true)
            .ok_or_else(|| self.oom(plan.working_extra()))?;

        let mut marks: Vec<(&'static str, CudaEvent)> = Vec::new();
        if gpu.probing() {
            gpu.take_probes()?; // drop steps of earlier work
            gpu.probe("region_start")?;
        }
        // Host time in the region before the first kernel is queued (plan, parameters,
        // working memory), not covered by the device-event phases below.
        report.add_phase("region_setup", t_region.elapsed());
        // Whether other work held the compute stream (a driver query: only when logged).
        if log::log_enabled!(log::Level::Debug) {
            hm.mark(if gpu.compute_idle() {
                "setup_idle"
            } else {
                "setup_busy"
            });
        }
        let wait0 = gpu.mark()?;
        hm.mark("first_mark");
        if let Some((_, ready)) = &part.copy_events {
            s.wait(ready).map_err(|e| gpu.err("wait for staging", e))?;
        }
        // A phase ends: a device mark for its time, a host mark for when it was queued.
        let mut end_phase = |name: &'static str| -> Result<(), ProveError> {
            marks.push((name, gpu.mark()?));
            hm.mark(name);
            Ok(())
        };
        end_phase("stage_wait")?;

        // H on the device, in place in the staged a (b, c become scratch).
        let ntt_plan = NttPlan::new(gpu, shape.lg)?;
        {
            let [a, b, c] = &mut part.abc;
            ntt::compute_h_in_place(gpu, &ntt_plan, [a, b, c])?;
        }
        drop(ntt_plan);
        end_phase("ntt_h")?;

        let m = 1usize << shape.lg;
        let mut bounce_guard = lock(&self.region_bounce);
        let streamed = dev.is_none();
        let mut bounce = if streamed {
            Some(self.bounce(&mut bounce_guard)?)
        } else {
            None
        };
        let batch = plan.batch as usize;
        let sync = self.opts.sync_per_batch;
        macro_rules! run {
            ($phase:expr) => {
                MsmRun {
                    batch,
                    sync_per_batch: sync,
                    bounce: bounce.as_deref_mut(),
                    report: &mut *report,
                    phase: $phase,
                }
            };
        }
        fn g1<'x>(d: Option<&'x CudaSlice<u8>>, host: &'x [blstrs::G1Affine]) -> Bases<'x> {
            match d {
                Some(d) => Bases::Device(d),
                None => Bases::Host(bytes_of(host)),
            }
        }
        let h_host = &srs.h[..srs.h.len().min(m - 1)];
        let h = msm_batched::<G1>(
            gpu,
            g1(dev.as_ref().map(|d| &d.h), h_host),
            &part.abc[0],
            m - 1,
            false,
            &mut run!("msm_h"),
        )?;
        end_phase("msm_h")?;
        // The H MSM (the region's longest work) is queued and the host has nothing to do
        // until L's scalar counts: the registration staging left for later goes here,
        // piece by piece until the compute stream runs dry, where it delays no kernel
        // (later partitions refill the same vectors and copy from page-locked memory).
        let at = self.opts.register_at;
        if at != RegisterAt::Staging
            && self.opts.prestage
            && self.opts.host_path == HostPath::Register
        {
            let budget = (at == RegisterAt::Auto)
                .then(|| Duration::from_millis(self.opts.register_budget_ms));
            stage::pin_unpinned(gpu, asg, budget, report);
        }
        let n_aux = asg.aux_assignment.len();
        let l = msm_batched::<G1>(
            gpu,
            g1(dev.as_ref().map(|d| &d.l), &srs.l),
            &part.aux,
            lens.l,
            true,
            &mut run!("msm_l"),
        )?;
        end_phase("msm_l")?;

        let inputs = &asg.input_assignment;
        let (a_scalars, up) = gather(
            gpu,
            &part.aux,
            n_aux,
            &part.a_words,
            asg.a_aux_density.count_ones(),
            inputs,
        )?;
        report.add_transfer("msm_a", Direction::HostToDevice, up, false);
        let a = msm_batched::<G1>(
            gpu,
            g1(dev.as_ref().map(|d| &d.a), &srs.a),
            &a_scalars,
            lens.a,
            true,
            &mut run!("msm_a"),
        )?;
        drop(a_scalars);
        end_phase("msm_a")?;

        let b_inputs: Vec<Fr> = asg
            .b_input_density
            .iter_ones()
            .filter_map(|i| inputs.get(i).copied())
            .collect();
        let (b_scalars, up) = gather(
            gpu,
            &part.aux,
            n_aux,
            &part.b_words,
            asg.b_aux_density.count_ones(),
            &b_inputs,
        )?;
        report.add_transfer("msm_b_g1", Direction::HostToDevice, up, false);
        let b1 = msm_batched::<G1>(
            gpu,
            g1(dev.as_ref().map(|d| &d.b_g1), &srs.b_g1),
            &b_scalars,
            lens.b,
            true,
            &mut run!("msm_b_g1"),
        )?;
        end_phase("msm_b_g1")?;
        let b2_bases = match dev.as_ref() {
            Some(d) => Bases::Device(&d.b_g2),
            None => Bases::Host(bytes_of(&srs.b_g2)),
        };
        let b2 = msm_batched::<G2>(
            gpu,
            b2_bases,
            &b_scalars,
            lens.b,
            true,
            &mut run!("msm_b_g2"),
        )?;
        end_phase("msm_b_g2")?;
        drop(bounce_guard);

        // The one host synchronisation of the proof, on an event: a pageable download that
        // waited for the kernels instead would hold the driver's staging path, and the
        // other worker's staging copies would wait behind it (measured at 2 KiB: staging
        // 290 ms beside a region instead of 25 ms).
        let t_dl = Instant::now();
        gpu.record(s)?
            .synchronize()
            .map_err(|e| gpu.err("waiting for the proof's kernels", e))?;
        hm.mark("synced");
        let (h_bytes, l_bytes, a_bytes) =
            (h.download_bytes(), l.download_bytes(), a.download_bytes());
        let (b1_bytes, b2_bytes) = (b1.download_bytes(), b2.download_bytes());
        let h: G1Projective = h.resolve(gpu)?;
        let l: G1Projective = l.resolve(gpu)?;
        let a: G1Projective = a.resolve(gpu)?;
        let b1: G1Projective = b1.resolve(gpu)?;
        let b2: G2Projective = b2.resolve(gpu)?;
        report.host_syncs += 1;
        let pts = h_bytes + l_bytes + a_bytes + b1_bytes + b2_bytes;
        report.add_transfer("result", Direction::DeviceToHost, pts as u64, false);

        if gpu.probing() {
            log_kernel_steps(gpu.name(), &gpu.take_probe_sums()?);
        }

        // Device-event phase times, now that everything completed.
        let mut prev = &wait0;
        for (name, e) in &marks {
            let ms = prev.elapsed_ms(e).map_err(|e| gpu.err("event timing", e))?;
            report.add_phase(name, Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3));
            prev = e;
        }
        if let Some((s0, s1)) = &part.copy_events {
            if let Ok(ms) = s0.elapsed_ms(s1) {
                report.add_phase(
                    "stage_copy",
                    Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3),
                );
            }
        }
        report.add_phase("result_wait", t_dl.elapsed());
        let t_tail = Instant::now();
        // Everything that read the staged buffers has completed. Freeing them waits for
        // `release_finished`, after the caller's kernel lock; a finished partition still
        // counts against the budget until then. (The host registrations stay with the
        // assignment, filprove_groth16::recycle.)
        part.mark_completed();
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
        report.add_phase("region_tail", t_tail.elapsed());
        report.add_phase("region", t_region.elapsed());
        hm.mark("end");
        log::debug!(
            "{}: region host marks (ms from the region lock request; a phase's mark: its work queued): {}",
            gpu.name(),
            hm.render()
        );
        drop(region);
        Ok(assemble(srs, input, h, l, a, b1, b2))
    }

    fn oom(&self, needed: u64) -> ProveError {
        let st = lock(&self.state);
        ProveError::DeviceOutOfMemory {
            device: self.gpu.name().to_string(),
            needed,
            free: self
                .budget
                .saturating_sub(st.resident.bytes() + st.reserved),
        }
    }
}

/// Combines the five MSM results with the verifying key and r, s (bellperson's formulas).
pub fn assemble(
    srs: &Srs,
    input: &ProofInput<'_>,
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b1: G1Projective,
    b2: G2Projective,
) -> Proof {
    let vk = &srs.vk;
    let (r, s) = (input.randomness.r, input.randomness.s);
    let g_a = a + vk.alpha_g1 + vk.delta_g1 * r;
    let g_b = b2 + vk.beta_g2 + vk.delta_g2 * s;
    let b1_full = b1 + vk.beta_g1 + vk.delta_g1 * s;
    let g_c = g_a * s + b1_full * r - vk.delta_g1 * (r * s) + h + l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}

/// Checks the assignment against the parameters' lengths; returns log2 of the domain.
fn check_shapes(lens: &Lens, asg: &ProvingAssignment) -> Result<u32, ProveError> {
    let mismatch = |what, params, circuit| {
        Err(ProveError::ShapeMismatch {
            what,
            params,
            circuit,
        })
    };
    let n_aux = asg.aux_assignment.len();
    let n_in = asg.input_assignment.len();
    if asg.b.len() != asg.a.len() || asg.c.len() != asg.a.len() {
        return Err(ProveError::Invalid("a, b, c have different lengths".into()));
    }
    if asg.a_aux_density.len() < n_aux
        || asg.b_aux_density.len() < n_aux
        || asg.b_input_density.len() < n_in
    {
        return Err(ProveError::Invalid(
            "density bitmaps shorter than the assignment".into(),
        ));
    }
    let lg = asg.log_domain_size();
    let m = 1usize << lg;
    if lens.h < m - 1 {
        return mismatch("h (domain - 1)", lens.h, m - 1);
    }
    if lens.l != n_aux {
        return mismatch("l (aux variables)", lens.l, n_aux);
    }
    let a_len = n_in + asg.a_aux_density.count_ones();
    if lens.a != a_len {
        return mismatch("a (inputs + aux dense in A)", lens.a, a_len);
    }
    let b_len = asg.b_input_density.count_ones() + asg.b_aux_density.count_ones();
    if lens.b != b_len {
        return mismatch("b_g1, b_g2 (dense in B)", lens.b, b_len);
    }
    Ok(lg)
}

/// [prefix..., aux[i] for every set bit i of the density words] as a new device vector;
/// also returns the host bytes uploaded (the prefix).
/// One log line with the time of every kernel step of a proof, summed per step name
/// ([`CudaOptions::step_timings`]; the steps are marked by `Gpu::probe`).
fn log_kernel_steps(device: &str, sums: &[(&'static str, f64, u32)]) {
    let text: Vec<String> = sums
        .iter()
        .map(|(l, ms, n)| format!("{l}={ms:.2}ms/{n}"))
        .collect();
    log::info!("{device}: kernel steps {}", text.join(" "));
}

pub fn gather(
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

    fn evict(&self, srs: &Srs) {
        let key = srs_key(srs);
        if let Some(bytes) = lock(&self.state).resident.remove(key) {
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
