//! `filprove fixtures`: seal small sectors locally and write proof inputs of every kind.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use filprove_filecoin::kinds::parse_sector_size;
use filprove_filecoin::ProofKind;

use super::stage::Stage;

/// Arguments of `filprove fixtures`.
#[derive(Args, Debug)]
pub struct FixturesArgs {
    /// Output directory.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Sector size: 2KiB, 8MiB or 512MiB.
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// Proof kinds to make inputs for.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning-post,window-post,snap"
    )]
    pub kinds: Vec<ProofKind>,
    /// Seed of the sector data and randomness.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also seal a sector with the synthetic-PoRep seal proof and write its PoRep request
    /// (porep-synthetic.request.json).
    #[arg(long)]
    pub synthetic_porep: bool,
    /// Also seal a sector with the non-interactive PoRep seal proof and write its PoRep
    /// request (porep-ni.request.json; its C2 output is a SnarkPack aggregate).
    #[arg(long)]
    pub non_interactive_porep: bool,
}

/// Parses a sector size such as `2KiB` or `536870912`.
pub fn sector_size(s: &str) -> Result<u64> {
    parse_sector_size(s).with_context(|| {
        format!("unknown sector size {s:?} (try 2KiB, 8MiB, 512MiB, 32GiB, 64GiB)")
    })
}

/// Runs `filprove fixtures`.
pub fn run(args: FixturesArgs) -> Result<()> {
    let size = sector_size(&args.sector_size)?;
    let stage = Stage::start(format!(
        "sealing a {} sector and writing inputs to {}",
        args.sector_size,
        args.out.display()
    ));
    let set = filprove_filecoin::fixtures::make(&args.out, size, &args.kinds, args.seed)?;
    stage.done("");
    for (kind, path) in &set.requests {
        println!("{kind:<13} {}", path.display());
    }
    if args.synthetic_porep {
        let stage = Stage::start("sealing a sector for synthetic PoRep".to_string());
        let path = filprove_filecoin::fixtures::make_synthetic_porep(&args.out, size, args.seed)?;
        stage.done("");
        println!("{:<13} {}", "porep (synthetic)", path.display());
    }
    if args.non_interactive_porep {
        let stage = Stage::start("sealing a sector for non-interactive PoRep".to_string());
        let path =
            filprove_filecoin::fixtures::make_non_interactive_porep(&args.out, size, args.seed)?;
        stage.done("");
        println!("{:<13} {}", "porep (NI)", path.display());
    }
    Ok(())
}
