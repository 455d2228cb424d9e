//! `filprove synthesize`: witness synthesis alone, timed (no parameters, no GPU): how fast
//! this machine's CPUs turn a request into partitions, and a check that every way of
//! synthesizing a PoRep partition (in order, challenges in parallel through the upstream
//! gadgets, through the circuit twin), a PoSt partition (in order, storage-proofs' chunks
//! of sectors in parallel, sectors in parallel through the circuit twin) or a SnapDeals
//! partition (in order, challenges in parallel through the gadgets or with tree D's
//! SHA-256 computed natively) gives exactly the same assignment, one that satisfies the
//! circuit's R1CS.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use filprove_filecoin::{Partition, ProofKind, ProofRequest, SynthesisPath};
use filprove_groth16::recycle;

use super::prove::RequestArgs;

/// A way of synthesizing a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PathArg {
    /// Challenges (PoSt: sectors) in parallel through filprove's circuit twin
    /// (production; SnapDeals: tree D's SHA-256 computed natively).
    Twin,
    /// Challenges in parallel through storage-proofs' gadgets (PoSt: storage-proofs' own
    /// chunks of sectors in parallel).
    Gadgets,
    /// In constraint order on one thread, as filecoin-proofs does.
    InOrder,
}

impl PathArg {
    fn path(self) -> SynthesisPath {
        match self {
            PathArg::Twin => SynthesisPath::Twin,
            PathArg::Gadgets => SynthesisPath::Gadgets,
            PathArg::InOrder => SynthesisPath::InOrder,
        }
    }

    /// The path's name in the report; a PoSt partition's parts are its sectors.
    fn describe(self, kind: ProofKind) -> &'static str {
        let post = matches!(kind, ProofKind::WindowPoSt | ProofKind::WinningPoSt);
        match (self, post) {
            (PathArg::Twin, false) => "twin, challenges in parallel",
            (PathArg::Twin, true) => "twin, sectors in parallel",
            (PathArg::Gadgets, false) => "gadgets, challenges in parallel",
            (PathArg::Gadgets, true) => "gadgets, storage-proofs' chunks of sectors in parallel",
            (PathArg::InOrder, _) => "in order",
        }
    }
}

/// Arguments of `filprove synthesize`.
#[derive(Args, Debug)]
pub struct SynthesizeArgs {
    /// The request to work on.
    #[command(flatten)]
    pub input: RequestArgs,
    /// The partition to synthesize.
    #[arg(long, default_value_t = 0)]
    pub partition: usize,
    /// Timed syntheses (the first of a PoRep seal proof in a process also learns the
    /// shape of its challenges, so it runs challenge 0 in order through the gadgets).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// How the partition is synthesized.
    #[arg(long, value_enum, default_value_t = PathArg::Twin)]
    pub path: PathArg,
    /// Then check the assignment against the circuit's R1CS (captured as parameter
    /// generation does: a and b are A w and B w, and (A w)(B w) = C w on every
    /// constraint), synthesize the partition along every path (gadgets, twin, in
    /// order), report the time per
    /// constraint of each side by side, and fail unless every assignment is equal, field
    /// for field (needs memory for two partitions and the R1CS).
    #[arg(long)]
    pub check: bool,
    /// Give every run newly allocated vectors instead of refilling the previous run's, as
    /// the engine does between partitions (the first run always allocates: its time
    /// includes faulting in the partition's memory).
    #[arg(long)]
    pub fresh_buffers: bool,
}

/// Runs `filprove synthesize`.
pub fn run(args: SynthesizeArgs) -> Result<()> {
    let req = args.input.load()?;
    let k = args.partition;
    let kind = req.kind();
    let path = args.path;
    let mode = path.describe(kind);
    let mut last: Option<Partition> = None;
    for run in 1..=args.runs.max(1) {
        // The previous run's partition goes first (two 32 GiB PoRep partitions need
        // 25 GB), or is refilled (filprove_groth16::recycle).
        let shell = last
            .take()
            .filter(|_| !args.fresh_buffers)
            .map(|p| p.assignment);
        let (r, _) = recycle::with_shell(shell, || timed(&req, k, path));
        let (p, secs) = r?;
        let n = p.assignment.num_constraints();
        println!(
            "{} partition {k} ({mode}), run {run}: {n} constraints, {} aux in {secs:.3} s \
             ({:.2} M constraints/s, {:.0} ns/constraint)",
            req.kind(),
            p.assignment.aux_assignment.len(),
            n as f64 / secs / 1e6,
            secs * 1e9 / n as f64,
        );
        last = Some(p);
    }
    if args.check {
        let got = last.expect("at least one run");
        let t = Instant::now();
        let r1cs = req.circuit().blank_r1cs()?;
        r1cs.check_assignment(&got.assignment)
            .map_err(|e| anyhow::anyhow!("partition {k}: {e}"))?;
        drop(r1cs);
        println!(
            "partition {k}: every constraint is satisfied (R1CS captured and checked in {:.3} s)",
            t.elapsed().as_secs_f64()
        );
        let mut times = Vec::new();
        for other in [PathArg::Gadgets, PathArg::Twin, PathArg::InOrder] {
            let fallbacks = filprove_filecoin::twin_fallbacks();
            let (p, secs) = timed(&req, k, other)?;
            if other != PathArg::InOrder && filprove_filecoin::twin_fallbacks() != fallbacks {
                bail!(
                    "partition {k}: the {} synthesis fell back (see the log)",
                    other.describe(kind)
                );
            }
            if p.assignment != got.assignment || p.public_inputs != got.public_inputs {
                bail!(
                    "partition {k}: the {} synthesis differs from the {mode} one",
                    other.describe(kind)
                );
            }
            times.push((other, secs, p.assignment.num_constraints()));
        }
        let side_by_side: Vec<String> = times
            .iter()
            .map(|(p, secs, n)| {
                format!(
                    "{} {:.0} ns/constraint ({secs:.3} s)",
                    p.describe(kind),
                    secs * 1e9 / *n as f64
                )
            })
            .collect();
        println!("partition {k}: {}", side_by_side.join(" | "));
        println!("partition {k}: every path is equal to ordered synthesis");
    }
    Ok(())
}

/// Partition `k` synthesized along `path`, and the seconds it took.
fn timed(req: &ProofRequest, k: usize, path: PathArg) -> Result<(Partition, f64)> {
    let t = Instant::now();
    let p = req.synthesize_with(k, path.path())?;
    Ok((p, t.elapsed().as_secs_f64()))
}
