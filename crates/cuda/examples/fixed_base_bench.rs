//! GPU fixed-base multiplication benchmark (src/fixed_base.rs): ms and points/s per query,
//! GPU kernel time, host copy and wait time, table build; a sample of the points checked
//! against the CPU. Or a whole parameter generation of a synthetic PoRep-like circuit
//! with the GPU's fixed-base part (phase times from keygen's log).
//!
//! ```text
//! cargo run --release -p filprove-cuda --example fixed_base_bench -- --g1 2^27 --g2 2^25
//! cargo run --release -p filprove-cuda --example fixed_base_bench -- --porep32
//! cargo run --release -p filprove-cuda --example fixed_base_bench -- --porep32 --g1-window 16 --g2-window 16
//! cargo run --release -p filprove-cuda --example fixed_base_bench -- --keygen 24 [--compare-cpu]
//! ```
//! Options: `--g1 N` / `--g2 N` one query of N points each (`2^k` accepted; 0 skips);
//! `--porep32` the five queries of porep-32g (h, l, a, b_g1 in G1; b_g2 in G2);
//! `--g1-window W`, `--g2-window W`, `--chunk N`, `--slots N`, `--max-table-gib G`
//! ([`FixedBaseOptions`]); `--check K` points compared with the CPU per query (default
//! 1000); `--reps R` runs of each query (default 1; the first includes nothing but the
//! query: tables are built before).

use std::sync::Arc;
use std::time::Instant;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_cuda::testing::fixed_base::{FbCurve, FixedBaseOptions, GpuFixedBase};
use filprove_cuda::testing::msm::{G1, G2};
use filprove_cuda::testing::Gpu;
use filprove_groth16::keygen::{self, FixedBaseMul, ToxicWaste};
use filprove_groth16::{Fr, ProveError};
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("fixed_base_bench: {e}");
        std::process::exit(1);
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// "123", "2^27" or "2^27-1".
fn count(s: &str) -> Result<usize, String> {
    let (base, minus) = match s.split_once('-') {
        Some((b, m)) => (b, m.parse::<usize>().map_err(|e| format!("{s}: {e}"))?),
        None => (s, 0),
    };
    let v = match base.strip_prefix("2^") {
        Some(k) => 1usize << k.parse::<u32>().map_err(|e| format!("{s}: {e}"))?,
        None => base.parse::<usize>().map_err(|e| format!("{s}: {e}"))?,
    };
    Ok(v.saturating_sub(minus))
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let _ = log::set_logger(&StderrLog).map(|()| log::set_max_level(log::LevelFilter::Info));
    let mut opts = FixedBaseOptions::default();
    let num = |name: &str| arg(&args, name).map(|v| count(&v)).transpose();
    if let Some(w) = num("--g1-window")? {
        opts.g1_window = Some(w as u32);
    }
    if let Some(w) = num("--g2-window")? {
        opts.g2_window = Some(w as u32);
    }
    if let Some(c) = num("--chunk")? {
        opts.chunk_points = c;
    }
    if let Some(s) = num("--slots")? {
        opts.slots = s;
    }
    if let Some(g) = num("--max-table-gib")? {
        opts.max_table_bytes = (g as u64) << 30;
    }
    let check = num("--check")?.unwrap_or(1000);
    let reps = num("--reps")?.unwrap_or(1).max(1);
    let gpu = Arc::new(Gpu::open(0).map_err(|e| e.to_string())?);
    eprintln!(
        "fixed_base_bench on {} ({} rayon threads), {opts:?}",
        gpu.name(),
        rayon::current_num_threads()
    );
    let fb = GpuFixedBase::new(gpu, opts).map_err(|e| e.to_string())?;
    if let Some(lg) = num("--keygen")? {
        return keygen_run(&fb, lg as u32, args.iter().any(|a| a == "--compare-cpu"));
    }

    let queries: Vec<(&str, bool, usize)> = if args.iter().any(|a| a == "--porep32") {
        vec![
            ("h", true, (1 << 27) - 1),
            ("l", true, 130_169_893),
            ("a", true, 129_800_000),
            ("b_g1", true, 33_100_000),
            ("b_g2", false, 33_100_000),
        ]
    } else {
        vec![
            ("g1", true, num("--g1")?.unwrap_or(1 << 27)),
            ("g2", false, num("--g2")?.unwrap_or(1 << 25)),
        ]
    };
    let queries: Vec<_> = queries.into_iter().filter(|q| q.2 > 0).collect();
    let max = queries.iter().map(|q| q.2).max().unwrap_or(0);
    let t = Instant::now();
    let scalars = random_scalars(max, 1);
    eprintln!("{max} random scalars in {:.2?}", t.elapsed());

    let g1_total: usize = queries.iter().filter(|q| q.1).map(|q| q.2).sum();
    let g2_total: usize = queries.iter().filter(|q| !q.1).map(|q| q.2).sum();
    let t = Instant::now();
    fb.prepare(g1_total, g2_total).map_err(|e| e.to_string())?;
    let (t1, t2) = fb.tables();
    println!(
        "prepare ({g1_total} G1, {g2_total} G2 points): {:.1} ms; G1 table {:?}, G2 table {:?}",
        t.elapsed().as_secs_f64() * 1e3,
        t1,
        t2
    );
    println!(
        "{:<6} {:>11} {:>3} {:>10} {:>10} {:>9} {:>9} {:>9} {:>8}",
        "query", "points", "w", "wall ms", "kernel ms", "Mpts/s", "copy s", "wait s", "checked"
    );
    let (mut wall_sum, mut kernel_sum) = (0.0, 0.0);
    for (name, is_g1, n) in &queries {
        for _ in 0..reps {
            let s = &scalars[..*n];
            let checked = if *is_g1 {
                query::<G1>(&fb, s, check)?
            } else {
                query::<G2>(&fb, s, check)?
            };
            let st = fb.last_stats();
            println!(
                "{:<6} {:>11} {:>3} {:>10.1} {:>10.1} {:>9.1} {:>9.2} {:>9.2} {:>8}",
                name,
                n,
                st.window,
                st.wall_s * 1e3,
                st.kernel_ms,
                *n as f64 / st.wall_s / 1e6,
                st.host_copy_s,
                st.host_wait_s,
                checked
            );
            wall_sum += st.wall_s * 1e3;
            kernel_sum += st.kernel_ms;
        }
    }
    println!(
        "total: {:.1} ms wall, {:.1} ms GPU kernels (all queries, {reps} rep(s) each)",
        wall_sum, kernel_sum
    );
    fb.release();
    Ok(())
}

