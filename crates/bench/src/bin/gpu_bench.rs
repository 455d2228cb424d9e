//! GPU benchmark: NTT, the H polynomial (6 NTTs + pointwise), G1 and G2 MSMs (uniform
//! scalars, and the split MSM on a Filecoin-like 0/1 mix) over distinct device-made points
//! (filprove-cuda's synth.rs; their generation is a row too). Timed with CUDA events after a warm-up;
//! the median of several runs. Prints a table last; `--json PATH` writes all rows.
//!
//! Usage: gpu_bench [--json PATH] [--quick]   (--quick: small sizes only, for a smoke run)
//!        gpu_bench --breakdown [--quick] [--steps ntt,h,g1,g1split,g1fold,g2] [--lg N]
//!                                             (per-kernel times of NTT, H and MSMs at 2^27,
//!                                              or 2^N for N in 16..=27; G2 at 2^(N-2);
//!                                              each against its bound on the H200)
//!        ... --msm levels=4,min_entries=0,slots=64,leftover=never,binned_min=4194304
//!                                             (MSM tuning other than production, for A/B runs)

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cudarc::driver::CudaSlice;
use filprove_bench::bounds::Machine;
use filprove_cuda::testing::folded;
use filprove_cuda::testing::msm::{self, G1, G2};
use filprove_cuda::testing::ntt::{self, NttKind, NttPlan};
use filprove_cuda::testing::synth::{self, SynthCurve};
use filprove_cuda::testing::work::{StepSum, Work};
use filprove_cuda::testing::Gpu;
use filprove_cuda::{LeftoverReduce, MsmTuning};
use filprove_groth16::ProveError;
use group::{Curve as _, Group};
use rand::SeedableRng;
use rayon::prelude::*;

struct Row {
    what: String,
    log_n: u32,
    reps: usize,
    ms: Vec<f64>,
    floor_ms: Option<f64>,
}

