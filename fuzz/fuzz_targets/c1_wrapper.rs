//! cargo-fuzz target `c1_wrapper`: the body is `targets/c1_wrapper.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::c1_wrapper::run(data);
});
