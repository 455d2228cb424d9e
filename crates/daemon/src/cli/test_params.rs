//! Test parameters (random toxic waste) kept apart from the network's: commands that make
//! them write into a directory of their own by default, never into the production
//! parameter cache, and never over a file whose digest is the one the network's
//! `parameters.json` (or `srs-inner-product.json`) lists for its name.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use filprove_filecoin::CircuitSpec;
use filprove_groth16::params::{Checked, Manifest};
use filprove_groth16::ParamsError;

use super::backend::resolve_params_dir;

/// Where `params generate` writes when no `--params-dir` is given (relative to the working
/// directory, beside `demo`'s `.fixtures/demo`).
pub const TEST_PARAMS_DIR: &str = ".fixtures/params";

/// The directory test parameters go to: `explicit`, else `default`. It becomes
/// `FIL_PROOFS_PARAMETER_CACHE` for this process (storage-proofs writes the SnarkPack SRS
/// there and filecoin-proofs' verifiers read keys there). The production default
/// (`/var/tmp/filecoin-proof-parameters`) is refused.
pub fn test_params_dir(explicit: Option<&Path>, default: &Path) -> Result<PathBuf> {
    let dir = explicit.unwrap_or(default);
    if super::params::is_production_cache(dir) {
        bail!(
            "{} is the production parameter cache: test parameters (random toxic waste) go to a \
             directory of their own (--params-dir)",
            dir.display()
        );
    }
    if explicit.is_none() {
        eprintln!(
            "[filprove] test parameters go to {} (--params-dir chooses another directory)",
            dir.display()
        );
    }
    Ok(resolve_params_dir(Some(dir)))
}

/// Fails when any existing file among `paths` is a network parameter file: its name is in
/// `manifest` and its digest is the listed one. A test file under a network name (digest
/// different) may be replaced. Hashes every existing listed file (seconds per GB).
pub fn refuse_replacing_network_files(manifest: &Manifest, paths: &[PathBuf]) -> Result<()> {
    for path in paths.iter().filter(|p| p.exists()) {
        match manifest.check(path) {
            Ok(Checked::Matches) => bail!(
                "refusing to replace {}: its digest is the network's (parameters.json), so it is \
                 a real parameter file; test parameters go to a directory of their own \
                 (--params-dir)",
                path.display()
            ),
            Ok(Checked::NotListed) | Err(ParamsError::DigestMismatch { .. }) => {}
            Err(e) => {
                return Err(e).with_context(|| format!("checking {}", path.display()));
            }
        }
    }
    Ok(())
}

/// Fails when writing `spec`'s test parameters into `dir` would replace a network file
/// (its `.params`, `.vk` or `.meta`).
pub fn refuse_replacing_circuit_files(spec: &CircuitSpec, dir: &Path) -> Result<()> {
    let targets = [
        spec.params_path(dir),
        spec.vk_path(dir),
        spec.meta_path(dir),
    ];
    refuse_replacing_network_files(&super::params::network_manifest()?, &targets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filprove_groth16::params::{file_digest, ManifestEntry};

    fn manifest_listing(path: &Path, digest: &str) -> Manifest {
        let mut m = Manifest::default();
        m.entries.insert(
            path.file_name().unwrap().to_str().unwrap().to_owned(),
            ManifestEntry {
                cid: "Qm".into(),
                digest: digest.into(),
                sector_size: 2048,
            },
        );
        m
    }

    #[test]
    fn a_file_with_the_network_digest_is_never_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("v28-real.params");
        std::fs::write(&real, b"the network's bytes").unwrap();
        let manifest = manifest_listing(&real, &file_digest(&real).unwrap());
        let err =
            refuse_replacing_network_files(&manifest, std::slice::from_ref(&real)).unwrap_err();
        assert!(
            format!("{err:#}").contains("refusing to replace"),
            "{err:#}"
        );
    }

    #[test]
    fn test_files_unlisted_and_absent_files_may_be_written() {
        let tmp = tempfile::tempdir().unwrap();
        let test_file = tmp.path().join("v28-test.params");
        std::fs::write(&test_file, b"random toxic waste").unwrap();
        let listed_other_digest = manifest_listing(&test_file, &"0".repeat(32));
        let absent = tmp.path().join("v28-absent.vk");
        refuse_replacing_network_files(&listed_other_digest, &[test_file.clone(), absent]).unwrap();
        refuse_replacing_network_files(&Manifest::default(), &[test_file]).unwrap();
    }

    #[test]
    fn the_production_cache_is_refused_as_a_test_directory() {
        let production = Path::new(filprove_filecoin::params::DEFAULT_PARAMETER_CACHE);
        let err = test_params_dir(Some(production), Path::new(TEST_PARAMS_DIR)).unwrap_err();
        assert!(
            format!("{err}").contains("production parameter cache"),
            "{err}"
        );
    }
}
