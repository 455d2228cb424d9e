#!/usr/bin/env bash
# A/B of MSM tuning on the GPU machine: `gpu_bench --breakdown` once per variant
# and round (rounds interleaved, so drift hits every variant alike), each step's full
# breakdown kept under OUTDIR, and a table of each step's total per variant and round
# printed last.
#
#   bash scripts/h200-ab.sh OUTDIR STEPS VARIANT...
#
# STEPS: gpu_bench's --steps (ntt,h,g1,g1split,g2). VARIANT: `name` (production) or
# `name:key=value,key2=value` (gpu_bench's --msm settings). Rounds: ROUNDS
# (default 2). Binary: .device/gpu_bench from crates/cuda/package-device.sh. For example
# four affine levels against five:
#   bash scripts/h200-ab.sh $OUT g1,g1split base four:levels=4
set -uo pipefail
out="${1:?usage: h200-ab.sh OUTDIR STEPS VARIANT...}"
steps="${2:?usage: h200-ab.sh OUTDIR STEPS VARIANT...}"
shift 2
[ $# -gt 0 ] || { echo "give at least one variant" >&2; exit 2; }
bin="${BENCH_BIN:-.device/gpu_bench}"
rounds="${ROUNDS:-2}"
mkdir -p "$out"
rc=0
for r in $(seq 1 "$rounds"); do
    for v in "$@"; do
        name="${v%%:*}"
        settings=""
        [ "$v" != "$name" ] && settings="${v#*:}"
        log="$out/ab-$name-$r.txt"
        # shellcheck disable=SC2086
        "$bin" --breakdown --steps "$steps" ${settings:+--msm "$settings"} > "$log" 2>&1
        status=$?
        [ $status -eq 0 ] || rc=1
        echo "== $name round $r (${settings:-no settings}): rc=$status"
    done
done
echo
printf '%-34s' "step total (ms)"
for v in "$@"; do for r in $(seq 1 "$rounds"); do printf '%14s' "${v%%:*}/$r"; done; done
echo
first="$out/ab-${1%%:*}-1.txt"
grep -v '^ ' "$first" | grep -v '^gpu_bench' | while read -r step; do
    printf '%-34s' "$step"
    for v in "$@"; do
        for r in $(seq 1 "$rounds"); do
            t=$(awk -v s="$step" '$0 == s { on = 1; next } /^[^ ]/ { on = 0 } on && $1 == "total" { print $2 }' \
                "$out/ab-${v%%:*}-$r.txt")
            printf '%14s' "${t:--}"
        done
    done
    echo
done
exit $rc
