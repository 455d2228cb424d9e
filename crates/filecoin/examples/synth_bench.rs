//! Times the synthesis of one partition of a request (witness capture only; no parameters).
//!
//!     cargo run --release -p filprove-filecoin --example synth_bench -- REQUEST.json [RUNS]
use std::time::Instant;

use filprove_filecoin::ProofRequest;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: synth_bench REQUEST.json [RUNS]");
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let req = ProofRequest::from_request_json(&std::fs::read(path).expect("read"))
        .expect("parse request");
    for _ in 0..runs {
        let t = Instant::now();
        let p = req.synthesize(0).expect("synthesize");
        let s = t.elapsed().as_secs_f64();
        let n = p.assignment.num_constraints();
        println!(
            "{}: {n} constraints, {} aux in {s:.3} s ({:.2} M constraints/s)",
            req.kind(),
            p.assignment.aux_assignment.len(),
            n as f64 / s / 1e6
        );
    }
}