impl Row {
    fn median(&self) -> f64 {
        let mut v = self.ms.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
}

/// Production MSM tuning with the `key=value` settings of `spec` applied.
fn msm_tuning(spec: &str) -> Result<MsmTuning, ProveError> {
    let mut t = MsmTuning::PRODUCTION;
    for kv in spec.split(',').filter(|s| !s.is_empty()) {
        let bad = || {
            ProveError::Invalid(format!("--msm {kv}: expected levels=, min_entries=, slots=, leftover=auto|always|never or binned_min="))
        };
        let (k, v) = kv.split_once('=').ok_or_else(bad)?;
        let n = || v.parse::<usize>().map_err(|_| bad());
        match k {
            "levels" => t.levels = n()?.min(32) as u32,
            "min_entries" => t.min_entries = n()?,
            "slots" => t.slots = n()?.clamp(1, 1024) as u32,
            "binned_min" => t.binned_min = n()?,
            "leftover" => {
                t.leftover = match v {
                    "auto" => LeftoverReduce::Auto,
                    "always" => LeftoverReduce::Always,
                    "never" => LeftoverReduce::Never,
                    _ => return Err(bad()),
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(t)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("gpu_bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), ProveError> {
    let args: Vec<String> = std::env::args().collect();
    let json = flag(&args, "--json")
        .filter(|p| !p.is_empty())
        .map(str::to_owned);
    let quick = args.iter().any(|a| a == "--quick");
    let tuning = match flag(&args, "--msm") {
        Some(v) => msm_tuning(v)?,
        None => MsmTuning::PRODUCTION,
    };
    let breakdown_lg = match flag(&args, "--lg") {
        Some(v) => parse_lg(v)?,
        None if quick => 20,
        None => 27,
    };
    let gpu = Gpu::open_selftest(0)?.with_msm_tuning(tuning);
    eprintln!("gpu_bench on {} ({tuning:?})", gpu.name());
    if args.iter().any(|a| a == "--breakdown") {
        // --steps ntt,h,g1,g1split,g2: only those steps (A/B builds of one kernel).
        let steps = flag(&args, "--steps").unwrap_or("ntt,h,g1,g1split,g2");
        let steps: Vec<&str> = steps.split(',').collect();
        return breakdown(&gpu, breakdown_lg, &steps);
    }
    let mut rows = Vec::new();

    let ntt_sizes: &[u32] = if quick { &[16, 20] } else { &[20, 24, 26, 27] };
    for &lg in ntt_sizes {
        rows.push(bench_ntt(&gpu, lg)?);
        print_row(rows.last().unwrap());
    }
    let h_sizes: &[u32] = if quick { &[20] } else { &[20, 24, 27] };
    for &lg in h_sizes {
        rows.push(bench_h(&gpu, lg)?);
        print_row(rows.last().unwrap());
    }
    let g1: &[(u32, bool)] = if quick {
        &[(16, false), (20, false), (20, true)]
    } else {
        &[
            (20, false),
            (24, false),
            (26, false),
            (27, false),
            (24, true),
            (27, true),
        ]
    };
    bench_msm::<G1>(&gpu, g1, &mut rows)?;
    let g2: &[(u32, bool)] = if quick {
        &[(16, false), (16, true)]
    } else {
        &[
            (20, false),
            (24, false),
            (25, false),
            (26, false),
            (24, true),
        ]
    };
    bench_msm::<G2>(&gpu, g2, &mut rows)?;

    if !args.iter().any(|a| a == "--no-prove") {
        let lg = if quick { 16 } else { 24 };
        match bench_prove(lg) {
            Ok(r) => {
                print_row(&r);
                rows.push(r);
            }
            Err(e) => eprintln!("  prove 2^{lg} failed: {e}"),
        }
    }

    println!(
        "\n{:<28} {:>6} {:>5} {:>11} {:>11} {:>10} {:>9}",
        "what", "log2n", "reps", "median ms", "min ms", "floor ms", "floor/t"
    );
    for r in &rows {
        let min = r.ms.iter().cloned().fold(f64::INFINITY, f64::min);
        let (f, frac) = match r.floor_ms {
            Some(f) => (format!("{f:.1}"), format!("{:.2}", f / r.median())),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<28} {:>6} {:>5} {:>11.2} {:>11.2} {:>10} {:>9}",
            r.what,
            r.log_n,
            r.reps,
            r.median(),
            min,
            f,
            frac
        );
    }
    if let Some(path) = json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({"what": r.what, "log_n": r.log_n, "reps": r.reps, "median_ms": r.median(),
                    "all_ms": r.ms, "floor_ms": r.floor_ms})
            })
            .collect();
        let doc = serde_json::json!({"device": gpu.name(), "rows": v});
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&doc).unwrap_or_default(),
        )
        .map_err(|e| ProveError::Invalid(format!("writing {path}: {e}")))?;
    }
    Ok(())
}

/// The value after `name` when `name` is given ("" when nothing follows it).
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == name)?;
    Some(args.get(i + 1).map_or("", |s| s.as_str()))
}

/// `--lg N` of `--breakdown`: 2^16 to 2^27 entries (the 32 GiB partition's domain is the
/// largest the benchmark's buffers are planned for).
fn parse_lg(v: &str) -> Result<u32, ProveError> {
    match v.parse::<u32>() {
        Ok(lg) if (16..=27).contains(&lg) => Ok(lg),
        _ => Err(ProveError::Invalid(format!(
            "--lg {v}: expected a whole number from 16 to 27"
        ))),
    }
}

fn print_row(r: &Row) {
    eprintln!(
        "  {:<28} 2^{:<3} median {:.2} ms over {}",
        r.what,
        r.log_n,
        r.median(),
        r.reps
    );
}

/// Runs `f` `warm` times, then times `reps` runs with CUDA events.
fn time(
    gpu: &Gpu,
    warm: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), ProveError>,
) -> Result<Vec<f64>, ProveError> {
    for _ in 0..warm {
        f()?;
    }
    gpu.sync()?;
    let mut ms = Vec::new();
    for _ in 0..reps {
        let (e0, e1) = (gpu.timing_event()?, gpu.timing_event()?);
        e0.record(gpu.stream()).map_err(|e| gpu.err("event", e))?;
        f()?;
        e1.record(gpu.stream()).map_err(|e| gpu.err("event", e))?;
        e1.synchronize().map_err(|e| gpu.err("event sync", e))?;
        ms.push(e0.elapsed_ms(&e1).map_err(|e| gpu.err("elapsed", e))? as f64);
    }
    Ok(ms)
}

