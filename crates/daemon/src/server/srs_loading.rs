//! The daemon's parameter loader: the engine's (`filprove_engine::filecoin::
//! srs_loader_reading`: circuit ids, the digest check of FIL_PROOFS_VERIFY_PRODUCTION_PARAMS,
//! error codes), reading each file under a bar (bytes decoded, rate, time left) when stderr is a
//! terminal. Off a terminal nothing is drawn and the engine's log lines say what was loaded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use filprove_engine::filecoin::ParamsReader;
use filprove_engine::{Engine, EngineError, PreloadOutcome, SrsLoader};
use filprove_filecoin::FilecoinError;
use filprove_groth16::params::{ParamsHeader, ReadOptions};
use filprove_groth16::Srs;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget};

use crate::cli::progress::{self, Unit};

/// Preloads `circuit_id`'s parameters ([`Engine::preload_parameters`]), then has
/// filecoin-proofs prepare its verifying key
/// ([`filprove_filecoin::CircuitSpec::prepare_verifier`]: seconds for a 32 GiB WindowPoSt),
/// so that the first proof waits for neither. A key that cannot be prepared is logged and
/// the preload stands: the first verification reads the key itself.
pub fn preload(engine: &Engine, circuit_id: &str) -> Result<PreloadOutcome, EngineError> {
    let outcome = engine.preload_parameters(circuit_id)?;
    if let Some(spec) = filprove_engine::filecoin::circuit_spec(circuit_id) {
        let start = std::time::Instant::now();
        match spec.prepare_verifier() {
            Ok(true) => tracing::info!(
                circuit_id,
                ms = start.elapsed().as_millis() as u64,
                "verifying key prepared"
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                circuit_id, code = e.code(), error = %e.message(),
                "verifying key not prepared at preload (the first verification reads it)"
            ),
        }
    }
    Ok(outcome)
}

/// The loader for parameter files in `cache_dir` (`validate`: check every point while
/// reading; `check_digests`: compare each file with the network's parameters.json first).
pub fn srs_loader(cache_dir: PathBuf, validate: bool, check_digests: bool) -> SrsLoader {
    let target = if progress::on_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    srs_loader_to(
        cache_dir,
        validate,
        check_digests,
        MultiProgress::with_draw_target(target),
    )
}

/// [`srs_loader`] drawing its bars into `bars` (loads running at once get a bar each).
pub fn srs_loader_to(
    cache_dir: PathBuf,
    validate: bool,
    check_digests: bool,
    bars: MultiProgress,
) -> SrsLoader {
    let read: ParamsReader = Arc::new(move |path: &Path, id: &str, validate: bool| {
        read_drawn(path, id, validate, &bars)
    });
    filprove_engine::filecoin::srs_loader_reading(cache_dir, validate, check_digests, read)
}

/// Reads `path` under a bar over its sections' bytes (removed when done).
fn read_drawn(
    path: &Path,
    id: &str,
    validate: bool,
    bars: &MultiProgress,
) -> Result<Srs, FilecoinError> {
    let bar = bars.add(bar_for(path, id));
    let srs = read_counted(path, validate, &bar);
    bar.finish_and_clear();
    bars.remove(&bar);
    srs
}

/// A bar over the bytes of the sections of `path` (0 when its header cannot be read: the
/// read then reports why).
fn bar_for(path: &Path, id: &str) -> ProgressBar {
    let total: u64 = ParamsHeader::read(path)
        .map(|h| h.sections().iter().map(|s| s.byte_len()).sum())
        .unwrap_or(0);
    progress::bar(format!("loading parameters {id}"), total, Unit::Bytes)
}

/// Reads `path`, advancing `bar` by the bytes decoded.
fn read_counted(path: &Path, validate: bool, bar: &ProgressBar) -> Result<Srs, FilecoinError> {
    Ok(Srs::read_file_observed(
        path,
        &ReadOptions { validate },
        &|n| bar.inc(n),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filprove_engine::EngineError;
    use filprove_filecoin::CircuitSpec;
    use filprove_groth16::params::VerifyingKey;
    use filprove_groth16::{G1Affine, G2Affine};
    use group::prime::PrimeCurveAffine as _;
    use indicatif::InMemoryTerm;

    /// A parameter file of generator points (decodes; no circuit's parameters).
    fn write_params(dir: &Path, spec: &CircuitSpec, points: usize) {
        let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
        let srs = Srs {
            vk: VerifyingKey {
                alpha_g1: g1,
                beta_g1: g1,
                beta_g2: g2,
                gamma_g2: g2,
                delta_g1: g1,
                delta_g2: g2,
                ic: vec![g1; 2],
            },
            h: vec![g1; points],
            l: vec![g1; points],
            a: vec![g1; 4],
            b_g1: vec![g1; 4],
            b_g2: vec![g2; 4],
        };
        srs.write_file(spec.params_path(dir)).unwrap();
    }

    #[test]
    fn a_load_on_a_terminal_draws_a_bar_of_the_file_s_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CircuitSpec::from_short_name("winning-2k").unwrap();
        write_params(dir.path(), &spec, 2000);
        let path = spec.params_path(dir.path());
        let term = InMemoryTerm::new(8, 160);
        let bars =
            MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(term.clone())));

        // The bar of one read, drawn after it: every section byte counted, rate and ETA.
        let bar = bars.add(bar_for(&path, "winning-2k"));
        read_counted(&path, false, &bar).unwrap();
        bar.tick();
        let shown = term.contents();
        assert_eq!(Some(bar.position()), bar.length());
        assert!(bar.position() > 2000 * 96, "{}", bar.position());
        assert!(shown.contains("loading parameters winning-2k ["), "{shown}");
        assert!(shown.contains("/s") && shown.contains("left"), "{shown}");
        bars.remove(&bar);
        bars.clear().unwrap();

        // The loader: the parameters, and its bar gone once they are loaded.
        let loader = srs_loader_to(dir.path().to_path_buf(), false, false, bars);
        let srs = loader("winning-2k").unwrap();
        assert_eq!(srs.h.len(), 2000);
        assert_eq!(srs.vk.ic.len(), 2);
        assert!(
            term.contents().trim().is_empty(),
            "the bar is cleared when the load ends: {:?}",
            term.contents()
        );
    }

    #[test]
    fn errors_keep_the_engine_s_codes() {
        let dir = tempfile::tempdir().unwrap();
        let loader = srs_loader_to(
            dir.path().to_path_buf(),
            false,
            false,
            MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
        );
        match loader("winning-2k") {
            Err(EngineError::Srs { code, message, .. }) => {
                assert_eq!(code, "params_missing", "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            loader("no-such-circuit"),
            Err(EngineError::UnknownCircuit(_))
        ));
        let spec = CircuitSpec::from_short_name("winning-2k").unwrap();
        std::fs::write(spec.params_path(dir.path()), b"short").unwrap();
        match loader("winning-2k") {
            Err(EngineError::Srs { message, .. }) => {
                assert!(
                    message.contains(&spec.params_path(dir.path()).display().to_string()),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
