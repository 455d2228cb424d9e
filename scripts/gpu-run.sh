#!/usr/bin/env bash
# The one script that runs on the GPU machine (no cargo there): every carried test binary
# with FILPROVE_REQUIRE_GPU=1 (a GPU test can then not skip silently), then the benchmark.
# Prints a short table last and writes logs and JSON into the directory given.
#
#   bash scripts/gpu-run.sh OUTDIR [bench args, e.g. --quick]
#
# Binaries come from crates/cuda/package-device.sh (built on the build machine) in .device/:
# .device/tests/<name> (cargo test executables) and .device/gpu_bench.
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" "${DEVICE_DIR:-.device}"  # binaries packed by package-device.sh
out="${1:?usage: gpu-run.sh OUTDIR [bench args]}"
shift
dir="${DEVICE_DIR:-.device}"
mkdir -p "$out"
export FILPROVE_REQUIRE_GPU=1 RUST_BACKTRACE=1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total,temperature.gpu,power.draw --format=csv
} > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

summary=""
fail=0
: > "$out/tests.log"
for t in "$dir"/tests/*; do
    [ -x "$t" ] || continue
    name="$(basename "$t")"
    start=$(date +%s)
    echo "=== $name" >> "$out/tests.log"
    # The host build of the field code (tests/field.rs, `*_on_the_host_*`) needs the source
    # tree and a C++ compiler; it runs in CI, not here.
    if "$t" --test-threads=1 --nocapture --skip on_the_host > "$out/one.log" 2>&1; then r=PASS; else r=FAIL; fail=1; fi
    cat "$out/one.log" >> "$out/tests.log"
    secs=$(( $(date +%s) - start ))
    result="$(grep '^test result' "$out/one.log" | tail -n 1)"
    summary+="$(printf '%-10s %-4s %4ss  %s' "$name" "$r" "$secs" "$result")"$'\n'
    echo "$name: $r (${secs}s)"
done
rm -f "$out/one.log"
grep -E '^test |^SKIP|panicked|seed' "$out/tests.log" | tail -n 60

bench=PASS
if [ -x "$dir/gpu_bench" ]; then
    "$dir/gpu_bench" --json "$out/bench.json" "$@" > "$out/bench.log" 2>&1 || { bench=FAIL; fail=1; }
    cat "$out/bench.log"
else
    bench=MISSING
fi
echo
echo "tests (FILPROVE_REQUIRE_GPU=1):"
printf '%s' "$summary"
echo "bench: $bench"
exit $fail
