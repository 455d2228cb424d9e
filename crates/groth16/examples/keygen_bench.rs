//! Timing of parameter generation (prints figures; asserts nothing about speed).
//!
//! ```text
//! KEYGEN_BENCH_LOG2=21 cargo run --release -p filprove-groth16 --example keygen_bench
//! ```
//! `KEYGEN_BENCH_LOG2` (default 21) sets the domain: the synthetic circuit has
//! 2^LOG2 - 64 constraints. `KEYGEN_BENCH_BELLPERSON=1` also times bellperson's
//! `generate_parameters` on the same circuit (slow above 2^16).

use std::time::Instant;

use bellperson::{groth16, Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_groth16::keygen::{self, R1csAssembly, ToxicWaste};
use filprove_groth16::{Bls12, Fr, G1Projective, G2Projective, Srs};
use group::Group;
use rand_chacha::rand_core::SeedableRng;

/// PoRep-like densities: every aux variable in A (two terms per row), about a quarter in
/// B, each constraint defining the next variable in C, a few non-unit coefficients.
#[derive(Clone)]
struct Synthetic {
    constraints: usize,
}

impl Circuit<Fr> for Synthetic {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut v = Fr::from(5u64);
        let inp = cs.alloc_input(|| "in", || Ok(Fr::from(7u64)))?;
        let mut prev = cs.alloc(|| "x0", || Ok(v))?;
        let mut cur = prev;
        let two = Fr::from(2u64);
        for i in 0..self.constraints {
            let next_v = v.square();
            let next = cs.alloc(|| "x", || Ok(next_v))?;
            if i.is_multiple_of(4) {
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
            v = next_v;
        }
        Ok(())
    }
}

/// Prints `log` records of level info and above to stderr (phase timings of keygen).
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

fn keygen_timing() {
    let log2: u32 = std::env::var("KEYGEN_BENCH_LOG2")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(21);
    let circuit = Synthetic {
        constraints: (1usize << log2) - 64,
    };
    let toxic = ToxicWaste::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
    let _ = log::set_logger(&StderrLog).map(|()| log::set_max_level(log::LevelFilter::Info));
    println!("threads: {}", rayon::current_num_threads());
    let cpu0 = cpu_secs();

    let t = Instant::now();
    let r1cs = R1csAssembly::synthesize(circuit.clone()).unwrap();
    let t_syn = t.elapsed();
    println!(
        "synthesize: {:.2?} ({} constraints, {} aux, nnz {:?}, {} MiB)",
        t_syn,
        r1cs.num_constraints(),
        r1cs.num_aux(),
        r1cs.nnz(),
        r1cs.heap_bytes() >> 20
    );
    let t = Instant::now();
    let srs = keygen::generate_from_r1cs(&r1cs, &toxic).unwrap();
    let t_gen = t.elapsed();
    println!(
        "filprove keygen 2^{log2}: {:.2?} total ({:.2?} synthesis + {:.2?} generation); h {} l {} a {} b {}; peak RSS {} MiB",
        t_syn + t_gen,
        t_syn,
        t_gen,
        srs.h.len(),
        srs.l.len(),
        srs.a.len(),
        srs.b_g2.len(),
        peak_rss_mib()
    );
    println!("  cpu time (all threads): {:.1} s", cpu_secs() - cpu0);
    drop(r1cs);

    if std::env::var("KEYGEN_BENCH_BELLPERSON").is_ok() {
        let cpu1 = cpu_secs();
        let t = Instant::now();
        let bp = groth16::generate_parameters::<Bls12, _>(
            circuit,
            G1Projective::generator(),
            G2Projective::generator(),
            toxic.alpha,
            toxic.beta,
            toxic.gamma,
            toxic.delta,
            toxic.tau,
        )
        .unwrap();
        println!(
            "bellperson generate_parameters 2^{log2}: {:.2?}",
            t.elapsed()
        );
        println!("  cpu time (all threads): {:.1} s", cpu_secs() - cpu1);
        assert!(
            Srs::from(&bp) == srs,
            "bellperson and filprove parameters differ"
        );
        println!("identical: yes");
    }
    let _ = Fr::ONE;
}

/// CPU seconds used by this process so far (user + system).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    // After the command: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt,
    // majflt, cmajflt, utime, stime (in ticks of 1/100 s).
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

fn curve_op_costs() {
    use group::Curve;
    let g = G1Projective::generator();
    let p = (g * Fr::from(12345u64)).to_affine();
    let n = 1_000_000;
    let (t, c) = (Instant::now(), cpu_secs());
    let mut acc = g;
    for _ in 0..n {
        acc += &p;
    }
    println!(
        "G1 mixed add: {:.0} ns wall, {:.0} ns cpu ({:?})",
        t.elapsed().as_nanos() as f64 / n as f64,
        (cpu_secs() - c) * 1e9 / n as f64,
        acc.is_identity()
    );
    let q = (G2Projective::generator() * Fr::from(12345u64)).to_affine();
    let mut acc2 = G2Projective::generator();
    let (t, c) = (Instant::now(), cpu_secs());
    for _ in 0..n / 4 {
        acc2 += &q;
    }
    println!(
        "G2 mixed add: {:.0} ns wall, {:.0} ns cpu ({:?})",
        t.elapsed().as_nanos() as f64 / (n / 4) as f64,
        (cpu_secs() - c) * 1e9 / (n / 4) as f64,
        acc2.is_identity()
    );
    let mut x = Fr::from(3u64);
    let (t, c) = (Instant::now(), cpu_secs());
    for _ in 0..n {
        x = x.square();
    }
    println!(
        "Fr square: {:.0} ns wall, {:.0} ns cpu ({:?})",
        t.elapsed().as_nanos() as f64 / n as f64,
        (cpu_secs() - c) * 1e9 / n as f64,
        x.is_zero()
    );
}

/// `cargo run --release -p filprove-groth16 --example keygen_bench [curve-ops]`
fn main() {
    if std::env::args().any(|a| a == "curve-ops") {
        curve_op_costs();
    } else {
        keygen_timing();
    }
}
