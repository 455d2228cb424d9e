#!/usr/bin/env bash
# On the H200 machine with a carried release `filprove`: the daemon on the GPU (and on the
# CPU for comparison) driven over gRPC by `filprove bench` with concurrent 2 KiB PoRep
# requests, every proof verified by the daemon before it is returned; then parameter
# generation, ours against bellperson's (filecoin-proofs') generator on the same circuits.
#
#   bash scripts/h200-daemon.sh OUTDIR [count] [concurrency]
#
# BACKENDS="cuda" runs only the GPU daemon; KEYGEN_COMPARE=0 skips the generator comparison.
# SIZE=512MiB proves 512 MiB PoRep requests instead (sealing the sector takes ~5 min; set
# FILPROVE_WORK=/tmp/filprove-e2e after `h200-e2e.sh OUT 512MiB` to reuse its sector and
# parameters).
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-daemon.sh OUTDIR [count] [concurrency]}"
count="${2:-16}"; conc="${3:-8}"
bin="${FILPROVE_BIN:-.device/filprove}"
work="${FILPROVE_WORK:-/tmp/filprove-daemon}"
export FIL_PROOFS_PARAMETER_CACHE="$work/params"
mkdir -p "$out" "$work"
: > "$out/summary.txt"
note() { echo "$*" | tee -a "$out/summary.txt"; }
note "$(date -u) $(nproc) cores $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
size="${SIZE:-2KiB}"
case "$size" in
  2KiB) fx="$work/fx"; circuits=porep-2k,winning-2k,wpost-2k; kinds=porep,winning-post,window-post,snap ;;
  512MiB) fx="$work/fixtures-512MiB"; circuits=porep-512m; kinds=porep ;;
  *) echo "unknown SIZE $size"; exit 2 ;;
esac
[ -f "$fx/porep.request.json" ] || "$bin" fixtures --out "$fx" --sector-size "$size" --kinds "$kinds" >> "$out/log.txt" 2>&1 || note "fixtures FAILED"
t0=$(date +%s.%N); "$bin" params generate --circuit "$circuits" --params-dir "$FIL_PROOFS_PARAMETER_CACHE" >> "$out/log.txt" 2>&1 || note "params FAILED"
note "filprove keygen $circuits (skipped where present): $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"

for backend in ${BACKENDS:-cuda cpu}; do
  sock="$work/$backend.sock"
  cat > "$work/$backend.toml" <<TOML
[server]
unix_socket = "$sock"
http_listen = "127.0.0.1:9821"
[engine]
backend = "$backend"
partition_workers = 8
gpu_workers_per_device = 2
[journal]
dir = "$work/journal-$backend"
TOML
  "$bin" daemon -c "$work/$backend.toml" > "$out/daemon-$backend.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
  n=$count; [ "$backend" = cpu ] && n=$(( count / 2 ))
  "$bin" bench --addr "$sock" --request "$fx/porep.request.json" -n "$n" -j "$conc" --json > "$out/bench-$backend.json" 2>> "$out/log.txt" \
    && note "bench $backend porep $size n=$n j=$conc: $(cat "$out/bench-$backend.json")" || note "bench $backend FAILED"
  if [ "$size" = 2KiB ]; then
    "$bin" bench --addr "$sock" --request "$fx/winning-post.request.json" -n 8 -j 4 --json > "$out/bench-$backend-winning.json" 2>> "$out/log.txt" \
      && note "bench $backend winning-2k n=8 j=4: $(cat "$out/bench-$backend-winning.json")" || note "bench $backend winning FAILED"
  fi
  python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9821/metrics").read().decode())' > "$out/metrics-$backend.txt" 2>&1
  kill -TERM "$pid"; wait "$pid"; note "daemon $backend exit after SIGTERM: $?"
done
grep -E "partition|timing" "$out/daemon-cuda.log" | tail -n 5 >> "$out/summary.txt"

[ "${KEYGEN_COMPARE:-1}" = 1 ] || { cat "$out/summary.txt"; exit 0; }
for c in wpost-2k winning-2k porep-2k; do
  t0=$(date +%s.%N)
  if timeout 240 "$bin" params generate --circuit "$c" --params-dir "$work/params-bellperson" --bellperson >> "$out/log.txt" 2>&1; then r=ok; else r=FAILED/timeout; fi
  bp=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  t0=$(date +%s.%N)
  "$bin" params generate --circuit "$c" --params-dir "$work/params-ours" >> "$out/log.txt" 2>&1
  ours=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  note "keygen $c: bellperson $bp s ($r), filprove $ours s"
done
cat "$out/summary.txt"
