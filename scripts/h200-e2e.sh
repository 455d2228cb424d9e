#!/usr/bin/env bash
# End-to-end run on the H200 machine with a carried release `filprove` (no cargo there):
# real Filecoin sectors sealed there, test parameters generated there, every proof kind
# proved on the CPU backend and on the CUDA backend with the same r, s (proofs must be
# byte-identical), each verified by filecoin-proofs; at 2 KiB also a non-interactive PoRep
# (SnarkPack aggregate) on the GPU; then our CPU prover against filecoin-proofs' own
# prover on the same inputs.
#
#   bash scripts/h200-e2e.sh OUTDIR [2KiB|512MiB ...]
set -uo pipefail
bash "$(dirname "$0")/device-unpack.sh" .device  # binaries packed by package-device.sh
out="${1:?usage: h200-e2e.sh OUTDIR [sizes]}"; shift
sizes=("${@:-2KiB}")
bin="${FILPROVE_BIN:-.device/filprove}"
work="${FILPROVE_WORK:-/tmp/filprove-e2e}"
export FIL_PROOFS_PARAMETER_CACHE="$work/params" RUST_LOG="${RUST_LOG:-info,filecoin_proofs=warn,storage_proofs_core=warn,storage_proofs_porep=warn,storage_proofs_post=warn,storage_proofs_update=warn}"
mkdir -p "$out" "$work"
fail=0
step() { local name="$1"; shift; local t0; t0=$(date +%s.%N)
  if "$@" >> "$out/e2e.log" 2>&1; then r=ok; else r=FAIL; fail=1; fi
  printf '%-44s %-4s %8.1f s\n' "$name" "$r" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" | tee -a "$out/summary.txt"; }
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$out/summary.txt" 2>&1
for size in "${sizes[@]}"; do
  case "$size" in
    2KiB) kinds=porep,winning-post,window-post,snap; circuits=porep-2k,winning-2k,wpost-2k,snap-2k ;;
    512MiB) kinds=porep; circuits=porep-512m ;;
    *) echo "unknown size $size"; exit 2 ;;
  esac
  fx="$work/fixtures-$size"
  step "fixtures $size" "$bin" fixtures --out "$fx" --sector-size "$size" --kinds "$kinds"
  step "params generate $circuits" "$bin" params generate --circuit "$circuits" --params-dir "$work/params"
  step "demo $size cpu (seed 7)" "$bin" demo --dir "$work" --sector-size "$size" --kinds "$kinds" --backend cpu --seed 7 --proofs-dir "$work/proofs-$size-cpu"
  step "demo $size cuda (seed 7)" "$bin" demo --dir "$work" --sector-size "$size" --kinds "$kinds" --backend cuda --seed 7 --proofs-dir "$work/proofs-$size-cuda"
  step "cpu and cuda proofs byte-identical ($size)" diff -r "$work/proofs-$size-cpu" "$work/proofs-$size-cuda"
  step "verify cuda porep proof ($size)" "$bin" verify --request "$fx/porep.request.json" --proof "$work/proofs-$size-cuda/porep.proof"
  if [ "$size" = 2KiB ]; then
    # Non-interactive PoRep: 13 partitions on the GPU, SnarkPack aggregate, verified
    # (the CPU backend takes ~9 min on 2 cores for it; CI runs only its input tests).
    step "fixtures $size non-interactive porep" "$bin" fixtures --out "$fx-ni" --sector-size "$size" --kinds porep --non-interactive-porep
    step "prove ni-porep $size cuda" "$bin" prove --request "$fx-ni/porep-ni.request.json" --backend cuda --out "$work/ni-porep-$size.proof"
    step "verify ni-porep $size" "$bin" verify --request "$fx-ni/porep-ni.request.json" --proof "$work/ni-porep-$size.proof"
    for k in porep winning-post; do
      step "compare $k $size (cpu vs filecoin-proofs)" sh -c "'$bin' compare --request '$fx/$k.request.json' --backend cpu --runs 2 >> '$out/compare.jsonl'"
      step "compare $k $size (cuda vs filecoin-proofs)" sh -c "'$bin' compare --request '$fx/$k.request.json' --backend cuda --runs 2 >> '$out/compare.jsonl'"
    done
  fi
done
grep -E '^\[filprove\] (generating|proving|synthesizing|loading).*done|^(porep|winning|window|snap) ' "$out/e2e.log" | tail -n 40
cat "$out/compare.jsonl" 2>/dev/null
echo; cat "$out/summary.txt"
exit $fail
