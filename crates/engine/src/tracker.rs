//! Per-job state: which partitions are done, stage times, the outcome and who waits for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use filprove_groth16::Proof;

use crate::job::{InputDigest, JobOutcome, JobReport, JobStatus, Priority, ProofJob, Timings};

/// Called once with the report when a job ends.
pub(crate) type Waiter = Box<dyn FnOnce(&JobReport) + Send>;

/// What a new submission under a retained job's id does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reuse {
    /// Same inputs, job queued, running or completed: the submission is this job.
    Attach,
    /// The job failed or was cancelled, or it ended and the inputs differ: a new job
    /// replaces it under the same id.
    Rerun,
    /// Different inputs while the job is unfinished: refused.
    Conflict,
}

/// A submitted job and its live state.
pub(crate) struct JobEntry {
    pub id: String,
    /// The digest of the request's inputs (`None` for a job without a caller's id).
    pub inputs: Option<InputDigest>,
    pub kind: &'static str,
    pub priority: Priority,
    pub circuit_id: String,
    /// The request; dropped when the job ends (a retained job keeps only its report).
    job: Mutex<Option<Arc<dyn ProofJob>>>,
    pub partitions: usize,
    pub partition_bytes: u64,
    pub submitted: Instant,
    state: Mutex<JobState>,
    /// Set when the job ends (cancelled, failed or done): a synthesis of one of its
    /// partitions that is still running stops at its next check (groth16 `cancel`).
    stop: Arc<AtomicBool>,
}

pub(crate) struct JobState {
    pub status: JobStatus,
    /// Attempt number (0, then 1 on the retry); tasks of an older attempt are dropped.
    pub attempt: u32,
    /// The retry synthesizes along the reference path ([`ProofJob::synthesize_reference`]):
    /// the first attempt's proof failed verification.
    reference: bool,
    proofs: Vec<Option<Proof>>,
    pub in_flight: u32,
    /// Devices (bit per index) that proved partitions of this job.
    used_devices: u64,
    /// Devices the retry should not use (those that made the failed attempt).
    avoid_devices: u64,
    timings: Timings,
    report: Option<JobReport>,
    waiters: Vec<Waiter>,
}

