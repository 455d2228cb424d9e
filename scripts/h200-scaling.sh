#!/usr/bin/env bash
# Throughput of 32 GiB PoRep C2 through one daemon on 1, 2, ... of the host's GPUs (one
# device command on an nvidia-h200-x2 or -x4 machine, with a carried release `filprove`):
#
#   bash scripts/h200-scaling.sh OUTDIR [GPU counts, default "1 2" or "1 2 4"]
#
# A virtual 32 GiB sector and the parameter file are made once (about 80 s); then, for each
# count N, a daemon with `[devices] select` = the first N GPUs, 2 synthesis workers and a
# 48 GiB partition budget per GPU, preloads the parameters onto every selected GPU and
# proves PER_GPU x N copies of the request submitted at once (`filprove bench`); each
# proof is verified by the daemon. Reported per N: wall, proofs per hour, the speed-up
# against N = 1 of the same run, per-device GPU busy (`filprove timeline`) and the
# daemon's peak RSS. Writes summary.txt and the per-N bench and timeline files.
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-scaling.sh OUTDIR [counts]}"
bin="${FILPROVE_BIN:-.device/filprove}"
work="${FILPROVE_WORK:-/tmp/filprove-fullscale}"
per="${PER_GPU:-5}"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
counts="${2:-$(if [ "$gpus" -ge 4 ]; then echo "1 2 4"; elif [ "$gpus" -ge 2 ]; then echo "1 2"; else echo 1; fi)}"
mkdir -p "$out" "$work"
sum="$out/summary.txt"
note() { echo "$*" | tee -a "$sum"; }
: > "$sum"
note "$(date -u +%Y-%m-%dT%H:%M:%SZ) $gpus GPUs ($(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)), $(nproc) cores, $(free -g | awk '/^Mem/{print $2}') GiB"
export RUST_LOG="${RUST_LOG:-info,filprove::timeline=debug,filecoin_proofs=warn,storage_proofs_core=warn,storage_proofs_porep=warn}"
. "$(dirname "$0")/porep-32g-inputs.sh"
porep32_inputs || exit 1
base=""
for n in $counts; do
  [ "$n" -le "$gpus" ] || { note "N=$n: only $gpus GPUs"; continue; }
  sel=$(seq -s, 0 $((n - 1)))
  sock="$work/scaling-$n.sock"
  cat > "$work/scaling-$n.toml" <<TOML
[server]
unix_socket = "$sock"
http_listen = "127.0.0.1:$((9830 + n))"
[engine]
backend = "cuda"
partition_workers = $((2 * n))
gpu_workers_per_device = 2
[memory]
budget = "$((48 * n))GiB"
[srs]
param_cache = "$params"
preload = ["porep-32g"]
budget = "72GiB"
[journal]
dir = "$work/journal-scaling-$n"
[devices]
select = [$sel]
TOML
  FILPROVE_LOG_FORMAT=json "$bin" daemon -c "$work/scaling-$n.toml" > "$work/daemon-$n.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -S "$sock" ] && grep -q 'parameters loaded' "$work/daemon-$n.log" && break
    sleep 0.5
  done
  jobs=$((per * n))
  t0=$(date +%s.%N)
  "$bin" bench --addr "$sock" --request "$work/sector/porep.request.json" -n "$jobs" -j "$jobs" > "$out/bench-$n.txt" 2>&1
  rc=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  rss=$(grep VmHWM "/proc/$pid/status" | tr -s ' ' | cut -d' ' -f2-)
  kill -TERM "$pid"; wait "$pid"
  "$bin" timeline "$work/daemon-$n.log" > "$out/timeline-$n.txt" 2>&1
  rate=$(awk -v j="$jobs" -v w="$wall" 'BEGIN{printf "%.1f", j * 3600 / w}')
  [ -z "$base" ] && base="$rate"
  note "N=$n GPUs: $jobs proofs in $wall s (bench rc $rc, $(grep -oE '[0-9]+ failed' "$out/bench-$n.txt" | head -n 1)), $rate proofs/hour, $(awk -v r="$rate" -v b="$base" 'BEGIN{printf "%.2f", r / b}')x N=1; daemon VmHWM $rss"
  grep -E "^device" -A1 "$out/timeline-$n.txt" | grep -E "^device|GPU busy" >> "$sum"
done
cat "$sum"
