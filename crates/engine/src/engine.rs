//! The engine: owns the queues, the workers, the devices and the job table, and is what
//! the daemon calls (submit, await, cancel, status, metrics, drain).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use filprove_groth16::recycle::{BufferPool, Reaper};
use filprove_groth16::Backend;

pub(crate) use crate::device::Device;
use crate::job::{JobOutcome, JobReport, JobStatus, Priority, ProofJob, RequestKey};
use crate::memory::{Budgets, HostMemory};
use crate::placement::{DevicePolicy, Placement};
use crate::sched::Scheduler;
use crate::srs::{EvictOutcome, PreloadOutcome, SrsLoader, SrsManager};
pub use crate::status::{DeviceStatus, DrainReport, EngineStatus, QueueStatus, Submitted};
use crate::tracker::{JobEntry, Reuse};
use crate::{metrics::Metrics, workers, EngineError};

/// The regular synthesis workers' thread pool ([`Shared::bulk_pool`]): as many threads as
/// rayon's global pool (one per core, or `RAYON_NUM_THREADS`); the OS shares the cores.
fn bulk_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("synth-pool-{i}"))
        .build()
        .map_err(|e| tracing::warn!(error = %e, "no separate synthesis pool; PoSt shares rayon's"))
        .ok()
}

/// Engine settings (the daemon fills them from its TOML config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// CPU synthesis workers (each synthesizes one partition at a time).
    pub partition_workers: usize,
    /// Prover workers per device; they share the device's kernel lock.
    pub gpu_workers_per_device: usize,
    /// One extra synthesis worker that only takes HIGH and CRITICAL work, so PoSt never
    /// waits for a PoRep partition's synthesis to finish.
    pub express_worker: bool,
    /// Host bytes partitions may reserve; `None`: 80 % of the host's (or cgroup's) limit
    /// less the parameter budget, at least 1 GiB.
    pub memory_budget_bytes: Option<u64>,
    /// Parameter bytes kept resident; `None`: half the host's limit.
    pub srs_budget_bytes: Option<u64>,
    /// Finished jobs remembered for AwaitProof and idempotency.
    pub max_retained_jobs: usize,
    /// Proved partitions' assignments kept for the next syntheses to refill (with their
    /// page-locking, filprove_groth16::recycle); `None`: one per worker that holds an
    /// assignment (synthesis workers, the express one included, and prover workers), so
    /// that a steady pipeline never page-locks fresh memory. Idle ones count against the
    /// memory budget and are freed when they keep a partition out.
    pub reused_partition_buffers: Option<usize>,
    /// Kept assignments that no synthesis refilled for this long are freed (`None`: kept
    /// until a partition needs the memory).
    pub reused_partition_buffers_idle: Option<Duration>,
    /// Once every device holds a circuit's parameters in its own memory for good
    /// ([`filprove_groth16::Backend::hold_parameters`]), the host keeps the verifying key
    /// alone (a 32 GiB PoRep set: 44 GiB of host memory freed). A device that loses them
    /// (an explicit eviction) makes the next proof read the file again. Off: the host copy
    /// stays (a CPU backend never holds parameters, so it always does).
    pub release_host_parameters: bool,
    /// What each device is used for, by position in the backends given to
    /// [`Engine::start`]; devices beyond the list take any work.
    pub device_policies: Vec<DevicePolicy>,
    /// Failed proofs in a row that take a device out of rotation (its jobs are retried
    /// on the others; [`Engine::restore_device`] brings it back), unless it is the last
    /// one in rotation; 0: never.
    pub quarantine_after_failures: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            partition_workers: 2,
            gpu_workers_per_device: 2,
            express_worker: true,
            memory_budget_bytes: None,
            srs_budget_bytes: None,
            max_retained_jobs: 10_000,
            reused_partition_buffers: None,
            reused_partition_buffers_idle: Some(Duration::from_secs(300)),
            release_host_parameters: true,
            device_policies: Vec::new(),
            quarantine_after_failures: 3,
        }
    }
}

