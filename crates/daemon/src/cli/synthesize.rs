//! `filprove synthesize`: witness synthesis alone, timed (no parameters, no GPU): how fast
//! this machine's CPUs turn a request into partitions, and a check that the parallel
//! synthesis of PoRep's challenges gives exactly what ordered synthesis gives.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use rayon::prelude::*;

use filprove_filecoin::ProofKind;

use super::prove::RequestArgs;

/// Arguments of `filprove synthesize`.
#[derive(Args, Debug)]
pub struct SynthesizeArgs {
    #[command(flatten)]
    pub input: RequestArgs,
    /// The partition to synthesize.
    #[arg(long, default_value_t = 0)]
    pub partition: usize,
    /// Timed syntheses (the first of a PoRep seal proof in a process also learns the
    /// shape of its challenges, so it runs challenge 0 in order).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Synthesize in constraint order on one thread, as filecoin-proofs does.
    #[arg(long)]
    pub in_order: bool,
    /// Then synthesize the partition in order too and fail unless both assignments are
    /// equal, field for field (needs memory for two partitions).
    #[arg(long)]
    pub check: bool,
}

/// Runs `filprove synthesize`.
pub fn run(args: SynthesizeArgs) -> Result<()> {
    let req = args.input.load()?;
    let k = args.partition;
    // Only PoRep's circuits are synthesized in parts (WindowPoSt's sectors are parallel in
    // storage-proofs itself).
    let parted =
        !args.in_order && filprove_groth16::parts::enabled() && req.kind() == ProofKind::PoRep;
    let mode = if parted {
        "challenges in parallel"
    } else {
        "in order"
    };
    let mut last = None;
    for run in 1..=args.runs.max(1) {
        let t = Instant::now();
        let p = if args.in_order {
            req.synthesize_in_order(k)?
        } else {
            req.synthesize(k)?
        };
        let secs = t.elapsed().as_secs_f64();
        let n = p.assignment.num_constraints();
        println!(
            "{} partition {k} ({mode}), run {run}: {n} constraints, {} aux in {secs:.3} s \
             ({:.2} M constraints/s)",
            req.kind(),
            p.assignment.aux_assignment.len(),
            n as f64 / secs / 1e6
        );
        if run == 1 {
            let a = &p.assignment;
            let unsatisfied =
                a.a.par_iter()
                    .zip(&a.b)
                    .zip(&a.c)
                    .filter(|((x, y), z)| **x * **y != **z)
                    .count();
            if unsatisfied > 0 {
                bail!("partition {k}: {unsatisfied} of {n} constraints are not satisfied");
            }
            println!("partition {k}: every constraint is satisfied");
        }
        last = Some(p);
    }
    if args.check {
        let got = last.expect("at least one run");
        let t = Instant::now();
        let want = req.synthesize_in_order(k)?;
        let secs = t.elapsed().as_secs_f64();
        if got.assignment != want.assignment || got.public_inputs != want.public_inputs {
            bail!("partition {k}: the {mode} synthesis differs from ordered synthesis");
        }
        println!("partition {k}: equal to ordered synthesis ({secs:.3} s)");
    }
    Ok(())
}
