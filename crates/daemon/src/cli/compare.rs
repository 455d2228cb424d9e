//! `filprove compare`: our prover against filecoin-proofs' own prover, on the same input,
//! in the same process, both proofs verified. The figures for docs/benchmarks.md.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use filecoin_proofs_api::{post, seal, update, PartitionProofBytes, SectorId};
use filprove_filecoin::{ProofRequest, RequestBody};
use filprove_groth16::Randomness;

use super::backend::{self, ProverOpts};
use super::prove::{load_request, prove_request};
use super::stage::Stage;

/// Arguments of `filprove compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The request to prove (see docs/formats.md).
    #[arg(long)]
    pub request: PathBuf,
    /// Timed runs of each prover (after one warm-up run each, which loads parameters).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Skip the warm-up runs.
    #[arg(long)]
    pub no_warmup: bool,
    /// The backend and proving options.
    #[command(flatten)]
    pub prover: ProverOpts,
}

/// Proves `req` with filecoin-proofs-api's own prover (bellperson on the CPU).
pub fn prove_reference(req: &ProofRequest) -> Result<Vec<u8>> {
    Ok(match req.body() {
        RequestBody::PoRep {
            c1,
            sector_number,
            miner_id,
        } => {
            let prover_id = filprove_filecoin::request::prover_id_from_miner_id(*miner_id);
            seal::seal_commit_phase2((**c1).clone(), prover_id, SectorId::from(*sector_number))?
                .proof
        }
        RequestBody::WinningPoSt {
            registered,
            miner_id,
            randomness,
            vanilla_proofs,
        } => {
            let prover_id = filprove_filecoin::request::prover_id_from_miner_id(*miner_id);
            let out = post::generate_winning_post_with_vanilla(
                *registered,
                randomness,
                prover_id,
                vanilla_proofs,
            )?;
            out.into_iter().flat_map(|(_, p)| p).collect()
        }
        RequestBody::WindowPoSt {
            registered,
            miner_id,
            randomness,
            partition_index,
            vanilla_proofs,
        } => {
            let prover_id = filprove_filecoin::request::prover_id_from_miner_id(*miner_id);
            post::generate_single_window_post_with_vanilla(
                *registered,
                randomness,
                prover_id,
                vanilla_proofs,
                *partition_index as usize,
            )?
            .0
        }
        RequestBody::SnapDeals {
            registered,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            vanilla_proofs,
        } => {
            let parts = vanilla_proofs
                .iter()
                .cloned()
                .map(PartitionProofBytes)
                .collect();
            update::generate_empty_sector_update_proof_with_vanilla(
                *registered,
                parts,
                *comm_r_old,
                *comm_r_new,
                *comm_d_new,
            )?
            .0
        }
    })
}

/// The median (upper middle) of `v`; 0 for none.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `filprove compare`.
pub fn run(args: CompareArgs) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let dir = backend::resolve_params_dir(args.prover.params_dir.as_deref());
    let req = load_request(Some(&args.request), None, None, 0)?;
    let spec = req.circuit();
    let backend = backend::select(args.prover.backend)?;
    let load = Instant::now();
    let srs = backend::load_srs(&spec, &dir, false)?;
    let our_load_s = load.elapsed().as_secs_f64();
    let mut rng = rand::rngs::OsRng;

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let total = args.runs + usize::from(!args.no_warmup);
    for i in 0..total {
        let warm = i == 0 && !args.no_warmup;
        let randomness: Vec<Randomness> = (0..req.num_partitions())
            .map(|_| Randomness::random(&mut rng))
            .collect();
        let t = Instant::now();
        let (_, report) = prove_request(&req, backend.as_ref(), &srs, &randomness)?;
        let ours_s = t.elapsed().as_secs_f64() - report.verify_s;

        let stage = Stage::start("proving with filecoin-proofs' own prover");
        let t = Instant::now();
        let reference = prove_reference(&req).context("filecoin-proofs' prover failed")?;
        let theirs_s = t.elapsed().as_secs_f64();
        stage.done("");
        if !req.verify(&reference)? {
            bail!(
                "filecoin-proofs' own proof does not verify: the parameter files are inconsistent"
            );
        }
        if warm {
            eprintln!("[filprove] warm-up: ours {ours_s:.2} s, filecoin-proofs {theirs_s:.2} s (includes its parameter load)");
        } else {
            ours.push(ours_s);
            theirs.push(theirs_s);
        }
    }
    let (o, t) = (median(ours), median(theirs));
    println!(
        "{{\"kind\":\"{}\",\"circuit\":\"{}\",\"backend\":\"{}\",\"runs\":{},\"ours_s\":{o:.3},\"filecoin_proofs_s\":{t:.3},\"speedup\":{:.2},\"our_params_load_s\":{our_load_s:.2},\"threads\":{}}}",
        req.kind(),
        spec.short_name,
        backend.name(),
        args.runs,
        t / o,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    Ok(())
}
