//! Parameter files: where they live, the network manifest, and generation for test sizes.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bellperson::Circuit;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use filprove_groth16::keygen::{CpuFixedBase, FixedBaseMul, ToxicWaste};
use filprove_groth16::progress::{NoProgress, Progress, ProgressUnit};
use filprove_groth16::{Fr, Srs};
use rand_core::RngCore;

use crate::circuits::{porep, post, update, with_tree, CircuitShape};
use crate::error::FilecoinError;
use crate::kinds::{CircuitSpec, RegisteredProof};

/// The environment variable filecoin-proofs reads the parameter directory from.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// filecoin-proofs' default parameter directory.
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

/// The parameter directory: `FIL_PROOFS_PARAMETER_CACHE`, else
/// `/var/tmp/filecoin-proof-parameters`. Never overridden here: filecoin-proofs' verifiers
/// read the same variable (once, at first use), so set it before the first proof call.
pub fn parameter_cache_dir() -> PathBuf {
    match std::env::var_os(PARAMETER_CACHE_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(DEFAULT_PARAMETER_CACHE),
    }
}

/// The network's `parameters.json` as embedded in storage-proofs-core (file name ->
/// `{cid, digest, sector_size}`).
pub fn network_manifest() -> &'static str {
    storage_proofs_core::parameter_cache::PARAMETERS_DATA
}

/// Fails with [`FilecoinError::ParamsMissing`] (naming the generate command) unless the
/// circuit's `.vk` is in `cache_dir`.
pub fn check_vk_present(spec: &CircuitSpec, cache_dir: &Path) -> Result<(), FilecoinError> {
    let vk = spec.vk_path(cache_dir);
    if vk.is_file() {
        Ok(())
    } else {
        Err(FilecoinError::ParamsMissing {
            path: vk,
            short_name: spec.short_name.clone(),
        })
    }
}

/// Fails with [`FilecoinError::ParamsMissing`] unless the circuit's `.params` is in `cache_dir`.
pub fn check_params_present(
    spec: &CircuitSpec,
    cache_dir: &Path,
) -> Result<PathBuf, FilecoinError> {
    let path = spec.params_path(cache_dir);
    if path.is_file() {
        Ok(path)
    } else {
        Err(FilecoinError::ParamsMissing {
            path,
            short_name: spec.short_name.clone(),
        })
    }
}

