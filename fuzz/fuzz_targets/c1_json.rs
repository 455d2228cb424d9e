//! cargo-fuzz target `c1_json`: the body is `targets/c1_json.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::c1_json::run(data);
});
