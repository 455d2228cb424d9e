#!/usr/bin/env bash
# Transfer-discipline measurements on the GPU machine: one 32 GiB-shaped PoRep partition
# under each transfer switch (naive, pre-staged, + no per-batch sync, + resident
# parameters), then N partitions through the engine's pipeline with 1 and with 2 GPU
# workers, each logged as JSON lines (with NVML samples) and analysed by `filprove
# timeline`.
#
#   bash scripts/h200-transfer.sh OUTDIR [LG] [PARTITIONS] [modes|pipeline|all]
#
# WORKERS: the pipeline runs' GPU worker counts (default "1 2").
#
# Binary: .device/filprove from crates/cuda/package-device.sh.
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-transfer.sh OUTDIR [LG] [PARTITIONS] [modes|pipeline|all]}"
lg="${2:-27}"
parts="${3:-10}"
what="${4:-all}"
bin="${FILPROVE_BIN:-.device/filprove}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used,memory.total,temperature.gpu,power.draw \
    --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
export RUST_LOG="${RUST_LOG:-info,filprove::timeline=debug}" FILPROVE_LOG_FORMAT=json
rc=0
run() { # name, args...
    local name="$1"; shift
    local start=$(date +%s)
    "$bin" synthetic-bench --lg "$lg" "$@" --json "$out/$name.json" > "$out/$name.txt" 2> "$out/$name.log"
    local r=$?
    [ $r -eq 0 ] || rc=$r
    echo "== $name: rc=$r in $(( $(date +%s) - start )) s"
    cat "$out/$name.txt"
    grep -E 'ERROR|WARN|panick|error' "$out/$name.log" | grep -v gpu_sample | tail -n 10
}
if [ "$what" != pipeline ]; then
    run modes --proofs 1
fi
if [ "$what" != modes ]; then
    for w in ${WORKERS:-1 2}; do
        run "pipeline-$w" --modes none --pipeline-partitions "$parts" --pipeline-workers "$w"
        FILPROVE_LOG_FORMAT=text "$bin" timeline "$out/pipeline-$w.log" --svg "$out/timeline-$w.svg" \
            --html "$out/timeline-$w.html" --json "$out/timeline-$w.json" > "$out/timeline-$w.txt" 2>&1
        cat "$out/timeline-$w.txt"
        grep '"partition"' "$out/pipeline-$w.log" | grep -v '"timeline"' | tail -n 2
    done
fi
gzip -f "$out"/*.log 2>/dev/null
exit $rc
