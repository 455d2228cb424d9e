//! Shared test fixtures: one directory under the target dir, made once (under a file lock)
//! and reused by every test binary and every run.
//!
//! - `<target>/tmp/filprove-test-fixtures/2k/`: request files of all four kinds (2 KiB);
//! - `<target>/tmp/filprove-test-fixtures/params/`: generated test parameters. The tests set
//!   `FIL_PROOFS_PARAMETER_CACHE` to it (and `FIL_PROOFS_PARENT_CACHE` next to it unless set)
//!   before any filecoin-proofs call, so production parameters are never touched.

#![allow(dead_code)]

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use filprove_filecoin::fixtures::{self, FixtureSet};
use filprove_filecoin::{CircuitSpec, ProofKind, ProofRequest};
use filprove_groth16::Srs;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Seed of the fixture sectors (changing it regenerates nothing: bump the directory name).
const FIXTURE_SEED: u64 = 0x5eed;
/// Seed of generated parameters.
const PARAMS_SEED: u64 = 0x9a2a;

pub struct Env {
    pub root: PathBuf,
    pub params: PathBuf,
    pub set_2k: FixtureSet,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filprove-test-fixtures")
}

/// Runs `f` holding an exclusive lock on `dir/.lock` (across processes).
fn locked<T>(dir: &Path, f: impl FnOnce() -> T) -> T {
    fs::create_dir_all(dir).unwrap();
    let lock = File::create(dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    let out = f();
    lock.unlock().unwrap();
    out
}

/// The shared environment; call first in every test.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = root();
        let params = root.join("params");
        fs::create_dir_all(&params).unwrap();
        // Before the first filecoin-proofs call of this process (its settings are read once).
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
            std::env::set_var("FIL_PROOFS_PARENT_CACHE", root.join("parents"));
        }
        std::env::remove_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS");
        let set_2k = make_once(&root, "2k", 2048);
        Env {
            root,
            params,
            set_2k,
        }
    })
}

/// The fixtures of `sector_size` in `<root>/<name>`, made once (under the lock).
fn make_once(root: &Path, name: &str, sector_size: u64) -> FixtureSet {
    let dir = root.join(name);
    locked(root, || {
        let done = dir.join(".done");
        if done.is_file() {
            FixtureSet::open(&dir, sector_size)
        } else {
            let t = Instant::now();
            let set = fixtures::make(&dir, sector_size, &ProofKind::ALL, FIXTURE_SEED).unwrap();
            fs::write(&done, b"").unwrap();
            eprintln!("made {name} fixtures in {:.2?}", t.elapsed());
            set
        }
    })
}

/// The 8 MiB fixtures (made on first use; about a minute on 2 cores).
pub fn set_8m() -> FixtureSet {
    make_once(&env().root, "8m", 8 << 20)
}

/// Makes sure the test parameters of `spec` exist (generating them once, under the lock).
pub fn ensure_params(spec: &CircuitSpec) {
    let e = env();
    locked(&e.root, || {
        if spec.params_path(&e.params).is_file() && spec.vk_path(&e.params).is_file() {
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(PARAMS_SEED);
        let out = spec.generate_params(&e.params, &mut rng).unwrap();
        eprintln!(
            "generated {} in {:.1} s",
            spec.short_name, out.generate_secs
        );
    });
}

/// The parameters of `spec` (generated if needed).
pub fn srs(spec: &CircuitSpec) -> Srs {
    ensure_params(spec);
    spec.load_srs(&env().params, false).unwrap()
}

/// The 2 KiB request of `kind`.
pub fn request(kind: ProofKind) -> ProofRequest {
    env().set_2k.request(kind).unwrap()
}

/// A copy of `bytes` with one bit of byte `i` flipped.
pub fn flip(bytes: &[u8], i: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[i] ^= 0x01;
    b
}
