#!/usr/bin/env bash
# Builds the CUDA crate's test binaries, gpu_bench (crates/bench) and the filprove binary
# in release mode and copies them, stripped and packed with xz (scripts/device-unpack.sh
# unpacks them on the GPU machine: ~5x smaller, so builds of other revisions from
# scripts/package-base.sh fit the carry too), into <repo>/.device/ (ignored via
# .git/info/exclude) for scripts/gpu-run.sh and the h200-*.sh scripts.
# FILPROVE_CUDA_ARCHS=sm_90 builds only the H200's SASS (faster while iterating).
# Also .device/mulbench (crates/cuda/bench/mulbench.cu), when nvcc is found.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
# shellcheck source=../../scripts/device-pack.sh
. scripts/device-pack.sh
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
# Builds packed by scripts/package-base.sh (.device/<name>/) are kept.
rm -rf .device/tests .device/gpu_bench* .device/filprove* .device/mulbench*
mkdir -p .device/tests
cargo build -p filprove-bench --release --bin gpu_bench
cargo build -p filprove --release --bin filprove
cargo test -p filprove-cuda --release --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"] \
            and m["package_id"].find("filprove-cuda") >= 0:
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
    cp "$exe" ".device/tests/$name"
done
cp target/release/gpu_bench .device/gpu_bench
cp target/release/filprove .device/filprove
build_mulbench "$root" .device/mulbench
pack .device/gpu_bench .device/filprove .device/mulbench .device/tests/*
ls -la .device .device/tests
du -sh .device
