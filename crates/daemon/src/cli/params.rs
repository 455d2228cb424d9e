//! `filprove params`: list the parameter files, check their digests, generate test sizes.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use filprove_filecoin::{CircuitSpec, Generator, ProofKind};
use filprove_groth16::keygen::{CpuFixedBase, FixedBaseMul};
use filprove_groth16::params::{Checked, Manifest, ParamsHeader, ReadOptions};
use filprove_groth16::Srs;
use rand::SeedableRng;

use super::backend::{resolve_params_dir, BackendChoice};
use super::stage::Stage;
use super::test_params;

/// `filprove params ...`
#[derive(Subcommand, Debug)]
pub enum ParamsCommand {
    /// List every circuit filecoin-proofs knows, and which parameter files are present.
    List(DirArgs),
    /// Check present files: digests against the network manifest (parameters.json, as
    /// embedded in storage-proofs) and the header's shape; `--validate` checks every point.
    Check(CheckArgs),
    /// Generate test parameters (insecure: random toxic waste) under the production names,
    /// into a directory of their own (default .fixtures/params, never the production cache);
    /// for PoRep circuits also the SnarkPack SRS non-interactive PoRep aggregates with
    /// (v28-fil-inner-product-v1.srs), when absent. A file whose digest is the network's is
    /// never replaced.
    Generate(GenerateArgs),
    /// Where a PoSt circuit's constraints go, by gadget family (Poseidon, path bits,
    /// insertions, packing, ...): one sector's blank circuit counted and multiplied.
    Profile(super::profile::ProfileArgs),
}

/// The parameter directory argument.
#[derive(Args, Debug)]
pub struct DirArgs {
    /// Parameter directory (default: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
}

/// Arguments of `params check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Only this circuit (e.g. porep-2k); default all present.
    #[arg(long)]
    circuit: Option<String>,
    /// Also decode every point and check it is on the curve and in the subgroup.
    #[arg(long)]
    validate: bool,
}

/// Arguments of `params generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Where the test parameters go (default: .fixtures/params; the production cache
    /// /var/tmp/filecoin-proof-parameters is refused, and 32 and 64 GiB circuits need a
    /// directory given here, other than FIL_PROOFS_PARAMETER_CACHE). Point `prove`,
    /// `daemon` and FIL_PROOFS_PARAMETER_CACHE at it to use them.
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Circuits to generate, by short name (porep-2k, winning-2k, wpost-2k, snap-2k, ...).
    #[arg(long, value_delimiter = ',', required = true)]
    circuit: Vec<String>,
    /// Seed of the toxic waste: the same seed gives byte-identical files.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Regenerate even when the files exist.
    #[arg(long)]
    force: bool,
    /// Where the fixed-base multiplications (every parameter point) run: `cuda` needs a
    /// usable GPU, `auto` takes it when there is one and says so when falling back to the
    /// CPU. The parameters are the same either way. Default: auto.
    #[arg(long, value_enum, env = "FILPROVE_BACKEND")]
    backend: Option<BackendChoice>,
    /// Use bellperson's generator (what filecoin-proofs runs) instead of ours: slow, for
    /// comparing the two on the same circuit.
    #[arg(long)]
    bellperson: bool,
}

