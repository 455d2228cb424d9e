//! `ProofRequest::from_request_json`: filprove's own request JSON (any proof kind).

/// Parses `data` as a request file; true when accepted.
pub fn run(data: &[u8]) -> bool {
    filprove_filecoin::ProofRequest::from_request_json(data).is_ok()
}
