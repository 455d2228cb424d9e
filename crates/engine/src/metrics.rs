//! Prometheus metrics, kept with the `prometheus` crate in a registry per engine: counters
//! and histograms updated as work happens, gauges set from the engine's state when
//! scraped, rendered in the text exposition format (0.0.4).
//!
//! Names are `filprove_<what>_<base unit>`: `_seconds`, `_bytes`, `_ratio`, `_hertz`,
//! `_watts`; counters end in `_total`. docs/api.md lists every family.

use std::time::Duration;

use prometheus::{
    CounterVec, Encoder as _, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::engine::{DeviceStatus, QueueStatus};
use crate::gpu_sampler::GpuGauges;
use crate::EngineError;

/// Bucket bounds of the per-stage histogram, seconds: from a WinningPoSt partition's
/// queue wait to a 32 GiB PoRep's synthesis.
const STAGE_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Bucket bounds of the proof latency histogram, seconds: a WinningPoSt on a GPU (under a
/// second) to a 64 GiB PoRep on the CPU, up to Curio's default `ProveTimeout` (30 min).
pub const PROOF_BUCKETS: [f64; 16] = [
    0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 1200.0,
    1800.0,
];

/// The engine's metric families.
pub struct Metrics {
    registry: Registry,
    /// Jobs finished, by `kind` and `outcome` (completed, failed, cancelled).
    pub proofs: IntCounterVec,
    /// Partitions through a pipeline `stage` (synthesized, proved), by `kind`.
    pub partitions: IntCounterVec,
    /// Partition syntheses by `allocation`: reused buffers or new ones.
    pub partition_buffers: IntCounterVec,
    /// Kept partition buffers freed beyond the pool's bound.
    pub partition_buffers_released: IntCounter,
    /// Partitions the fast synthesis path could not synthesize (PoRep: the circuit twin,
    /// gadgets instead; SnapDeals: challenges in parallel, in order instead).
    pub twin_fallbacks: IntCounter,
    /// Jobs proved a second time, by `kind`.
    pub proof_retries: IntCounterVec,
    /// Partitions synthesized along the reference path for a retry after a failed
    /// verification, by `kind`.
    pub reference_syntheses: IntCounterVec,
    /// Host bytes of parameter sections released because every device holds them.
    pub srs_host_released: IntCounter,
    /// Seconds per completed job in each `stage`, by `kind`.
    pub stage_duration: HistogramVec,
    /// Seconds from submission to a verified proof, per completed job, by `kind`.
    pub proof_duration: HistogramVec,
    /// Seconds each `device` spent in backend prove calls.
    pub device_busy: CounterVec,
    /// Bytes between host and `device`, by `direction` and `host_memory`.
    pub device_transfer: IntCounterVec,
    /// Host waits for a `device`.
    pub device_host_syncs: IntCounterVec,
    /// Seconds per proof `phase`, by `device`.
    pub device_phase: CounterVec,
    /// Proofs that left the fast path, by `device`.
    pub device_fallbacks: IntCounterVec,
    /// Seconds prover workers waited for their `device`'s kernel lock.
    pub device_lock_wait: CounterVec,
    /// Failed proofs, by `device`.
    pub device_failures: IntCounterVec,
    /// Times a `device` was taken out of rotation.
    pub device_quarantines: IntCounterVec,
    device_healthy: IntGaugeVec,
    queue_depth: IntGaugeVec,
    pipeline_partitions: IntGaugeVec,
    memory_reserved: IntGauge,
    memory_limit: IntGauge,
    buffers_idle: IntGauge,
    srs_resident: IntGauge,
    srs_budget: IntGauge,
    uptime: Gauge,
    gpus: GpuGauges,
}

/// The engine's state read when metrics are scraped.
pub struct Readings<'a> {
    /// Jobs by kind, pending and in progress.
    pub queues: &'a [QueueStatus],
    /// The devices.
    pub devices: &'a [DeviceStatus],
    /// Partitions waiting for synthesis.
    pub synthesis_waiting: usize,
    /// Partitions waiting for a prover.
    pub prove_waiting: usize,
    /// Host bytes reserved by partitions.
    pub memory_reserved_bytes: u64,
    /// The partition budget.
    pub memory_limit_bytes: u64,
    /// Bytes of idle kept partition buffers.
    pub buffers_idle_bytes: u64,
    /// Parameter bytes resident.
    pub srs_resident_bytes: u64,
    /// The parameter budget.
    pub srs_budget_bytes: u64,
    /// Since the engine started.
    pub uptime: Duration,
}

fn internal(e: prometheus::Error) -> EngineError {
    EngineError::Internal(format!("metrics: {e}"))
}

/// Registers `collector` in `registry` and hands it back.
pub(crate) fn register<C: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    collector: C,
) -> Result<C, EngineError> {
    registry
        .register(Box::new(collector.clone()))
        .map_err(internal)?;
    Ok(collector)
}

