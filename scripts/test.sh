#!/usr/bin/env bash
# The test command of a fresh machine (README, .ci/run):
#  1. installs the pinned CUDA compiler from PyPI into .cuda/ (no GPU needed) so the
#     kernels are compiled and broken device code fails here;
#  2. checks formatting and lints;
#  3. runs every test of the workspace. GPU tests skip with a message without a GPU
#     (and fail instead when FILPROVE_REQUIRE_GPU=1).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-cuda-toolchain.sh
export PATH="$PWD/.cuda/nvidia/cu13/bin:$PATH"

# The field-product micro-benchmark (crates/cuda/bench) in its variants, so the A/B
# comparisons keep compiling (the kernels themselves are compiled by build.rs).
for def in "" "-DFILPROVE_FQ_MUL_WIDE=0 -DFILPROVE_FR_MUL_WIDE=0" \
    "-DFILPROVE_FQ_MUL_VARIANT=0 -DFILPROVE_FR_MUL_VARIANT=0"; do
    nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I crates/cuda/kernels $def \
        -o /dev/null crates/cuda/bench/mulbench.cu
done

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test-output.log

# One closing line for the whole run (cargo's own last lines are the doc-test binaries').
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' \
    target/test-output.log
