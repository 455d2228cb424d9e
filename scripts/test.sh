#!/usr/bin/env bash
# The test command of a fresh machine (README, .ci/run):
#  1. installs the pinned CUDA compiler from PyPI into .cuda/ (no GPU needed) so the
#     kernels are compiled and broken device code fails here;
#  2. checks formatting and lints;
#  3. runs every test of the workspace. GPU tests skip with a message without a GPU
#     (and fail instead when FILPROVE_REQUIRE_GPU=1);
#  4. builds the API docs, warnings denied.
set -euo pipefail
cd "$(dirname "$0")/.."

# A CI machine's disk may be nearly full: a one-shot build keeps no incremental state
# (2.9 GB) and no debug line tables (two thirds of each ~220 MB test binary; a panic
# still names its file and line). Together about 8 GB less than the default dev profile.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=false

bash scripts/install-cuda-toolchain.sh
export PATH="$PWD/.cuda/nvidia/cu13/bin:$PATH"

# The field-product micro-benchmark (crates/cuda/bench) keeps compiling (the kernels
# themselves are compiled by build.rs).
nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I crates/cuda/kernels -o /dev/null crates/cuda/bench/mulbench.cu

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test-output.log
# The API docs build without warnings (unresolved or private intra-doc links); after the
# tests, whose build-script outputs (the kernels) it reuses.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

# One closing line for the whole run (cargo's own last lines are the doc-test binaries').
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' \
    target/test-output.log
