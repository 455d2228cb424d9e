//! Compiles the cuzk.v1 proto with a pure-Rust protobuf compiler (protox), so no system
//! `protoc` is needed to build. Also writes its descriptor set (served by gRPC reflection)
//! and compiles the conformance copy of cuzk's proto (tests/conformance) into
//! `$OUT_DIR/conformance/`, client only, for the conformance test.

use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    std::fs::write(out.join("cuzk_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;

    let copy = "tests/conformance/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={copy}");
    let fds = protox::compile([copy], ["tests/conformance"])?;
    let conformance = out.join("conformance");
    std::fs::create_dir_all(&conformance)?;
    std::fs::write(conformance.join("descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .out_dir(&conformance)
        .compile_fds(fds)?;
    Ok(())
}
