//! `ProofRequest::parse_c1`: a PoRep C1 output (SealCommitPhase1Output JSON, raw or in the
//! `{"SectorNum","Phase1Out","SectorSize"}` wrapper), as the daemon receives it.

/// Parses `data` as C1 input for sector 1 of miner 1000; true when accepted.
pub fn run(data: &[u8]) -> bool {
    filprove_filecoin::ProofRequest::parse_c1(data, Some(1), 1000).is_ok()
}
