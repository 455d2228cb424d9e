//! The Filecoin adapter: [`FilecoinJob`] runs a `filprove_filecoin::ProofRequest` through
//! the engine, and [`srs_loader`] loads parameter files from the parameter cache.
//!
//! Circuit ids are the short names of `CircuitSpec` ("porep-32g", "wpost-2k",
//! "winning-32g", "snap-32g"); [`normalize_circuit_id`] also accepts the longer kind names
//! and the `v28-...` cache ids.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use filprove_filecoin::{
    network_manifest, CircuitSpec, FilecoinError, ProofKind, ProofRequest, SynthesisPath,
};
use filprove_groth16::params::{Manifest, ReadOptions};
use filprove_groth16::{Proof, ProvingAssignment, Srs};

use crate::memory::estimate_partition_bytes;
use crate::{EngineError, ProofJob, SrsLoader};

/// Per-partition (constraints, aux) of a circuit, measured (docs: facts, circuit shapes);
/// sizes not measured take the next measured size up, so the estimate errs high.
pub fn partition_shape(kind: ProofKind, sector_size: u64) -> (u64, u64) {
    const KIB2: u64 = 2 << 10;
    const GIB32: u64 = 32 << 30;
    match (kind, sector_size) {
        (ProofKind::PoRep, KIB2) => (2_687_921, 2_685_673),
        (ProofKind::PoRep, s) if s == 8 << 20 => (3_844_929, 3_842_449),
        (ProofKind::PoRep, s) if s == 512 << 20 => (4_423_433, 4_420_837),
        (ProofKind::PoRep, GIB32) => (130_278_541, 130_169_893),
        (ProofKind::PoRep, _) => (131_185_849, 131_076_643),
        (ProofKind::WinningPoSt, KIB2) => (90_750, 91_674),
        (ProofKind::WinningPoSt, _) => (370_590, 375_210),
        (ProofKind::WindowPoSt, KIB2) => (21_866, 22_128),
        (ProofKind::WindowPoSt, s) if s < GIB32 => (8_000_000, 8_000_000),
        (ProofKind::WindowPoSt, _) => (125_279_217, 126_902_376),
        (ProofKind::SnapDeals, KIB2) => (1_705_039, 1_703_569),
        (ProofKind::SnapDeals, s) if s < GIB32 => (4_423_433, 4_420_837),
        (ProofKind::SnapDeals, _) => (81_049_499, 80_978_488),
    }
}

fn fil_code(e: &FilecoinError) -> String {
    e.code().to_string()
}

/// A Filecoin proof request as an engine job.
pub struct FilecoinJob {
    request: ProofRequest,
    spec: CircuitSpec,
}

impl FilecoinJob {
    /// Wraps a validated request.
    pub fn new(request: ProofRequest) -> Self {
        let spec = request.circuit();
        Self { request, spec }
    }

    /// The request.
    pub fn request(&self) -> &ProofRequest {
        &self.request
    }

    fn synthesize_along(
        &self,
        k: usize,
        path: SynthesisPath,
    ) -> Result<ProvingAssignment, EngineError> {
        self.request
            .synthesize_with(k, path)
            .map(|p| p.assignment)
            .map_err(|e| EngineError::Synthesis {
                partition: k,
                code: fil_code(&e),
                message: e.message(),
            })
    }
}

impl ProofJob for FilecoinJob {
    fn kind(&self) -> &'static str {
        self.request.kind().as_str()
    }

    fn circuit_id(&self) -> String {
        self.spec.short_name.clone()
    }

    fn num_partitions(&self) -> usize {
        self.request.num_partitions()
    }

    fn partition_memory_bytes(&self) -> u64 {
        let (constraints, aux) = partition_shape(self.spec.kind, self.spec.sector_size);
        estimate_partition_bytes(constraints, aux)
    }

    fn synthesize(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        self.synthesize_along(k, SynthesisPath::Twin)
    }

    /// PoRep: storage-proofs' gadgets with the challenges in parallel; PoSt:
    /// storage-proofs' own parallel chunks (both tested equal to the synthesis in order,
    /// and about ten times slower than the twins); SnapDeals in order on one thread, as
    /// filecoin-proofs synthesizes.
    fn synthesize_reference(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        let path = match self.request.kind() {
            ProofKind::SnapDeals => SynthesisPath::InOrder,
            _ => SynthesisPath::Gadgets,
        };
        self.synthesize_along(k, path)
    }

    fn assemble(&self, proofs: &[Proof]) -> Result<Vec<u8>, EngineError> {
        self.request
            .assemble(proofs)
            .map_err(|e| EngineError::Assemble {
                code: fil_code(&e),
                message: e.message(),
            })
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, EngineError> {
        self.request
            .verify(proof)
            .map_err(|e| EngineError::Assemble {
                code: fil_code(&e),
                message: e.message(),
            })
    }
}

/// The circuit a circuit id names: a short name ("porep-32g"), a kind-size name
/// ("winning-post-2KiB") or a cache id (with or without "v28-").
pub fn circuit_spec(id: &str) -> Option<CircuitSpec> {
    CircuitSpec::from_short_name(id).or_else(|| {
        let id = id.trim().trim_start_matches("v28-");
        CircuitSpec::all().into_iter().find(|s| s.cache_id == id)
    })
}

/// The canonical (short-name) circuit id of `id`.
pub fn normalize_circuit_id(id: &str) -> Result<String, EngineError> {
    circuit_spec(id)
        .map(|s| s.short_name)
        .ok_or_else(|| EngineError::UnknownCircuit(id.to_string()))
}

/// Reads one parameter file: its path, the circuit id it is loaded for, and whether every
/// point is checked. [`srs_loader_reading`] takes one (the daemon's draws a progress bar).
pub type ParamsReader = Arc<dyn Fn(&Path, &str, bool) -> Result<Srs, FilecoinError> + Send + Sync>;

/// A loader reading `<cache_dir>/v28-<cache id>.params` with `Srs::read_file` (checking
/// every point when `validate`). With `check_digests` (the daemon sets it when
/// `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` is on), a file listed in the network's
/// `parameters.json` must match its digest first (digests are cached per file).
pub fn srs_loader(cache_dir: PathBuf, validate: bool, check_digests: bool) -> SrsLoader {
    let read: ParamsReader = Arc::new(|path: &Path, _: &str, validate: bool| {
        Ok(Srs::read_file(path, &ReadOptions { validate })?)
    });
    srs_loader_reading(cache_dir, validate, check_digests, read)
}

/// [`srs_loader`], reading each file that is present with `read`.
pub fn srs_loader_reading(
    cache_dir: PathBuf,
    validate: bool,
    check_digests: bool,
    read: ParamsReader,
) -> SrsLoader {
    Arc::new(move |id: &str| -> Result<Srs, EngineError> {
        let spec = circuit_spec(id).ok_or_else(|| EngineError::UnknownCircuit(id.to_string()))?;
        let srs_err = |code: &str, message: String| EngineError::Srs {
            circuit_id: id.to_string(),
            code: code.to_string(),
            message,
        };
        if check_digests {
            let manifest = Manifest::from_json(network_manifest())
                .map_err(|e| srs_err(e.code(), e.to_string()))?;
            manifest
                .check(spec.params_path(&cache_dir))
                .map_err(|e| srs_err(e.code(), e.to_string()))?;
        }
        filprove_filecoin::params::check_params_present(&spec, &cache_dir)
            .and_then(|path| read(&path, id, validate))
            .map_err(|e| srs_err(e.code(), e.to_string()))
    })
}
