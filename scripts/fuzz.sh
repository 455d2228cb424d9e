#!/usr/bin/env bash
# Builds the cargo-fuzz targets of fuzz/ and runs each for SECONDS (default 60), one after
# the other, then prints a table: target, runs, seconds, crashes, corpus size
# (docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]       (default: every target)
#
# The build is optimised with debug assertions and overflow checks, 16 codegen units, and
# no sanitizer by default (a build this machine finishes; docs/fuzzing.md says why);
# FILPROVE_FUZZ_SANITIZER=address builds with ASan instead (into the same fuzz/target).
#
# Each target starts from a scratch corpus (libFuzzer writes there) plus the committed
# seeds in fuzz/corpus/<target>, which stay untouched. Crash inputs go to
# fuzz/artifacts/<target>/. Needs cargo-fuzz (`cargo install cargo-fuzz`); stable rustc
# accepts cargo-fuzz's nightly flags with RUSTC_BOOTSTRAP=1, which this script sets.
# Exit status 1 when any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
if ! command -v cargo-fuzz >/dev/null; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
    exit 2
fi
export RUSTC_BOOTSTRAP=1
# PTX only when nvcc is around: the daemon links filprove-cuda; fuzzing needs no kernels.
export FILPROVE_CUDA_ARCHS=${FILPROVE_CUDA_ARCHS:-compute_90}

sanitizer=${FILPROVE_FUZZ_SANITIZER:-none}
(cd fuzz && cargo fuzz build -O -a -s "$sanitizer" --codegen-units 16)
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi

bin_dir=fuzz/target/x86_64-unknown-linux-gnu/release
work=$(mktemp -d /tmp/filprove-fuzz.XXXXXX)
summary=$work/summary.txt
printf '%-16s %12s %8s %8s %8s %9s %14s\n' target runs seconds crashes exec/s rss_mb corpus \
    | tee "$summary"
failed=0
for t in "${targets[@]}"; do
    # Target options: the file readers must never allocate by an announced count (inputs
    # of at most 64 KiB; their binaries abort on any one allocation above 64 MiB, and so
    # does -malloc_limit_mb under a sanitizer); a sequence of RPCs waits up to 60 s for
    # its jobs.
    opts=()
    case $t in
        params_file | vk_file) opts=(-malloc_limit_mb=64 -max_len=65536) ;;
        engine_rpc) opts=(-timeout=120) ;;
    esac
    mkdir -p "$work/$t" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    start=$(date +%s)
    rc=0
    "$bin_dir/$t" "$work/$t" "fuzz/corpus/$t" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" "${opts[@]}" >"$work/$t.log" 2>&1 || rc=$?
    took=$(($(date +%s) - start))
    after=$(find "fuzz/artifacts/$t" -type f | wc -l)
    crashes=$((after - before))
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
        crashes=1 # died without writing an input (e.g. killed)
    fi
    runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$work/$t.log" | tail -1)
    rate=$(awk '/stat::average_exec_per_sec/ { print $2 }' "$work/$t.log" | tail -1)
    rss=$(awk '/stat::peak_rss_mb/ { print $2 }' "$work/$t.log" | tail -1)
    # libFuzzer's last "corp: N/SIZE" (inputs in its corpus and their bytes).
    corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$work/$t.log" | tail -1 | cut -d' ' -f2)
    printf '%-16s %12s %8s %8s %8s %9s %14s\n' "$t" "${runs:-?}" "$took" "$crashes" \
        "${rate:-?}" "${rss:-?}" "${corpus:-?}" | tee -a "$summary"
    if [ "$crashes" -ne 0 ]; then
        failed=1
        echo "  $t: see $work/$t.log and fuzz/artifacts/$t/" | tee -a "$summary"
    fi
done
echo "logs and scratch corpora: $work"
exit $failed
