//! `filprove prove`: one proof from input files to a proof file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use filprove_filecoin::ProofRequest;
use filprove_groth16::{Backend, Proof, ProofInput, Randomness, Srs};

use super::backend::{self, ProverOpts};
use super::stage::Stage;

/// Largest input file read (C1 outputs of 32 GiB sectors are about 50 MB).
pub const MAX_INPUT_BYTES: u64 = 512 << 20;

/// Which request a command works on: a request file, or a PoRep C1 output.
#[derive(Args, Debug)]
pub struct RequestArgs {
    /// A request file of any proof kind (see docs/formats.md).
    #[arg(long, conflicts_with = "c1", required_unless_present = "c1")]
    pub request: Option<PathBuf>,
    /// A PoRep C1 output: raw SealCommitPhase1Output JSON or the lotus-bench / Curio
    /// wrapper {"SectorNum", "Phase1Out", "SectorSize"}.
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// Sector number (for --c1; the wrapper carries its own).
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// Miner actor id (for --c1).
    #[arg(long, default_value_t = 1000)]
    pub miner_id: u64,
}

impl RequestArgs {
    /// Reads and parses the request.
    pub fn load(&self) -> Result<ProofRequest> {
        load_request(
            self.request.as_deref(),
            self.c1.as_deref(),
            self.sector_number,
            self.miner_id,
        )
    }
}

/// Arguments of `filprove prove`.
#[derive(Args, Debug)]
pub struct ProveArgs {
    /// The request to work on.
    #[command(flatten)]
    pub input: RequestArgs,
    /// Where to write the proof (bytes exactly as filecoin-proofs-api returns them).
    #[arg(long, short)]
    pub out: PathBuf,
    /// The backend and proving options.
    #[command(flatten)]
    pub prover: ProverOpts,
}

/// Reads a user-supplied file, refusing oversized ones before reading them.
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len > MAX_INPUT_BYTES {
        bail!(
            "{} is {len} bytes, more than the {MAX_INPUT_BYTES}-byte limit",
            path.display()
        );
    }
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Parses the request named by `--request` or `--c1`.
pub fn load_request(
    request: Option<&Path>,
    c1: Option<&Path>,
    sector_number: Option<u64>,
    miner_id: u64,
) -> Result<ProofRequest> {
    Ok(match (request, c1) {
        (Some(p), _) => ProofRequest::from_request_json(&read_input(p)?)
            .with_context(|| format!("parsing request {}", p.display()))?,
        (None, Some(p)) => ProofRequest::parse_c1(&read_input(p)?, sector_number, miner_id)
            .with_context(|| format!("parsing C1 output {}", p.display()))?,
        (None, None) => bail!("give --request or --c1"),
    })
}

/// Writes `bytes` to `path` atomically: a crash leaves the old file or none, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Timings of one proved request, per stage, in seconds.
#[derive(Clone, Debug, Default)]
pub struct ProveReport {
    /// Partitions proved.
    pub partitions: usize,
    /// Constraints of one partition.
    pub constraints: usize,
    /// Synthesis of all partitions.
    pub synthesis_s: f64,
    /// The backend's proving.
    pub prove_s: f64,
    /// filecoin-proofs' verification.
    pub verify_s: f64,
}

/// Synthesizes, proves, assembles and verifies `req` (stage by stage, reported on stderr).
/// Returns the proof bytes; an unverifiable proof is an error, never returned.
pub fn prove_request(
    req: &ProofRequest,
    backend: &dyn Backend,
    srs: &Srs,
    randomness: &[Randomness],
) -> Result<(Vec<u8>, ProveReport)> {
    let mut report = ProveReport {
        partitions: req.num_partitions(),
        ..Default::default()
    };
    let stage = Stage::start(format!(
        "synthesizing {} partition(s) of {}",
        report.partitions,
        req.kind()
    ));
    let partitions = req.synthesize_all()?;
    report.constraints = partitions
        .first()
        .map_or(0, |p| p.assignment.num_constraints());
    report.synthesis_s = stage.done(&format!("{} constraints each", report.constraints));

    let stage = Stage::start(format!("proving on {}", backend.name()));
    let inputs: Vec<ProofInput<'_>> = partitions
        .iter()
        .zip(randomness)
        .map(|(p, &randomness)| ProofInput {
            assignment: &p.assignment,
            randomness,
        })
        .collect();
    let proofs: Vec<Proof> = backend.prove(srs, &inputs)?;
    report.prove_s = stage.done("");
    drop(partitions);

    let bytes = req.assemble(&proofs)?;
    let stage = Stage::start("verifying with filecoin-proofs");
    if !req.verify(&bytes)? {
        bail!(
            "the {} proof made by {} does not verify; it was not written (a wrong parameter file or a backend fault)",
            req.kind(),
            backend.name()
        );
    }
    report.verify_s = stage.done("valid");
    Ok((bytes, report))
}

/// Runs `filprove prove`.
pub fn run(args: ProveArgs) -> Result<()> {
    let dir = backend::resolve_params_dir(args.prover.params_dir.as_deref());
    let req = args.input.load()?;
    let spec = req.circuit();
    let backend = backend::select(args.prover.backend)?;
    let srs = backend::load_srs(&spec, &dir, args.prover.validate_params)?;
    let mut rng = rand::rngs::OsRng;
    let randomness: Vec<Randomness> = (0..req.num_partitions())
        .map(|_| Randomness::random(&mut rng))
        .collect();
    let (bytes, report) = prove_request(&req, backend.as_ref(), &srs, &randomness)?;
    write_atomic(&args.out, &bytes)?;
    println!(
        "{} proof ({} bytes, {} partition(s)) written to {}: synthesis {:.2} s, proving {:.2} s, verification {:.2} s",
        req.kind(),
        bytes.len(),
        report.partitions,
        args.out.display(),
        report.synthesis_s,
        report.prove_s,
        report.verify_s
    );
    Ok(())
}
