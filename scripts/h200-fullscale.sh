#!/usr/bin/env bash
# Full-size proofs on the H200 (one device command each, at most 10 minutes), with a
# carried release `filprove` (no cargo there):
#
#   bash scripts/h200-fullscale.sh OUTDIR porep   # 32 GiB PoRep C2: virtual sector, parameters
#                                                 # generated in memory (fixed-base on the GPU),
#                                                 # 10 partitions through the engine, verify_seal
#   bash scripts/h200-fullscale.sh OUTDIR post    # one 32 GiB WindowPoSt partition (2,349
#                                                 # sectors) and one 32 GiB WinningPoSt
#   bash scripts/h200-fullscale.sh OUTDIR snap    # 32 GiB SnapDeals (16 partitions, zero data)
#   bash scripts/h200-fullscale.sh OUTDIR all     # porep, then post (about 5 minutes in all)
#   bash scripts/h200-fullscale.sh OUTDIR daemon  # 32 GiB PoRep C2 through the daemon: `params
#                                                 # generate` writes the parameter file (47 GB),
#                                                 # the daemon preloads it, `filprove bench`
#                                                 # submits REPEAT requests at once over gRPC,
#                                                 # the daemon verifies every proof
#   KIND=window-post JOBS=1 bash scripts/h200-fullscale.sh OUTDIR daemon
#                                                 # the same for 32 GiB WindowPoSt, one at a time
#
# SIZE=64GiB runs 64 GiB instead; REPEAT=N proves each request N times (submitted JOBS at a
# time, default all at once);
# the daemon run takes REGISTER_BUDGET_MS ([cuda] register_budget_ms), VRAM_BUDGET_GIB
# ([cuda] vram_budget: plans as on a smaller GPU, e.g. 75 for an 80 GB card) and
# MEMORY_BUDGET_GIB.
# Writes under OUTDIR: summary.txt (printed last), the timeline figure, and logs.tar.xz
# with the run's JSON log, prove-bench's report and the timeline analysis (GPU busy share,
# idle gaps, per-partition stages, peak VRAM). Nothing is written to the default parameter
# directory.
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-fullscale.sh OUTDIR porep|post}"
what="${2:?usage: h200-fullscale.sh OUTDIR porep|post|snap|all|daemon}"
bin="${FILPROVE_BIN:-.device/filprove}"
size="${SIZE:-32GiB}"
work="${FILPROVE_WORK:-/tmp/filprove-fullscale}"
mkdir -p "$out" "$work"
# shellcheck source=device-pack.sh
. "$(dirname "$0")/device-pack.sh"
# At the end: everything but summary.txt and the timeline figure in one logs.tar.xz.
pack_logs() { archive_logs "$out" logs.tar.xz summary.txt '*.txt' '*.log' '*.json'; }
export RUST_LOG="${RUST_LOG:-info,filprove::timeline=debug,filecoin_proofs=warn,storage_proofs_core=warn,storage_proofs_porep=warn,storage_proofs_post=warn,storage_proofs_update=warn}"
if [ "$what" = all ]; then
  bash "$0" "$out/porep" porep && bash "$0" "$out/post" post
  exit $?
fi
case "$what" in
  daemon) kinds="${KIND:-porep}" ;;
  snap) kinds=snap; requests=(--request "$work/sector/snap.request.json") ;;
  porep) kinds=porep; requests=(--request "$work/sector/porep.request.json") ;;
  post) kinds=winning-post,window-post
        requests=(--request "$work/sector/window-post.request.json" --request "$work/sector/winning-post.request.json") ;;
  *) echo "unknown run $what (porep, post, snap or all)"; exit 2 ;;
