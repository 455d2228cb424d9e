//! cargo-fuzz target `engine_rpc`: the body is `targets/engine_rpc.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::engine_rpc::run(data);
});
