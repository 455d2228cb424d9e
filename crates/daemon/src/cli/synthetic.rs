//! `filprove synthetic-bench`: the GPU path on a workload of one 32 GiB PoRep partition's
//! exact shape (crates/bench/src/workload.rs) - per-phase times, bytes and host syncs under
//! each transfer switch, then N partitions through the engine's pipeline with 1 and 2 GPU
//! workers. Its parameters come from no setup, so its proofs cannot verify: this measures
//! speed and memory only, and it is not reachable from the daemon's API.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use filprove_bench::workload::{self, Lens, WorkloadShape};
use filprove_cuda::CudaBackend;
use filprove_cuda::CudaOptions;
use filprove_cuda::HostPath;
use filprove_engine::{
    Engine, EngineConfig, EngineError, JobOutcome, Priority, ProofJob, SrsLoader,
};
use filprove_groth16::{
    Backend, Direction, Proof, ProofInput, ProveReport, ProvingAssignment, Randomness, Srs,
};
use serde_json::json;

use super::compare::median;

/// Arguments of `filprove synthetic-bench`.
#[derive(Args, Debug)]
pub struct SyntheticArgs {
    /// log2 of the domain: 27 is one 32 GiB PoRep partition (docs/reference/circuits.md); smaller values
    /// keep its proportions.
    #[arg(long, default_value_t = 27)]
    pub lg: u32,
    /// Transfer modes to compare, each adding one change to the previous: naive,
    /// prestaged, nosync, resident ("none": only the pipeline runs); also bounce
    /// (resident, no page-locking in place) and unfolded (resident, H's bases not
    /// folded).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "naive,prestaged,nosync,resident"
    )]
    pub modes: Vec<String>,
    /// Timed proofs per mode (after one warm-up proof).
    #[arg(long, default_value_t = 2)]
    pub proofs: usize,
    /// Partitions through the engine's pipeline per worker count (0: skip).
    #[arg(long, default_value_t = 0)]
    pub pipeline_partitions: usize,
    /// GPU workers per device for the pipeline runs.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub pipeline_workers: Vec<usize>,
    /// Proved partitions' buffers kept for reuse in the pipeline runs (the engine's
    /// `reused_partition_buffers`; absent: one per GPU worker, 0: none).
    #[arg(long)]
    pub reused_partition_buffers: Option<usize>,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write every figure as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// The switches of a named mode (cumulative, as in cuzk's Phase 9 table).
