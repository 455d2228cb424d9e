//! From events to numbers: per partition (attempt) the stage times, per device the span,
//! GPU and kernel-region utilisation, idle gaps between kernel regions, throughput, and
//! what NVML saw while kernel regions ran and while they did not.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Ev, Log, Sample};

/// The whole analysis (written as JSON by `filprove timeline --json`). Times are seconds;
/// `*_at_s` fields and intervals are seconds from `t0_us`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Non-empty lines read.
    pub lines: usize,
    /// Lines of other targets or messages.
    pub other_lines: usize,
    /// Unreadable lines.
    pub skipped_lines: usize,
    /// The first few, with why.
    pub skipped: Vec<Skipped>,
    /// Timeline events read.
    pub events: usize,
    /// GPU samples read.
    pub samples: usize,
    /// Partition summaries read.
    pub summaries: usize,
    /// The time origin, µs since the UNIX epoch: the first timeline event (without any,
    /// the first sample).
    pub t0_us: u64,
    /// First to last timeline event.
    pub run_span_s: f64,
    /// Partition attempts whose prove call (or kernel region) ended.
    pub partitions_proved: usize,
    /// Stage statistics over all partitions, in pipeline order (synthesis, queue, staging
    /// with its parts stage_wait and stage_copy, lock_wait, kernel, gpu; those seen).
    pub stages: Vec<StageStats>,
    /// One entry per device that proved.
    pub devices: Vec<DeviceReport>,
    /// GPUs with samples but no timeline events (not used by the engine, or another process).
    pub other_gpus: Vec<SampleStats>,
    /// One entry per partition attempt, in order of its first event.
    pub partitions: Vec<PartitionReport>,
}

/// A line that could not be read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// One stage's statistics over all partitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageStats {
    /// synthesis, queue, staging, stage_wait, stage_copy, lock_wait, kernel or gpu.
    pub stage: &'static str,
    /// Its durations.
    #[serde(flatten)]
    pub stats: Stats,
}

/// Count, mean and percentiles of a set of durations (s).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// How many.
    pub count: usize,
    /// Sum.
    pub total_s: f64,
    /// Mean.
    pub mean_s: f64,
    /// Median (nearest rank).
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

/// One device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    /// The engine's name ("cuda:0 NVIDIA H200", "cpu").
    pub device: String,
    /// The CUDA ordinal ("cuda:N"), which GPU samples are matched by.
    pub ordinal: Option<u64>,
    /// Prover workers seen.
    pub workers: Vec<u64>,
    /// Partition attempts proved here.
    pub partitions: usize,
    /// First prover-side event (stage_start, lock_wait, lock_acquired or gpu_start).
    pub start_at_s: f64,
    /// Last kernel-region or prove-call end.
    pub end_at_s: f64,
    /// `end - start`: the span utilisations are relative to.
    pub span_s: f64,
    /// Union of [gpu_start, gpu_end].
    pub gpu_busy_s: f64,
    /// `gpu_busy_s / span_s`.
    pub gpu_util: Option<f64>,
    /// Union of [lock_acquired, lock_released].
    pub kernel_busy_s: f64,
    /// `kernel_busy_s / span_s`.
    pub kernel_util: Option<f64>,
    /// Idle gaps between consecutive kernel regions.
    pub idle_gaps: Stats,
    /// Partitions per minute over the span.
    pub partitions_per_min: Option<f64>,
    /// Span per partition.
    pub s_per_partition: Option<f64>,
    /// NVML samples within the span, when there are any.
    pub gpu_samples: Option<SampleStats>,
    /// The merged kernel regions, [start, end] from t0.
    pub kernel_regions: Vec<[f64; 2]>,
}

