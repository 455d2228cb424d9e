#!/usr/bin/env bash
# A/B on the GPU machine: `gpu_bench --breakdown` once per variant and round (rounds
# interleaved, so drift hits every variant alike), each step's full breakdown kept under
# OUTDIR, and a table of each step's total per variant and round printed last.
#
#   bash scripts/h200-ab.sh OUTDIR STEPS VARIANT...
#
# STEPS: gpu_bench's --steps (ntt,h,g1,g1split,g2,g1fold). VARIANT: `name`, optionally
# `@DIR` (the build in DIR: its gpu_bench and filprove; default .device), optionally
# `:key=value,key2=value` (gpu_bench's --msm settings). Rounds: ROUNDS (default 2).
# REGION=1 also times the GPU region of a 32 GiB partition per variant and round
# (`filprove synthetic-bench --lg 27 --modes resident --proofs 2`, stand-in witness; it
# needs more than 100 GB of GPU memory: REGION_LG=26 times a partition of half that size,
# which fits 80 GB) and
# adds its phases to the table; a build's mulbench, where there is one, runs once (product
# rates and checksums: equal checksums mean equal products). Packed binaries (xz) are
# unpacked first (scripts/device-unpack.sh). The table is also written to
# OUTDIR/table.txt; the per-run logs are packed into OUTDIR/runs.tar.xz (the device tool
# returns at most 8 files). For example four affine levels against five, then the
# committed build (scripts/package-base.sh) against the working tree's:
#   bash scripts/h200-ab.sh $OUT g1,g1split base four:levels=4
#   REGION=1 bash scripts/h200-ab.sh $OUT ntt,h base@.device/base new@.device
set -uo pipefail
out="${1:?usage: h200-ab.sh OUTDIR STEPS VARIANT...}"
steps="${2:?usage: h200-ab.sh OUTDIR STEPS VARIANT...}"
shift 2
[ $# -gt 0 ] || { echo "give at least one variant" >&2; exit 2; }
rounds="${ROUNDS:-2}"
mkdir -p "$out"
bash "$(dirname "$0")/device-unpack.sh" .device
# shellcheck source=device-pack.sh
. "$(dirname "$0")/device-pack.sh"  # archive_logs, variant_name, variant_dir
rc=0
for r in $(seq 1 "$rounds"); do
    for v in "$@"; do
        head="${v%%:*}"
        settings=""
        [ "$v" != "$head" ] && settings="${v#*:}"
        name="$(variant_name "$v")"
        dir="$(variant_dir "$v")"
        log="$out/ab-$name-$r.txt"
        # shellcheck disable=SC2086
        "$dir/gpu_bench" --breakdown --steps "$steps" ${settings:+--msm "$settings"} > "$log" 2>&1
        status=$?
        if [ "${REGION:-0}" = 1 ]; then
            "$dir/filprove" synthetic-bench --lg "${REGION_LG:-27}" --modes resident --proofs 2 \
                > "$out/region-$name-$r.txt" 2>&1 ||
                status=$?
        fi
        # The build's field-product rates and checksums, once per variant.
        if [ "$r" = 1 ] && [ -x "$dir/mulbench" ] && [ ! -e "$out/mulbench-$name.txt" ]; then
            "$dir/mulbench" > "$out/mulbench-$name.txt" 2>&1 || status=$?
        fi
        [ $status -eq 0 ] || rc=1
        echo "== $name round $r ($dir, ${settings:-no settings}): rc=$status"
    done
done
# The table, printed and kept.
{
echo
printf '%-34s' "step total (ms)"
for v in "$@"; do for r in $(seq 1 "$rounds"); do printf '%14s' "$(variant_name "$v")/$r"; done; done
echo
first="$out/ab-$(variant_name "$1")-1.txt"
grep -v '^ ' "$first" | grep -v '^gpu_bench' | while read -r step; do
    printf '%-34s' "$step"
    for v in "$@"; do
        for r in $(seq 1 "$rounds"); do
            t=$(awk -v s="$step" '$0 == s { on = 1; next } /^[^ ]/ { on = 0 } on && $1 == "total" { print $2 }' \
                "$out/ab-$(variant_name "$v")-$r.txt")
            printf '%14s' "${t:--}"
        done
    done
    echo
done
for v in "$@"; do
    f="$out/mulbench-$(variant_name "$v").txt"
    [ -e "$f" ] && grep -E '^(checksum|F[qr] product|G1)' "$f" | sed "s/^/$(variant_name "$v"): /"
done
if [ "${REGION:-0}" = 1 ]; then
    # synthetic-bench's table: the median of the timed proofs per phase.
    for phase in ntt_h msm_h msm_l msm_a msm_b_g1 msm_b_g2 region; do
        printf '%-34s' "region: $phase"
        for v in "$@"; do
            for r in $(seq 1 "$rounds"); do
                t=$(awk -v p="$phase" 'index($0, p " ") == 1 { print $2 }' "$out/region-$(variant_name "$v")-$r.txt" 2>/dev/null)
                printf '%14s' "${t:--}"
            done
        done
        echo
    done
fi
} | tee "$out/table.txt"
archive_logs "$out" runs.tar.xz "" 'ab-*.txt' 'region-*.txt' 'mulbench-*.txt'
exit $rc
