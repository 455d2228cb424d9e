//! cargo-fuzz target `vanilla_framing`: the body is `targets/vanilla_framing.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::vanilla_framing::run(data);
});
