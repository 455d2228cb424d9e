//! `ProofRequest::parse_c1`: a PoRep C1 output (SealCommitPhase1Output JSON, raw or in the
//! `{"SectorNum","Phase1Out","SectorSize"}` wrapper), as the daemon receives it.
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: common::init(), |data: &[u8]| {
    let _ = filprove_filecoin::ProofRequest::parse_c1(data, Some(1), 1000);
});
