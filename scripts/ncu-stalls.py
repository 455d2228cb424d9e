#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source counters.

On the GPU machine (one kernel launch, SASS with per-instruction stall samples):

    ncu --clock-control none -k regex:g1_msm_affine_level -c 1 --section SourceCounters \
        --page source --print-source sass --csv .device/gpu_bench --breakdown --steps g1 \
        --lg 25 > $OUT/src.csv

Here: python3 scripts/ncu-stalls.py src.csv [TOP]

Prints each stall reason's share of all samples, the same split by the code's functions
(the kernel body and each function it calls, told apart by the CALL targets), and the TOP
(default 6) instructions for the larger reasons.
"""
import bisect
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    heads = [i for i, r in enumerate(rows) if r and r[0] == "Address"]
    if not heads:
        sys.exit("no source table (run ncu with --page source --print-source sass --csv)")
    head = rows[heads[0]]
    col = {name: i for i, name in enumerate(head)}
    reasons = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    # (address, SASS text, samples per reason), each row's numbers parsed once.
    code = []
    for r in rows[heads[0] + 1:]:
        if len(r) < len(head):
            continue
        try:
            addr = int(r[0], 16)
        except ValueError:
            continue
        code.append((addr, r[1].strip(), {k: number(r[col[k]]) for k in reasons}))
    targets = sorted(
        {int(text.split("CALL.REL.NOINC")[1].split()[0].rstrip(";"), 16)
         for _, text, _ in code if "CALL.REL.NOINC" in text}
    )
    starts = [code[0][0]] + targets if code else []

    total = collections.Counter()
    by_function = collections.defaultdict(collections.Counter)
    for addr, _, counts in code:
        start = starts[bisect.bisect_right(starts, addr) - 1]  # addresses ascend from starts[0]
        total.update(counts)
        by_function[start].update(counts)
    samples = sum(total.values())
    if not samples:
        sys.exit("no samples")

    def shares(counter, floor):
        return " ".join(f"{k[6:]} {100 * v / samples:.1f}" for k, v in counter.most_common()
                        if v / samples > floor)

    print(f"{int(samples)} samples; % of all samples per stall reason")
    print("all:", shares(total, 0.005))
    for start in starts:
        c = by_function[start]
        name = "kernel body" if start == starts[0] else f"function at {start:#x}"
        print(f"{name}: {100 * sum(c.values()) / samples:.1f} %:", shares(c, 0.003))
    for reason, _ in total.most_common(6):
        print(f"== {reason[6:]}")
        for addr, text, counts in sorted(code, key=lambda x: -x[2][reason])[:top]:
            print(f"  {addr:#x} {100 * counts[reason] / samples:5.2f} %  {text[:72]}")


if __name__ == "__main__":
    main()
