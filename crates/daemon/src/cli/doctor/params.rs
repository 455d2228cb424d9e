//! The parameter directory: which circuits' files are present, their digests against the
//! network's manifest, and the files the configured preloads need.

use std::path::Path;

use filprove_filecoin::CircuitSpec;

use super::report::{Level, Report};
use crate::cli::params::{check_file, network_manifest};

/// Lists present parameter files (digest-checked unless `skip_digests`) and fails for
/// every preloaded circuit whose files are missing.
pub fn check(r: &mut Report, dir: &Path, preload: &[String], skip_digests: bool) {
    r.section(&format!("parameters ({})", dir.display()));
    let manifest = match network_manifest() {
        Ok(m) => m,
        Err(e) => {
            r.add(Level::Fail, format!("the network manifest: {e:#}"));
            return;
        }
    };
    let mut present = 0;
    for spec in CircuitSpec::all() {
        for path in [spec.params_path(dir), spec.vk_path(dir)] {
            if path.is_file() {
                present += 1;
                file(r, &manifest, &spec.short_name, &path, skip_digests);
            }
        }
    }
    let srs = filprove_filecoin::params::aggregation_srs_path(dir);
    if srs.is_file() {
        present += 1;
        file(r, &manifest, "snarkpack-srs", &srs, skip_digests);
    }
    if present == 0 {
        r.add(
            Level::Warn,
            format!(
                "no parameter files in {}: fetch them (FIL_PROOFS_PARAMETER_CACHE={} curio \
                 fetch-params 32GiB) or point srs.param_cache at them",
                dir.display(),
                dir.display()
            ),
        );
    }
    for id in preload {
        match filprove_engine::filecoin::circuit_spec(id) {
            None => r.add(Level::Fail, format!("srs.preload: unknown circuit {id:?}")),
            Some(spec) => {
                let missing: Vec<String> = [spec.params_path(dir), spec.vk_path(dir)]
                    .iter()
                    .filter(|p| !p.is_file())
                    .map(|p| p.display().to_string())
                    .collect();
                if missing.is_empty() {
                    r.add(Level::Ok, format!("srs.preload {id}: files present"));
                } else {
                    r.add(
                        Level::Fail,
                        format!(
                            "srs.preload {id}: missing {} (the preload would fail)",
                            missing.join(", ")
                        ),
                    );
                }
            }
        }
    }
}

fn file(
    r: &mut Report,
    manifest: &filprove_groth16::params::Manifest,
    circuit: &str,
    path: &Path,
    skip_digests: bool,
) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if skip_digests {
        r.add(Level::Info, format!("{circuit}: {name} present"));
        return;
    }
    let (outcome, failed) = check_file(manifest, path, false);
    let level = if failed { Level::Fail } else { Level::Ok };
    r.add(level, format!("{circuit}: {name}: {outcome}"));
}