/// Makes a family from its name and help with `make`, and registers it.
fn family<C: prometheus::core::Collector + Clone + 'static>(
    r: &Registry,
    name: &str,
    help: &str,
    make: impl FnOnce(Opts) -> prometheus::Result<C>,
) -> Result<C, EngineError> {
    register(r, make(Opts::new(name, help)).map_err(internal)?)
}

/// A histogram family with `buckets`.
fn histogram(
    labels: &'static [&'static str],
    buckets: &'static [f64],
) -> impl FnOnce(Opts) -> prometheus::Result<HistogramVec> {
    move |o| HistogramVec::new(HistogramOpts::from(o).buckets(buckets.to_vec()), labels)
}

impl Metrics {
    /// Every family, registered in a registry of their own.
    pub fn new() -> Result<Self, EngineError> {
        let r = Registry::new();
        Ok(Self {
            proofs: family(
                &r,
                "filprove_proofs_total",
                "Jobs finished, by proof kind and outcome (completed, failed, cancelled).",
                |o| IntCounterVec::new(o, &["kind", "outcome"]),
            )?,
            partitions: family(
                &r,
                "filprove_partitions_total",
                "Partitions through a pipeline stage (synthesized, proved), by proof kind.",
                |o| IntCounterVec::new(o, &["kind", "stage"]),
            )?,
            partition_buffers: family(
                &r,
                "filprove_partition_buffers_total",
                "Partition syntheses by allocation: reused (refilled a proved partition's kept, page-locked buffers) or new.",
                |o| IntCounterVec::new(o, &["allocation"]),
            )?,
            partition_buffers_released: family(
                &r,
                "filprove_partition_buffers_released_total",
                "Partition buffers kept beyond the pool's bound (reused_partition_buffers) and freed once no prover was staging or proving.",
                IntCounter::with_opts,
            )?,
            twin_fallbacks: family(
                &r,
                "filprove_synthesis_twin_fallbacks_total",
                "Partitions the fast synthesis path could not synthesize: PoRep partitions the circuit twin (native SHA-256 witness) left to storage-proofs' gadgets, SnapDeals partitions whose challenges could not run in parallel and were synthesized in order.",
                IntCounter::with_opts,
            )?,
            proof_retries: family(
                &r,
                "filprove_proof_retries_total",
                "Jobs proved a second time after a failed verification or prove error.",
                |o| IntCounterVec::new(o, &["kind"]),
            )?,
            reference_syntheses: family(
                &r,
                "filprove_synthesis_reference_partitions_total",
                "Partitions synthesized along the reference path (storage-proofs' gadgets) for the retry of a job whose first proof failed verification.",
                |o| IntCounterVec::new(o, &["kind"]),
            )?,
            srs_host_released: family(
                &r,
                "filprove_srs_host_released_bytes_total",
                "Host bytes of parameter proving sections released because every device holds them (engine.release_host_parameters).",
                IntCounter::with_opts,
            )?,
            stage_duration: family(
                &r,
                "filprove_stage_duration_seconds",
                "Time per completed job in each stage (queue_wait, srs_load, synthesis, prove, verify, total).",
                histogram(&["kind", "stage"], &STAGE_BUCKETS),
            )?,
            proof_duration: family(
                &r,
                "filprove_proof_duration_seconds",
                "Time from submission to a verified proof, per completed job, by proof kind.",
                histogram(&["kind"], &PROOF_BUCKETS),
            )?,
            device_busy: family(
                &r,
                "filprove_device_busy_seconds_total",
                "Seconds each device spent inside the kernel region (backend prove calls).",
                |o| CounterVec::new(o, &["device"]),
            )?,
            device_transfer: family(
                &r,
                "filprove_device_transfer_bytes_total",
                "Bytes moved between host and device, by device, direction (h2d, d2h) and host memory (pinned, pageable).",
                |o| IntCounterVec::new(o, &["device", "direction", "host_memory"]),
            )?,
            device_host_syncs: family(
                &r,
                "filprove_device_host_syncs_total",
                "Times the host waited for a device during proofs.",
                |o| IntCounterVec::new(o, &["device"]),
            )?,
            device_phase: family(
                &r,
                "filprove_device_phase_seconds_total",
                "Seconds per proof phase (stage, ntt_h, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, ...), by device.",
                |o| CounterVec::new(o, &["device", "phase"]),
            )?,
            device_fallbacks: family(
                &r,
                "filprove_device_fallbacks_total",
                "Proofs that left the fast path (uploads inside the kernel region, streamed parameters), by device.",
                |o| IntCounterVec::new(o, &["device"]),
            )?,
            device_lock_wait: family(
                &r,
                "filprove_device_lock_wait_seconds_total",
                "Seconds prover workers waited for their device's kernel lock.",
                |o| CounterVec::new(o, &["device"]),
            )?,
            device_failures: family(
                &r,
                "filprove_device_failures_total",
                "Proofs that failed on the device (errors and panics of the backend).",
                |o| IntCounterVec::new(o, &["device"]),
            )?,
            device_quarantines: family(
                &r,
                "filprove_device_quarantines_total",
                "Times the device was taken out of rotation (failures in a row, or by an operator).",
                |o| IntCounterVec::new(o, &["device"]),
            )?,
            device_healthy: family(
                &r,
                "filprove_device_healthy",
                "1 while the device is in rotation, 0 while it is quarantined.",
                |o| IntGaugeVec::new(o, &["device"]),
            )?,
            queue_depth: family(
                &r,
                "filprove_queue_depth",
                "Jobs by proof kind and state (pending, in_progress).",
                |o| IntGaugeVec::new(o, &["kind", "state"]),
            )?,
            pipeline_partitions: family(
                &r,
                "filprove_pipeline_partitions",
                "Partitions waiting in the pipeline, by stage (synthesis, prove).",
                |o| IntGaugeVec::new(o, &["stage"]),
            )?,
            memory_reserved: family(
                &r,
                "filprove_memory_reserved_bytes",
                "Host memory reserved by partitions in flight.",
                IntGauge::with_opts,
            )?,
            memory_limit: family(
                &r,
                "filprove_memory_limit_bytes",
                "The host memory budget for partitions.",
                IntGauge::with_opts,
            )?,
            buffers_idle: family(
                &r,
                "filprove_partition_buffers_idle_bytes",
                "Host memory held by kept partition buffers waiting for a synthesis (counted against the budget).",
                IntGauge::with_opts,
            )?,
            srs_resident: family(
                &r,
                "filprove_srs_resident_bytes",
                "Parameter bytes resident in memory.",
                IntGauge::with_opts,
            )?,
            srs_budget: family(
                &r,
                "filprove_srs_budget_bytes",
                "The parameter residency budget.",
                IntGauge::with_opts,
            )?,
            uptime: family(
                &r,
                "filprove_uptime_seconds",
                "Seconds since the engine started.",
                Gauge::with_opts,
            )?,
            gpus: GpuGauges::new(&r)?,
            registry: r,
        })
    }

