//! The human summary `filprove timeline` prints (and the HTML page repeats).

use std::fmt::Write as _;

use super::analyze::{Report, Stats};

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1} %", v * 100.0))
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}{unit}"))
}

fn secs(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

fn stats_line(s: &Stats) -> String {
    if s.count == 0 {
        return "none".into();
    }
    format!(
        "{}, total {:.3} s, mean {:.3} s, p50 {:.3} s, p90 {:.3} s, p99 {:.3} s, largest {:.3} s",
        s.count, s.total_s, s.mean_s, s.p50_s, s.p90_s, s.p99_s, s.max_s
    )
}

/// The summary; the per-partition table only when there are at most `max_rows` attempts.
pub fn summary(r: &Report, max_rows: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "log: {} lines, {} timeline events, {} GPU samples, {} partition summaries, {} other lines, {} skipped",
        r.lines, r.events, r.samples, r.summaries, r.other_lines, r.skipped_lines
    );
    for s in &r.skipped {
        let _ = writeln!(o, "  skipped line {}: {}", s.line, s.reason);
    }
    let _ = writeln!(
        o,
        "run: {} partition attempts proved, first to last event {:.3} s",
        r.partitions_proved, r.run_span_s
    );
    for d in &r.devices {
        let workers: Vec<String> = d.workers.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "\ndevice {} (workers {}): {} partitions over {:.3} s (from {:.3} s to {:.3} s)",
            d.device,
            if workers.is_empty() {
                "-".into()
            } else {
                workers.join(",")
            },
            d.partitions,
            d.span_s,
            d.start_at_s,
            d.end_at_s
        );
        let _ = writeln!(
            o,
            "  GPU busy (prove calls) {:.3} s = {}; kernel regions {:.3} s = {}",
            d.gpu_busy_s,
            pct(d.gpu_util),
            d.kernel_busy_s,
            pct(d.kernel_util)
        );
        let _ = writeln!(
            o,
            "  idle gaps between kernel regions: {}",
            stats_line(&d.idle_gaps)
        );
        let _ = writeln!(
            o,
            "  throughput: {} partitions/min, {} s/partition",
            opt(d.partitions_per_min, ""),
            secs(d.s_per_partition)
        );
        if let Some(s) = &d.gpu_samples {
            let _ = writeln!(
                o,
                "  NVML ({} samples, {} in kernel regions): SM util {} in kernel regions, {} idle; power {} mean, {} max; PCIe rx {} tx {}",
                s.count,
                s.in_kernel,
                opt(s.sm_util_kernel_mean, " %"),
                opt(s.sm_util_idle_mean, " %"),
                opt(s.power_w_mean, " W"),
                opt(s.power_w_max, " W"),
                opt(s.pcie_rx_mbps_mean, " MB/s"),
                opt(s.pcie_tx_mbps_mean, " MB/s")
            );
        }
    }
    for s in &r.other_gpus {
        let _ = writeln!(
            o,
            "\nGPU {} (samples, no timeline events): {} samples, SM util {} mean, power {} mean",
            s.ordinal,
            s.count,
            opt(s.sm_util_mean, " %"),
            opt(s.power_w_mean, " W")
        );
    }
    if !r.stages.is_empty() {
        let _ = writeln!(
            o,
            "\nper partition (s)   count     mean      p50      p90      max"
        );
        for st in &r.stages {
            let s = &st.stats;
            let _ = writeln!(
                o,
                "  {:<16} {:>6} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                st.stage, s.count, s.mean_s, s.p50_s, s.p90_s, s.max_s
            );
        }
    }
    if !r.partitions.is_empty() && r.partitions.len() <= max_rows {
        let _ = writeln!(
            o,
            "\n{:<20} {:>5} {:<10} {:>3} {:>9} {:>8} {:>8} {:>9} {:>8} {:>8}",
            "job",
            "part",
            "device",
            "wkr",
            "synthesis",
            "queue",
            "staging",
            "lock wait",
            "kernel",
            "gpu"
        );
        for p in &r.partitions {
            let job: String = p.job.chars().take(20).collect();
            let dev = p
                .device
                .as_deref()
                .and_then(|d| d.split_whitespace().next())
                .unwrap_or("-");
            let part = if p.attempt > 1 {
                format!("{}#{}", p.partition, p.attempt)
            } else {
                p.partition.to_string()
            };
            let _ = writeln!(
                o,
                "{job:<20} {part:>5} {dev:<10} {:>3} {:>9} {:>8} {:>8} {:>9} {:>8} {:>8}",
                p.worker.map_or("-".into(), |w| w.to_string()),
                secs(p.synthesis_s),
                secs(p.queue_s),
                secs(p.staging_s),
                secs(p.lock_wait_s),
                secs(p.kernel_s),
                secs(p.gpu_s)
            );
        }
    } else if !r.partitions.is_empty() {
        let _ = writeln!(
            o,
            "\n({} partition attempts: see --json for each)",
            r.partitions.len()
        );
    }
    o
}