/// Writes a test SnarkPack SRS (what non-interactive PoRep aggregates with) unless one is
/// present (`--force` replaces it).
fn generate_aggregation_srs(dir: &Path, args: &GenerateArgs) -> Result<()> {
    let path = filprove_filecoin::params::aggregation_srs_path(dir);
    if path.exists() {
        if !args.force {
            println!(
                "SnarkPack SRS: present ({}), skipped (use --force to regenerate)",
                path.display()
            );
            return Ok(());
        }
        test_params::refuse_replacing_network_files(
            &network_manifest()?,
            std::slice::from_ref(&path),
        )?;
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    let stage = Stage::start("generating the SnarkPack SRS (non-interactive PoRep)");
    // The seed's second stream: not the toxic waste of the Groth16 parameters.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(args.seed);
    rng.set_stream(1);
    let path = filprove_filecoin::params::generate_aggregation_srs(dir, &mut rng)?;
    stage.done(&format!(
        "{} (up to {} proofs)",
        path.display(),
        filprove_filecoin::params::max_aggregated_proofs()
    ));
    Ok(())
}

/// The network's manifest: filecoin-proofs' parameters.json and the SnarkPack SRS's
/// srs-inner-product.json, as embedded in storage-proofs.
pub fn network_manifest() -> Result<Manifest> {
    let mut manifest = Manifest::from_json(filprove_filecoin::network_manifest())?;
    let srs = Manifest::from_json(storage_proofs_core::parameter_cache::SRS_PARAMETERS_DATA)?;
    manifest.entries.extend(srs.entries);
    Ok(manifest)
}

/// Checks one file's digest against the network manifest.
pub fn check_digest(path: &Path) -> Result<Checked> {
    Ok(network_manifest()?.check(path)?)
}

/// Parses a short circuit name, listing the known ones on error.
pub fn spec_by_name(name: &str) -> Result<CircuitSpec> {
    CircuitSpec::from_short_name(name).with_context(|| {
        let known: Vec<String> = CircuitSpec::all()
            .into_iter()
            .map(|s| s.short_name)
            .collect();
        format!("unknown circuit {name:?}; known: {}", known.join(", "))
    })
}

/// Runs `filprove params ...`.
pub fn run(cmd: ParamsCommand) -> Result<()> {
    match cmd {
        ParamsCommand::List(a) => list(&resolve_params_dir(a.params_dir.as_deref())),
        ParamsCommand::Check(a) => check(
            &resolve_params_dir(a.dir.params_dir.as_deref()),
            a.circuit.as_deref(),
            a.validate,
        ),
        ParamsCommand::Profile(a) => super::profile::run(a),
        ParamsCommand::Generate(a) => {
            // Before resolving: an explicit directory is exported as the cache from there on.
            check_large_dir(&a)?;
            generate(
                &test_params::test_params_dir(
                    a.params_dir.as_deref(),
                    Path::new(test_params::TEST_PARAMS_DIR),
                )?,
                &a,
            )
        }
    }
}

fn list(dir: &Path) -> Result<()> {
    println!("parameter directory: {}", dir.display());
    println!(
        "{:<16} {:<10} {:>12} {:>12}  file",
        "circuit", "state", "size", "domain"
    );
    for spec in CircuitSpec::all() {
        let path = spec.params_path(dir);
        let (state, size, domain) = match ParamsHeader::read(&path) {
            Ok(h) => (
                "present",
                format!("{:.1} MB", h.file_len as f64 / 1e6),
                format!("2^{}", (h.h.count + 1).next_power_of_two().trailing_zeros()),
            ),
            Err(_) if path.exists() => ("BAD", "-".into(), "-".into()),
            Err(_) => ("missing", "-".into(), "-".into()),
        };
        println!(
            "{:<16} {:<10} {:>12} {:>12}  {}",
            spec.short_name,
            state,
            size,
            domain,
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
    }
    let srs = filprove_filecoin::params::aggregation_srs_path(dir);
    let (state, size) = match std::fs::metadata(&srs) {
        Ok(m) => ("present", format!("{:.1} MB", m.len() as f64 / 1e6)),
        Err(_) => ("missing", "-".into()),
    };
    println!(
        "{:<16} {:<10} {:>12} {:>12}  {}  (SnarkPack SRS: non-interactive PoRep)",
        "snarkpack-srs",
        state,
        size,
        "-",
        filprove_filecoin::params::aggregation_srs_file_name()
    );
    Ok(())
}

/// Checks one present parameter file: its digest against `manifest` and, for a
/// `.params` file, its header's layout (every point with `validate`). Returns what was
/// found and whether it failed.
pub fn check_file(manifest: &Manifest, path: &Path, validate: bool) -> (String, bool) {
    let mut failed = false;
    let mut outcome = match manifest.check(path) {
        Ok(Checked::Matches) => "digest matches parameters.json".to_string(),
        Ok(Checked::NotListed) => "not in parameters.json".to_string(),
        Err(e @ filprove_groth16::ParamsError::DigestMismatch { .. }) => {
            failed = true;
            format!(
                "FAILED: {e} (not the network's trusted setup: parameters generated here, \
                 for example by `filprove params generate`, make proofs that only a verifying \
                 key from the same run accepts, and the chain rejects)"
            )
        }
        Err(e) => {
            failed = true;
            format!("FAILED: {e}")
        }
    };
    if path.extension().is_some_and(|e| e == "params") {
        let layout = ParamsHeader::read(path).map(|_| ());
        let points = || Srs::read_file(path, &ReadOptions { validate: true }).map(|_| ());
        match layout.and_then(|()| if validate { points() } else { Ok(()) }) {
            Ok(()) if validate => outcome.push_str("; every point valid"),
            Ok(()) => outcome.push_str("; layout ok"),
            Err(e) => {
                failed = true;
                outcome.push_str(&format!("; FAILED: {e}"));
            }
        }
    }
    (outcome, failed)
}

fn check(dir: &Path, only: Option<&str>, validate: bool) -> Result<()> {
    let manifest = network_manifest()?;
    let specs = match only {
        Some(name) => vec![spec_by_name(name)?],
        None => CircuitSpec::all(),
    };
    let mut failures = 0;
    let mut checked = 0;
    for spec in specs {
        for path in [spec.params_path(dir), spec.vk_path(dir)] {
            if !path.exists() {
                if only.is_some() {
                    bail!(
                        "{} is missing; generate it with `filprove params generate --circuit {}`",
                        path.display(),
                        spec.short_name
                    );
                }
                continue;
            }
            checked += 1;
            let stage = Stage::start(format!("checking {}", path.display()));
            let (outcome, failed) = check_file(&manifest, &path, validate);
            failures += usize::from(failed);
            stage.done(&outcome);
        }
    }
    if failures > 0 {
        bail!("{failures} of {checked} parameter files failed their checks");
    }
    println!("{checked} parameter files checked, all good");
    Ok(())
}

/// Whether `dir` is the parameter cache filecoin-proofs reads by default: the
/// `FIL_PROOFS_PARAMETER_CACHE` of this process's environment, or
/// /var/tmp/filecoin-proof-parameters (compared after resolving links and `..`).
pub fn is_default_cache(dir: &Path) -> bool {
    let env = std::env::var_os(filprove_filecoin::params::PARAMETER_CACHE_ENV)
        .filter(|e| !e.is_empty())
        .map(PathBuf::from);
    is_production_cache(dir) || env.is_some_and(|e| same_dir(&e, dir))
}

/// Whether `dir` is /var/tmp/filecoin-proof-parameters, where filecoin-proofs and Curio
/// keep the network's parameters (compared after resolving links and `..`).
pub fn is_production_cache(dir: &Path) -> bool {
    same_dir(
        Path::new(filprove_filecoin::params::DEFAULT_PARAMETER_CACHE),
        dir,
    )
}

/// Whether two paths name the same directory (resolved when they exist, made absolute
/// otherwise).
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    canon(a) == canon(b)
}

/// 32 and 64 GiB test parameters (tens of GB, insecure) only go to a directory named with
/// `--params-dir` that is not the default parameter cache, where the network's parameters
/// live.
fn check_large_dir(args: &GenerateArgs) -> Result<()> {
    for name in &args.circuit {
        let spec = spec_by_name(name)?;
        if spec.sector_size < 32 << 30 {
            continue;
        }
        let why = match args.params_dir.as_deref() {
            None => "no --params-dir given".to_string(),
            Some(d) if is_default_cache(d) => format!(
                "--params-dir {} is the default parameter cache ({} or /var/tmp/filecoin-proof-parameters)",
                d.display(),
                filprove_filecoin::params::PARAMETER_CACHE_ENV
            ),
            Some(_) => continue,
        };
        bail!(
            "{name}: test parameters of 32 and 64 GiB circuits (insecure, tens of GB) are written \
             only to a directory of their own, never where the network's parameters live: pass \
             --params-dir DIR with a directory other than the parameter cache ({why})"
        );
    }
    Ok(())
}

/// The fixed-base implementation for `choice`, opened at run time: the first GPU for
/// `cuda` (an error when none is usable) and `auto` (the CPU, said so, when none is).
pub fn fixed_base(choice: BackendChoice) -> Result<Box<dyn FixedBaseMul>> {
    let cuda = || -> std::result::Result<Box<dyn FixedBaseMul>, String> {
        if std::env::var_os("BELLMAN_NO_GPU").is_some_and(|v| !v.is_empty() && v != "0") {
            return Err("BELLMAN_NO_GPU is set".into());
        }
        filprove_cuda::GpuFixedBase::open(0, filprove_cuda::FixedBaseOptions::default())
            .map(|f| Box::new(f) as Box<dyn FixedBaseMul>)
            .map_err(|e| e.to_string())
    };
    let fb = match choice {
        BackendChoice::Cpu => Box::new(CpuFixedBase::new()),
        BackendChoice::Cuda => cuda().map_err(|why| anyhow::anyhow!("cuda unavailable: {why}"))?,
        BackendChoice::Auto => cuda().unwrap_or_else(|why| {
            tracing::warn!("cuda unavailable: {why}; fixed-base multiplications on the CPU");
            Box::new(CpuFixedBase::new())
        }),
    };
    tracing::info!(fixed_base = %fb.name(), "parameter points made on");
    Ok(fb)
}

fn generate(dir: &Path, args: &GenerateArgs) -> Result<()> {
    if args.bellperson && args.backend.is_some_and(|b| b != BackendChoice::Cpu) {
        bail!("--bellperson runs bellperson's generator on the CPU; drop --backend");
    }
    let mut fb: Option<Box<dyn FixedBaseMul>> = None;
    for name in &args.circuit {
        let spec = spec_by_name(name)?;
        if spec.kind == ProofKind::PoRep {
            generate_aggregation_srs(dir, args)?;
        }
        if spec.params_path(dir).exists() && spec.vk_path(dir).exists() && !args.force {
            println!(
                "{name}: present ({}), skipped (use --force to regenerate)",
                spec.params_path(dir).display()
            );
            continue;
        }
        test_params::refuse_replacing_circuit_files(&spec, dir)?;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(args.seed);
        let (stage, out) = if args.bellperson {
            let stage = Stage::start(format!(
                "generating parameters for {name} with bellperson's generator"
            ));
            (
                stage,
                spec.generate_params_with(dir, &mut rng, Generator::Bellperson)?,
            )
        } else {
            if fb.is_none() {
                fb = Some(fixed_base(args.backend.unwrap_or(BackendChoice::Auto))?);
            }
            let fb = fb.as_deref().context("no fixed-base implementation")?;
            let stage = Stage::start(format!(
                "generating parameters for {name} (points on {})",
                fb.name()
            ));
            let out = spec.generate_params_reporting(dir, &mut rng, fb, &stage)?;
            (stage, out)
        };
        stage.done(&format!(
            "{} (generation {:.1} s)",
            out.params_path.display(),
            out.generate_secs
        ));
    }
    Ok(())
}