    /// Sets the gauges from `now` and the GPU samples, and renders every family.
    pub fn render(&self, now: &Readings<'_>) -> String {
        self.queue_depth.reset();
        for q in now.queues {
            for (state, v) in [("pending", q.pending), ("in_progress", q.in_progress)] {
                self.queue_depth
                    .with_label_values(&[q.kind.as_str(), state])
                    .set(v as i64);
            }
        }
        self.device_healthy.reset();
        for d in now.devices {
            self.device_healthy
                .with_label_values(&[d.name.as_str()])
                .set(i64::from(d.health.quarantined.is_none()));
        }
        for (stage, v) in [
            ("synthesis", now.synthesis_waiting),
            ("prove", now.prove_waiting),
        ] {
            self.pipeline_partitions
                .with_label_values(&[stage])
                .set(v as i64);
        }
        let bytes = |g: &IntGauge, v: u64| g.set(i64::try_from(v).unwrap_or(i64::MAX));
        bytes(&self.memory_reserved, now.memory_reserved_bytes);
        bytes(&self.memory_limit, now.memory_limit_bytes);
        bytes(&self.buffers_idle, now.buffers_idle_bytes);
        bytes(&self.srs_resident, now.srs_resident_bytes);
        bytes(&self.srs_budget, now.srs_budget_bytes);
        self.uptime.set(now.uptime.as_secs_f64());
        // A process-wide count kept by the Filecoin crate; the counter follows it.
        let fallbacks = filprove_filecoin::twin_fallbacks();
        self.twin_fallbacks
            .inc_by(fallbacks.saturating_sub(self.twin_fallbacks.get()));
        self.gpus.update(&crate::gpu_sampler::latest_samples());
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "cannot render the metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The Content-Type of [`Metrics::render`]'s text.
pub fn content_type() -> &'static str {
    prometheus::TEXT_FORMAT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readings() -> Readings<'static> {
        Readings {
            queues: &[],
            devices: &[],
            synthesis_waiting: 0,
            prove_waiting: 0,
            memory_reserved_bytes: 42,
            memory_limit_bytes: 1 << 30,
            buffers_idle_bytes: 0,
            srs_resident_bytes: 0,
            srs_budget_bytes: 0,
            uptime: Duration::from_millis(1500),
        }
    }