/// Means of a GPU's NVML samples; SM utilisation split by whether a kernel region (or,
/// without lock events, a prove call) was running.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SampleStats {
    /// CUDA ordinal.
    pub ordinal: u64,
    /// Samples counted.
    pub count: usize,
    /// Of which inside a kernel region.
    pub in_kernel: usize,
    /// Mean SM utilisation, %.
    pub sm_util_mean: Option<f64>,
    /// Mean SM utilisation inside kernel regions.
    pub sm_util_kernel_mean: Option<f64>,
    /// Mean SM utilisation outside them.
    pub sm_util_idle_mean: Option<f64>,
    /// Mean memory utilisation, %.
    pub mem_util_mean: Option<f64>,
    /// Mean power, W.
    pub power_w_mean: Option<f64>,
    /// Highest power sample, W.
    pub power_w_max: Option<f64>,
    /// Mean PCIe host to device, MB/s.
    pub pcie_rx_mbps_mean: Option<f64>,
    /// Mean PCIe device to host, MB/s.
    pub pcie_tx_mbps_mean: Option<f64>,
    /// Mean SM clock, MHz.
    pub sm_clock_mhz_mean: Option<f64>,
    /// Most device memory used, MiB.
    pub mem_used_mib_max: Option<f64>,
}

/// One attempt at one partition.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionReport {
    /// Job id.
    pub job: String,
    /// Partition index.
    pub partition: u64,
    /// 1, or 2.. when the job was proved again.
    pub attempt: u32,
    /// Device that proved it.
    pub device: Option<String>,
    /// Prover worker.
    pub worker: Option<u64>,
    /// Each event seen, seconds from t0.
    pub events_at_s: BTreeMap<&'static str, f64>,
    /// synth_start to synth_end.
    pub synthesis_s: Option<f64>,
    /// synth_end to the prover picking it up (first of stage_start, lock_wait,
    /// lock_acquired, gpu_start).
    pub queue_s: Option<f64>,
    /// stage_start to stage_end.
    pub staging_s: Option<f64>,
    /// lock_wait to lock_acquired.
    pub lock_wait_s: Option<f64>,
    /// lock_acquired to lock_released.
    pub kernel_s: Option<f64>,
    /// gpu_start to gpu_end.
    pub gpu_s: Option<f64>,
    /// The `partition` summary event's other fields, as logged.
    pub summary: Option<Map<String, Value>>,
}

impl PartitionReport {
    /// An event's time (s from t0).
    pub fn at(&self, ev: Ev) -> Option<f64> {
        self.events_at_s.get(ev.name()).copied()
    }

    /// When the prover picked it up.
    pub fn picked_at(&self) -> Option<f64> {
        first_of(
            self,
            &[Ev::StageStart, Ev::LockWait, Ev::LockAcquired, Ev::GpuStart],
        )
    }
}

/// A part of a staged partition's staging time, in seconds, from its summary's `field`
/// (milliseconds).
fn staging_part_s(p: &PartitionReport, field: &str) -> Option<f64> {
    p.staging_s?;
    Some(p.summary.as_ref()?.get(field)?.as_f64()? / 1e3)
}

fn first_of(p: &PartitionReport, evs: &[Ev]) -> Option<f64> {
    evs.iter().filter_map(|e| p.at(*e)).reduce(f64::min)
}

fn last_of(p: &PartitionReport, evs: &[Ev]) -> Option<f64> {
    evs.iter().filter_map(|e| p.at(*e)).reduce(f64::max)
}