fn random_fr(gpu: &Gpu, n: usize, seed: u64, mode: u32) -> Result<CudaSlice<u8>, ProveError> {
    synth::fr_random(gpu, n, seed, mode == 1)
}

/// NTT floor: 7 NTTs of 2^27 in 0.21 s (docs/reference/h200.md), scaled by n log n.
fn ntt_floor(lg: u32) -> f64 {
    30.0 * ((1u64 << lg) as f64 * lg as f64) / ((1u64 << 27) as f64 * 27.0)
}

fn bench_ntt(gpu: &Gpu, lg: u32) -> Result<Row, ProveError> {
    let n = 1usize << lg;
    let plan = NttPlan::new(gpu, lg)?;
    let mut d = random_fr(gpu, n, 1, 0)?;
    let reps = if lg >= 26 { 5 } else { 9 };
    let ms = time(gpu, 2, reps, || plan.run(gpu, &mut d, NttKind::Forward))?;
    Ok(Row {
        what: "NTT forward".into(),
        log_n: lg,
        reps,
        ms,
        floor_ms: Some(ntt_floor(lg)),
    })
}

/// H on device-resident a and b, as the region computes it: six transforms (c formed on
/// the device), H's pointwise work on their first loads and last stores.
fn bench_h(gpu: &Gpu, lg: u32) -> Result<Row, ProveError> {
    let n = 1usize << lg;
    let plan = NttPlan::new(gpu, lg)?;
    let mut a = random_fr(gpu, n, 2, 0)?;
    let mut b = random_fr(gpu, n, 3, 0)?;
    let mut c = random_fr(gpu, n, 4, 0)?;
    let reps = if lg >= 26 { 3 } else { 7 };
    let ms = time(gpu, 1, reps, || {
        ntt::compute_h_in_place(gpu, &plan, [&mut a, &mut b, &mut c])
    })?;
    Ok(Row {
        what: "H (6 NTT + pointwise)".into(),
        log_n: lg,
        reps,
        ms,
        floor_ms: Some(6.0 * ntt_floor(lg)),
    })
}

fn g1_points(n: usize) -> Vec<G1Affine> {
    walk(
        n,
        |r| G1Projective::random(r),
        |v| {
            let mut out = vec![G1Affine::default(); v.len()];
            G1Projective::batch_normalize(v, &mut out);
            out
        },
    )
}

fn g2_points(n: usize) -> Vec<G2Affine> {
    walk(
        n,
        |r| G2Projective::random(r),
        |v| {
            let mut out = vec![G2Affine::default(); v.len()];
            G2Projective::batch_normalize(v, &mut out);
            out
        },
    )
}

/// n distinct points from 64 parallel random walks (the SRS of the whole-proof row).
fn walk<P: Group + Send + Sync, A: Send>(
    n: usize,
    random: fn(&mut rand_chacha::ChaCha8Rng) -> P,
    normalize: fn(&[P]) -> Vec<A>,
) -> Vec<A> {
    let chunk = n.div_ceil(64);
    (0..64usize)
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64 + 17);
            let step = random(&mut rng);
            let mut acc = random(&mut rng);
            let len = chunk.min(n.saturating_sub(c * chunk));
            let v: Vec<P> = (0..len)
                .map(|_| {
                    acc += step;
                    acc
                })
                .collect();
            normalize(&v)
        })
        .collect()
}

