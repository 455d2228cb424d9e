//! `ProofRequest::from_request_json`: filprove's own request JSON (any proof kind).
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: common::init(), |data: &[u8]| {
    let _ = filprove_filecoin::ProofRequest::from_request_json(data);
});
