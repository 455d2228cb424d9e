//! cargo-fuzz target `params_file`: the body is `targets/params_file.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

#[global_allocator]
static ALLOCATOR: common::CappedAlloc = common::CappedAlloc;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::params_file::run(data);
});
