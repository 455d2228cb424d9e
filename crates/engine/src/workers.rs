//! The worker threads: synthesis workers (CPU) and prover workers (one group per device,
//! sharing the device's kernel lock), and how a job is finished, retried or failed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use filprove_groth16::{Direction, Proof, ProofInput, ProveReport, Randomness};

use crate::engine::Shared;
use crate::job::JobOutcome;
use crate::sched::ProveTask;
use crate::tracker::JobEntry;
use crate::EngineError;

/// A panic's message, clipped (a panic may print the values it compared).
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| filprove_filecoin::excerpt::clip(s))
        .or_else(|| {
            p.downcast_ref::<String>()
                .map(|s| filprove_filecoin::excerpt::clip(s))
        })
        .unwrap_or_else(|| "unknown panic".into())
}

/// A synthesis worker: takes the most urgent partition whose memory fits, synthesizes it
/// and queues it for a prover. An express worker takes only HIGH and CRITICAL work.
pub(crate) fn synthesis_worker(shared: Arc<Shared>, express: bool) {
    let buffers = shared.sched.buffers.clone();
    while let Some((task, reservation, shell)) = shared.sched.next_synth(express) {
        let job = task.job.clone();
        let Some(payload) = job.payload() else {
            buffers.put(shell);
            continue;
        };
        if !job.start_partition(task.attempt) {
            buffers.put(shell);
            continue;
        }
        timeline("synth_start", &job.id, task.partition, None);
        let t = Instant::now();
        // A cancel (or the job's failure elsewhere) stops this synthesis at its next
        // check instead of letting it run to the end.
        // The synthesis refills a proved partition's assignment when one was kept
        // (filprove_groth16::recycle): no new allocation, and its page-locking stays.
        let offered = shell.is_some();
        let reference = job.reference_synthesis();
        if reference {
            tracing::warn!(
                job = %job.id, kind = job.kind, partition = task.partition,
                "synthesizing along the reference path (the first proof failed verification)"
            );
            shared
                .metrics
                .reference_syntheses
                .with_label_values(&[job.kind])
                .inc();
        }
        let synthesize = || {
            filprove_groth16::recycle::with_shell(shell, || {
                filprove_groth16::cancel::with_cancel_flag(job.stop_flag(), || {
                    catch_unwind(AssertUnwindSafe(|| {
                        if reference {
                            payload.synthesize_reference(task.partition)
                        } else {
                            payload.synthesize(task.partition)
                        }
                    }))
                })
            })
        };
        // Regular work runs its parallel parts on the bulk pool (the shell and the cancel
        // flag are thread-local: they are set on the pool's thread that runs it).
        let (result, left) = match (&shared.bulk_pool, express) {
            (Some(pool), false) => pool.install(synthesize),
            _ => synthesize(),
        };
        let reused = offered && left.is_none();
        buffers.put(left);
        shared
            .metrics
            .partition_buffers
            .with_label_values(&[if reused { "reused" } else { "new" }])
            .inc();
        let dt = t.elapsed();
        timeline("synth_end", &job.id, task.partition, None);
        job.add_times(Duration::ZERO, dt, Duration::ZERO);
        tracing::info!(
            job = %job.id, kind = job.kind, partition = task.partition,
            synthesis_ms = dt.as_millis() as u64, "partition synthesized"
        );
        match result {
            Ok(Ok(assignment)) => {
                drop(payload);
                shared
                    .metrics
                    .partitions
                    .with_label_values(&[job.kind, "synthesized"])
                    .inc();
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

/// Microseconds since the UNIX epoch, for timeline events.
fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// One timeline event (docs/timeline.md): `gpu` is (device name, worker index).
fn timeline(ev: &'static str, job: &str, partition: usize, gpu: Option<(&str, usize)>) {
    match gpu {
        Some((device, worker)) => tracing::info!(
            target: "filprove::timeline", ev, job, partition, device, worker, t_us = now_us(), "timeline"
        ),
        None => tracing::info!(
            target: "filprove::timeline", ev, job, partition, t_us = now_us(), "timeline"
        ),
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// The per-partition timing line: every phase, the transfer inventory, host syncs.
fn log_partition(
    job: &JobEntry,
    partition: usize,
    device: &str,
    worker: usize,
    lock_wait: Duration,
    total: Duration,
    r: &ProveReport,
) {
    let phase = |n: &str| r.phase(n).map(ms).unwrap_or(0.0);
    let h2d = |p: Option<bool>| r.bytes(Direction::HostToDevice, p);
    tracing::info!(
        target: "filprove::timeline",
        job = %job.id, kind = job.kind, partition, device, worker,
        stage_ms = phase("stage"), stage_register_ms = phase("stage_register"),
        stage_copy_ms = phase("stage_copy"), stage_copy_wait_ms = phase("stage_copy_wait"),
        lock_wait_ms = ms(lock_wait), slot_wait_ms = phase("slot_wait"),
        upload_ms = phase("upload"),
        srs_upload_ms = phase("srs_upload"), stage_wait_ms = phase("stage_wait"),
        region_setup_ms = phase("region_setup"), ntt_h_ms = phase("ntt_h"),
        msm_h_ms = phase("msm_h"), msm_l_ms = phase("msm_l"),
        msm_a_ms = phase("msm_a"), msm_b_g1_ms = phase("msm_b_g1"),
        msm_b_g2_ms = phase("msm_b_g2"), result_wait_ms = phase("result_wait"),
        region_tail_ms = phase("region_tail"),
        region_register_ms = phase("region_register"),
        region_ms = phase("region"), prove_ms = phase("prove"), total_ms = ms(total),
        h2d_bytes = h2d(None), h2d_pinned_bytes = h2d(Some(true)),
        h2d_pageable_bytes = h2d(Some(false)),
        d2h_bytes = r.bytes(Direction::DeviceToHost, None),
        host_syncs = r.host_syncs, count_reads = r.count_reads,
        peak_device_bytes = r.peak_device_bytes,
        transfers = %r.transfers_summary(),
        fallbacks = %r.fallbacks.join("; "),
        "partition"
    );
}

fn record_report(shared: &Shared, device: &str, r: &ProveReport) {
    for t in &r.transfers {
        let dir = match t.direction {
            Direction::HostToDevice => "h2d",
            Direction::DeviceToHost => "d2h",
        };
        let mem = if t.pinned { "pinned" } else { "pageable" };
        shared
            .metrics
            .device_transfer
            .with_label_values(&[device, dir, mem])
            .inc_by(t.bytes);
    }
    shared
        .metrics
        .device_host_syncs
        .with_label_values(&[device])
        .inc_by(u64::from(r.host_syncs));
    for (name, d) in &r.phases {
        shared
            .metrics
            .device_phase
            .with_label_values(&[device, name])
            .inc_by(d.as_secs_f64());
    }
    if !r.fallbacks.is_empty() {
        shared
            .metrics
            .device_fallbacks
            .with_label_values(&[device])
            .inc();
    }
}

/// A prover worker (`worker` of device `device`): takes the most urgent synthesized
/// partition, leases its parameters, stages it (pinning and uploads on the copy stream,
/// before the lock), proves it inside the device's kernel lock, and finishes the job when
/// it was the last partition.
pub(crate) fn prover_worker(shared: Arc<Shared>, device: usize, worker: usize) {
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
        let gpu = Some((dev.name.as_str(), worker));
        let t_total = Instant::now();
        // From here until the kernel lock is released a region is running or about to.
        let contender = dev.contend();
        timeline("stage_start", &job.id, task.partition, gpu);
        let staged = catch_unwind(AssertUnwindSafe(|| {
            dev.backend.stage(lease.srs(), &task.assignment)
        }));
        timeline("stage_end", &job.id, task.partition, gpu);
        timeline("lock_wait", &job.id, task.partition, gpu);
        let wait_start = Instant::now();
        let kernel = dev.kernel_lock.lock().unwrap_or_else(|p| p.into_inner());
        let lock_wait = wait_start.elapsed();
        timeline("lock_acquired", &job.id, task.partition, gpu);
        dev.set_current(Some((job.id.clone(), job.kind)));
        let t = Instant::now();
        let randomness = Randomness::random(&mut rand::thread_rng());
        timeline("gpu_start", &job.id, task.partition, gpu);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let staged = staged.map_err(|p| {
                filprove_groth16::ProveError::Invalid(format!(
                    "staging panicked: {}",
                    panic_message(p)
                ))
            })??;
            dev.backend.prove_staged(
                lease.srs(),
                ProofInput {
                    assignment: &task.assignment,
                    randomness,
                },
                staged,
            )
        }));
        let dt = t.elapsed();
        timeline("gpu_end", &job.id, task.partition, gpu);
        drop(kernel);
        drop(contender);
        timeline("lock_released", &job.id, task.partition, gpu);
        // The partition's buffers and host registrations, freed outside the lock.
        dev.backend.release_finished();
        dev.set_current(None);
        dev.add_busy(dt);
        job.note_device(device);
        shared
            .metrics
            .device_busy
            .with_label_values(&[dev.name.as_str()])
            .inc_by(dt.as_secs_f64());
        shared
            .metrics
            .device_lock_wait
            .with_label_values(&[dev.name.as_str()])
            .inc_by(lock_wait.as_secs_f64());
        drop(lease);
        let ProveTask {
            attempt,
            partition,
            assignment,
            reservation,
            ..
        } = task;
        // The assignment is kept for the next synthesis (before the reservation goes, so
        // the synthesis that the release admits finds it); the rest of the partition's
        // memory is freed before assembling.
        shared.sched.buffers.put(Some(assignment));
        // Buffers beyond the pool's bound (the end of a burst) go when no region runs.
        shared.free_surplus_if_idle();
        drop(reservation);
        job.add_times(srs_time, Duration::ZERO, dt);
        if let Ok(Ok((_, report))) = &result {
            record_report(&shared, &dev.name, report);
            log_partition(
                &job,
                partition,
                &dev.name,
                worker,
                lock_wait,
                t_total.elapsed(),
                report,
            );
        }
        timeline("partition_done", &job.id, partition, gpu);
        tracing::info!(
            job = %job.id, kind = job.kind, partition, device = %dev.name,
            srs_wait_ms = srs_time.as_millis() as u64, lock_wait_ms = lock_wait.as_millis() as u64,
            prove_ms = dt.as_millis() as u64, "partition proved"
        );
        match (&result, dev.new_fault()) {
            // A fault NVML reported meanwhile: the device is not to be trusted until an
            // operator brings it back (the proof, if any, is verified as every proof is).
            (_, Some(fault)) => record_device_failure(&shared, device, Failure::Fault, &fault),
            (Ok(Ok(_)), None) => shared.sched.placement.record_success(device),
            // Parameters the host released and the device lost: no fault of the device.
            (Ok(Err(filprove_groth16::ProveError::ParametersOffHost { .. })), None) => {}
            (Ok(Err(e)), None) => record_device_failure(
                &shared,
                device,
                Failure::Proof,
                &format!("{}: {e}", e.code()),
            ),
            (Err(_), None) => {
                record_device_failure(&shared, device, Failure::Proof, "the prove call panicked")
            }
        }
        match result {
            Ok(Ok((proof, _))) => {
                shared
                    .metrics
                    .partitions
                    .with_label_values(&[job.kind, "proved"])
                    .inc();
                if shared.release_host_parameters {
                    release_host_parameters(&shared, &job.circuit_id);
                }
                if let Some(all) = job.record_proof(attempt, partition, proof) {
                    finalize(&shared, &job, &all);
                }
            }
            Ok(Err(e)) => {
                job.partition_dropped();
                tracing::warn!(job = %job.id, partition, device = %dev.name, code = e.code(), error = %e, "prove failed");
                if matches!(e, filprove_groth16::ProveError::ParametersOffHost { .. }) {
                    // The device lost the set the host had released: read it again.
                    shared.srs.invalidate(&job.circuit_id);
                }
                retry_or_fail(&shared, &job, EngineError::prove(&dev.name, &e), false);
            }
            Err(p) => {
                job.partition_dropped();
                let e = EngineError::Prove {
                    device: dev.name.clone(),
                    code: "prove_panic".into(),
                    message: panic_message(p),
                };
                retry_or_fail(&shared, &job, e, false);
            }
        }
    }
}

/// Counts a failure against device `device` and takes it out of rotation when it says
/// so: a hardware fault (`Failure::Fault`) at once, the last device in rotation too (a
/// faulty GPU must not prove, and `/readyz` then says so); a failed proof when it makes
/// too many in a row (EngineConfig::quarantine_after_failures).
fn record_device_failure(shared: &Shared, device: usize, failure: Failure, why: &str) {
    let name = shared.devices[device].name.as_str();
    shared
        .metrics
        .device_failures
        .with_label_values(&[name])
        .inc();
    let placement = &shared.sched.placement;
    let taken_out = match failure {
        Failure::Fault => matches!(placement.quarantine(device, why), Ok(true)),
        Failure::Proof => placement.record_failure(device, why),
    };
    if taken_out {
        tracing::error!(device = %name, reason = why, "device taken out of rotation: its work goes to the other devices (POST /devices/<ordinal>/restore brings it back)");
        shared
            .metrics
            .device_quarantines
            .with_label_values(&[name])
            .inc();
        shared.sched.wake_provers();
    }
}

/// What went wrong on a device.
#[derive(Clone, Copy)]
enum Failure {
    /// A hardware fault NVML reported.
    Fault,
    /// A failed prove call.
    Proof,
}

/// Releases the host copy of `circuit_id`'s proving sections once every device holds
/// them (EngineConfig::release_host_parameters).
pub(crate) fn release_host_parameters(shared: &Shared, circuit_id: &str) {
    let released = shared
        .srs
        .release_host_sections(circuit_id, |full, vk_only| {
            shared
                .devices
                .iter()
                .all(|d| d.backend.hold_parameters(full, vk_only))
        });
    if released > 0 {
        shared.metrics.srs_host_released.inc_by(released);
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
            // The parameters may be what is wrong (a corrupt read, a file replaced since):
            // the retry, and every later job, gets them re-read from the file. So may the
            // fast synthesis path: the retry synthesizes along the reference path.
            shared.srs.invalidate(&job.circuit_id);
            retry_or_fail(shared, job, EngineError::Verification { attempts: 2 }, true);
        }
        Err(e) => shared.complete(job, JobOutcome::Failed(e), dt),
    }
}

/// Proves the job once more (all partitions; synthesized along the reference path when
/// `reference`) if this was its first attempt; fails it with `error` otherwise.
fn retry_or_fail(shared: &Shared, job: &Arc<JobEntry>, error: EngineError, reference: bool) {
    match job.begin_retry(shared.devices.len(), reference) {
        Some(attempt) => {
            tracing::warn!(job = %job.id, code = error.code(), "retrying the job once");
            shared
                .metrics
                .proof_retries
                .with_label_values(&[job.kind])
                .inc();
            shared.sched.enqueue_job(job, attempt);
        }
        None => shared.complete(job, JobOutcome::Failed(error), Duration::ZERO),
    }
}
