//! `filprove params profile`: where a PoSt or SnapDeals circuit's constraints go, by
//! gadget family.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;

use filprove_filecoin::GadgetFamily;

use super::params::spec_by_name;

/// Arguments of `params profile`.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The circuit, by short name (wpost-32g, winning-32g, snap-32g, wpost-2k, ...).
    #[arg(long)]
    pub circuit: String,
    /// Also count the whole blank circuit (every sector or challenge, one thread; minutes
    /// at 32 GiB)
    /// and fail unless its totals equal the profile's.
    #[arg(long)]
    pub check_whole: bool,
}

/// Prints the profile as a table (constraints, share, aux per family).
pub fn run(args: ProfileArgs) -> Result<()> {
    let spec = spec_by_name(&args.circuit)?;
    let t = Instant::now();
    let profile = spec.constraint_profile()?;
    let total = profile.constraints();
    let part = match spec.kind {
        filprove_filecoin::ProofKind::SnapDeals => "challenge",
        _ => "sector",
    };
    println!(
        "{}: {} {part}s, {total} constraints, {} aux, {} inputs (one {part} counted, x {}; {:.2} s)",
        spec.short_name,
        profile.parts,
        profile.aux(),
        profile.inputs,
        profile.parts,
        t.elapsed().as_secs_f64()
    );
    println!("| gadget family | constraints | share | aux variables |\n|---|---|---|---|");
    for family in GadgetFamily::ALL {
        let c = profile.families.get(&family).copied().unwrap_or_default();
        println!(
            "| {} | {} | {:.2} % | {} |",
            family.describe(),
            c.constraints,
            c.constraints as f64 * 100.0 / total.max(1) as f64,
            c.aux
        );
    }
    if args.check_whole {
        let t = Instant::now();
        let shape = spec.blank_shape()?;
        let counted = (
            shape.constraints as u64,
            shape.aux as u64,
            shape.inputs as u64,
        );
        let profiled = (total, profile.aux(), profile.inputs);
        if counted != profiled {
            bail!("the whole blank circuit has (constraints, aux, inputs) {counted:?}, the profile {profiled:?}");
        }
        println!(
            "the whole blank circuit counted: the same totals ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
