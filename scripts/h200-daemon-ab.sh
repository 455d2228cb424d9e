#!/usr/bin/env bash
# A/B of whole builds through the daemon on the GPU machine: 32 GiB proofs
# (scripts/h200-fullscale.sh OUTDIR daemon) with each build in turn, rounds interleaved, on
# one machine; the first run writes the parameter file that the later ones reuse. Every
# run's log is analysed by one `filprove timeline` (TIMELINE_BIN, default the first
# variant's filprove), so the table's columns mean the same for every build.
#
#   bash scripts/h200-daemon-ab.sh OUTDIR VARIANT...
#
# VARIANT: `name`, optionally `@DIR` (the build in DIR: its filprove; default .device).
# ROUNDS (default 1) passes over the variants; REPEAT (default 5), KIND, JOBS,
# VRAM_BUDGET_GIB and the other settings go to h200-fullscale.sh as they are. Runs stop
# starting once fewer than MIN_LEFT_S (default 150) of BUDGET_S (default 585) are left,
# so that one device command holds them. Writes OUTDIR/NAME-ROUND/ (h200-fullscale.sh's
# summary and logs, and timeline.txt) and OUTDIR/table.txt, printed last:
# proofs verified, seconds per proof (the first included), GPU busy, the idle gaps'
# p50, and the p50 of each partition's kernel region, wait for device memory and copy.
#   bash scripts/h200-daemon-ab.sh $OUT main early@.device/early main
set -uo pipefail
out="${1:?usage: h200-daemon-ab.sh OUTDIR VARIANT...}"
shift
[ $# -gt 0 ] || { echo "give at least one variant" >&2; exit 2; }
here="$(dirname "$0")"
bash "$here/device-unpack.sh" .device
mkdir -p "$out"
t0=$(date +%s)
work="${FILPROVE_WORK:-/tmp/filprove-fullscale}"
# shellcheck source=device-pack.sh
. "$here/device-pack.sh"  # variant_name, variant_dir
timeline_bin="${TIMELINE_BIN:-$(variant_dir "$1")/filprove}"
rc=0
runs=()
for r in $(seq 1 "${ROUNDS:-1}"); do
    for v in "$@"; do
        left=$(( ${BUDGET_S:-585} - ($(date +%s) - t0) ))
        if [ "$left" -lt "${MIN_LEFT_S:-150}" ]; then
            echo "== $(variant_name "$v") round $r: not started, ${left} s left"
            continue
        fi
        run="$(variant_name "$v")-$r"
        # A fresh daemon: no journal or socket of the run before.
        rm -rf "$work/journal" "$work/daemon.sock"
        FILPROVE_BIN="$(variant_dir "$v")/filprove" timeout "$left" \
            bash "$here/h200-fullscale.sh" "$out/$run" daemon > "$out/$run.log" 2>&1
        status=$?
        [ $status -eq 0 ] || rc=1
        tar -xJf "$out/$run/logs.tar.xz" -C "$out/$run" daemon-run.log 2>/dev/null &&
            "$timeline_bin" timeline "$out/$run/daemon-run.log" > "$out/$run/timeline.txt" 2>&1
        rm -f "$out/$run/daemon-run.log"
        echo "== $run ($(variant_dir "$v")): rc=$status, $(( $(date +%s) - t0 )) s in all"
        runs+=("$run")
    done
done
# One line per run, from its summary and the common timeline analysis.
p50() { awk -v s="$1" '$1 == s { print $4 }' "$2" 2>/dev/null; }
{
printf '%-16s %8s %10s %9s %9s %10s %11s %11s\n' run proofs "s/proof" "GPU busy" "gaps p50" \
    "region p50" "wait p50" "copy p50"
for run in "${runs[@]}"; do
    s="$out/$run/summary.txt" t="$out/$run/timeline.txt"
    proofs=$(grep -oE '^[0-9]+ proofs \([0-9]+ failed\)' "$s" 2>/dev/null | sed 's/ proofs (/\//; s/ failed)//')
    per=$(grep -oE '[0-9.]+ s/proof' "$s" 2>/dev/null | head -n 1 | cut -d' ' -f1)
    busy=$(grep -oE 'kernel regions [0-9.]+ s = [0-9.]+ %' "$t" 2>/dev/null | head -n 1 | awk '{print $6}')
    gaps=$(grep -oE 'p50 [0-9.]+ s' "$t" 2>/dev/null | head -n 1 | awk '{print $2}')
    printf '%-16s %8s %10s %9s %9s %10s %11s %11s\n' "$run" "${proofs:--}" "${per:--}" \
        "${busy:--}" "${gaps:--}" "$(p50 kernel "$t")" "$(p50 stage_wait "$t")" "$(p50 stage_copy "$t")"
done
echo "(proofs: proved/failed, each verified by the daemon; busy: kernel regions' share of the device's span; p50s in s)"
} | tee "$out/table.txt"
exit $rc