/// "cuda:3 NVIDIA H200" -> 3.
pub fn cuda_ordinal(device: &str) -> Option<u64> {
    let rest = device.strip_prefix("cuda:")?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Analyses a parsed log.
pub fn analyze(log: &Log) -> Report {
    let t0 = event_range(log)
        .map(|(a, _)| a)
        .or_else(|| log.samples.iter().map(|s| s.t_us).min())
        .unwrap_or(0);
    let rel = |t: u64| (t as f64 - t0 as f64) / 1e6;
    let mut partitions = build_partitions(log, rel);
    attach_summaries(log, &mut partitions);

    let mut stages = Vec::new();
    type Get = fn(&PartitionReport) -> Option<f64>;
    let columns: [(&'static str, Get); 8] = [
        ("synthesis", |p| p.synthesis_s),
        ("queue", |p| p.queue_s),
        ("staging", |p| p.staging_s),
        // Staging's two parts, from the partition summary: the wait for device memory
        // (the partition before it handing back its a and b) and the copy itself.
        ("stage_wait", |p| staging_part_s(p, "slot_wait_ms")),
        ("stage_copy", |p| staging_part_s(p, "stage_copy_ms")),
        ("lock_wait", |p| p.lock_wait_s),
        ("kernel", |p| p.kernel_s),
        ("gpu", |p| p.gpu_s),
    ];
    for (name, get) in columns {
        let v: Vec<f64> = partitions.iter().filter_map(get).collect();
        if !v.is_empty() {
            stages.push(StageStats {
                stage: name,
                stats: stats(v),
            });
        }
    }

    let mut names: Vec<&str> = partitions
        .iter()
        .filter_map(|p| p.device.as_deref())
        .collect();
    names.sort_by_key(|n| (cuda_ordinal(n), n.to_string()));
    names.dedup();
    let devices: Vec<DeviceReport> = names
        .iter()
        .map(|d| device_report(d, &partitions, &log.samples, &rel))
        .collect();

    let used: BTreeSet<u64> = devices.iter().filter_map(|d| d.ordinal).collect();
    let (lo, hi) = event_range(log).map_or((f64::MIN, f64::MAX), |(a, b)| (rel(a), rel(b)));
    let mut by_gpu: BTreeMap<u64, Vec<&Sample>> = BTreeMap::new();
    for s in &log.samples {
        if !used.contains(&s.device) && (lo..=hi).contains(&rel(s.t_us)) {
            by_gpu.entry(s.device).or_default().push(s);
        }
    }
    let other_gpus = by_gpu
        .into_iter()
        .map(|(o, s)| sample_stats(o, &s, |_| false))
        .collect();

    Report {
        lines: log.lines,
        other_lines: log.other_lines,
        skipped_lines: log.skipped_lines,
        skipped: log
            .skipped
            .iter()
            .map(|(line, reason)| Skipped {
                line: *line,
                reason: reason.clone(),
            })
            .collect(),
        events: log.events.len(),
        samples: log.samples.len(),
        summaries: log.summaries.len(),
        t0_us: t0,
        run_span_s: event_range(log).map_or(0.0, |(a, b)| (b - a) as f64 / 1e6),
        partitions_proved: devices.iter().map(|d| d.partitions).sum(),
        stages,
        devices,
        other_gpus,
        partitions,
    }
}

fn event_range(log: &Log) -> Option<(u64, u64)> {
    let min = log.events.iter().map(|e| e.t_us).min()?;
    let max = log.events.iter().map(|e| e.t_us).max()?;
    Some((min, max))
}

/// Groups events by (job, partition), a repeated event starting a new attempt.
fn build_partitions(log: &Log, rel: impl Fn(u64) -> f64) -> Vec<PartitionReport> {
    let mut events: Vec<_> = log.events.iter().collect();
    events.sort_by_key(|e| e.t_us);
    let mut out: Vec<PartitionReport> = Vec::new();
    let mut last: HashMap<(&str, u64), usize> = HashMap::new();
    for e in events {
        let key = (e.job.as_str(), e.partition);
        let idx = match last.get(&key) {
            Some(&i)
                if !out[i].events_at_s.contains_key(e.ev.name())
                    && (e.ev != Ev::SynthStart || out[i].events_at_s.is_empty()) =>
            {
                i
            }
            prev => {
                out.push(PartitionReport {
                    job: e.job.clone(),
                    partition: e.partition,
                    attempt: prev.map_or(1, |&i| out[i].attempt + 1),
                    device: None,
                    worker: None,
                    events_at_s: BTreeMap::new(),
                    synthesis_s: None,
                    queue_s: None,
                    staging_s: None,
                    lock_wait_s: None,
                    kernel_s: None,
                    gpu_s: None,
                    summary: None,
                });
                last.insert(key, out.len() - 1);
                out.len() - 1
            }
        };
        let p = &mut out[idx];
        p.events_at_s.insert(e.ev.name(), rel(e.t_us));
        if e.device.is_some() {
            p.device = e.device.clone();
        }
        if e.worker.is_some() {
            p.worker = e.worker;
        }
    }
    for p in &mut out {
        let d = |a: Ev, b: Option<f64>| Some(b? - p.at(a)?).filter(|d| *d >= 0.0);
        let times = [
            d(Ev::SynthStart, p.at(Ev::SynthEnd)),
            d(Ev::SynthEnd, p.picked_at()),
            d(Ev::StageStart, p.at(Ev::StageEnd)),
            d(Ev::LockWait, p.at(Ev::LockAcquired)),
            d(Ev::LockAcquired, p.at(Ev::LockReleased)),
            d(Ev::GpuStart, p.at(Ev::GpuEnd)),
        ];
        [
            p.synthesis_s,
            p.queue_s,
            p.staging_s,
            p.lock_wait_s,
            p.kernel_s,
            p.gpu_s,
        ] = times;
    }
    out
}

/// Gives each summary to the first attempt of its partition that has none yet, preferring
/// one on the summary's device.
fn attach_summaries(log: &Log, parts: &mut Vec<PartitionReport>) {
    let mut index: HashMap<(String, u64), Vec<usize>> = HashMap::new();
    for (i, p) in parts.iter().enumerate() {
        index
            .entry((p.job.clone(), p.partition))
            .or_default()
            .push(i);
    }
    for s in &log.summaries {
        let mut fields = s.fields.clone();
        if let Some(d) = &s.device {
            fields.insert("device".into(), Value::String(d.clone()));
        }
        let attempts = index.entry((s.job.clone(), s.partition)).or_default();
        let free = |same_device: bool| {
            attempts.iter().copied().find(|&i| {
                parts[i].summary.is_none()
                    && (!same_device || s.device.is_none() || parts[i].device == s.device)
            })
        };
        let slot = free(true).or_else(|| free(false));
        let i = slot.unwrap_or_else(|| {
            parts.push(PartitionReport {
                job: s.job.clone(),
                partition: s.partition,
                attempt: attempts.len() as u32 + 1,
                device: None,
                worker: None,
                events_at_s: BTreeMap::new(),
                synthesis_s: None,
                queue_s: None,
                staging_s: None,
                lock_wait_s: None,
                kernel_s: None,
                gpu_s: None,
                summary: None,
            });
            attempts.push(parts.len() - 1);
            parts.len() - 1
        });
        let p = &mut parts[i];
        p.summary = Some(fields);
        if p.device.is_none() {
            p.device = s.device.clone();
        }
        if p.worker.is_none() {
            p.worker = s.worker;
        }
    }
}

/// Sorted, overlapping or touching intervals merged.
pub fn merge(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    v.retain(|(a, b)| b >= a);
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Whether `t` lies in one of the merged intervals.
pub fn inside(merged: &[(f64, f64)], t: f64) -> bool {
    let i = merged.partition_point(|(a, _)| *a <= t);
    i > 0 && t <= merged[i - 1].1
}

/// Count, total, mean, nearest-rank percentiles and max.
pub fn stats(mut v: Vec<f64>) -> Stats {
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let pct = |p: f64| v[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
    let total: f64 = v.iter().sum();
    Stats {
        count: n,
        total_s: total,
        mean_s: total / n as f64,
        p50_s: pct(50.0),
        p90_s: pct(90.0),
        p99_s: pct(99.0),
        max_s: v[n - 1],
    }
}

fn device_report(
    name: &str,
    parts: &[PartitionReport],
    samples: &[Sample],
    rel: &impl Fn(u64) -> f64,
) -> DeviceReport {
    let mine: Vec<&PartitionReport> = parts
        .iter()
        .filter(|p| p.device.as_deref() == Some(name))
        .collect();
    let interval = |p: &&PartitionReport, a: Ev, b: Ev| Some((p.at(a)?, p.at(b)?));
    let kernel = merge(
        mine.iter()
            .filter_map(|p| interval(p, Ev::LockAcquired, Ev::LockReleased))
            .collect(),
    );
    let gpu = merge(
        mine.iter()
            .filter_map(|p| interval(p, Ev::GpuStart, Ev::GpuEnd))
            .collect(),
    );
    let start = mine.iter().filter_map(|p| p.picked_at()).reduce(f64::min);
    let end = mine
        .iter()
        .filter_map(|p| last_of(p, &[Ev::LockReleased, Ev::GpuEnd]))
        .reduce(f64::max);
    let (start, end) = match (start, end) {
        (Some(s), Some(e)) if e >= s => (s, e),
        _ => (0.0, 0.0),
    };
    let span = end - start;
    let proved = mine
        .iter()
        .filter(|p| p.at(Ev::GpuEnd).or(p.at(Ev::LockReleased)).is_some())
        .count();
    let len = |m: &[(f64, f64)]| m.iter().map(|(a, b)| b - a).sum::<f64>();
    let ratio = |x: f64| (span > 0.0).then(|| x / span);
    let gaps = kernel.windows(2).map(|w| w[1].0 - w[0].1).collect();
    let ordinal = cuda_ordinal(name);
    // Which samples count as "kernel running": kernel regions, or prove calls without them.
    let busy = if kernel.is_empty() { &gpu } else { &kernel };
    let gpu_samples = ordinal.and_then(|o| {
        let mine: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.device == o && (start..=end).contains(&rel(s.t_us)))
            .collect();
        (!mine.is_empty()).then(|| sample_stats(o, &mine, |t| inside(busy, rel(t))))
    });
    let workers: BTreeSet<u64> = mine.iter().filter_map(|p| p.worker).collect();
    DeviceReport {
        device: name.to_string(),
        ordinal,
        workers: workers.into_iter().collect(),
        partitions: proved,
        start_at_s: start,
        end_at_s: end,
        span_s: span,
        gpu_busy_s: len(&gpu),
        gpu_util: ratio(len(&gpu)),
        kernel_busy_s: len(&kernel),
        kernel_util: ratio(len(&kernel)),
        idle_gaps: stats(gaps),
        partitions_per_min: (span > 0.0 && proved > 0).then(|| proved as f64 * 60.0 / span),
        s_per_partition: (proved > 0).then(|| span / proved as f64),
        gpu_samples,
        kernel_regions: kernel.iter().map(|(a, b)| [*a, *b]).collect(),
    }
}

fn sample_stats(ordinal: u64, s: &[&Sample], in_kernel: impl Fn(u64) -> bool) -> SampleStats {
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let max = |v: Vec<f64>| v.into_iter().reduce(f64::max);
    let col = |f: fn(&Sample) -> Option<f64>| s.iter().filter_map(|x| f(x)).collect::<Vec<f64>>();
    let (k, idle): (Vec<&&Sample>, Vec<&&Sample>) = s.iter().partition(|x| in_kernel(x.t_us));
    SampleStats {
        ordinal,
        count: s.len(),
        in_kernel: k.len(),
        sm_util_mean: mean(col(|x| x.sm_util)),
        sm_util_kernel_mean: mean(k.iter().filter_map(|x| x.sm_util).collect()),
        sm_util_idle_mean: mean(idle.iter().filter_map(|x| x.sm_util).collect()),
        mem_util_mean: mean(col(|x| x.mem_util)),
        power_w_mean: mean(col(|x| x.power_w)),
        power_w_max: max(col(|x| x.power_w)),
        pcie_rx_mbps_mean: mean(col(|x| x.pcie_rx_mbps)),
        pcie_tx_mbps_mean: mean(col(|x| x.pcie_tx_mbps)),
        sm_clock_mhz_mean: mean(col(|x| x.sm_clock_mhz)),
        mem_used_mib_max: max(col(|x| x.mem_used_mib)),
    }
}
