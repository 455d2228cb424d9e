//! Parameter generation of one real circuit, in memory (`CircuitSpec::generate_in_memory`:
//! only the `.vk` and `.meta` are written), with each phase's time from keygen's log:
//! R1CS capture, Lagrange basis, QAP, fixed-base preparation, each query, the write.
//!
//! ```text
//! cargo run --release -p filprove --example keygen_phases -- porep-32g --backend cuda
//! cargo run --release -p filprove --example keygen_phases -- porep-2k --backend none --count
//! ```
//! `--backend cuda|cpu|none` (default cuda): where the points are made; `none` returns the
//! identity for every point (timing the CPU phases alone; the parameters are useless).
//! `--count`: also time the blank circuit's synthesis counting constraints only.
//! `--dir DIR` (default a temporary directory): where the `.vk` and `.meta` go.

use std::time::Instant;

use filprove_filecoin::CircuitSpec;
use filprove_groth16::keygen::{CpuFixedBase, FixedBaseMul};
use filprove_groth16::{Fr, G1Affine, G2Affine, ParamsError};
use rand::SeedableRng;

/// Identity points: no multiplication (timing the other phases).
struct NoPoints;

impl FixedBaseMul for NoPoints {
    fn name(&self) -> String {
        "none (identity points, timing only)".into()
    }
    fn g1(&self, s: &[Fr]) -> Result<Vec<G1Affine>, ParamsError> {
        Ok(vec![G1Affine::default(); s.len()])
    }
    fn g2(&self, s: &[Fr]) -> Result<Vec<G2Affine>, ParamsError> {
        Ok(vec![G2Affine::default(); s.len()])
    }
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(key)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
}

/// CPU seconds of this process (user + system).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

fn main() {
    if let Err(e) = run() {
        eprintln!("keygen_phases: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info,filecoin_proofs=warn,storage_proofs_core=warn,storage_proofs_porep=warn,storage_proofs_post=warn"))
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or_else(|| "porep-2k".into());
    let opt = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let spec = CircuitSpec::from_short_name(&name)
        .ok_or_else(|| anyhow::anyhow!("unknown circuit {name}"))?;
    let fb: Box<dyn FixedBaseMul> = match opt("--backend").as_deref().unwrap_or("cuda") {
        "cuda" => Box::new(filprove_cuda::GpuFixedBase::open(
            0,
            filprove_cuda::FixedBaseOptions::default(),
        )?),
        "cpu" => Box::new(CpuFixedBase::new()),
        "none" => Box::new(NoPoints),
        other => anyhow::bail!("--backend {other}: cuda, cpu or none"),
    };
    println!(
        "{name}: points on {}, {} cores",
        fb.name(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if args.iter().any(|a| a == "--count") {
        let (t, c) = (Instant::now(), cpu_secs());
        let shape = spec.blank_shape()?;
        println!(
            "count-only synthesis: {:.2} s wall, {:.2} s cpu ({} constraints, {} inputs, {} aux)",
            t.elapsed().as_secs_f64(),
            cpu_secs() - c,
            shape.constraints,
            shape.inputs,
            shape.aux
        );
    }
    let tmp = tempfile::tempdir()?;
    let dir = opt("--dir").map_or_else(|| tmp.path().to_path_buf(), Into::into);
    let (t, c) = (Instant::now(), cpu_secs());
    let out =
        spec.generate_in_memory(&dir, &mut rand_chacha::ChaCha20Rng::seed_from_u64(0), &*fb)?;
    let srs = &out.srs;
    println!(
        "{name} in memory: {:.2} s wall, {:.1} s cpu; h {} l {} a {} b_g1 {} b_g2 {} ic {}; peak RSS {} MiB; {}",
        t.elapsed().as_secs_f64(),
        cpu_secs() - c,
        srs.h.len(),
        srs.l.len(),
        srs.a.len(),
        srs.b_g1.len(),
        srs.b_g2.len(),
        srs.vk.ic.len(),
        status_kib("VmHWM:") >> 10,
        out.vk_path.display()
    );
    Ok(())
}
