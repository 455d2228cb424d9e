//! `filprove prove-bench`: requests proved through the engine's pipeline in this process
//! (synthesis workers, GPU workers sharing the kernel lock, assembly, filecoin-proofs'
//! verification), timed proof by proof, with the parameters generated in memory or read
//! from a directory. No daemon and no gRPC: the figures are the engine's own.
//!
//! With `--generate-params` each circuit's parameters are made here (random toxic waste:
//! test only) and only their verifying key and `.meta` are written, into `--params-dir`,
//! where filecoin-proofs' verifiers read them; the 47 GB of a 32 GiB PoRep's parameters
//! never touch the disk.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use filprove_engine::{Engine, EngineConfig, EngineError, JobOutcome, Priority, SrsLoader};
use filprove_filecoin::{CircuitSpec, ProofKind, ProofRequest};
use filprove_groth16::Srs;
use rand::SeedableRng;
use serde_json::json;

use super::backend::BackendChoice;
use super::prove::read_input;
use super::stage::Stage;

/// Arguments of `filprove prove-bench`.
#[derive(Args, Debug)]
pub struct ProveBenchArgs {
    /// A request file (any kind; `filprove fixtures --virtual` makes 32 GiB ones). Give it
    /// several times for several requests.
    #[arg(long = "request", required = true)]
    pub requests: Vec<PathBuf>,
    /// How many times each request is proved; all are submitted at once, so partitions of
    /// consecutive proofs overlap in the pipeline as a daemon's would.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Parameter directory: parameters are read from it, or with --generate-params the
    /// verifying keys are written into it. It becomes FIL_PROOFS_PARAMETER_CACHE for this
    /// process (filecoin-proofs' verifiers read the keys there).
    #[arg(long)]
    pub params_dir: PathBuf,
    /// Generate each circuit's parameters in memory (random toxic waste: test only; the
    /// directory must not be the default parameter cache).
    #[arg(long)]
    pub generate_params: bool,
    /// Seed of the generated parameters' toxic waste.
    #[arg(long, default_value_t = 0)]
    pub params_seed: u64,
    /// Prover backend (also the fixed-base multiplications of --generate-params).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CPU synthesis workers (each synthesizes one partition at a time).
    #[arg(long, default_value_t = 2)]
    pub partition_workers: usize,
    /// Prover workers per GPU (they share the device's kernel lock).
    #[arg(long, default_value_t = 2)]
    pub gpu_workers: usize,
    /// Host memory partitions may reserve, in GiB (default: the engine's rule from the
    /// host's or cgroup's limit).
    #[arg(long)]
    pub memory_budget_gib: Option<u64>,
    /// Parameter bytes kept resident, in GiB (default: every circuit's parameters).
    #[arg(long)]
    pub srs_budget_gib: Option<u64>,
    /// Write the figures as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// One proved request.
struct Proved {
    kind: ProofKind,
    circuit: String,
    partitions: usize,
    wall_s: f64,
    synthesis_s: f64,
    prove_s: f64,
    verify_s: f64,
    proof_bytes: usize,
}

/// The process's peak resident set (VmHWM), in bytes, where /proc has it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn priority(kind: ProofKind) -> Priority {
    match kind {
        ProofKind::WinningPoSt => Priority::Critical,
        ProofKind::WindowPoSt => Priority::High,
        ProofKind::PoRep | ProofKind::SnapDeals => Priority::Normal,
    }
}

