#!/usr/bin/env python3
"""Goldens of the subgroup-manual region modules (manual_region_reduce_*.hlo):
their input x = f32[4,16] with x[r][c] = 16*r + c, and the expected output
f32[8], written as .npy files into tests/partition/manual_golden/<case>/
(param0.npy in, out0.npy expected). Python's standard library only.

The expected sums come from the tile assignments as the modules' header
comments derive them (which full columns each manual group owns), summed
here by plain loops, and are checked against the values worked out by hand
below. Integers all the way: every f32 sum is exact.

    python3 tests/partition/manual_golden.py     (then commit manual_golden/)
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "manual_golden")
ROWS, COLS = 4, 16


def write_npy(path, shape, values):
    """A little-endian f32 .npy (format 1.0), C order."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "%d," % shape[0] if len(shape) == 1 else ", ".join(str(d) for d in shape))
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def x(r, c):
    return 16 * r + c


# Full columns owned by manual group m, in the order of the group's copy.
CASES = {
    # Device d = 2j + m holds full column tile d (4 columns): group m's copy
    # is column tiles m and 2 + m.
    "manual_region_reduce_4": lambda m: list(range(4 * m, 4 * m + 4)) + list(range(8 + 4 * m, 12 + 4 * m)),
    # Group m owns full column tiles 2m and 2m + 1: columns [8m, 8m + 8).
    "manual_region_reduce_8": lambda m: list(range(8 * m, 8 * m + 8)),
}

# By hand: sum over 8 columns of 16r + c = 128r + (sum of the columns).
# Case 4: group 0 columns 0..3, 8..11 sum to 44; group 1 4..7, 12..15 to 76.
# Case 8: group 0 columns 0..7 sum to 28; group 1 8..15 to 92.
BY_HAND = {
    "manual_region_reduce_4": [44, 172, 300, 428, 76, 204, 332, 460],
    "manual_region_reduce_8": [28, 156, 284, 412, 92, 220, 348, 476],
}


def main():
    xs = [float(x(r, c)) for r in range(ROWS) for c in range(COLS)]
    for case, cols in CASES.items():
        out = [float(sum(x(r, c) for c in cols(m))) for m in range(2) for r in range(ROWS)]
        assert out == [float(v) for v in BY_HAND[case]], (case, out)
        d = os.path.join(OUT, case)
        os.makedirs(d, exist_ok=True)
        write_npy(os.path.join(d, "param0.npy"), (ROWS, COLS), xs)
        write_npy(os.path.join(d, "out0.npy"), (2 * ROWS,), out)


if __name__ == "__main__":
    main()