/// The file name of the SnarkPack SRS (the inner-product "powers of tau" that aggregation
/// of non-interactive PoRep partition proofs needs), shared by every sector size:
/// `v28-fil-inner-product-v1.srs`, as storage-proofs names it.
pub fn aggregation_srs_file_name() -> String {
    storage_proofs_core::parameter_cache::parameter_cache_srs_key_path("", 0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `<cache_dir>/v28-fil-inner-product-v1.srs`.
pub fn aggregation_srs_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join(aggregation_srs_file_name())
}

/// Fails with [`FilecoinError::ParamsMissing`] unless the SnarkPack SRS is in `cache_dir`
/// (`short_name`: the circuit whose `params generate` also writes it).
pub fn check_aggregation_srs_present(
    cache_dir: &Path,
    short_name: &str,
) -> Result<PathBuf, FilecoinError> {
    let path = aggregation_srs_path(cache_dir);
    if path.is_file() {
        Ok(path)
    } else {
        Err(FilecoinError::ParamsMissing {
            path,
            short_name: short_name.to_string(),
        })
    }
}

/// The most proofs one non-interactive PoRep aggregates (its partitions padded to a power
/// of two: 128 for the 126 partitions of 32 and 64 GiB); the SRS generated for tests covers it.
pub fn max_aggregated_proofs() -> usize {
    RegisteredProof::all()
        .into_iter()
        .filter(|p| p.is_non_interactive())
        .map(|p| porep::aggregate_target_len(CircuitSpec::for_registered(p).partitions()))
        .max()
        .unwrap_or(2)
}

/// Generates a random (insecure, test-only) SnarkPack SRS for up to
/// [`max_aggregated_proofs`] proofs and writes it to `cache_dir` as
/// `v28-fil-inner-product-v1.srs`, through storage-proofs' own generator
/// (`CompoundProof::srs_key` with an rng: bellperson's `setup_fake_srs`), which is what
/// filecoin-proofs' aggregation and `verify_seal` then read. A seeded `rng` gives an
/// identical file. An existing file is kept (remove it first to regenerate).
///
/// storage-proofs writes into the directory it read from `FIL_PROOFS_PARAMETER_CACHE` at its
/// first use, so `cache_dir` must be that directory (checked).
pub fn generate_aggregation_srs<R: RngCore>(
    cache_dir: &Path,
    rng: &mut R,
) -> Result<PathBuf, FilecoinError> {
    let path = aggregation_srs_path(cache_dir);
    if path.is_file() {
        return Ok(path);
    }
    let theirs = storage_proofs_core::parameter_cache::parameter_cache_dir();
    fs::create_dir_all(cache_dir).map_err(|e| FilecoinError::io("create", cache_dir, e))?;
    let same = match (fs::canonicalize(cache_dir), fs::canonicalize(&theirs)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return Err(FilecoinError::Params(format!(
            "the SnarkPack SRS is written by storage-proofs into its parameter cache {}, not {}; \
             set FIL_PROOFS_PARAMETER_CACHE={} before the first proof call",
            theirs.display(),
            cache_dir.display(),
            cache_dir.display()
        )));
    }
    let start = Instant::now();
    porep::generate_aggregation_srs(rng, max_aggregated_proofs())?;
    if !path.is_file() {
        return Err(FilecoinError::Params(format!(
            "storage-proofs did not write {}",
            path.display()
        )));
    }
    log::info!(
        "generated the SnarkPack SRS {} in {:.1} s",
        path.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(path)
}

/// What [`CircuitSpec::generate_params`] wrote.
#[derive(Clone, Debug)]
pub struct GeneratedParams {
    /// The `.params` file.
    pub params_path: PathBuf,
    /// The `.vk` file.
    pub vk_path: PathBuf,
    /// The `.meta` file.
    pub meta_path: PathBuf,
    /// Seconds spent generating (not writing).
    pub generate_secs: f64,
}

impl CircuitSpec {
    /// Counts the blank circuit's constraints, inputs and aux variables (a full synthesis
    /// without witness: fast for test sizes, minutes for 32 GiB PoRep).
    pub fn blank_shape(&self) -> Result<CircuitShape, FilecoinError> {
        match self.registered {
            RegisteredProof::Seal(p) => porep::shape(p),
            RegisteredProof::PoSt(p) => post::shape(p),
            RegisteredProof::Update(p) => update::shape(p),
        }
    }

    /// Reads this circuit's `.params` from `cache_dir` ([`FilecoinError::ParamsMissing`], with
    /// the command that generates it, when absent). `validate` checks every point's subgroup.
    pub fn load_srs(&self, cache_dir: &Path, validate: bool) -> Result<Srs, FilecoinError> {
        let path = check_params_present(self, cache_dir)?;
        Ok(Srs::read_file(
            &path,
            &filprove_groth16::params::ReadOptions { validate },
        )?)
    }

    /// Generates random (insecure, test-only) parameters for this circuit from its blank
    /// circuit and writes `v28-<cache_id>.params`, `.vk` and `.meta` into `cache_dir`,
    /// each atomically (temporary file, then rename), so that filecoin-proofs' own prover and
    /// verifiers find them. A seeded `rng` gives identical files.
    pub fn generate_params<R: RngCore>(
        &self,
        cache_dir: &Path,
        rng: &mut R,
    ) -> Result<GeneratedParams, FilecoinError> {
        self.generate_params_with(cache_dir, rng, Generator::Filprove)
    }

    /// [`CircuitSpec::generate_params`] with a chosen generator: ours, or bellperson's
    /// `generate_random_parameters` (what filecoin-proofs' own generator runs), to compare
    /// the two on the same circuit.
    pub fn generate_params_with<R: RngCore>(
        &self,
        cache_dir: &Path,
        rng: &mut R,
        generator: Generator,
    ) -> Result<GeneratedParams, FilecoinError> {
        let cpu = CpuFixedBase::new();
        let how = match generator {
            Generator::Filprove => How::Filprove(&cpu, &NoProgress),
            Generator::Bellperson => How::Bellperson,
        };
        self.generate_and_write(cache_dir, rng, how)
    }

    /// [`CircuitSpec::generate_params`] with the fixed-base multiplications (every point)
    /// done by `fb` (e.g. filprove-cuda's `GpuFixedBase`): the same files as on the CPU.
    pub fn generate_params_using<R: RngCore>(
        &self,
        cache_dir: &Path,
        rng: &mut R,
        fb: &dyn FixedBaseMul,
    ) -> Result<GeneratedParams, FilecoinError> {
        self.generate_params_reporting(cache_dir, rng, fb, &NoProgress)
    }

    /// [`CircuitSpec::generate_params_using`], telling `progress` its phases (the blank
    /// circuit's capture and the QAP, not counted; the parameter points, counted).
    pub fn generate_params_reporting<R: RngCore>(
        &self,
        cache_dir: &Path,
        rng: &mut R,
        fb: &dyn FixedBaseMul,
        progress: &dyn Progress,
    ) -> Result<GeneratedParams, FilecoinError> {
        self.generate_and_write(cache_dir, rng, How::Filprove(fb, progress))
    }

    /// Generates this circuit's parameters (as [`CircuitSpec::generate_params_using`]) and
    /// keeps them in memory, for a run that proves right after: only the `.vk` (which
    /// filecoin-proofs' verifiers read) and the `.meta` are written into `dir`, atomically.
    /// A `.params` of this circuit already in `dir` is removed, since it would not match
    /// the new `.vk`.
    pub fn generate_in_memory<R: RngCore>(
        &self,
        dir: &Path,
        rng: &mut R,
        fb: &dyn FixedBaseMul,
    ) -> Result<InMemoryParams, FilecoinError> {
        self.generate_in_memory_reporting(dir, rng, fb, &NoProgress)
    }

    /// [`CircuitSpec::generate_in_memory`], telling `progress` its phases (as
    /// [`CircuitSpec::generate_params_reporting`]).
    pub fn generate_in_memory_reporting<R: RngCore>(
        &self,
        dir: &Path,
        rng: &mut R,
        fb: &dyn FixedBaseMul,
        progress: &dyn Progress,
    ) -> Result<InMemoryParams, FilecoinError> {
        fs::create_dir_all(dir).map_err(|e| FilecoinError::io("create", dir, e))?;
        let start = Instant::now();
        let srs = self.make_srs(rng, How::Filprove(fb, progress))?;
        let generate_secs = start.elapsed().as_secs_f64();
        let (vk_path, meta_path) = (self.vk_path(dir), self.meta_path(dir));
        let stale = self.params_path(dir);
        if stale.exists() {
            log::warn!(
                "removing {}: it does not match the newly generated {}",
                stale.display(),
                vk_path.display()
            );
            fs::remove_file(&stale).map_err(|e| FilecoinError::io("remove", &stale, e))?;
        }
        let t = Instant::now();
        srs.vk.write_file(&vk_path)?;
        self.write_meta(&meta_path)?;
        log::info!(
            "generated {} in memory in {generate_secs:.1} s; wrote {} and {} in {:.2?}",
            self,
            vk_path.display(),
            meta_path.display(),
            t.elapsed()
        );
        Ok(InMemoryParams {
            srs,
            vk_path,
            meta_path,
            generate_secs,
        })
    }

    fn generate_and_write<R: RngCore>(
        &self,
        cache_dir: &Path,
        rng: &mut R,
        how: How<'_>,
    ) -> Result<GeneratedParams, FilecoinError> {
        fs::create_dir_all(cache_dir).map_err(|e| FilecoinError::io("create", cache_dir, e))?;
        let start = Instant::now();
        let srs = self.make_srs(rng, how)?;
        let generate_secs = start.elapsed().as_secs_f64();
        let out = GeneratedParams {
            params_path: self.params_path(cache_dir),
            vk_path: self.vk_path(cache_dir),
            meta_path: self.meta_path(cache_dir),
            generate_secs,
        };
        let t = Instant::now();
        write_srs(&srs, &out.params_path, &out.vk_path)?;
        self.write_meta(&out.meta_path)?;
        log::info!(
            "generated {} in {generate_secs:.1} s; wrote {} in {:.2?}",
            self,
            out.params_path.display(),
            t.elapsed()
        );
        Ok(out)
    }

    fn write_meta(&self, path: &Path) -> Result<(), FilecoinError> {
        let meta = format!("{{\"sector_size\":{}}}", self.sector_size);
        write_atomic(path, meta.as_bytes())
    }

    /// The parameters of this circuit's blank circuit.
    fn make_srs(&self, rng: &mut dyn RngCore, how: How<'_>) -> Result<Srs, FilecoinError> {
        if let How::Filprove(fb, progress) = how {
            // The toxic waste first, as bellperson draws it; then the R1CS (PoRep and PoSt
            // captured part by part, `blank_r1cs`).
            let toxic = ToxicWaste::random(&mut &mut *rng);
            let t = Instant::now();
            progress.phase(
                "capturing the blank circuit",
                None,
                ProgressUnit::Items("constraints"),
            );
            let r1cs = self.blank_r1cs()?;
            return Ok(filprove_groth16::keygen::generate_from_captured_reporting(
                r1cs,
                t.elapsed(),
                &toxic,
                fb,
                progress,
            )?);
        }
        match self.registered {
            RegisteredProof::Seal(p) => {
                fn g<Tree: 'static + MerkleTreeTrait>(
                    p: filecoin_proofs_api::RegisteredSealProof,
                    rng: &mut dyn RngCore,
                    how: How<'_>,
                ) -> Result<Srs, FilecoinError> {
                    keygen(porep::blank::<Tree>(p)?, rng, how)
                }
                with_tree!(self.sector_size, g, p, &mut *rng, how)
            }
            RegisteredProof::PoSt(p) => {
                fn g<Tree: 'static + MerkleTreeTrait>(
                    p: filecoin_proofs_api::RegisteredPoStProof,
                    rng: &mut dyn RngCore,
                    how: How<'_>,
                ) -> Result<Srs, FilecoinError> {
                    keygen(post::blank::<Tree>(p)?, rng, how)
                }
                with_tree!(self.sector_size, g, p, &mut *rng, how)
            }
            RegisteredProof::Update(p) => {
                fn g<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
                    p: filecoin_proofs_api::RegisteredUpdateProof,
                    rng: &mut dyn RngCore,
                    how: How<'_>,
                ) -> Result<Srs, FilecoinError> {
                    keygen(update::blank::<Tree>(p), rng, how)
                }
                with_tree!(self.sector_size, g, p, &mut *rng, how)
            }
        }
    }
}