esac
{ date -u +%Y-%m-%dT%H:%M:%SZ; echo "cores $(nproc)"; free -g | head -2
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$out/summary.txt" 2>&1
t0=$(date +%s.%N)
"$bin" fixtures --virtual --sector-size "$size" --kinds "$kinds" --out "$work/sector" --seed 1 \
  > "$out/fixtures.txt" 2>&1 || { cat "$out/fixtures.txt"; exit 1; }
echo "virtual $size sector ($kinds): $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$out/summary.txt"
if [ "$what" = daemon ]; then
  params="$work/params-files" sock="$work/daemon.sock"
  df -h "$work" | tail -n 1 >> "$out/summary.txt"
  t0=$(date +%s.%N)
  case "$kinds" in
    porep) circuit="porep-${size%GiB}g" ;;
    window-post) circuit="wpost-${size%GiB}g" ;;
    *) echo "KIND is porep or window-post"; exit 2 ;;
  esac
  env -u FIL_PROOFS_PARAMETER_CACHE "$bin" params generate --circuit "$circuit" \
    --params-dir "$params" > "$out/params.txt" 2>&1 || { tail -n 5 "$out/params.txt"; exit 1; }
  echo "parameter file written: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s, $(du -sh "$params" | cut -f1)" >> "$out/summary.txt"
  cat > "$work/daemon.toml" <<TOML
[server]
unix_socket = "$sock"
http_listen = "127.0.0.1:9821"
[engine]
backend = "cuda"
partition_workers = ${PARTITION_WORKERS:-2}
gpu_workers_per_device = 2
[memory]
budget = "${MEMORY_BUDGET_GIB:-48}GiB"
[srs]
param_cache = "$params"
preload = ["$circuit"]
budget = "72GiB"
[journal]
dir = "$work/journal"
TOML
  { echo '[cuda]'
    [ -n "${REGISTER_BUDGET_MS:-}" ] && echo "register_budget_ms = $REGISTER_BUDGET_MS"
    [ -n "${VRAM_BUDGET_GIB:-}" ] && echo "vram_budget = \"${VRAM_BUDGET_GIB}GiB\""
  } >> "$work/daemon.toml"
  t0=$(date +%s.%N)
  FILPROVE_LOG_FORMAT=json "$bin" daemon -c "$work/daemon.toml" > "$out/daemon-run.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    # "preloaded": the parameters are on the GPU (H folded there) and the host's copy is
    # released; requests sent before then would overlap the upload and the host copy.
    [ -S "$sock" ] && grep -q '"message":"preloaded"' "$out/daemon-run.log" && break
    sleep 0.5
  done
  echo "daemon ready with parameters: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$out/summary.txt"
  "$bin" bench --addr "$sock" --request "$work/sector/$kinds.request.json" -n "${REPEAT:-5}" \
    -j "${JOBS:-${REPEAT:-5}}" > "$out/daemon-bench.txt" 2>&1
  rc=$?
  cat "$out/daemon-bench.txt" >> "$out/summary.txt"
  echo "daemon peak RSS: $(grep VmHWM "/proc/$pid/status" | tr -s ' ')" >> "$out/summary.txt"
  grep '"job finished"' "$out/daemon-run.log" | grep -oE '"total_ms".*"verify_ms":[0-9]+' \
    | sed 's/^/job: /' >> "$out/summary.txt"
  kill -TERM "$pid"; wait "$pid"
  "$bin" timeline "$out/daemon-run.log" > "$out/daemon-timeline.txt" 2>&1
  grep -E "^(run|device|  )" "$out/daemon-timeline.txt" | head -n 30 >> "$out/summary.txt"
  echo; cat "$out/summary.txt"
  pack_logs
  exit $rc
fi
# Host memory grows as it is used on this machine (MemTotal starts low): budgets are given.
FILPROVE_LOG_FORMAT=json "$bin" prove-bench "${requests[@]}" --repeat "${REPEAT:-1}" \
  --params-dir "$work/params" --generate-params --backend cuda \
  --partition-workers "${PARTITION_WORKERS:-2}" --gpu-workers 2 \
  --memory-budget-gib "${MEMORY_BUDGET_GIB:-48}" --srs-budget-gib 72 \
  --report "$out/$what-report.json" > "$out/$what-bench.txt" 2> "$out/$what-run.log"
rc=$?
cat "$out/$what-bench.txt" >> "$out/summary.txt"
"$bin" timeline "$out/$what-run.log" --json "$out/$what-timeline.json" --svg "$out/$what-timeline.svg" \
  > "$out/$what-timeline.txt" 2>&1
grep -E "^(run|device|  )" "$out/$what-timeline.txt" | head -n 30 >> "$out/summary.txt"
[ $rc -eq 0 ] || { echo "prove-bench failed (rc $rc):"; grep -iE '"level":"(ERROR|WARN)"' "$out/$what-run.log" | tail -n 5; }
echo; cat "$out/summary.txt"
pack_logs
exit $rc
