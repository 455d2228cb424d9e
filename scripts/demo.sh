#!/usr/bin/env bash
# The main job of a fresh machine (README): build filprove in release mode and prove real
# 2 KiB Filecoin proofs end to end - seal a sector locally, generate test parameters,
# prove PoRep C2, WinningPoSt, WindowPoSt and SnapDeals on the GPU when there is one
# (else on the CPU), and verify each proof with filecoin-proofs' own verifier.
# Work files go to ${FILPROVE_DEMO_DIR:-.fixtures/demo}; nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvcc >/dev/null 2>&1 && [ -z "${NVCC:-}" ] && [ -z "${CUDA_PATH:-}${CUDA_HOME:-}" ]; then
  bash scripts/install-cuda-toolchain.sh
fi
export PATH="$PWD/.cuda/nvidia/cu13/bin:$PATH"

cargo build --release --locked -p filprove
exec target/release/filprove demo --dir "${FILPROVE_DEMO_DIR:-.fixtures/demo}" "$@"
