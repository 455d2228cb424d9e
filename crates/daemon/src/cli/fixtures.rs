//! `filprove fixtures`: seal small sectors locally, or make virtual sectors of any size
//! (docs/virtual-sectors.md), and write proof inputs of every kind.

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
    /// Sector size: 2KiB, 8MiB or 512MiB (sealed); with --virtual also 32GiB and 64GiB.
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// Proof kinds to make inputs for (default: every kind).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Option<Vec<ProofKind>>,
    /// Make a virtual sector instead of sealing one: valid inputs of every kind and any
    /// size in seconds (WindowPoSt: one full partition; SnapDeals: an update with zero data).
    #[arg(long = "virtual", conflicts_with_all = ["synthetic_porep", "non_interactive_porep"])]
    pub virtual_sector: bool,
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
    let kinds = args
        .kinds
        .clone()
        .unwrap_or_else(|| ProofKind::ALL.to_vec());
    let (what, make): (_, fn(_, _, _, _, _) -> _) = if args.virtual_sector {
        (
            "making a virtual",
            filprove_filecoin::virtual_sector::make_reporting,
        )
    } else {
        ("sealing a", filprove_filecoin::fixtures::make_reporting)
    };
    let stage = Stage::start(format!(
        "{what} {} sector and writing inputs to {}",
        args.sector_size,
        args.out.display()
    ));
    let set = make(&args.out, size, &kinds, args.seed, &stage)?;
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
