//! The worker threads: synthesis workers (CPU) and prover workers (one group per device,
//! sharing the device's kernel lock), and how a job is finished, retried or failed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use filprove_groth16::{Proof, ProofInput, Randomness};

use crate::engine::Shared;
use crate::job::JobOutcome;
use crate::sched::ProveTask;
use crate::tracker::JobEntry;
use crate::EngineError;

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A synthesis worker: takes the most urgent partition whose memory fits, synthesizes it
/// and queues it for a prover. An express worker takes only HIGH and CRITICAL work.
pub(crate) fn synthesis_worker(shared: Arc<Shared>, express: bool) {
    while let Some((task, reservation)) = shared.sched.next_synth(express) {
        let job = task.job.clone();
        let Some(payload) = job.payload() else {
            continue;
        };
        if !job.start_partition(task.attempt) {
            continue;
        }
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| payload.synthesize(task.partition)));
        let dt = t.elapsed();
        job.add_times(Duration::ZERO, dt, Duration::ZERO);
        tracing::info!(
            job = %job.id, kind = job.kind, partition = task.partition,
            synthesis_ms = dt.as_millis() as u64, "partition synthesized"
        );
        match result {
            Ok(Ok(assignment)) => {
                drop(payload);
                shared.metrics.add(
                    "filprove_partitions_total",
                    &[("kind", job.kind), ("stage", "synthesized")],
                    1.0,
                );
                shared.sched.push_prove(ProveTask {
                    key: task.key,
                    job,
                    attempt: task.attempt,
                    partition: task.partition,
                    assignment,
                    reservation,
                });
            }
            Ok(Err(e)) => {
                drop(reservation);
                job.partition_dropped();
                let e = match e {
                    EngineError::Synthesis { .. } => e,
                    other => EngineError::Synthesis {
                        partition: task.partition,
                        code: other.code().to_string(),
                        message: other.to_string(),
                    },
                };
                shared.complete(&job, JobOutcome::Failed(e), Duration::ZERO);
            }
            Err(p) => {
                drop(reservation);
                job.partition_dropped();
                let e = EngineError::Synthesis {
                    partition: task.partition,
                    code: "synthesis_panic".into(),
                    message: panic_message(p),
                };
                shared.complete(&job, JobOutcome::Failed(e), Duration::ZERO);
            }
        }
    }
}

/// A prover worker of device `device`: takes the most urgent synthesized partition,
/// leases its parameters, proves it inside the device's kernel lock, and finishes the job
/// when it was the last partition.
pub(crate) fn prover_worker(shared: Arc<Shared>, device: usize) {
    let dev = &shared.devices[device];
    while let Some(task) = shared.sched.next_prove(device) {
        let job = task.job.clone();
        if !job.is_live(task.attempt) {
            job.partition_dropped();
            continue;
        }
        let (lease, srs_time) = match shared.srs.acquire(&job.circuit_id) {
            Ok(x) => x,
            Err(e) => {
                job.partition_dropped();
                drop(task);
                shared.complete(&job, JobOutcome::Failed(e), Duration::ZERO);
                continue;
            }
        };
        dev.set_current(Some((job.id.clone(), job.kind)));
        let wait_start = Instant::now();
        let kernel = dev.kernel_lock.lock().unwrap_or_else(|p| p.into_inner());
        let lock_wait = wait_start.elapsed();
        let t = Instant::now();
        let randomness = Randomness::random(&mut rand::thread_rng());
        let result = catch_unwind(AssertUnwindSafe(|| {
            dev.backend.prove(
                lease.srs(),
                &[ProofInput {
                    assignment: &task.assignment,
                    randomness,
                }],
            )
        }));
        let dt = t.elapsed();
        drop(kernel);
        dev.set_current(None);
        dev.add_busy(dt);
        job.note_device(device);
        shared.metrics.add(
            "filprove_device_busy_seconds_total",
            &[("device", &dev.name)],
            dt.as_secs_f64(),
        );
        shared.metrics.add(
            "filprove_device_lock_wait_seconds_total",
            &[("device", &dev.name)],
            lock_wait.as_secs_f64(),
        );
        drop(lease);
        let ProveTask {
            attempt,
            partition,
            assignment,
            reservation,
            ..
        } = task;
        // Free the partition's memory before assembling.
        drop(assignment);
        drop(reservation);
        job.add_times(srs_time, Duration::ZERO, dt);
        tracing::info!(
            job = %job.id, kind = job.kind, partition, device = %dev.name,
            srs_wait_ms = srs_time.as_millis() as u64, lock_wait_ms = lock_wait.as_millis() as u64,
            prove_ms = dt.as_millis() as u64, "partition proved"
        );
        match result {
            Ok(Ok(proofs)) if proofs.len() == 1 => {
                shared.metrics.add(
                    "filprove_partitions_total",
                    &[("kind", job.kind), ("stage", "proved")],
                    1.0,
                );
                if let Some(all) = job.record_proof(attempt, partition, proofs[0]) {
                    finalize(&shared, &job, &all);
                }
            }
            Ok(Ok(proofs)) => {
                job.partition_dropped();
                let e = EngineError::Internal(format!(
                    "backend returned {} proofs for 1 input",
                    proofs.len()
                ));
                shared.complete(&job, JobOutcome::Failed(e), Duration::ZERO);
            }
            Ok(Err(e)) => {
                job.partition_dropped();
                tracing::warn!(job = %job.id, partition, device = %dev.name, code = e.code(), error = %e, "prove failed");
                retry_or_fail(&shared, &job, EngineError::prove(&dev.name, &e));
            }
            Err(p) => {
                job.partition_dropped();
                let e = EngineError::Prove {
                    device: dev.name.clone(),
                    code: "prove_panic".into(),
                    message: panic_message(p),
                };
                retry_or_fail(&shared, &job, e);
            }
        }
    }
}

/// Assembles and verifies a job whose partitions are all proved.
fn finalize(shared: &Shared, job: &Arc<JobEntry>, proofs: &[Proof]) {
    // Ended meanwhile (cancelled): nothing to do.
    let Some(payload) = job.payload() else { return };
    let t = Instant::now();
    let result = payload
        .assemble(proofs)
        .and_then(|bytes| payload.verify(&bytes).map(|ok| (bytes, ok)));
    drop(payload);
    let dt = t.elapsed();
    match result {
        Ok((bytes, true)) => shared.complete(job, JobOutcome::Completed(bytes), dt),
        Ok((_, false)) => {
            tracing::warn!(job = %job.id, kind = job.kind, "proof failed verification");
            retry_or_fail(shared, job, EngineError::Verification { attempts: 2 });
        }
        Err(e) => shared.complete(job, JobOutcome::Failed(e), dt),
    }
}

/// Proves the job once more (all partitions) if this was its first attempt; fails it
/// with `error` otherwise.
fn retry_or_fail(shared: &Shared, job: &Arc<JobEntry>, error: EngineError) {
    match job.begin_retry(shared.devices.len()) {
        Some(attempt) => {
            tracing::warn!(job = %job.id, code = error.code(), "retrying the job once");
            shared
                .metrics
                .add("filprove_proof_retries_total", &[("kind", job.kind)], 1.0);
            shared.sched.enqueue_job(job, attempt);
        }
        None => shared.complete(job, JobOutcome::Failed(error), Duration::ZERO),
    }
}
