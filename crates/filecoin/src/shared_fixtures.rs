//! A fixture directory shared by several processes (test binaries of different crates, CI
//! runs): fixture sets and test parameters are made once, under a file lock, from fixed
//! seeds, so every user sees the same files and nothing is generated twice.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::FilecoinError;
use crate::fixtures::{self, FixtureSet};
use crate::kinds::{CircuitSpec, ProofKind};

/// Seed of the fixture sectors (changing it regenerates nothing: use a new root).
pub const FIXTURE_SEED: u64 = 0x5eed;
/// Seed of the generated test parameters.
pub const PARAMS_SEED: u64 = 0x9a2a;
/// Seed of the generated SnarkPack SRS (non-interactive PoRep).
pub const SRS_SEED: u64 = 0x5295;

/// A shared fixture directory: `<root>/<name>/` fixture sets, `<root>/params/` parameters.
#[derive(Clone, Debug)]
pub struct SharedFixtures {
    /// The directory.
    pub root: PathBuf,
    /// Its parameter directory.
    pub params: PathBuf,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FilecoinError + 'a {
    move |e| FilecoinError::io(what, path, e)
}

impl SharedFixtures {
    /// Opens (creating) `root` and points this process's filecoin-proofs at it:
    /// FIL_PROOFS_PARAMETER_CACHE = `<root>/params`, FIL_PROOFS_PARENT_CACHE = `<root>/parents`
    /// unless already set, FIL_PROOFS_VERIFY_PRODUCTION_PARAMS unset. Call before the
    /// process's first filecoin-proofs call (it reads its settings once) and while no other
    /// thread reads the environment.
    pub fn open_and_export(root: &Path) -> Result<Self, FilecoinError> {
        let params = root.join("params");
        fs::create_dir_all(&params).map_err(io("create", &params))?;
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
            std::env::set_var("FIL_PROOFS_PARENT_CACHE", root.join("parents"));
        }
        std::env::remove_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS");
        Ok(Self {
            root: root.to_path_buf(),
            params,
        })
    }

    /// Runs `f` holding an exclusive lock on `<root>/.lock` (across processes).
    fn locked<T>(&self, f: impl FnOnce() -> Result<T, FilecoinError>) -> Result<T, FilecoinError> {
        let path = self.root.join(".lock");
        let lock = File::create(&path).map_err(io("create", &path))?;
        lock.lock().map_err(io("lock", &path))?;
        let out = f();
        let _ = lock.unlock();
        out
    }

    /// The fixtures of every kind for `sector_size` in `<root>/<name>`, made once.
    pub fn set(&self, name: &str, sector_size: u64) -> Result<FixtureSet, FilecoinError> {
        let dir = self.root.join(name);
        self.locked(|| {
            let done = dir.join(".done");
            if done.is_file() {
                return Ok(FixtureSet::open(&dir, sector_size));
            }
            let t = Instant::now();
            let set = fixtures::make(&dir, sector_size, &ProofKind::ALL, FIXTURE_SEED)?;
            fs::write(&done, b"").map_err(io("write", &done))?;
            log::info!("made {name} fixtures in {:.2?}", t.elapsed());
            Ok(set)
        })
    }

    /// The synthetic-PoRep request for `sector_size` in `<root>/<name>`, made once.
    pub fn synthetic_porep(&self, name: &str, sector_size: u64) -> Result<PathBuf, FilecoinError> {
        self.seal_variant(
            name,
            fixtures::SYNTHETIC_POREP_REQUEST,
            "synthetic PoRep",
            |dir| fixtures::make_synthetic_porep(dir, sector_size, FIXTURE_SEED),
        )
    }

    /// The non-interactive PoRep request for `sector_size` in `<root>/<name>`, made once.
    pub fn non_interactive_porep(
        &self,
        name: &str,
        sector_size: u64,
    ) -> Result<PathBuf, FilecoinError> {
        self.seal_variant(
            name,
            fixtures::NON_INTERACTIVE_POREP_REQUEST,
            "non-interactive PoRep",
            |dir| fixtures::make_non_interactive_porep(dir, sector_size, FIXTURE_SEED),
        )
    }

    /// `<root>/<name>/<file_name>`, made by `make(<root>/<name>)` unless it exists.
    fn seal_variant(
        &self,
        name: &str,
        file_name: &str,
        what: &str,
        make: impl FnOnce(&Path) -> Result<PathBuf, FilecoinError>,
    ) -> Result<PathBuf, FilecoinError> {
        let dir = self.root.join(name);
        self.locked(|| {
            let path = dir.join(file_name);
            if path.is_file() {
                return Ok(path);
            }
            let t = Instant::now();
            let path = make(&dir)?;
            log::info!("made {name} {what} in {:.2?}", t.elapsed());
            Ok(path)
        })
    }

    /// Makes sure the test parameters of `spec` exist in `<root>/params` (generated once);
    /// for a non-interactive PoRep circuit also the SnarkPack SRS its aggregation needs.
    pub fn ensure_params(&self, spec: &CircuitSpec) -> Result<(), FilecoinError> {
        self.locked(|| {
            if spec.registered.is_non_interactive() {
                let mut rng = ChaCha8Rng::seed_from_u64(SRS_SEED);
                crate::params::generate_aggregation_srs(&self.params, &mut rng)?;
            }
            if spec.params_path(&self.params).is_file() && spec.vk_path(&self.params).is_file() {
                return Ok(());
            }
            let mut rng = ChaCha8Rng::seed_from_u64(PARAMS_SEED);
            let out = spec.generate_params(&self.params, &mut rng)?;
            log::info!(
                "generated {} in {:.1} s",
                spec.short_name,
                out.generate_secs
            );
            Ok(())
        })
    }
}
