#!/usr/bin/env python3
"""Writes the .npy goldens that tests/npy/test_npy.c reads (run once, with numpy;
the files are committed and the C test does not need numpy).

The values are small and listed here and, independently, as literals in the
test, so that a reader of either can check the other."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def save(name, arr, version=None):
    path = os.path.join(here, name + ".npy")
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


# One (2, 3) array per dtype, little-endian, C order.
save("b1", np.array([[True, False, True], [False, False, True]]))
save("i1", np.array([[0, 1, -1], [127, -128, 7]], dtype="|i1"))
save("u1", np.array([[0, 1, 255], [128, 42, 7]], dtype="|u1"))
save("i2", np.array([[0, 1, -1], [32767, -32768, 7]], dtype="<i2"))
save("u2", np.array([[0, 1, 65535], [32768, 42, 7]], dtype="<u2"))
save("i4", np.array([[0, 1, -1], [2147483647, -2147483648, 7]], dtype="<i4"))
save("u4", np.array([[0, 1, 4294967295], [2147483648, 42, 7]], dtype="<u4"))
save("i8", np.array([[0, 1, -1], [9223372036854775807, -9223372036854775808, 7]], dtype="<i8"))
save("u8", np.array([[0, 1, 18446744073709551615], [9223372036854775808, 42, 7]], dtype="<u8"))
save("f2", np.array([[0.0, 1.0, -2.0], [0.5, 65504.0, np.inf]], dtype="<f2"))
save("f4", np.array([[0.0, 1.0, -2.5], [0.1, 3.4e38, -np.inf]], dtype="<f4"))
save("f8", np.array([[0.0, 1.0, -2.5], [0.1, 1e300, -np.inf]], dtype="<f8"))
save("c8", np.array([[0, 1 + 2j, -3.5j], [0.5, -1 - 1j, 2]], dtype="<c8"))
save("c16", np.array([[0, 1 + 2j, -3.5j], [0.5, -1 - 1j, 2]], dtype="<c16"))

# Shapes: 0-d, 1-tuple, zero-size.
save("scalar_f8", np.array(3.5, dtype="<f8"))
save("vec5_i4", np.arange(5, dtype="<i4"))
save("empty_0x3_f4", np.zeros((0, 3), dtype="<f4"))
save("empty_2x0x4_i8", np.zeros((2, 0, 4), dtype="<i8"))

# Big-endian: same values as the little-endian files above.
save("be_i4", np.array([[0, 1, -1], [2147483647, -2147483648, 7]], dtype=">i4"))
save("be_u2", np.array([[0, 1, 65535], [32768, 42, 7]], dtype=">u2"))
save("be_f8", np.array([[0.0, 1.0, -2.5], [0.1, 1e300, -np.inf]], dtype=">f8"))
save("be_c8", np.array([[0, 1 + 2j, -3.5j], [0.5, -1 - 1j, 2]], dtype=">c8"))

# Fortran order: value at [i, j, k] is 100*i + 10*j + k.
a = np.fromfunction(lambda i, j, k: 100 * i + 10 * j + k, (2, 3, 4), dtype=np.int32).astype("<i4")
save("fortran_2x3x4_i4", np.asfortranarray(a))
save("fortran_2x3_f4", np.asfortranarray(np.array([[1, 2, 3], [4, 5, 6]], dtype="<f4")))

# Header versions 2.0 and 3.0.
save("v2_i4", np.arange(5, dtype="<i4"), version=(2, 0))
save("v3_i4", np.arange(5, dtype="<i4"), version=(3, 0))
