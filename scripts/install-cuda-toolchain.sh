#!/usr/bin/env bash
# Installs nvcc 13.0 from PyPI into <repo>/.cuda (gitignored). No GPU needed.
# Idempotent: does nothing when the pinned nvcc is already there.
# Then: export PATH=<repo>/.cuda/nvidia/cu13/bin:$PATH  (build.rs finds it on its own).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cuda"
nvcc="$dest/nvidia/cu13/bin/nvcc"
if [ -x "$nvcc" ] && "$nvcc" --version 2>/dev/null | grep -q "release 13.0"; then
    echo "nvcc 13.0 already installed: $nvcc"
    exit 0
fi
# All wheels in ONE pip call: a second `pip install --target` into the same folder
# replaces the first.
python3 -m pip install --quiet --upgrade --target "$dest" \
    nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
lib="$dest/nvidia/cu13/lib"
# Some build scripts expect lib64/ and an unversioned libcudart.so.
[ -e "$dest/nvidia/cu13/lib64" ] || ln -s lib "$dest/nvidia/cu13/lib64"
if [ ! -e "$lib/libcudart.so" ]; then
    so="$(ls "$lib"/libcudart.so.* 2>/dev/null | head -n1 || true)"
    [ -n "$so" ] && ln -s "$(basename "$so")" "$lib/libcudart.so"
fi
"$nvcc" --version | tail -n 2
echo "installed: $nvcc"