/// Runs one query and compares `check` random points with the CPU's multiplication.
fn query<C: FbCurve>(fb: &GpuFixedBase, s: &[Fr], check: usize) -> Result<usize, String>
where
    C::Affine: Send + Sync + PartialEq + std::fmt::Debug,
    C::Proj: Group<Scalar = Fr>,
{
    let out = fb.multiply::<C>(s).map_err(|e: ProveError| e.to_string())?;
    if out.len() != s.len() {
        return Err(format!("{} points for {} scalars", out.len(), s.len()));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(s.len() as u64);
    let idx: Vec<usize> = (0..check.min(s.len()))
        .map(|k| match k {
            0 => 0,
            1 => s.len() - 1,
            _ => rng.gen_range(0..s.len()),
        })
        .collect();
    let bad = idx
        .par_iter()
        .find_any(|&&i| out[i] != (C::Proj::generator() * s[i]).to_affine());
    if let Some(&i) = bad {
        return Err(format!("point {i} differs from the CPU's"));
    }
    Ok(idx.len())
}

/// `n` random scalars, made in parallel (deterministic for `seed`).
fn random_scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut v = vec![Fr::ZERO; n];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9e37_79b9));
            for x in chunk {
                *x = Fr::random(&mut rng);
            }
        });
    v
}

/// PoRep-like densities (as groth16's keygen_bench): every aux variable in A, about a
/// quarter in B, each constraint defining the next variable in C.
#[derive(Clone)]
struct Synthetic {
    constraints: usize,
}

impl Circuit<Fr> for Synthetic {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let inp = cs.alloc_input(|| "in", || Ok(Fr::from(7u64)))?;
        let mut prev = cs.alloc(|| "x0", || Ok(Fr::ONE))?;
        let mut cur = prev;
        let two = Fr::from(2u64);
        for i in 0..self.constraints {
            let next = cs.alloc(|| "x", || Ok(Fr::ONE))?;
            if i % 4 == 0 {
                cs.enforce(|| "sq", |lc| lc + cur, |lc| lc + cur, |lc| lc + next);
            } else if i % 4 == 1 {
                cs.enforce(
                    || "lin",
                    |lc| lc + cur + (two, prev),
                    |lc| lc + CS::one(),
                    |lc| lc + next + inp,
                );
            } else {
                cs.enforce(
                    || "lin",
                    |lc| lc + cur - prev,
                    |lc| lc + CS::one(),
                    |lc| lc + next,
                );
            }
            prev = cur;
            cur = next;
        }
        Ok(())
    }
}

fn keygen_run(fb: &GpuFixedBase, lg: u32, compare: bool) -> Result<(), String> {
    let circuit = Synthetic {
        constraints: (1usize << lg) - 64,
    };
    let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(1));
    let t = Instant::now();
    let srs = keygen::generate_parameters_using(circuit.clone(), &toxic, fb)
        .map_err(|e| e.to_string())?;
    println!(
        "keygen 2^{lg} with the GPU's fixed-base: {:.2?}; h {} l {} a {} b {}; peak RSS {} MiB",
        t.elapsed(),
        srs.h.len(),
        srs.l.len(),
        srs.a.len(),
        srs.b_g2.len(),
        peak_rss_mib()
    );
    if compare {
        let t = Instant::now();
        let cpu = keygen::generate_parameters_with(circuit, &toxic).map_err(|e| e.to_string())?;
        println!("keygen 2^{lg} on the CPU: {:.2?}", t.elapsed());
        let bytes = |s: &filprove_groth16::Srs| {
            let mut v = Vec::new();
            s.write_to(&mut v).map(|_| v).map_err(|e| e.to_string())
        };
        if bytes(&cpu)? != bytes(&srs)? {
            return Err("GPU and CPU parameters differ".into());
        }
        println!("identical: yes");
    }
    Ok(())
}

fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .map_or(0, |kib| kib / 1024)
}

/// Prints `log` records of level info and above to stderr (keygen's phase times).
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            eprintln!("  [{}] {}", r.target(), r.args());
        }
    }
    fn flush(&self) {}
}