pub fn mode_options(mode: &str, lg: u32) -> anyhow::Result<CudaOptions> {
    let naive = CudaOptions {
        // cuzk's H MSM runs in 8 batches: the naive mode does likewise.
        max_batch: 1u64 << lg.saturating_sub(3).max(16),
        ..CudaOptions::naive()
    };
    let prestaged = CudaOptions {
        prestage: true,
        host_path: HostPath::Register,
        ..naive.clone()
    };
    let nosync = CudaOptions {
        sync_per_batch: false,
        ..prestaged.clone()
    };
    Ok(match mode {
        "naive" => naive,
        "prestaged" => prestaged,
        "nosync" => nosync,
        "resident" => CudaOptions {
            resident_srs: true,
            max_batch: 0,
            ..nosync
        },
        "bounce" => CudaOptions {
            host_path: HostPath::Bounce,
            resident_srs: true,
            max_batch: 0,
            ..nosync
        },
        "unfolded" => CudaOptions {
            resident_srs: true,
            fold_h: false,
            max_batch: 0,
            ..nosync
        },
        other => {
            bail!("unknown mode {other:?} (naive, prestaged, nosync, resident, bounce, unfolded)")
        }
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Phases shown in the table, in order.
const PHASES: &[&str] = &[
    "slot_wait",
    "stage",
    "stage_copy",
    "stage_copy_wait",
    "upload",
    "srs_upload",
    "stage_wait",
    "ntt_h",
    "msm_h",
    "msm_l",
    "msm_a",
    "msm_b_g1",
    "msm_b_g2",
    "result_wait",
    "region",
];

/// Runs the benchmark.
pub fn run(mut args: SyntheticArgs) -> anyhow::Result<()> {
    args.modes.retain(|m| m != "none" && !m.is_empty());
    let shape = if args.lg == 27 {
        WorkloadShape::porep_32g()
    } else {
        WorkloadShape::porep_like(args.lg)
    };
    let t = Instant::now();
    let asg = workload::assignment(&shape, args.seed);
    let lens = workload::lens_for(&asg);
    eprintln!(
        "workload: {} rows (domain 2^{}), {} aux, A {} points, B {} points; made in {:.1} s",
        asg.a.len(),
        asg.log_domain_size(),
        asg.aux_assignment.len(),
        lens.a,
        lens.b,
        t.elapsed().as_secs_f64()
    );
    let stub = workload::host_stub(asg.input_assignment.len(), args.seed);
    let streamed = args
        .modes
        .iter()
        .any(|m| !["resident", "bounce", "unfolded"].contains(&m.as_str()));
    // Streamed modes read the parameters from host memory: make them on the device once
    // and download them.
    let host_srs = if streamed {
        let t = Instant::now();
        let b = CudaBackend::with_options(args.device, CudaOptions::default())?;
        let dev = workload::device_srs(b.gpu(), lens, args.seed)?;
        let made = t.elapsed();
        let srs = workload::download_srs(b.gpu(), &dev, &stub)?;
        eprintln!(
            "parameters: {:.2} GiB made on the device in {:.1} s, downloaded in {:.1} s",
            lens.bytes() as f64 / (1u64 << 30) as f64,
            made.as_secs_f64(),
            (t.elapsed() - made).as_secs_f64()
        );
        Some(srs)
    } else {
        None
    };
    let mut results = Vec::new();
    for mode in &args.modes {
        let opts = mode_options(mode, args.lg)?;
        let backend = CudaBackend::with_options(args.device, opts.clone())?;
        let srs = match &host_srs {
            Some(s) => s.clone(),
            None => {
                let t = Instant::now();
                let dev = workload::device_srs(backend.gpu(), lens, args.seed)?;
                backend.install_device_srs(&stub, dev)?;
                eprintln!(
                    "parameters made on the device in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                stub.clone()
            }
        };
        let plan = backend.plan(filprove_cuda::plan::Shape::from_srs_lengths(
            lens.h as u64,
            lens.l as u64,
            lens.a as u64,
            lens.b as u64,
        ))?;
        eprintln!("== mode {mode}: {}\n{plan}", opts.describe());
        let mut reports = Vec::new();
        for i in 0..=args.proofs {
            let (report, wall) = prove_once(&backend, &srs, &asg, args.seed + i as u64)?;
            eprintln!(
                "{mode} proof {i}{}: {:.0} ms wall; {}",
                if i == 0 { " (warm-up)" } else { "" },
                ms(wall),
                report.phases_summary()
            );
            if i > 0 {
                reports.push((report, wall));
            }
        }
        results.push(summarize(mode, &opts, &plan, &reports));
        drop(backend);
    }
    print_table(&results);
    let mut pipeline = Vec::new();
    // The GPU's own samples (SM utilisation, power, PCIe) go into the log beside the
    // pipeline's timeline events, for `filprove timeline`.
    let _sampler = (args.pipeline_partitions > 0)
        .then(|| filprove_engine::gpu_sampler::GpuSampler::start(Duration::from_millis(50)))
        .flatten();
    if args.pipeline_partitions > 0 {
        drop(host_srs);
        let template = Arc::new(asg);
        for &w in &args.pipeline_workers {
            pipeline.push(run_pipeline(&args, &template, lens, &stub, w)?);
        }
    }
    if let Some(path) = &args.json {
        let doc = json!({ "lg": args.lg, "modes": results, "pipeline": pipeline });
        std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Stage (as a prover worker does, before the lock) and prove once.
fn prove_once(
    backend: &CudaBackend,
    srs: &Srs,
    asg: &ProvingAssignment,
    seed: u64,
) -> anyhow::Result<(ProveReport, Duration)> {
    use rand::SeedableRng;
    let t = Instant::now();
    let staged = backend.stage(srs, asg)?;
    let randomness = Randomness::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let (_, report) = backend.prove_staged(
        srs,
        ProofInput {
            assignment: asg,
            randomness,
        },
        staged,
    )?;
    Ok((report, t.elapsed()))
}

fn summarize(
    mode: &str,
    opts: &CudaOptions,
    plan: &filprove_cuda::VramPlan,
    reports: &[(ProveReport, Duration)],
) -> serde_json::Value {
    let mut phases = serde_json::Map::new();
    for p in PHASES {
        let v: Vec<f64> = reports
            .iter()
            .filter_map(|(r, _)| r.phase(p).map(ms))
            .collect();
        if !v.is_empty() {
            phases.insert((*p).into(), json!(median(v)));
        }
    }
    let first = reports.first().map(|(r, _)| r.clone()).unwrap_or_default();
    let transfers: Vec<_> = first
        .transfers
        .iter()
        .map(|t| {
            json!({
                "phase": t.phase,
                "direction": match t.direction { Direction::HostToDevice => "h2d", Direction::DeviceToHost => "d2h" },
                "bytes": t.bytes,
                "pinned": t.pinned,
            })
        })
        .collect();
    json!({
        "mode": mode,
        "options": opts.describe(),
        "wall_ms": median(reports.iter().map(|(_, w)| ms(*w)).collect()),
        "phases_ms": phases,
        "transfers": transfers,
        "h2d_bytes": first.bytes(Direction::HostToDevice, None),
        "h2d_pinned_bytes": first.bytes(Direction::HostToDevice, Some(true)),
        "host_syncs": first.host_syncs,
        "peak_device_bytes": plan.peak(),
        "resident": plan.resident,
        "batch": plan.batch,
        "fallbacks": first.fallbacks,
    })
}

fn print_table(results: &[serde_json::Value]) {
    let mut line = format!("{:<12}", "phase (ms)");
    for r in results {
        line += &format!("{:>12}", r["mode"].as_str().unwrap_or("?"));
    }
    println!("{line}");
    for p in PHASES {
        let mut line = format!("{p:<12}");
        let mut any = false;
        for r in results {
            match r["phases_ms"][*p].as_f64() {
                Some(v) => {
                    any = true;
                    line += &format!("{v:>12.1}");
                }
                None => line += &format!("{:>12}", "-"),
            }
        }
        if any {
            println!("{line}");
        }
    }
    let row = |name: &str, f: &dyn Fn(&serde_json::Value) -> String| {
        let mut line = format!("{name:<12}");
        for r in results {
            line += &format!("{:>12}", f(r));
        }
        println!("{line}");
    };
    let gb = |v: &serde_json::Value| format!("{:.2}", v.as_f64().unwrap_or(0.0) / 1e9);
    row("wall", &|r| {
        format!("{:.1}", r["wall_ms"].as_f64().unwrap_or(0.0))
    });
    row("h2d GB", &|r| gb(&r["h2d_bytes"]));
    row("pinned GB", &|r| gb(&r["h2d_pinned_bytes"]));
    row("host syncs", &|r| r["host_syncs"].to_string());
    row("peak GiB", &|r| {
        format!(
            "{:.1}",
            r["peak_device_bytes"].as_f64().unwrap_or(0.0) / (1u64 << 30) as f64
        )
    });
}

/// A job of N synthetic partitions: synthesis is a parallel copy of the prepared
/// workload (so the GPU side is what is measured); its proofs are not verifiable.
struct SyntheticJob {
    template: Arc<ProvingAssignment>,
    partitions: usize,
}

impl ProofJob for SyntheticJob {
    fn kind(&self) -> &'static str {
        "synthetic"
    }
    fn circuit_id(&self) -> String {
        SYNTHETIC_ID.into()
    }
    fn num_partitions(&self) -> usize {
        self.partitions
    }
    fn partition_memory_bytes(&self) -> u64 {
        self.template.heap_bytes() as u64
    }
    fn synthesize(&self, _k: usize) -> Result<ProvingAssignment, EngineError> {
        Ok(workload::clone_par(&self.template))
    }
    fn assemble(&self, proofs: &[Proof]) -> Result<Vec<u8>, EngineError> {
        let mut out = Vec::new();
        for p in proofs {
            out.extend_from_slice(&p.to_bytes());
        }
        Ok(out)
    }
    fn verify(&self, _proof: &[u8]) -> Result<bool, EngineError> {
        // Synthetic parameters (no setup): nothing can verify. Benchmark-only job.
        Ok(true)
    }
}

const SYNTHETIC_ID: &str = "synthetic-porep";

fn run_pipeline(
    args: &SyntheticArgs,
    asg: &Arc<ProvingAssignment>,
    lens: Lens,
    stub: &Srs,
    workers: usize,
) -> anyhow::Result<serde_json::Value> {
    let opts = CudaOptions {
        staging_slots: workers as u64,
        ..CudaOptions::default()
    };
    let backend = CudaBackend::with_options(args.device, opts)?;
    let dev = workload::device_srs(backend.gpu(), lens, args.seed)?;
    backend.install_device_srs(stub, dev)?;
    let stub_for_loader = stub.clone();
    let loader: SrsLoader = Arc::new(move |id: &str| {
        if id == SYNTHETIC_ID {
            Ok(stub_for_loader.clone())
        } else {
            Err(EngineError::UnknownCircuit(id.into()))
        }
    });
    let per_partition = asg.heap_bytes() as u64;
    let config = EngineConfig {
        partition_workers: 2,
        gpu_workers_per_device: workers,
        express_worker: false,
        // Room for the partitions in flight: one per worker, one being made, one queued.
        memory_budget_bytes: Some(per_partition * (workers as u64 + 2)),
        srs_budget_bytes: Some(1 << 30),
        reused_partition_buffers: args.reused_partition_buffers,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![Arc::new(backend) as Arc<dyn Backend>], loader)?;
    let job = Arc::new(SyntheticJob {
        template: asg.clone(),
        partitions: args.pipeline_partitions,
    });
    let t = Instant::now();
    let sub = engine.submit(None, Priority::Normal, job)?;
    let report = engine
        .wait(&sub.job_id, None)?
        .context("the engine ended before the job")?;
    let wall = t.elapsed();
    if let JobOutcome::Failed(e) = &report.outcome {
        bail!("pipeline run failed: {e}");
    }
    let per = wall.as_secs_f64() / args.pipeline_partitions as f64;
    println!(
        "pipeline: {} partitions, {workers} GPU worker(s): {:.2} s total, {:.3} s/partition",
        args.pipeline_partitions,
        wall.as_secs_f64(),
        per
    );
    engine.drain(Duration::from_secs(60));
    Ok(json!({
        "workers": workers,
        "partitions": args.pipeline_partitions,
        "wall_s": wall.as_secs_f64(),
        "s_per_partition": per,
    }))
}
