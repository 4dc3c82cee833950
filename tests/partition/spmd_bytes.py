#!/usr/bin/env python3
"""Collective bytes per device, ours against XLA's, over the xla_spmd corpus.

Not a test: a report for the partitioner's note. For every case whose
expectations give every collective a shape (and a count, default 1), XLA's
bytes are the sum of count * bytes(shape) (its collectives are all-reduce,
all-to-all and collective-permute: all-gather creation is off, so an
operand/result size difference does not arise). Ours are the `total` of
`tessera check`'s static collective table, obtained without running the
module (--max-memory 1: partition, verify, print, exit 3).

    tests/partition/spmd_bytes.py TESSERA [CORPUS_DIR]
"""
import json
import os
import re
import subprocess
import sys

BITS = {"pred": 8, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16, "s32": 32, "u32": 32,
        "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128, "s4": 4, "u4": 4}


def shape_bytes(text):
    m = re.match(r"\s*([a-z0-9]+)\[([^\]]*)\]", text)
    if not m or m.group(1) not in BITS:
        raise ValueError(f"cannot read shape {text!r}")
    n = 1
    for d in m.group(2).split(","):
        if d.strip():
            n *= int(d)
    return (n * BITS[m.group(1)] + 7) // 8


def flags_of(case):
    flags = ["--num-partitions", str(case["num_partitions"])]
    for k, v in case["options"].items():
        name = "--" + k.replace("_", "-")
        flags.append(name + ("=" + str(v).lower() if isinstance(v, bool) else "=" + str(v)))
    return flags


def ours(tessera, path, flags):
    p = subprocess.run([tessera, "check", "--max-memory", "1", *flags, path], capture_output=True, text=True,
                       timeout=300)
    by_kind, total = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s+(\d+)\s+(\d+)$", line)
        if m:
            if m.group(1) == "total":
                total = int(m.group(3))
            else:
                by_kind[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    if total is None:
        err = (p.stderr.strip().splitlines() or ["?"])[0]
        return None, None, err
    return total, by_kind, None


def main():
    tessera = sys.argv[1]
    corpus = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__),
                                                                 "../../../shared/corpus/xla_spmd")
    sum_ours = sum_xla = 0
    print(f"{'case':<72} {'xla':>12} {'ours':>12} {'ratio':>7}")
    for line in open(os.path.join(corpus, "expectations.jsonl")):
        case = json.loads(line)
        colls = case["expect"]["collectives"]
        if not colls or not all("shape" in c for c in colls):
            continue
        xla = sum(c.get("count", 1) * shape_bytes(c["shape"]) for c in colls)
        total, by_kind, err = ours(tessera, os.path.join(corpus, case["file"]), flags_of(case))
        if total is None:
            print(f"{case['file']:<72} {xla:>12} {'-':>12} {'-':>7}  ({err})")
            continue
        sum_ours += total
        sum_xla += xla
        kinds = ", ".join(f"{k} x{c} {b}" for k, (c, b) in sorted(by_kind.items()))
        print(f"{case['file']:<72} {xla:>12} {total:>12} {total / xla:>7.2f}  [{kinds}]")
    if sum_xla:
        print(f"{'total':<72} {sum_xla:>12} {sum_ours:>12} {sum_ours / sum_xla:>7.2f}")


if __name__ == "__main__":
    main()
