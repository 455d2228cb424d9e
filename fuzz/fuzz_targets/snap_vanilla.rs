//! cargo-fuzz target `snap_vanilla`: the body is `targets/snap_vanilla.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::snap_vanilla::run(data);
});
