//! `filprove verify`: checks a proof file with filecoin-proofs' own verifier.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::backend;
use super::prove::{load_request, read_input};

/// Arguments of `filprove verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The request file the proof answers.
    #[arg(long, conflicts_with = "c1", required_unless_present = "c1")]
    pub request: Option<PathBuf>,
    /// Or the PoRep C1 output it answers.
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// Sector number (for --c1).
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// Miner actor id (for --c1).
    #[arg(long, default_value_t = 1000)]
    pub miner_id: u64,
    /// The proof file.
    #[arg(long)]
    pub proof: PathBuf,
    /// Parameter directory (only the .vk is read).
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
}

/// Runs `filprove verify`; exits non-zero when the proof is invalid.
pub fn run(args: VerifyArgs) -> Result<()> {
    backend::resolve_params_dir(args.params_dir.as_deref());
    let req = load_request(
        args.request.as_deref(),
        args.c1.as_deref(),
        args.sector_number,
        args.miner_id,
    )?;
    let proof = read_input(&args.proof)?;
    if req.verify(&proof)? {
        println!("valid {} proof ({} bytes)", req.kind(), proof.len());
        Ok(())
    } else {
        bail!("INVALID {} proof ({} bytes)", req.kind(), proof.len())
    }
}
