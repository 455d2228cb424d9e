#!/usr/bin/env python3
"""Each instruction's scoreboards in a kernel's SASS (sm_70 and later encodings).

    nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I crates/cuda/kernels \
        crates/cuda/kernels/msm/msm_g1.cu -o /tmp/g1.cubin
    cuobjdump -sass /tmp/g1.cubin > /tmp/g1.sass      # cuobjdump: pip nvidia-cuda-cuobjdump
    python3 scripts/sass-waits.py /tmp/g1.sass g1_msm_affine_level [FROM [TO]]

Prints the instructions (between the hex offsets FROM and TO, default all) that set a
scoreboard (wb: written when a variable-latency result lands; rb: released when its
sources have been read) or wait on some (the 6-bit mask, barrier 0 rightmost). An
instruction whose mask names a scoreboard waits for every instruction that set it, also
for loads it does not read: ptxas shares the six scoreboards among all of them.
"""
import re
import sys


def instructions(sass, kernel):
    lines = sass.split("\n")
    on = False
    i = 0
    while i < len(lines):
        name = re.match(r"\s+Function : (\S+)", lines[i])
        if name:
            on = name.group(1) == kernel
        first = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);\s+/\* (0x[0-9a-f]+) \*/", lines[i])
        if on and first and i + 1 < len(lines):
            second = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
            if second:
                yield int(first.group(1), 16), first.group(2).strip(), int(second.group(1), 16)
                i += 2
                continue
        i += 1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lo = int(sys.argv[3], 16) if len(sys.argv) > 3 else 0
    hi = int(sys.argv[4], 16) if len(sys.argv) > 4 else 1 << 62
    found = False
    for addr, text, ctrl in instructions(open(sys.argv[1]).read(), sys.argv[2]):
        found = True
        if not lo <= addr <= hi:
            continue
        # Control bits in the instruction's upper 64 bits: stall 41-44, yield 45, write
        # scoreboard 46-48, read scoreboard 49-51 (7: none), wait mask 52-57.
        wb, rb, wait = (ctrl >> 46) & 7, (ctrl >> 49) & 7, (ctrl >> 52) & 0x3F
        if wb != 7 or rb != 7 or wait:
            print(f"{addr:#07x} wb={wb if wb != 7 else '-'} rb={rb if rb != 7 else '-'} "
                  f"wait={wait:06b}  {text[:80]}")
    if not found:
        sys.exit(f"no function {sys.argv[2]} in {sys.argv[1]}")


if __name__ == "__main__":
    main()
