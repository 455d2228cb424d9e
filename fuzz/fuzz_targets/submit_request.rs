//! cargo-fuzz target `submit_request`: the body is `targets/submit_request.rs` (shared with the replay test).
#![no_main]

#[path = "../common.rs"]
mod common;
#[path = "../targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(init: common::init(), |data: &[u8]| {
    targets::submit_request::run(data);
});