    #[test]
    fn renders_counters_histograms_gauges() {
        let m = Metrics::new().unwrap();
        m.proofs.with_label_values(&["porep", "completed"]).inc();
        m.stage_duration
            .with_label_values(&["porep", "total"])
            .observe(0.2);
        m.proof_duration.with_label_values(&["porep"]).observe(42.0);
        m.device_busy.with_label_values(&["cpu"]).inc_by(1.5);
        let text = m.render(&readings());
        assert!(
            text.contains("filprove_proofs_total{kind=\"porep\",outcome=\"completed\"} 1\n"),
            "{text}"
        );
        assert!(text.contains(
            "filprove_stage_duration_seconds_bucket{kind=\"porep\",stage=\"total\",le=\"0.25\"} 1\n"
        ), "{text}");
        assert!(text.contains(
            "filprove_stage_duration_seconds_bucket{kind=\"porep\",stage=\"total\",le=\"0.1\"} 0\n"
        ), "{text}");
        assert!(
            text.contains("filprove_proof_duration_seconds_bucket{kind=\"porep\",le=\"30\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("filprove_proof_duration_seconds_bucket{kind=\"porep\",le=\"60\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("filprove_proof_duration_seconds_count{kind=\"porep\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("filprove_memory_reserved_bytes 42\n"),
            "{text}"
        );
        assert!(text.contains("filprove_uptime_seconds 1.5\n"), "{text}");
        assert!(
            text.contains("# TYPE filprove_device_busy_seconds_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE filprove_proof_duration_seconds histogram\n"),
            "{text}"
        );
    }
}
