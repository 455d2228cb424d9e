#!/usr/bin/env bash
# Builds the CUDA crate's test binaries, its benchmark and the filprove binary in release
# mode and copies them,
# stripped, into <repo>/.device/ (ignored via .git/info/exclude) for scripts/gpu-run.sh.
# FILPROVE_CUDA_ARCHS=sm_90 builds only the H200's SASS (faster while iterating).
# FILPROVE_PACKAGE_AB=1 adds the A/B binaries of the field product: .device/gpu_bench_lohi
# (kernels built with the carry-chain product instead of the default wide one) and
# .device/mb/mul_{lohi,wide} (crates/cuda/bench/mulbench.cu).
# FILPROVE_PACKAGE_NTT_AB=1 adds A/B builds of the NTT's strided passes (kernels/ntt.cu),
# one per name in FILPROVE_NTT_AB_VARIANTS (default "tw"): tw = FILPROVE_NTT_TWIDDLE_SMEM=1,
# hf = FILPROVE_NTT_HIGH_FIRST=1, twhf = both; each as .device/ntt_ab/gpu_bench_<name> and
# its ntt and large tests as .device/ntt_ab/<name>/{ntt,large} (run them by hand with
# FILPROVE_REQUIRE_GPU=1; gpu-run.sh runs the default build's tests only; ~5 MB a binary
# at sm_90, FILPROVE_NTT_AB_TESTS=0 leaves the tests out).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
rm -rf .device && mkdir -p .device/tests
if [ "${FILPROVE_PACKAGE_AB:-0}" = 1 ]; then
    FILPROVE_CUDA_DEFINES=FILPROVE_FQ_MUL_WIDE=0,FILPROVE_FR_MUL_WIDE=0 \
        cargo build -p filprove-cuda --release --example gpu_bench
    cp target/release/examples/gpu_bench .device/gpu_bench_lohi
    nvcc="$root/.cuda/nvidia/cu13/bin/nvcc"
    mkdir -p .device/mb
    for v in lohi wide; do
        def=""; [ $v = lohi ] && def="-DFILPROVE_FQ_MUL_WIDE=0 -DFILPROVE_FR_MUL_WIDE=0"
        "$nvcc" -O3 -std=c++17 -arch=sm_90 -I crates/cuda/kernels $def -o .device/mb/mul_$v crates/cuda/bench/mulbench.cu
    done
fi
if [ "${FILPROVE_PACKAGE_NTT_AB:-0}" = 1 ]; then
    mkdir -p .device/ntt_ab
    for v in ${FILPROVE_NTT_AB_VARIANTS:-tw}; do
        case $v in
            tw) defs=FILPROVE_NTT_TWIDDLE_SMEM=1 ;;
            hf) defs=FILPROVE_NTT_HIGH_FIRST=1 ;;
            twhf) defs=FILPROVE_NTT_TWIDDLE_SMEM=1,FILPROVE_NTT_HIGH_FIRST=1 ;;
            *) echo "unknown NTT A/B variant $v" >&2; exit 1 ;;
        esac
        FILPROVE_CUDA_DEFINES=$defs cargo build -p filprove-cuda --release --example gpu_bench
        cp target/release/examples/gpu_bench .device/ntt_ab/gpu_bench_$v
        [ "${FILPROVE_NTT_AB_TESTS:-1}" = 1 ] || continue
        mkdir -p .device/ntt_ab/$v
        FILPROVE_CUDA_DEFINES=$defs cargo test -p filprove-cuda --release --no-run --message-format=json \
            --test ntt --test large 2>/dev/null |
            python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
            cp "$exe" ".device/ntt_ab/$v/$name"
        done
    done
    strip .device/ntt_ab/gpu_bench_* .device/ntt_ab/*/* 2>/dev/null || true
fi
cargo build -p filprove-cuda --release --examples
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
cp target/release/examples/gpu_bench .device/gpu_bench
cp target/release/filprove .device/filprove
strip .device/gpu_bench .device/filprove .device/tests/* 2>/dev/null || true
ls -la .device .device/tests
du -sh .device
