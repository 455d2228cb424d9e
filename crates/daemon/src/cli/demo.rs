//! `filprove demo`: the main job of a fresh machine, end to end with real Filecoin proofs.
//! Seals a small sector, generates test parameters when absent, proves every kind with the
//! chosen backend and verifies each proof with filecoin-proofs.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use filprove_filecoin::fixtures::FixtureSet;
use filprove_filecoin::{ProofKind, ProofRequest};
use filprove_groth16::Randomness;
use rand::SeedableRng;

use super::backend::{self, BackendChoice};
use super::fixtures::sector_size;
use super::prove::{prove_request, read_input, write_atomic};
use super::stage::Stage;
use super::test_params;

/// Arguments of `filprove demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Working directory (fixtures, proofs, and the test parameters in DIR/params unless
    /// --params-dir says otherwise).
    #[arg(long, default_value = ".fixtures/demo")]
    pub dir: PathBuf,
    /// Sector size.
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// Proof kinds.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning-post,window-post,snap"
    )]
    pub kinds: Vec<ProofKind>,
    /// Prover backend.
    #[arg(long, value_enum, default_value = "auto", env = "FILPROVE_BACKEND")]
    pub backend: BackendChoice,
    /// Parameter directory (default DIR/params, not FIL_PROOFS_PARAMETER_CACHE; the
    /// production cache is refused): missing test parameters are generated there, and a
    /// file whose digest is the network's is never replaced.
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    /// Derive r and s from this seed instead of the OS: with the same seed, every backend
    /// must write byte-identical proofs (compare the proofs/ directories).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the proofs go (default DIR/proofs).
    #[arg(long)]
    pub proofs_dir: Option<PathBuf>,
}

/// Runs `filprove demo`.
pub fn run(args: DemoArgs) -> Result<()> {
    let size = sector_size(&args.sector_size)?;
    let params_dir =
        test_params::test_params_dir(args.params_dir.as_deref(), &args.dir.join("params"))?;
    let fixtures = args.dir.join(format!("fixtures-{}", args.sector_size));
    let existing = FixtureSet::open(&fixtures, size);
    let set = if args.kinds.iter().all(|k| existing.requests.contains_key(k)) {
        eprintln!("[filprove] reusing fixtures in {}", fixtures.display());
        existing
    } else {
        let stage = Stage::start(format!(
            "sealing a {} sector and writing inputs to {}",
            args.sector_size,
            fixtures.display()
        ));
        let set = filprove_filecoin::fixtures::make(&fixtures, size, &args.kinds, 0)?;
        stage.done("");
        set
    };
    let backend = backend::select(args.backend)?;
    let proofs_dir = args
        .proofs_dir
        .clone()
        .unwrap_or_else(|| args.dir.join("proofs"));
    std::fs::create_dir_all(&proofs_dir)?;
    let mut rng = match args.seed {
        Some(seed) => rand_chacha::ChaCha20Rng::seed_from_u64(seed),
        None => rand_chacha::ChaCha20Rng::from_entropy(),
    };

    let mut rows = Vec::new();
    for kind in &args.kinds {
        let kind = *kind;
        let req = ProofRequest::from_request_json(&read_input(&set.requests[&kind])?)?;
        let spec = req.circuit();
        if !spec.params_path(&params_dir).exists() || !spec.vk_path(&params_dir).exists() {
            let stage = Stage::start(format!(
                "generating test parameters for {}",
                spec.short_name
            ));
            test_params::refuse_replacing_circuit_files(&spec, &params_dir)?;
            let out =
                spec.generate_params(&params_dir, &mut rand_chacha::ChaCha20Rng::seed_from_u64(0))?;
            stage.done(&format!("{:.1} s", out.generate_secs));
        }
        let srs = backend::load_srs(&spec, &params_dir, false)?;
        let randomness: Vec<Randomness> = (0..req.num_partitions())
            .map(|_| Randomness::random(&mut rng))
            .collect();
        let (bytes, report) = prove_request(&req, backend.as_ref(), &srs, &randomness)?;
        let out = proofs_dir.join(format!("{kind}.proof"));
        write_atomic(&out, &bytes)?;
        rows.push((kind, spec.short_name.clone(), report, bytes.len()));
    }
    println!();
    println!("backend: {}", backend.name());
    println!(
        "{:<13} {:<12} {:>11} {:>11} {:>9} {:>9} {:>7}  verified",
        "kind", "circuit", "constraints", "synthesis", "prove", "verify", "bytes"
    );
    for (kind, circuit, r, len) in rows {
        println!(
            "{:<13} {:<12} {:>11} {:>9.2} s {:>7.2} s {:>7.2} s {:>7}  yes (filecoin-proofs)",
            kind.to_string(),
            circuit,
            r.constraints,
            r.synthesis_s,
            r.prove_s,
            r.verify_s,
            len
        );
    }
    Ok(())
}
