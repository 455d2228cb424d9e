//! The body of every fuzz target, as a plain function of the input bytes.
//!
//! The cargo-fuzz binaries in `fuzz_targets/` call these, and so does the stable-toolchain
//! replay test (`crates/daemon/tests/fuzz_corpus.rs`), which feeds every file of
//! `fuzz/corpus/<target>/` through the same function in CI. An error result is fine; a
//! panic (an assertion on an invariant included), abort, out-of-memory or timeout is a bug.

// Each fuzz binary uses one target of this table.
#![allow(dead_code)]

pub mod c1_json;
pub mod c1_wrapper;
pub mod engine_rpc;
pub mod input;
pub mod params_file;
pub mod post_vanilla;
pub mod request_json;
pub mod snap_vanilla;
pub mod submit_request;
pub mod vanilla_framing;
pub mod vk_file;

/// A target's body: true when the input was accepted (it parsed, or a proof came back).
pub type Target = fn(&[u8]) -> bool;

/// Every target by name (the name of its binary and of its corpus directory).
pub const TARGETS: &[(&str, Target)] = &[
    ("c1_json", c1_json::run),
    ("c1_wrapper", c1_wrapper::run),
    ("engine_rpc", engine_rpc::run),
    ("params_file", params_file::run),
    ("post_vanilla", post_vanilla::run),
    ("request_json", request_json::run),
    ("snap_vanilla", snap_vanilla::run),
    ("submit_request", submit_request::run),
    ("vanilla_framing", vanilla_framing::run),
    ("vk_file", vk_file::run),
];