/// Assignments the pipeline can hold at once outside its queues: one per synthesis
/// worker (the express one included) and one per prover worker. Keeping fewer made every
/// proof page-lock fresh buffers (measured on the H200: 16.7 GB registered inside a
/// kernel region took 6.7 s).
fn default_kept_buffers(config: &EngineConfig, devices: usize) -> usize {
    config.partition_workers
        + usize::from(config.express_worker)
        + devices * config.gpu_workers_per_device.max(1)
}

struct JobTable {
    by_id: HashMap<String, Arc<JobEntry>>,
    finished: VecDeque<String>,
}

/// State shared by the engine handle and its workers.
pub(crate) struct Shared {
    pub sched: Arc<Scheduler>,
    pub srs: Arc<SrsManager>,
    pub devices: Vec<Device>,
    pub metrics: Metrics,
    /// Frees surplus partition buffers on a background thread.
    reaper: Reaper,
    /// The threads of the regular synthesis workers' parallel work (PoRep's challenges,
    /// filprove_groth16::parts), apart from rayon's global pool that the express worker
    /// (PoSt) and the CPU prover use: a PoSt synthesis never queues behind a PoRep
    /// partition's challenges. `None` without an express worker.
    pub bulk_pool: Option<rayon::ThreadPool>,
    /// [`EngineConfig::release_host_parameters`].
    pub release_host_parameters: bool,
    jobs: Mutex<JobTable>,
    max_retained: usize,
    started: Instant,
    draining: AtomicBool,
    /// Set by [`Engine::cut_drain_short`]: the drain stops waiting for jobs in flight.
    drain_cut: AtomicBool,
    /// Set when the drain cancels what is left ([`Engine::is_stopping`]).
    stopping: AtomicBool,
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
}

impl Shared {
    fn jobs(&self) -> MutexGuard<'_, JobTable> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Frees the kept partition buffers beyond the pool's bound when no prover worker of
    /// any device is staging or proving and no synthesized partition waits for one (a
    /// single worker between two partitions is idle for a moment; freeing then stalled
    /// the next region by ~0.3 s on the H200 host, docs/decisions/008-partition-buffers-reused.md):
    /// freeing unpins them, which holds the driver
    /// (1.4 s for a 32 GiB partition's 16.7 GB on the H200 host, stalling a region that
    /// runs meanwhile by 250-420 ms even in pieces), and returning their pages takes
    /// seconds more, on a background thread. Until then they stay in the pool, counted
    /// against the memory budget and refilled by the next syntheses. Returns how many.
    pub fn free_surplus_if_idle(&self) -> usize {
        if self.devices.iter().any(Device::contended) || self.sched.depths().1 > 0 {
            return 0;
        }
        let surplus = self.sched.buffers.take_surplus();
        let n = surplus.len();
        if n > 0 {
            self.metrics.partition_buffers_released.inc_by(n as u64);
            self.reaper.drop_later(surplus);
        }
        n
    }

    /// Ends `job` with `outcome` (once), records it, wakes its waiters and drops its
    /// queued work.
    pub fn complete(&self, job: &Arc<JobEntry>, outcome: JobOutcome, verify: Duration) {
        let Some((report, waiters)) = job.finish(outcome, verify) else {
            return;
        };
        let outcome = match &report.outcome {
            JobOutcome::Completed(_) => {
                self.completed.fetch_add(1, Ordering::Relaxed);
                "completed"
            }
            JobOutcome::Failed(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(job = %job.id, kind = job.kind, code = e.code(), error = %e, "job failed");
                "failed"
            }
            JobOutcome::Cancelled => {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
                "cancelled"
            }
        };
        let t = &report.timings;
        tracing::info!(
            job = %job.id, kind = job.kind, outcome,
            total_ms = t.total.as_millis() as u64, queue_ms = t.queue_wait.as_millis() as u64,
            synthesis_ms = t.synthesis.as_millis() as u64, prove_ms = t.prove.as_millis() as u64,
            verify_ms = t.verify.as_millis() as u64,
            "job finished"
        );
        self.metrics
            .proofs
            .with_label_values(&[job.kind, outcome])
            .inc();
        if outcome == "completed" {
            self.metrics
                .proof_duration
                .with_label_values(&[job.kind])
                .observe(t.total.as_secs_f64());
            for (stage, d) in [
                ("queue_wait", t.queue_wait),
                ("srs_load", t.srs_load),
                ("synthesis", t.synthesis),
                ("prove", t.prove),
                ("verify", t.verify),
                ("total", t.total),
            ] {
                self.metrics
                    .stage_duration
                    .with_label_values(&[job.kind, stage])
                    .observe(d.as_secs_f64());
            }
        }
        {
            let mut jobs = self.jobs();
            // Unless a new job took over its id meanwhile (Engine::submit's re-run).
            if jobs.by_id.get(&job.id).is_some_and(|j| Arc::ptr_eq(j, job)) {
                jobs.finished.push_back(job.id.clone());
            }
            while jobs.finished.len() > self.max_retained {
                if let Some(old) = jobs.finished.pop_front() {
                    jobs.by_id.remove(&old);
                }
            }
        }
        for w in waiters {
            w(&report);
        }
        if outcome != "completed" {
            self.purge();
        }
    }

