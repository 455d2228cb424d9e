//! `bench`: prove one request N times with concurrency J over gRPC and report throughput
//! (seconds per proof), latency percentiles and the mean time of each stage.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Connect, PriorityArg, RequestInput};
use crate::cli::progress::{self, Unit};
use crate::server::convert;
use crate::server::pb;

/// `bench` arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// The daemon's address.
    #[command(flatten)]
    pub connect: Connect,
    /// What to prove.
    #[command(flatten)]
    pub input: RequestInput,
    /// Number of proofs.
    #[arg(short = 'n', long, default_value_t = 10)]
    pub count: usize,
    /// Proofs in flight at once.
    #[arg(short = 'j', long, default_value_t = 1)]
    pub concurrency: usize,
    /// Priority of every proof.
    #[arg(long, value_enum, default_value_t)]
    pub priority: PriorityArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One proof's measurements.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Client-side latency.
    pub latency: Duration,
    /// The daemon's stage times, ms: queue, srs, synthesis, prove, total.
    pub stages_ms: [u64; 5],
}

/// The bench result.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Proofs asked for.
    pub count: usize,
    /// Concurrency.
    pub concurrency: usize,
    /// Proofs that failed.
    pub failed: usize,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// Successful proofs' samples.
    pub samples: Vec<Sample>,
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

const STAGES: [&str; 5] = ["queue_wait", "srs_load", "synthesis", "prove", "total"];

impl BenchReport {
    fn sorted_latencies(&self) -> Vec<Duration> {
        let mut l: Vec<_> = self.samples.iter().map(|s| s.latency).collect();
        l.sort();
        l
    }

    /// Wall seconds per successful proof.
    pub fn seconds_per_proof(&self) -> f64 {
        self.wall.as_secs_f64() / self.samples.len().max(1) as f64
    }

    fn stage_means_ms(&self) -> [f64; 5] {
        let mut m = [0f64; 5];
        for s in &self.samples {
            for (i, v) in s.stages_ms.iter().enumerate() {
                m[i] += *v as f64;
            }
        }
        m.map(|v| v / self.samples.len().max(1) as f64)
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let l = self.sorted_latencies();
        let means = self.stage_means_ms();
        json!({
            "count": self.count,
            "concurrency": self.concurrency,
            "completed": self.samples.len(),
            "failed": self.failed,
            "wall_seconds": self.wall.as_secs_f64(),
            "seconds_per_proof": self.seconds_per_proof(),
            "latency_seconds": {
                "p50": percentile(&l, 50.0).as_secs_f64(),
                "p90": percentile(&l, 90.0).as_secs_f64(),
                "p99": percentile(&l, 99.0).as_secs_f64(),
            },
            "stage_mean_ms": STAGES.iter().zip(means).map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        })
    }

    /// The report as text.
    pub fn format(&self) -> String {
        let l = self.sorted_latencies();
        let means = self.stage_means_ms();
        let mut o = format!(
            "{} proofs ({} failed), concurrency {}: {:.2} s wall, {:.3} s/proof\nlatency p50 {:.3} s, p90 {:.3} s, p99 {:.3} s\nmean per proof:",
            self.count,
            self.failed,
            self.concurrency,
            self.wall.as_secs_f64(),
            self.seconds_per_proof(),
            percentile(&l, 50.0).as_secs_f64(),
            percentile(&l, 90.0).as_secs_f64(),
            percentile(&l, 99.0).as_secs_f64(),
        );
        for (k, v) in STAGES.iter().zip(means) {
            o.push_str(&format!(" {k} {v:.0} ms,"));
        }
        o.pop();
        o.push('\n');
        o
    }
}

/// Runs the bench.
pub async fn run(a: &BenchArgs) -> anyhow::Result<BenchReport> {
    let request = a.input.load()?;
    let template = convert::to_wire(&request, "", a.priority.wire());
    let client = a.connect.client().await?;
    let run_id = format!("bench-{:08x}", rand::random::<u32>());
    let limit = Arc::new(tokio::sync::Semaphore::new(a.concurrency.max(1)));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    // Advanced as each proof returns (the loop below waits for free slots meanwhile).
    let bar = progress::bar("proving", a.count as u64, Unit::Items("proofs"));
    for i in 0..a.count {
        let permit = limit.clone().acquire_owned().await?;
        let mut c = client.clone();
        let mut wire = template.clone();
        wire.request_id = format!("{run_id}-{i}");
        let bar = bar.clone();
        tasks.spawn(async move {
            let _permit = permit;
            let t = Instant::now();
            let r = c.prove(pb::ProveRequest { submit: Some(wire) }).await;
            bar.inc(1);
            (t.elapsed(), r)
        });
    }
    let mut report = BenchReport {
        count: a.count,
        concurrency: a.concurrency,
        ..Default::default()
    };
    while let Some(done) = tasks.join_next().await {
        let (latency, r) = done?;
        match r.map(|r| r.into_inner().result.unwrap_or_default()) {
            Ok(r) if r.status == pb::await_proof_response::Status::Completed as i32 => {
                report.samples.push(Sample {
                    latency,
                    stages_ms: [
                        r.queue_wait_ms,
                        r.srs_load_ms,
                        r.synthesis_ms,
                        r.gpu_compute_ms,
                        r.total_ms,
                    ],
                });
            }
            Ok(r) => {
                bar.suspend(|| eprintln!("proof {} failed: {}", r.job_id, r.error_message));
                report.failed += 1;
            }
            Err(e) => {
                bar.suspend(|| eprintln!("proof failed: {e}"));
                report.failed += 1;
            }
        }
    }
    bar.finish_and_clear();
    report.wall = start.elapsed();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&v, 90.0), Duration::from_millis(90));
        assert_eq!(percentile(&v, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&v[..1], 99.0), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }
}