/// Per-kernel step times (CUDA events between the steps, `Gpu::probe`) of one NTT, H, a
/// uniform G1 MSM, split G1 / G2 MSMs on the Filecoin 0/1 mix and a uniform G2 MSM (G2 on
/// 2^(lg-2) points): median over 3 runs after a warm-up, printed per step with its bound
/// on the H200 (the step's modelled work at the multiplier's or the memory's rate,
/// `filprove_bench::bounds`) and the bound's share of the measured time.
fn breakdown(gpu: &Gpu, lg: u32, steps: &[&str]) -> Result<(), ProveError> {
    let want = |s: &str| steps.contains(&s);
    let n = 1usize << lg;
    let g2_lg = lg.saturating_sub(2);
    let step = |what: &str, f: &mut dyn FnMut() -> Result<(), ProveError>| {
        f()?;
        gpu.sync()?;
        let mut runs: Vec<Vec<StepSum>> = Vec::new();
        for _ in 0..3 {
            gpu.set_probing(true);
            gpu.probe("start", Work::NONE)?;
            f()?;
            runs.push(gpu.take_probe_sums()?);
        }
        gpu.set_probing(false);
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!("{what}");
        println!(
            "  {:<22} {:>10}  {:>9}  {:>22}  {:>6}",
            "step", "ms", "calls", "bound (H200)", "share"
        );
        let mut bound_total = 0.0;
        for first in &runs[0] {
            let per = runs
                .iter()
                .map(|r| {
                    r.iter()
                        .filter(|e| e.label == first.label)
                        .map(|e| e.ms)
                        .sum()
                })
                .collect();
            let ms = median(per);
            let bound = Machine::H200.bound(&first.work);
            bound_total += bound.ms;
            let share = bound
                .percent_of(ms)
                .map_or("-".into(), |p| format!("{p:.0} %"));
            println!(
                "  {:<22} {ms:>10.2}  {:>9}  {:>22}  {share:>6}",
                first.label,
                first.calls,
                bound.describe()
            );
        }
        let total = median(
            runs.iter()
                .map(|r| r.iter().map(|e| e.ms).sum::<f64>())
                .collect(),
        );
        println!(
            "  {:<22} {total:>10.2}  {:>9}  {:>22}  {:>6}",
            "total",
            "",
            format!("{bound_total:.1} ms"),
            format!("{:.0} %", 100.0 * bound_total / total.max(1e-9))
        );
        Ok::<(), ProveError>(())
    };
    // The plan (twiddles and coset tables), made once here; a region makes its own.
    let t = Instant::now();
    let plan = NttPlan::new(gpu, lg)?;
    gpu.sync()?;
    if want("ntt") || want("h") {
        println!(
            "NTT plan 2^{lg} (twiddles, coset tables): {:.2} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        println!("{}", filprove_cuda::testing::ntt::strided_kernel_info(gpu)?);
    }
    if want("ntt") {
        let mut d = random_fr(gpu, n, 1, 0)?;
        step(&format!("NTT forward 2^{lg}"), &mut || {
            plan.run(gpu, &mut d, NttKind::Forward)
        })?;
        step(&format!("NTT coset inverse 2^{lg}"), &mut || {
            plan.run(gpu, &mut d, NttKind::CosetInverse)
        })?;
    }
    if want("h") {
        let mut a = random_fr(gpu, n, 2, 0)?;
        let mut b = random_fr(gpu, n, 3, 0)?;
        let mut c = random_fr(gpu, n, 4, 0)?;
        step(&format!("H 2^{lg}"), &mut || {
            filprove_cuda::testing::ntt::compute_h_in_place(gpu, &plan, [&mut a, &mut b, &mut c])
        })?;
    }
    drop(plan);
    if want("g1") || want("g1split") || want("g1fold") {
        let tables = synth::tables::<G1>(n, 0x5eed);
        let bases = synth::points_from_tables::<G1>(gpu, &tables)?;
        drop(tables);
        if want("g1fold") {
            fold_step(gpu, &bases, n, &step)?;
        }
        if want("g1") {
            let uniform = random_fr(gpu, n, 5, 0)?;
            step(&format!("G1 MSM uniform 2^{lg}"), &mut || {
                msm::msm::<G1>(gpu, &bases, &uniform, n, false).map(|_| ())
            })?;
        }
        if want("g1split") {
            let mixed = random_fr(gpu, n, 6, 1)?;
            step(&format!("G1 MSM split 0/1 mix 2^{lg}"), &mut || {
                msm::msm::<G1>(gpu, &bases, &mixed, n, true).map(|_| ())
            })?;
        }
    }
    if !want("g2") {
        return Ok(());
    }
    let m = 1usize << g2_lg;
    let tables = synth::tables::<G2>(m, 0x5eed);
    let bases = synth::points_from_tables::<G2>(gpu, &tables)?;
    drop(tables);
    let mixed = random_fr(gpu, m, 7, 1)?;
    step(&format!("G2 MSM split 0/1 mix 2^{g2_lg}"), &mut || {
        msm::msm::<G2>(gpu, &bases, &mixed, m, true).map(|_| ())
    })?;
    // Uniform scalars: a PoSt witness's B in G2 is mostly full-size values.
    let uniform = random_fr(gpu, m, 8, 0)?;
    step(&format!("G2 MSM uniform 2^{g2_lg}"), &mut || {
        msm::msm::<G2>(gpu, &bases, &uniform, m, false).map(|_| ())
    })?;
    Ok(())
}

/// `breakdown`'s timing of one step: its name and the work to run.
type StepFn<'a> =
    dyn Fn(&str, &mut dyn FnMut() -> Result<(), ProveError>) -> Result<(), ProveError> + 'a;

/// The H MSM folded (msm_folded): the bases' 2^fold_shift multiples made on the device
/// (timed), the folded MSM's steps, and its sum against the unfolded MSM's.
fn fold_step(
    gpu: &Gpu,
    bases: &CudaSlice<u8>,
    n: usize,
    step: &StepFn<'_>,
) -> Result<(), ProveError> {
    let t = Instant::now();
    let folded = folded::fold_copy(gpu, gpu.stream(), bases, n)?;
    gpu.sync()?;
    println!(
        "folded bases: 2^{} times 2^{} points made in {:.2} s",
        folded::fold_shift(n),
        n.ilog2(),
        t.elapsed().as_secs_f64()
    );
    let uniform = random_fr(gpu, n, 5, 0)?;
    let tuning = gpu.msm_tuning();
    let run = || msm::msm_folded::<G1>(gpu, &folded.as_view(), &uniform.as_view(), n, &tuning);
    step(
        &format!("G1 MSM uniform 2^{}, folded", n.ilog2()),
        &mut || run().map(|_| ()),
    )?;
    let want = msm::msm::<G1>(gpu, bases, &uniform, n, false)?.download::<G1>(gpu)?;
    let got = run()?.download::<G1>(gpu)?;
    if got != want {
        return Err(ProveError::Invalid(
            "the folded MSM's sum differs from the unfolded one".into(),
        ));
    }
    println!("folded MSM equals the unfolded MSM");
    Ok(())
}

/// MSMs over 2^max distinct device-made points (their generation timed as a row first).
fn bench_msm<C: SynthCurve>(
    gpu: &Gpu,
    cases: &[(u32, bool)],
    rows: &mut Vec<Row>,
) -> Result<(), ProveError> {
    let max_lg = cases.iter().map(|c| c.0).max().unwrap_or(0);
    let max = 1usize << max_lg;
    let t = Instant::now();
    let tables = synth::tables::<C>(max, 0x5eed);
    eprintln!(
        "  {} synthetic-point tables ({} + {} points) made on the host in {:.2} s",
        C::PREFIX,
        tables.t1.len(),
        tables.t2.len(),
        t.elapsed().as_secs_f64()
    );
    let reps = if max_lg >= 26 { 3 } else { 5 };
    let ms = time(gpu, 1, reps, || {
        synth::points_from_tables::<C>(gpu, &tables).map(|_| ())
    })?;
    rows.push(Row {
        what: format!("{} synth points", C::PREFIX.to_uppercase()),
        log_n: max_lg,
        reps,
        ms,
        floor_ms: None,
    });
    print_row(rows.last().unwrap());
    let bases = synth::points_from_tables::<C>(gpu, &tables)?;
    drop(tables);
    let uniform = random_fr(gpu, max, 5, 0)?;
    let mixed = random_fr(gpu, max, 6, 1)?;
    for &(lg, split) in cases {
        let n = 1usize << lg;
        let scalars = if split { &mixed } else { &uniform };
        let reps = if lg >= 26 { 3 } else { 5 };
        let ms = time(gpu, 1, reps, || {
            msm::msm::<C>(gpu, &bases, scalars, n, split).map(|_| ())
        })?;
        let floor = (!split && C::PREFIX == "g1").then(|| 570.0 * n as f64 / (1u64 << 27) as f64);
        let what = format!(
            "{} MSM {}",
            C::PREFIX.to_uppercase(),
            if split { "split 0/1 mix" } else { "uniform" }
        );
        rows.push(Row {
            what,
            log_n: lg,
            reps,
            ms,
            floor_ms: floor,
        });
        print_row(rows.last().unwrap());
    }
    Ok(())
}

/// One whole proof through `CudaBackend::prove` (host wall clock: uploads from pageable
/// memory, NTTs, five MSMs, downloads) on a synthetic circuit with a Filecoin-like witness:
/// 2^lg - 64 constraints, as many aux variables (51 % 0, 47 % 1, 2 % uniform), all dense
/// in A, every fourth dense in B. The SRS is random points (the prover does not check it).
fn bench_prove(lg: u32) -> Result<Row, ProveError> {
    use ff::Field;
    use filprove_groth16::density::DensityBits;
    use filprove_groth16::{
        Backend, Fr, ProofInput, ProvingAssignment, Randomness, Srs, VerifyingKey,
    };
    let t = Instant::now();
    let n = (1usize << lg) - 64;
    // A full-size constant: other values are full-size field elements, one product each.
    let big = Fr::from(0x1234_5678_9abc_def1u64).pow_vartime([0xfedc_ba98_7654_3211, 3]);
    let mix = |i: usize, zero: u64, one: u64| -> Fr {
        let h = (i as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(17)
            % 100;
        if h < zero {
            Fr::ZERO
        } else if h < zero + one {
            Fr::ONE
        } else {
            Fr::from(i as u64 + 3) * big
        }
    };
    let a: Vec<Fr> = (0..n).into_par_iter().map(|i| mix(i, 49, 18)).collect();
    let b: Vec<Fr> = (0..n).into_par_iter().map(|i| mix(i + 7, 49, 49)).collect();
    let aux: Vec<Fr> = (0..n)
        .into_par_iter()
        .map(|i| mix(i + 13, 51, 47))
        .collect();
    let mut a_den = DensityBits::with_capacity(n);
    let mut b_den = DensityBits::with_capacity(n);
    for i in 0..n {
        a_den.push_set();
        if i % 4 == 0 {
            b_den.push_set();
        } else {
            b_den.push_clear();
        }
    }
    let mut b_in = DensityBits::new();
    b_in.push_set();
    b_in.push_set();
    let inputs = vec![Fr::ONE, Fr::from(5u64)];
    let nb = 2 + b_den.count_ones();
    let asg = ProvingAssignment {
        pins: Default::default(),
        a,
        b,
        input_assignment: inputs,
        aux_assignment: aux,
        a_aux_density: a_den,
        b_input_density: b_in,
        b_aux_density: b_den,
    };
    let g1 = g1_points(1 << 16);
    let g2 = g2_points(1 << 14);
    let tile1 = |len: usize| -> Vec<G1Affine> {
        (0..len).into_par_iter().map(|i| g1[i % g1.len()]).collect()
    };
    let tile2 = |len: usize| -> Vec<G2Affine> {
        (0..len).into_par_iter().map(|i| g2[i % g2.len()]).collect()
    };
    let srs = Srs {
        vk: VerifyingKey {
            alpha_g1: g1[1],
            beta_g1: g1[2],
            beta_g2: g2[1],
            gamma_g2: g2[2],
            delta_g1: g1[3],
            delta_g2: g2[3],
            ic: tile1(2),
        },
        h: tile1((1 << lg) - 1),
        l: tile1(n),
        a: tile1(2 + n),
        b_g1: tile1(nb),
        b_g2: tile2(nb),
    };
    eprintln!(
        "  prove 2^{lg}: synthetic circuit and SRS made in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let backend = filprove_cuda::CudaBackend::new(0)?;
    let input = [ProofInput {
        assignment: &asg,
        randomness: Randomness {
            r: Fr::from(11u64),
            s: Fr::from(13u64),
        },
    }];
    backend.prove(&srs, &input)?; // warm-up
    let mut ms = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        backend.prove(&srs, &input)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Row {
        what: "prove (wall, incl. uploads)".into(),
        log_n: lg,
        reps: 3,
        ms,
        floor_ms: None,
    })
}
