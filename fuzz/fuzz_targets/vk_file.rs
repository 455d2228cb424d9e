//! cargo-fuzz target `vk_file`: the body is `targets/vk_file.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

#[global_allocator]
static ALLOCATOR: common::CappedAlloc = common::CappedAlloc;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::vk_file::run(data);
});