/// Parameters generated in memory ([`CircuitSpec::generate_in_memory`]).
pub struct InMemoryParams {
    /// The parameters.
    pub srs: Srs,
    /// The `.vk` file written.
    pub vk_path: PathBuf,
    /// The `.meta` file written.
    pub meta_path: PathBuf,
    /// Seconds spent generating (not writing).
    pub generate_secs: f64,
}

impl std::fmt::Debug for InMemoryParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryParams")
            .field("vk_path", &self.vk_path)
            .field("meta_path", &self.meta_path)
            .field("generate_secs", &self.generate_secs)
            .finish_non_exhaustive()
    }
}

/// The generator a generation runs.
#[derive(Clone, Copy)]
enum How<'a> {
    /// filprove's keygen, its fixed-base part on this implementation, its phases reported.
    Filprove(&'a dyn FixedBaseMul, &'a dyn Progress),
    /// bellperson's `generate_random_parameters`.
    Bellperson,
}

/// Which parameter generator to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generator {
    /// filprove's multi-threaded keygen (the same parameters as bellperson's
    /// `generate_parameters` with the standard generators and the same toxic waste).
    Filprove,
    /// bellperson's `generate_random_parameters`, which filecoin-proofs' own generator calls.
    Bellperson,
}

/// bellperson's parameter generation for one blank circuit.
fn keygen<C: Circuit<Fr>>(
    circuit: C,
    mut rng: &mut dyn RngCore,
    how: How<'_>,
) -> Result<Srs, FilecoinError> {
    debug_assert!(
        matches!(how, How::Bellperson),
        "filprove's keygen starts from the R1CS"
    );
    let params = bellperson::groth16::generate_random_parameters::<filprove_groth16::Bls12, _, _>(
        circuit, &mut rng,
    )
    .map_err(|e| FilecoinError::Params(format!("bellperson generator: {e}")))?;
    Ok(Srs::from(&params))
}

fn write_srs(srs: &Srs, params_path: &Path, vk_path: &Path) -> Result<(), FilecoinError> {
    srs.write_file(params_path)?;
    srs.vk.write_file(vk_path)?;
    Ok(())
}

/// Writes `path` atomically (temporary file in the same directory, fsync, rename).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FilecoinError> {
    filprove_groth16::params::write_atomic(path, |w| w.write_all(bytes))?;
    Ok(())
}
