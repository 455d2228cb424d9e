#!/usr/bin/env bash
# Decompresses the binaries that crates/cuda/package-device.sh and scripts/package-base.sh
# packed with xz (a 29 MB filprove carries as ~6 MB, so several builds fit the device
# tool's 64 MiB carry). Runs on the GPU machine before any binary there; does nothing when
# nothing is packed. Uses xz, or Python's lzma where xz is missing.
#
#   bash scripts/device-unpack.sh [DIR]     (default .device)
set -euo pipefail
dir="${1:-.device}"
[ -d "$dir" ] || exit 0
mapfile -t packed < <(find "$dir" -type f -name '*.xz')
[ ${#packed[@]} -gt 0 ] || exit 0
if command -v xz > /dev/null; then
    printf '%s\0' "${packed[@]}" | xargs -0 -P 8 -n 1 xz -d -f
else
    python3 - "${packed[@]}" <<'PY'
import lzma, os, sys
for f in sys.argv[1:]:
    with lzma.open(f) as src, open(f[:-3], "wb") as dst:
        dst.write(src.read())
    os.chmod(f[:-3], 0o755)
    os.remove(f)
PY
fi
