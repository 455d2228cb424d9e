//! Timing of reading a real parameter file (prints figures; asserts only consistency).
//!
//! ```text
//! PARAMS_BENCH_FILE=/path/v28-....params cargo run --release -p filprove-groth16 --example params_read_bench
//! ```

use std::time::Instant;

use filprove_groth16::params::{file_digest, ParamsHeader, ReadOptions};
use filprove_groth16::{Srs, VerifyingKey};

fn main() {
    let Ok(path) = std::env::var("PARAMS_BENCH_FILE") else {
        println!("PARAMS_BENCH_FILE not set");
        return;
    };
    let t = Instant::now();
    let h = ParamsHeader::read(&path).unwrap();
    println!("header: {:.2?} {:?}", t.elapsed(), h.shape());
    let t = Instant::now();
    let vk = VerifyingKey::read_from_params(&path).unwrap();
    println!("vk only: {:.2?} ({} ic)", t.elapsed(), vk.ic.len());
    let t = Instant::now();
    let trusted = Srs::read_file(&path, &ReadOptions::trusted()).unwrap();
    println!("read, validate=false: {:.2?}", t.elapsed());
    assert_eq!(trusted.vk, vk);
    drop(trusted);
    let t = Instant::now();
    let checked = Srs::read_file(&path, &ReadOptions::validating()).unwrap();
    println!("read, validate=true: {:.2?}", t.elapsed());
    assert_eq!(checked.vk, vk);
    drop(checked);
    let t = Instant::now();
    let d = file_digest(&path).unwrap();
    println!(
        "digest {d}: {:.2?} ({} MB)",
        t.elapsed(),
        h.file_len / 1_000_000
    );
}
