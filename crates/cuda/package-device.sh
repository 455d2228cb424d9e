#!/usr/bin/env bash
# Builds the CUDA crate's test binaries, its benchmark and the filprove binary in release
# mode and copies them,
# stripped, into <repo>/.device/ (ignored via .git/info/exclude) for scripts/gpu-run.sh.
# FILPROVE_CUDA_ARCHS=sm_90 builds only the H200's SASS (faster while iterating).
# FILPROVE_PACKAGE_AB=1 adds the A/B binaries of the field product: .device/gpu_bench_lohi
# (kernels built with the carry-chain product instead of the default wide one) and
# .device/mb/mul_{lohi,wide} (crates/cuda/bench/mulbench.cu).
# FILPROVE_PACKAGE_VARIANTS="name=MACRO=v,MACRO2=v name2=..." adds A/B builds of the
# kernels, one per name: .device/ab/gpu_bench_<name>, .device/ab/<name>/mulbench and the
# test binaries named in FILPROVE_PACKAGE_VARIANT_TESTS (e.g. "ntt large"; none by
# default) as .device/ab/<name>/<test> (run them by hand with FILPROVE_REQUIRE_GPU=1;
# ~5 MB a binary at sm_90: mind the 64 MiB carry limit).
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
for spec in ${FILPROVE_PACKAGE_VARIANTS:-}; do
    name="${spec%%=*}"
    defs="${spec#*=}"
    mkdir -p ".device/ab/$name"
    FILPROVE_CUDA_DEFINES=$defs cargo build -p filprove-cuda --release --example gpu_bench
    cp target/release/examples/gpu_bench ".device/ab/gpu_bench_$name"
    "$root/.cuda/nvidia/cu13/bin/nvcc" -O3 -std=c++17 -arch=sm_90 -I crates/cuda/kernels \
        $(echo ",$defs" | sed 's/,/ -D/g') -o ".device/ab/$name/mulbench" crates/cuda/bench/mulbench.cu
    tests=""
    for t in ${FILPROVE_PACKAGE_VARIANT_TESTS:-}; do tests+=" --test $t"; done
    [ -n "$tests" ] || continue
    # shellcheck disable=SC2086
    FILPROVE_CUDA_DEFINES=$defs cargo test -p filprove-cuda --release --no-run --message-format=json \
        $tests 2>/dev/null |
        python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])
' | while read -r tname exe; do
        cp "$exe" ".device/ab/$name/$tname"
    done
done
if [ -d .device/ab ]; then strip .device/ab/gpu_bench_* .device/ab/*/* 2>/dev/null || true; fi
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