impl JobEntry {
    pub fn new(
        id: String,
        inputs: Option<InputDigest>,
        priority: Priority,
        job: Arc<dyn ProofJob>,
    ) -> Self {
        let partitions = job.num_partitions().max(1);
        Self {
            id,
            inputs,
            kind: job.kind(),
            priority,
            circuit_id: job.circuit_id(),
            partitions,
            partition_bytes: job.partition_memory_bytes(),
            job: Mutex::new(Some(job)),
            submitted: Instant::now(),
            state: Mutex::new(JobState {
                status: JobStatus::Queued,
                attempt: 0,
                reference: false,
                proofs: vec![None; partitions],
                in_flight: 0,
                used_devices: 0,
                avoid_devices: 0,
                timings: Timings::default(),
                report: None,
                waiters: Vec::new(),
            }),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag a running synthesis of this job watches (set when the job ends).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The request, while the job has not ended.
    pub fn payload(&self) -> Option<Arc<dyn ProofJob>> {
        self.job.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True while tasks of `attempt` should still run.
    pub fn is_live(&self, attempt: u32) -> bool {
        let s = self.lock();
        !s.status.is_terminal() && s.attempt == attempt
    }

    pub fn status(&self) -> JobStatus {
        self.lock().status
    }

    /// Whether the current attempt synthesizes along the reference path.
    pub fn reference_synthesis(&self) -> bool {
        self.lock().reference
    }

    /// What a submission of `inputs` under this job's id does.
    pub fn reuse_for(&self, inputs: InputDigest) -> Reuse {
        let status = self.status();
        let same = self.inputs == Some(inputs);
        match status {
            JobStatus::Failed | JobStatus::Cancelled => Reuse::Rerun,
            _ if same => Reuse::Attach,
            JobStatus::Completed => Reuse::Rerun,
            JobStatus::Queued | JobStatus::Running => Reuse::Conflict,
        }
    }

    /// Marks a partition's synthesis as started; false when the task is stale.
    pub fn start_partition(&self, attempt: u32) -> bool {
        let mut s = self.lock();
        if s.status.is_terminal() || s.attempt != attempt {
            return false;
        }
        if s.status == JobStatus::Queued {
            s.status = JobStatus::Running;
            s.timings.queue_wait = self.submitted.elapsed();
        }
        s.in_flight += 1;
        true
    }

    /// Adds stage times.
    pub fn add_times(&self, srs_load: Duration, synthesis: Duration, prove: Duration) {
        let mut s = self.lock();
        s.timings.srs_load += srs_load;
        s.timings.synthesis += synthesis;
        s.timings.prove += prove;
    }

    /// A partition left the pipeline without a proof (failure, staleness).
    pub fn partition_dropped(&self) {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
    }

    /// Records partition `k`'s proof; returns every proof once all are in (exactly once).
    pub fn record_proof(&self, attempt: u32, k: usize, proof: Proof) -> Option<Vec<Proof>> {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.status.is_terminal() || s.attempt != attempt {
            return None;
        }
        s.proofs[k] = Some(proof);
        if s.proofs.iter().all(Option::is_some) {
            let all = s
                .proofs
                .iter_mut()
                .map(|p| p.take().expect("checked"))
                .collect();
            Some(all)
        } else {
            None
        }
    }

    /// Notes that device `d` proved a partition.
    pub fn note_device(&self, d: usize) {
        self.lock().used_devices |= 1u64 << (d % 64);
    }

    /// True when device `d` should leave this job's partitions to another device.
    pub fn avoids(&self, d: usize) -> bool {
        self.lock().avoid_devices & (1u64 << (d % 64)) != 0
    }

    /// Starts the retry attempt if this was the first; returns its number. The retry
    /// avoids the devices of the failed attempt when others exist (of `devices`), and
    /// synthesizes along the reference path when `reference` (a failed verification).
    pub fn begin_retry(&self, devices: usize, reference: bool) -> Option<u32> {
        let mut s = self.lock();
        if s.status.is_terminal() || s.attempt > 0 {
            return None;
        }
        s.attempt = 1;
        s.reference = reference;
        s.proofs = vec![None; self.partitions];
        let all = if devices >= 64 {
            u64::MAX
        } else {
            (1u64 << devices) - 1
        };
        s.avoid_devices = if s.used_devices & all == all {
            0
        } else {
            s.used_devices
        };
        s.used_devices = 0;
        Some(1)
    }

    /// Ends the job with `outcome` unless it ended already; returns the report and the
    /// waiters to call (outside any lock).
    pub fn finish(
        &self,
        outcome: JobOutcome,
        verify: Duration,
    ) -> Option<(JobReport, Vec<Waiter>)> {
        let mut s = self.lock();
        if s.status.is_terminal() {
            return None;
        }
        self.stop.store(true, Ordering::Relaxed);
        s.status = match outcome {
            JobOutcome::Completed(_) => JobStatus::Completed,
            JobOutcome::Failed(_) => JobStatus::Failed,
            JobOutcome::Cancelled => JobStatus::Cancelled,
        };
        s.timings.verify += verify;
        s.timings.total = self.submitted.elapsed();
        if s.timings.queue_wait.is_zero() && s.status != JobStatus::Completed {
            s.timings.queue_wait = s.timings.total.min(self.submitted.elapsed());
        }
        let report = JobReport {
            job_id: self.id.clone(),
            kind: self.kind,
            outcome,
            timings: s.timings,
        };
        s.report = Some(report.clone());
        let waiters = std::mem::take(&mut s.waiters);
        drop(s);
        // Free the inputs (a 32 GiB C1 output is tens of MB); workers holding a clone
        // finish their step and drop it.
        *self.job.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Some((report, waiters))
    }

    /// Adds a waiter, or returns it with the report when the job has ended.
    pub fn add_waiter(&self, w: Waiter) -> Option<(Waiter, JobReport)> {
        let mut s = self.lock();
        match &s.report {
            Some(r) => Some((w, r.clone())),
            None => {
                s.waiters.push(w);
                None
            }
        }
    }
}
