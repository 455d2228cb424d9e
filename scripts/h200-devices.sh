#!/usr/bin/env bash
# The daemon's per-device settings on a real GPU (one device command, after
# `h200-fullscale.sh OUT daemon` in the same call so that its sector and parameter file are
# reused; otherwise they are made first, about 2 minutes):
#
#   bash scripts/h200-devices.sh OUTDIR
#
# GPU 0 is selected by a prefix of its UUID (resolved through NVML) with
# `[[devices.device]] vram_budget = VRAM_GIB` (default 40 GiB: the 44 GiB of 32 GiB PoRep
# parameters no longer fit, so they are streamed) and `circuits = ["porep-32g"]`. Checks:
# doctor reports the device's budget; one 32 GiB PoRep C2 proves and verifies within it
# (peak device memory sampled by nvidia-smi every 0.2 s); the device is taken out of
# rotation and brought back by command (/readyz 503 then 200, a second proof after);
# NVML registered for the GPU's Xid events (the log lacks "no Xid events").
# Writes summary.txt and the daemon's log under OUTDIR.
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-devices.sh OUTDIR}"
bin="${FILPROVE_BIN:-.device/filprove}"
work="${FILPROVE_WORK:-/tmp/filprove-fullscale}"
vram="${VRAM_GIB:-40}"
mkdir -p "$out" "$work"
sum="$out/summary.txt"
note() { echo "$*" | tee -a "$sum"; }
: > "$sum"
note "$(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0)"
. "$(dirname "$0")/porep-32g-inputs.sh"
porep32_inputs || exit 1
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0)
id="${uuid:0:12}"
sock="$work/devices.sock" http=127.0.0.1:9822
cat > "$work/devices.toml" <<TOML
[server]
unix_socket = "$sock"
http_listen = "$http"
[engine]
backend = "cuda"
partition_workers = 2
gpu_workers_per_device = 2
[memory]
budget = "48GiB"
[srs]
param_cache = "$params"
preload = ["porep-32g"]
budget = "72GiB"
[journal]
dir = "$work/journal-devices"
[devices]
select = ["$id"]
[[devices.device]]
id = "$id"
vram_budget = "${vram}GiB"
circuits = ["porep-32g"]
TOML
"$bin" doctor -c "$work/devices.toml" > "$out/doctor.txt" 2>&1
note "doctor: $(grep -E 'device 0' "$out/doctor.txt" | head -n 2 | tr -s ' ')"
readyz() { python3 - "$http" <<'PY'
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(f"http://{sys.argv[1]}/readyz", timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print(f"no answer ({e})")
PY
}
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 > "$out/vram-used.csv" 2>/dev/null &
smi=$!
base=$(head -n 1 "$out/vram-used.csv" 2>/dev/null)
"$bin" daemon -c "$work/devices.toml" > "$out/daemon-devices.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -S "$sock" ] && grep -q 'parameters loaded' "$out/daemon-devices.log" && break
  sleep 0.5
done
"$bin" bench --addr "$sock" --request "$work/sector/porep.request.json" -n 1 -j 1 > "$out/bench-1.txt" 2>&1
note "proof within ${vram} GiB (rc $?): $(grep -iE 'proofs|per proof' "$out/bench-1.txt" | head -n 2 | tr '\n' ' ')"
note "readyz before quarantine: $(readyz)"
"$bin" device quarantine 0 -c "$work/devices.toml" > "$out/device-cmd.txt" 2>&1
note "device quarantine 0 (rc $?); readyz: $(readyz)"
"$bin" status --addr "$sock" > "$out/status-quarantined.txt" 2>&1
note "status while out: $(grep -iE 'device|quarant' "$out/status-quarantined.txt" | head -n 3 | tr -s ' ' | tr '\n' ';')"
"$bin" device restore 0 -c "$work/devices.toml" >> "$out/device-cmd.txt" 2>&1
note "device restore 0 (rc $?); readyz: $(readyz)"
"$bin" bench --addr "$sock" --request "$work/sector/porep.request.json" -n 1 -j 1 > "$out/bench-2.txt" 2>&1
note "proof after restore (rc $?): $(grep -iE 'proofs|per proof' "$out/bench-2.txt" | head -n 2 | tr '\n' ' ')"
kill -TERM "$pid"; wait "$pid"
kill "$smi" 2>/dev/null
peak=$(sort -n "$out/vram-used.csv" | tail -n 1)
note "device memory used: ${base:-?} MiB before the daemon, peak ${peak:-?} MiB (budget $((vram * 1024)) MiB)"
if grep -q 'no Xid events' "$out/daemon-devices.log"; then
  note "Xid events: NOT registered: $(grep 'no Xid events' "$out/daemon-devices.log" | head -n 1)"
else
  note "Xid events: registered (no 'no Xid events' line)"
fi
grep -iE 'parameters (loaded|streamed)|memory plan|quarantin|restor' "$out/daemon-devices.log" | head -n 8 >> "$sum"
cat "$sum"
