//! Prometheus metrics: counters and histograms kept by the engine, rendered in the text
//! exposition format (version 0.0.4) together with gauges read at render time.
//!
//! Names follow `filprove_<what>_<unit>` and `_total` for counters.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Histogram bucket bounds, seconds: from a WinningPoSt partition to a 32 GiB PoRep.
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Every metric family: name, type, help.
const FAMILIES: &[(&str, &str, &str)] = &[
    (
        "filprove_proofs_total",
        "counter",
        "Jobs finished, by proof kind and outcome (completed, failed, cancelled).",
    ),
    (
        "filprove_partitions_total",
        "counter",
        "Partitions through a pipeline stage (synthesized, proved), by proof kind.",
    ),
    (
        "filprove_partition_buffers_total",
        "counter",
        "Partition syntheses by allocation: reused (refilled a proved partition's kept, page-locked buffers) or new.",
    ),
    (
        "filprove_partition_buffers_released_total",
        "counter",
        "Partition buffers kept beyond the pool's bound (reused_partition_buffers) and freed once no prover was staging or proving.",
    ),
    (
        "filprove_proof_retries_total",
        "counter",
        "Jobs proved a second time after a failed verification or prove error.",
    ),
    (
        "filprove_stage_duration_seconds",
        "histogram",
        "Time per job in each stage (queue_wait, srs_load, synthesis, prove, verify, total).",
    ),
    (
        "filprove_device_busy_seconds_total",
        "counter",
        "Seconds each device spent inside the kernel region (backend prove calls).",
    ),
    (
        "filprove_device_transfer_bytes_total",
        "counter",
        "Bytes moved between host and device, by device, direction (h2d, d2h) and host memory (pinned, pageable).",
    ),
    (
        "filprove_device_host_syncs_total",
        "counter",
        "Times the host waited for a device during proofs.",
    ),
    (
        "filprove_device_phase_seconds_total",
        "counter",
        "Seconds per proof phase (stage, ntt_h, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, ...), by device.",
    ),
    (
        "filprove_device_fallbacks_total",
        "counter",
        "Proofs that left the fast path (uploads inside the kernel region, streamed parameters), by device.",
    ),
    (
        "filprove_device_lock_wait_seconds_total",
        "counter",
        "Seconds prover workers waited for their device's kernel lock.",
    ),
    (
        "filprove_queue_depth",
        "gauge",
        "Jobs by proof kind and state (pending, in_progress).",
    ),
    (
        "filprove_pipeline_partitions",
        "gauge",
        "Partitions waiting in the pipeline, by stage (synthesis, prove).",
    ),
    (
        "filprove_memory_reserved_bytes",
        "gauge",
        "Host memory reserved by partitions in flight.",
    ),
    (
        "filprove_memory_limit_bytes",
        "gauge",
        "The host memory budget for partitions.",
    ),
    (
        "filprove_partition_buffers_idle_bytes",
        "gauge",
        "Host memory held by kept partition buffers waiting for a synthesis (counted against the budget).",
    ),
    (
        "filprove_srs_resident_bytes",
        "gauge",
        "Parameter bytes resident in memory.",
    ),
    (
        "filprove_srs_budget_bytes",
        "gauge",
        "The parameter residency budget.",
    ),
    (
        "filprove_uptime_seconds",
        "gauge",
        "Seconds since the engine started.",
    ),
];

#[derive(Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

type Key = (&'static str, String);

/// The engine's counters and histograms.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<Key, f64>>,
    histograms: Mutex<BTreeMap<Key, Histogram>>,
}

/// Renders `a="x",b="y"` with label values escaped.
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let v = v
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = write!(out, "{k}=\"{v}\"");
    }
    out
}

impl Metrics {
    /// Adds `v` to a counter.
    pub fn add(&self, name: &'static str, pairs: &[(&str, &str)], v: f64) {
        let mut c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *c.entry((name, labels(pairs))).or_default() += v;
    }

    /// Records one observation (seconds) in a histogram.
    pub fn observe(&self, name: &'static str, pairs: &[(&str, &str)], seconds: f64) {
        let mut h = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let h = h.entry((name, labels(pairs))).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
    }

    /// A counter's value (0 when never set).
    pub fn counter(&self, name: &'static str, pairs: &[(&str, &str)]) -> f64 {
        let c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        c.get(&(name, labels(pairs))).copied().unwrap_or(0.0)
    }

    /// The text exposition of everything, with `gauges` (name, labels, value) added.
    pub fn render(&self, gauges: &[(&'static str, String, f64)]) -> String {
        let counters = self
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let histograms = self
            .histograms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut out = String::new();
        for (name, kind, help) in FAMILIES {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let sample = |out: &mut String, suffix: &str, l: &str, v: f64| {
                if l.is_empty() {
                    let _ = writeln!(out, "{name}{suffix} {v}");
                } else {
                    let _ = writeln!(out, "{name}{suffix}{{{l}}} {v}");
                }
            };
            for ((n, l), v) in &counters {
                if n == name {
                    sample(&mut out, "", l, *v);
                }
            }
            for ((n, l), h) in &histograms {
                if n != name {
                    continue;
                }
                let sep = if l.is_empty() { "" } else { "," };
                for (i, b) in BUCKETS.iter().enumerate() {
                    let _ = writeln!(out, "{name}_bucket{{{l}{sep}le=\"{b}\"}} {}", h.counts[i]);
                }
                let _ = writeln!(out, "{name}_bucket{{{l}{sep}le=\"+Inf\"}} {}", h.count);
                sample(&mut out, "_sum", l, h.sum);
                sample(&mut out, "_count", l, h.count as f64);
            }
            for (n, l, v) in gauges {
                if n == name {
                    sample(&mut out, "", l, *v);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_gauges() {
        let m = Metrics::default();
        m.add(
            "filprove_proofs_total",
            &[("kind", "porep"), ("outcome", "completed")],
            1.0,
        );
        m.observe(
            "filprove_stage_duration_seconds",
            &[("kind", "porep"), ("stage", "total")],
            0.2,
        );
        let text = m.render(&[("filprove_memory_reserved_bytes", String::new(), 42.0)]);
        assert!(text.contains("filprove_proofs_total{kind=\"porep\",outcome=\"completed\"} 1"));
        assert!(text.contains(
            "filprove_stage_duration_seconds_bucket{kind=\"porep\",stage=\"total\",le=\"0.25\"} 1"
        ));
        assert!(text.contains(
            "filprove_stage_duration_seconds_bucket{kind=\"porep\",stage=\"total\",le=\"0.1\"} 0"
        ));
        assert!(text
            .contains("filprove_stage_duration_seconds_count{kind=\"porep\",stage=\"total\"} 1"));
        assert!(text.contains("filprove_memory_reserved_bytes 42"));
        assert!(text.contains("# TYPE filprove_device_busy_seconds_total counter"));
    }
}
