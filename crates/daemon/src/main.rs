//! `filprove`: a Groth16 prover for Filecoin. A thin entry point: parse, set up logs,
//! dispatch to a command.

fn main() {}