/// Runs `filprove prove-bench`.
pub fn run(args: ProveBenchArgs) -> Result<()> {
    if args.generate_params && super::params::is_default_cache(&args.params_dir) {
        bail!(
            "--generate-params writes test verifying keys: give a --params-dir other than the \
             default parameter cache ({} or {})",
            filprove_filecoin::params::PARAMETER_CACHE_ENV,
            filprove_filecoin::params::DEFAULT_PARAMETER_CACHE
        );
    }
    std::fs::create_dir_all(&args.params_dir)
        .with_context(|| format!("cannot create {}", args.params_dir.display()))?;
    // First thing, before filecoin-proofs reads its settings.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &args.params_dir);

    let stage = Stage::start("reading and validating the requests");
    let requests = args
        .requests
        .iter()
        .map(|p| {
            ProofRequest::from_request_json(&read_input(p)?)
                .with_context(|| format!("parsing request {}", p.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    stage.done("");
    let mut circuits: BTreeMap<String, CircuitSpec> = BTreeMap::new();
    for r in &requests {
        let spec = r.circuit();
        circuits.insert(spec.short_name.clone(), spec);
    }

    let mut keygen_s = BTreeMap::new();
    let mut generated: HashMap<String, Srs> = HashMap::new();
    if args.generate_params {
        // The fixed-base tables and buffers are freed (dropped) before proving starts.
        let fb = super::params::fixed_base(args.backend)?;
        for (name, spec) in &circuits {
            let stage = Stage::start(format!("generating the parameters of {name} in memory"));
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(args.params_seed);
            let t = Instant::now();
            let srs = spec
                .generate_in_memory_reporting(&args.params_dir, &mut rng, fb.as_ref(), &stage)?
                .srs;
            let secs = t.elapsed().as_secs_f64();
            stage.done("");
            keygen_s.insert(name.clone(), secs);
            generated.insert(name.clone(), srs);
        }
    }
    let backend = match args.backend {
        BackendChoice::Auto => "auto",
        BackendChoice::Cpu => "cpu",
        BackendChoice::Cuda => "cuda",
    };
    let cuda = filprove_cuda::CudaOptions {
        staging_slots: args.gpu_workers.max(1) as u64,
        ..filprove_cuda::CudaOptions::default()
    };
    let backends = crate::server::backends::build(backend, &cuda)?;
    let srs_bytes: u64 = generated
        .values()
        .map(filprove_engine::srs::srs_size_bytes)
        .sum();

    // The loader hands out the generated sets once, then reads files.
    let from_files = crate::server::srs_loading::srs_loader(args.params_dir.clone(), false, false);
    let in_memory = Mutex::new(generated);
    let loader: SrsLoader = Arc::new(move |id: &str| -> Result<Srs, EngineError> {
        let taken = in_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        match taken {
            Some(srs) => Ok(srs),
            None => from_files(id),
        }
    });
    let config = EngineConfig {
        partition_workers: args.partition_workers,
        gpu_workers_per_device: args.gpu_workers,
        memory_budget_bytes: args.memory_budget_gib.map(|g| g << 30),
        srs_budget_bytes: Some(
            args.srs_budget_gib
                .map(|g| g << 30)
                .unwrap_or(srs_bytes.max(1 << 30)),
        ),
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, backends, loader)?;
    let _gpu_sampler = filprove_engine::gpu_sampler::GpuSampler::start(Duration::from_millis(100));

    let started = Instant::now();
    let mut jobs = Vec::new();
    for _ in 0..args.repeat.max(1) {
        for req in &requests {
            let job = Arc::new(filprove_engine::filecoin::FilecoinJob::new(req.clone()));
            let submitted = engine.submit(None, priority(req.kind()), job)?;
            jobs.push((
                submitted.job_id,
                req.kind(),
                req.circuit().short_name,
                req.num_partitions(),
            ));
        }
    }
    let mut proved = Vec::new();
    let mut failures = Vec::new();
    for (id, kind, circuit, partitions) in jobs {
        let report = engine
            .wait(&id, None)?
            .with_context(|| format!("job {id} ended without a report"))?;
        let t = report.timings;
        match report.outcome {
            JobOutcome::Completed(proof) => proved.push(Proved {
                kind,
                circuit,
                partitions,
                wall_s: t.total.as_secs_f64(),
                synthesis_s: t.synthesis.as_secs_f64(),
                prove_s: t.prove.as_secs_f64(),
                verify_s: t.verify.as_secs_f64(),
                proof_bytes: proof.len(),
            }),
            JobOutcome::Failed(e) => failures.push(format!("{id}: {}: {e}", e.code())),
            JobOutcome::Cancelled => failures.push(format!("{id}: cancelled")),
        }
    }
    let total_s = started.elapsed().as_secs_f64();
    let peak_rss = peak_rss_bytes();

    println!(
        "{:<14} {:<12} {:>5} {:>9} {:>12} {:>10} {:>9}",
        "kind", "circuit", "parts", "wall s", "synthesis s", "prove s", "verify s"
    );
    for p in &proved {
        println!(
            "{:<14} {:<12} {:>5} {:>9.2} {:>12.2} {:>10.2} {:>9.2}",
            p.kind.as_str(),
            p.circuit,
            p.partitions,
            p.wall_s,
            p.synthesis_s,
            p.prove_s,
            p.verify_s
        );
    }
    for (c, s) in &keygen_s {
        println!("parameters of {c} generated in memory in {s:.1} s");
    }
    println!(
        "{} proofs verified in {total_s:.2} s; peak host RSS {}",
        proved.len(),
        peak_rss.map_or("-".into(), |b| format!(
            "{:.1} GiB",
            b as f64 / (1u64 << 30) as f64
        ))
    );
    if let Some(path) = &args.report {
        let report = json!({
            "backend": backend,
            "partition_workers": args.partition_workers,
            "gpu_workers": args.gpu_workers,
            "keygen_s": keygen_s,
            "total_s": total_s,
            "peak_rss_bytes": peak_rss,
            "failures": failures,
            "proofs": proved.iter().map(|p| json!({
                "kind": p.kind.as_str(),
                "circuit": p.circuit,
                "partitions": p.partitions,
                "wall_s": p.wall_s,
                "synthesis_s": p.synthesis_s,
                "prove_s": p.prove_s,
                "verify_s": p.verify_s,
                "proof_bytes": p.proof_bytes,
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} proofs failed: {}",
            failures.len(),
            failures.len() + proved.len(),
            failures.join("; ")
        );
    }
    Ok(())
}