    /// Drops queued partitions of ended jobs (and their memory reservations).
    pub fn purge(&self) {
        let dead = self.sched.purge_dead();
        for t in &dead {
            t.job.partition_dropped();
        }
        drop(dead);
    }
}

/// The proving engine. Dropping it stops the workers (after their current item).
pub struct Engine {
    shared: Arc<Shared>,
}

impl Engine {
    /// Starts the workers: `partition_workers` synthesis workers (+1 express), and
    /// `gpu_workers_per_device` prover workers for each backend in `backends` (one per
    /// device, or the CPU backend).
    pub fn start(
        config: EngineConfig,
        backends: Vec<Arc<dyn Backend>>,
        srs_loader: SrsLoader,
    ) -> Result<Self, EngineError> {
        if backends.is_empty() {
            return Err(EngineError::Internal(
                "the engine needs at least one backend".into(),
            ));
        }
        let host = HostMemory::detect();
        let budgets = Budgets::resolve(&host, config.memory_budget_bytes, config.srs_budget_bytes);
        let (srs_budget, mem_budget) = (budgets.srs_bytes, budgets.partitions_bytes);
        tracing::info!(
            host_bytes = host.total_bytes, cgroup_bytes = ?host.cgroup_limit_bytes,
            memory_budget = mem_budget, srs_budget,
            partition_workers = config.partition_workers, gpu_workers_per_device = config.gpu_workers_per_device,
            "engine starting"
        );
        let kept_buffers = config
            .reused_partition_buffers
            .unwrap_or(default_kept_buffers(&config, backends.len()));
        if config.device_policies.len() > backends.len() {
            return Err(EngineError::Internal(format!(
                "{} device policies for {} devices",
                config.device_policies.len(),
                backends.len()
            )));
        }
        let devices = crate::device::devices(backends);
        for (d, dev) in devices.iter().enumerate() {
            let p = config.device_policies.get(d).cloned().unwrap_or_default();
            tracing::info!(device = %dev.name, urgent_only = p.urgent_only, circuits = ?p.circuits, "proving device");
        }
        let placement = Arc::new(Placement::new(
            devices.len(),
            &config.device_policies,
            config.quarantine_after_failures,
        ));
        let shared = Arc::new(Shared {
            sched: Scheduler::new(
                mem_budget,
                BufferPool::new(kept_buffers),
                config.reused_partition_buffers_idle,
                placement,
            ),
            srs: SrsManager::new(srs_loader, srs_budget),
            devices,
            metrics: Metrics::new()?,
            reaper: Reaper::default(),
            bulk_pool: config.express_worker.then(bulk_pool).flatten(),
            release_host_parameters: config.release_host_parameters,
            jobs: Mutex::new(JobTable {
                by_id: HashMap::new(),
                finished: VecDeque::new(),
            }),
            max_retained: config.max_retained_jobs.max(1),
            started: Instant::now(),
            draining: AtomicBool::new(false),
            drain_cut: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        });
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| EngineError::Internal(format!("cannot start a worker thread: {e}")))
        };
        let workers = config.partition_workers.max(1);
        for i in 0..workers + usize::from(config.express_worker) {
            let s = shared.clone();
            let express = i >= workers;
            spawn(
                format!("synth-{i}"),
                Box::new(move || workers::synthesis_worker(s, express)),
            )?;
        }
        for d in 0..shared.devices.len() {
            for w in 0..config.gpu_workers_per_device.max(1) {
                let s = shared.clone();
                spawn(
                    format!("prove-{d}.{w}"),
                    Box::new(move || workers::prover_worker(s, d, w)),
                )?;
            }
        }
        Ok(Self { shared })
    }

    /// The parameter residency manager (preload, evict, status).
    pub fn srs(&self) -> &Arc<SrsManager> {
        &self.shared.srs
    }

    /// Loads and pins `circuit_id`'s parameters ([`SrsManager::preload`]) and copies them
    /// onto every device that keeps its own copy ([`filprove_groth16::Backend::load_parameters`]),
    /// so the first proof uploads nothing. With
    /// [`EngineConfig::release_host_parameters`], the host copy of the proving sections is
    /// released at once when every device holds them: a daemon's host memory then never
    /// holds the parameters beside the first partitions in flight.
    pub fn preload_parameters(&self, circuit_id: &str) -> Result<PreloadOutcome, EngineError> {
        let outcome = self.shared.srs.preload(circuit_id)?;
        let Some(srs) = self.shared.srs.resident(circuit_id) else {
            return Ok(outcome);
        };
        if !srs.has_sections() {
            return Ok(outcome); // released already
        }
        let mut everywhere = true;
        for d in &self.shared.devices {
            match d.backend.load_parameters(&srs) {
                Ok(loaded) => everywhere &= loaded,
                Err(e) => {
                    everywhere = false;
                    tracing::warn!(
                        circuit_id, device = %d.name, error = %e,
                        "parameters not loaded onto the device at preload (the first proof uploads them)"
                    );
                }
            }
        }
        drop(srs);
        if everywhere && self.shared.release_host_parameters {
            workers::release_host_parameters(&self.shared, circuit_id);
        }
        Ok(outcome)
    }

    /// Evicts `circuit_id`'s parameters from host memory ([`SrsManager::evict`]) and from
    /// every device that is not proving with them now.
    pub fn evict_parameters(&self, circuit_id: &str) -> EvictOutcome {
        let resident = self.shared.srs.resident(circuit_id);
        let outcome = self.shared.srs.evict(circuit_id);
        if let Some(srs) = resident {
            for d in &self.shared.devices {
                d.backend.evict(&srs);
            }
        }
        outcome
    }

    /// Takes device `ordinal` out of rotation (`why` is shown in its status): it takes no
    /// new partitions; what it is proving now finishes. Returns whether it was in rotation.
    pub fn quarantine_device(&self, ordinal: usize, why: &str) -> Result<bool, EngineError> {
        let changed = self.shared.sched.placement.quarantine(ordinal, why)?;
        if changed {
            let name = &self.shared.devices[ordinal].name;
            tracing::warn!(device = %name, reason = why, "device taken out of rotation");
            self.shared
                .metrics
                .device_quarantines
                .with_label_values(&[name.as_str()])
                .inc();
            self.shared.sched.wake_provers();
        }
        Ok(changed)
    }

    /// Brings device `ordinal` back into rotation, its failures in a row cleared. Returns
    /// whether it was out.
    pub fn restore_device(&self, ordinal: usize) -> Result<bool, EngineError> {
        let changed = self.shared.sched.placement.restore(ordinal)?;
        if changed {
            let name = &self.shared.devices[ordinal].name;
            tracing::info!(device = %name, "device brought back into rotation");
            self.shared.sched.wake_provers();
        }
        Ok(changed)
    }

    /// Devices in rotation (not quarantined).
    pub fn usable_devices(&self) -> usize {
        self.shared.sched.placement.usable_count()
    }

    /// Queues `job`. `key` names the request (`None` or an empty id: the engine makes up
    /// an id). A known id decides by the job it names and the inputs (idempotency: a
    /// retried request never makes a second proof, and never gets another request's):
    /// - same inputs, job queued, running or completed: returns that job (`existing`);
    /// - job failed or cancelled, or completed with other inputs: a new job replaces it
    ///   under the same id;
    /// - other inputs while the job is unfinished: [`EngineError::RequestConflict`].
    pub fn submit(
        &self,
        key: Option<RequestKey>,
        priority: Priority,
        job: Arc<dyn ProofJob>,
    ) -> Result<Submitted, EngineError> {
        let key = key.filter(|k| !k.id.is_empty());
        if let Some(k) = &key {
            if let Some(s) = self.retained(k)? {
                return Ok(s);
            }
        }
        if self.shared.draining.load(Ordering::SeqCst) {
            return Err(EngineError::Draining);
        }
        let (id, inputs) = match key {
            Some(k) => (k.id, Some(k.inputs)),
            None => (format!("job-{:016x}", rand::random::<u64>()), None),
        };
        let limit = self.shared.sched.depths().3;
        let allowed = if priority >= Priority::High {
            limit + limit / 8
        } else {
            limit
        };
        let needed = job.partition_memory_bytes();
        if needed > allowed {
            return Err(EngineError::MemoryExceedsBudget {
                needed,
                limit: allowed,
            });
        }
        let entry = Arc::new(JobEntry::new(id.clone(), inputs, priority, job));
        if !self
            .shared
            .sched
            .placement
            .any_accepts(priority, &entry.circuit_id)
        {
            return Err(EngineError::NoDeviceFor {
                circuit_id: entry.circuit_id.clone(),
                priority: priority.as_str(),
            });
        }
        let queue_position = {
            let mut jobs = self.shared.jobs();
            // Another submission of the same id may have come in meanwhile.
            let reuse = match (jobs.by_id.get(&id), inputs) {
                (Some(old), Some(inputs)) => Some((old.reuse_for(inputs), old.status())),
                (Some(_), None) => Some((Reuse::Conflict, JobStatus::Queued)),
                (None, _) => None,
            };
            match reuse {
                Some((Reuse::Attach, _)) => return Ok(self.existing_submission(&id)),
                Some((Reuse::Conflict, _)) => return Err(EngineError::RequestConflict(id)),
                Some((Reuse::Rerun, before)) => {
                    jobs.finished.retain(|f| f != &id);
                    tracing::info!(job = %id, previous = ?before, "request id reused: a new job replaces the finished one");
                }
                None => {}
            }
            let ahead = jobs
                .by_id
                .values()
                .filter(|j| j.priority >= priority && !j.status().is_terminal())
                .count();
            jobs.by_id.insert(id.clone(), entry.clone());
            ahead as u32
        };
        tracing::info!(
            job = %id, kind = entry.kind, priority = priority.as_str(), circuit = %entry.circuit_id,
            partitions = entry.partitions, partition_bytes = entry.partition_bytes, "job queued"
        );
        self.shared.srs.prefetch(&entry.circuit_id);
        self.shared.sched.enqueue_job(&entry, 0);
        Ok(Submitted {
            job_id: id,
            queue_position,
            assigned_device: self.least_busy_device(),
            existing: false,
        })
    }

    /// What [`Engine::submit`] would do with `key` without its job: `Some` (the existing
    /// job, nothing to parse or queue) when the id names a job with the same inputs that
    /// did not fail or get cancelled; `None` when a new job is needed;
    /// [`EngineError::RequestConflict`] when the id names an unfinished job with other
    /// inputs.
    pub fn retained(&self, key: &RequestKey) -> Result<Option<Submitted>, EngineError> {
        let reuse = self
            .shared
            .jobs()
            .by_id
            .get(&key.id)
            .map(|j| j.reuse_for(key.inputs));
        match reuse {
            Some(Reuse::Attach) => Ok(Some(self.existing_submission(&key.id))),
            Some(Reuse::Conflict) => Err(EngineError::RequestConflict(key.id.clone())),
            Some(Reuse::Rerun) | None => Ok(None),
        }
    }

    fn existing_submission(&self, id: &str) -> Submitted {
        Submitted {
            job_id: id.to_string(),
            queue_position: 0,
            assigned_device: self.least_busy_device(),
            existing: true,
        }
    }

    fn least_busy_device(&self) -> String {
        let devs = &self.shared.devices;
        let placement = &self.shared.sched.placement;
        devs.iter()
            .enumerate()
            .find(|(i, d)| {
                placement.usable(*i)
                    && d.current
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .is_none()
            })
            .map_or(&devs[0], |(_, d)| d)
            .name
            .clone()
    }

    /// True when a job with this id is known (running or retained).
    pub fn contains(&self, job_id: &str) -> bool {
        self.shared.jobs().by_id.contains_key(job_id)
    }

    /// The job's status.
    pub fn job_status(&self, job_id: &str) -> Result<JobStatus, EngineError> {
        self.entry(job_id).map(|e| e.status())
    }

    fn entry(&self, job_id: &str) -> Result<Arc<JobEntry>, EngineError> {
        self.shared
            .jobs()
            .by_id
            .get(job_id)
            .cloned()
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))
    }

    /// Calls `f` with the job's report when it ends (at once if it has).
    pub fn on_complete(
        &self,
        job_id: &str,
        f: impl FnOnce(&JobReport) + Send + 'static,
    ) -> Result<(), EngineError> {
        let entry = self.entry(job_id)?;
        if let Some((w, report)) = entry.add_waiter(Box::new(f)) {
            w(&report);
        }
        Ok(())
    }

    /// Blocks until the job ends or `timeout` passes (`None`: no limit); `Ok(None)` on
    /// timeout.
    pub fn wait(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<Option<JobReport>, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.on_complete(job_id, move |r| {
            let _ = tx.send(r.clone());
        })?;
        Ok(match timeout {
            Some(t) => rx.recv_timeout(t).ok(),
            None => rx.recv().ok(),
        })
    }

    /// Cancels a job: queued partitions are dropped, a running synthesis stops at its next
    /// check (every 65,536 variables; groth16 `cancel`), a running GPU step is discarded
    /// when it ends, and waiters get `Cancelled` at once. Returns whether work had
    /// started (false also for a job that had already ended).
    pub fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        let entry = self.entry(job_id)?;
        let was_running = entry.status() == JobStatus::Running;
        if !entry.status().is_terminal() {
            tracing::info!(job = %job_id, was_running, "job cancelled");
        }
        self.shared
            .complete(&entry, JobOutcome::Cancelled, Duration::ZERO);
        self.shared.purge();
        Ok(was_running)
    }

    /// A snapshot of devices, parameters, queues and counters.
    pub fn status(&self) -> EngineStatus {
        let s = &self.shared;
        let (synthesis_waiting, prove_waiting, reserved, limit) = s.sched.depths();
        let mut queues: Vec<QueueStatus> = Vec::new();
        for j in s.jobs().by_id.values() {
            let st = j.status();
            if st.is_terminal() {
                continue;
            }
            let q = match queues.iter_mut().position(|q| q.kind == j.kind) {
                Some(i) => &mut queues[i],
                None => {
                    queues.push(QueueStatus {
                        kind: j.kind.to_string(),
                        ..Default::default()
                    });
                    queues.last_mut().expect("pushed")
                }
            };
            if st == JobStatus::Queued {
                q.pending += 1;
            } else {
                q.in_progress += 1;
            }
        }
        queues.sort_by(|a, b| a.kind.cmp(&b.kind));
        EngineStatus {
            devices: crate::device::statuses(&s.devices, &s.sched.placement),
            srs: s.srs.status(),
            queues,
            completed: s.completed.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            cancelled: s.cancelled.load(Ordering::Relaxed),
            uptime: s.started.elapsed(),
            memory_reserved_bytes: reserved,
            memory_limit_bytes: limit,
            srs_resident_bytes: s.srs.resident_bytes(),
            synthesis_waiting,
            prove_waiting,
            draining: s.draining.load(Ordering::SeqCst),
        }
    }

    /// Prometheus text exposition of the engine's metrics and the GPU samples
    /// ([`crate::metrics::content_type`]).
    pub fn metrics_text(&self) -> String {
        let st = self.status();
        self.shared.metrics.render(&crate::metrics::Readings {
            queues: &st.queues,
            devices: &st.devices,
            synthesis_waiting: st.synthesis_waiting,
            prove_waiting: st.prove_waiting,
            memory_reserved_bytes: st.memory_reserved_bytes,
            memory_limit_bytes: st.memory_limit_bytes,
            buffers_idle_bytes: self.shared.sched.buffers.idle_bytes(),
            srs_resident_bytes: st.srs_resident_bytes,
            srs_budget_bytes: self.shared.srs.budget_bytes(),
            uptime: st.uptime,
        })
    }

    /// True once [`Engine::begin_drain`] or [`Engine::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.shared.draining.load(Ordering::SeqCst)
    }

    /// Ends a running [`Engine::drain`]'s grace period now: what is unfinished is
    /// cancelled at once (a second SIGTERM or SIGINT). Also stops accepting new jobs.
    pub fn cut_drain_short(&self) {
        self.begin_drain();
        self.shared.drain_cut.store(true, Ordering::SeqCst);
    }

    /// True once a drain has passed its grace period (or was cut short) and cancels what
    /// is left: a job cancelled from then on was cancelled by shutdown, not by a caller.
    pub fn is_stopping(&self) -> bool {
        self.shared.stopping.load(Ordering::SeqCst)
    }

    /// Records a job that cannot run as failed with `error` under `id` (a journaled
    /// request that cannot be decoded any more): status and AwaitProof report it like any
    /// failed job, and a new submission under the id replaces it. Refused with
    /// [`EngineError::RequestConflict`] when an unfinished job holds the id.
    pub fn record_failure(
        &self,
        id: &str,
        kind: &'static str,
        error: EngineError,
    ) -> Result<(), EngineError> {
        let entry = Arc::new(JobEntry::new(
            id.to_string(),
            None,
            Priority::Normal,
            Arc::new(Unrunnable { kind }),
        ));
        {
            let mut jobs = self.shared.jobs();
            if let Some(old) = jobs.by_id.get(id) {
                if !old.status().is_terminal() {
                    return Err(EngineError::RequestConflict(id.to_string()));
                }
                jobs.finished.retain(|f| f != id);
            }
            jobs.by_id.insert(id.to_string(), entry.clone());
        }
        self.shared
            .complete(&entry, JobOutcome::Failed(error), Duration::ZERO);
        Ok(())
    }

    /// Stops accepting new jobs (submissions fail with [`EngineError::Draining`]).
    pub fn begin_drain(&self) {
        self.shared.draining.store(true, Ordering::SeqCst);
    }

    /// Drains: accepts nothing new, lets unfinished jobs run for up to `grace`, cancels
    /// what is left, then stops the workers.
    pub fn drain(&self, grace: Duration) -> DrainReport {
        self.begin_drain();
        let active = || -> Vec<Arc<JobEntry>> {
            self.shared
                .jobs()
                .by_id
                .values()
                .filter(|j| !j.status().is_terminal())
                .cloned()
                .collect()
        };
        let initial = active().len();
        let deadline = Instant::now() + grace;
        while !active().is_empty()
            && Instant::now() < deadline
            && !self.shared.drain_cut.load(Ordering::SeqCst)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.shared.stopping.store(true, Ordering::SeqCst);
        let left = active();
        for j in &left {
            tracing::warn!(job = %j.id, "cancelled by shutdown");
            self.shared
                .complete(j, JobOutcome::Cancelled, Duration::ZERO);
        }
        self.shared.purge();
        self.shared.sched.stop();
        DrainReport {
            finished: initial - left.len(),
            cancelled: left.len(),
        }
    }
}

/// The payload of a job recorded by [`Engine::record_failure`]: never queued.
struct Unrunnable {
    kind: &'static str,
}

impl ProofJob for Unrunnable {
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn circuit_id(&self) -> String {
        String::new()
    }
    fn num_partitions(&self) -> usize {
        1
    }
    fn partition_memory_bytes(&self) -> u64 {
        0
    }
    fn synthesize(&self, _k: usize) -> Result<filprove_groth16::ProvingAssignment, EngineError> {
        Err(EngineError::Internal(
            "a recorded failure is never run".into(),
        ))
    }
    fn assemble(&self, _proofs: &[filprove_groth16::Proof]) -> Result<Vec<u8>, EngineError> {
        Err(EngineError::Internal(
            "a recorded failure is never run".into(),
        ))
    }
    fn verify(&self, _proof: &[u8]) -> Result<bool, EngineError> {
        Ok(false)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shared.sched.stop();
    }
}
