//! `filprove verify`: checks a proof file with filecoin-proofs' own verifier.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::backend;
use super::prove::{read_input, RequestArgs};

/// Arguments of `filprove verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The request to work on.
    #[command(flatten)]
    pub input: RequestArgs,
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
    let req = args.input.load()?;
    let proof = read_input(&args.proof)?;
    if req.verify(&proof)? {
        println!("valid {} proof ({} bytes)", req.kind(), proof.len());
        Ok(())
    } else {
        bail!("INVALID {} proof ({} bytes)", req.kind(), proof.len())
    }
}
