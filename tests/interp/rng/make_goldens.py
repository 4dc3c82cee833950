#!/usr/bin/python3
"""Writes the generated rng-bit-generator goldens of tests/interp/rng.
Run: /usr/bin/python3 make_goldens.py (the hand goldens in this folder,
kat_*.hlo, error_*.hlo and rng_*.hlo, are not written by it).

Independent of interp/k_rng.c: the block functions are re-implemented from
Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11) with
Random123's constants and checked against Random123's known-answer vectors
below; the output layout follows the op sequence XLA's
RngBitGeneratorExpander builds (xla/hlo/builder/lib/prng.cc), done here with
numpy concatenate / reshape / slice rather than index arithmetic:
  ThreeFry, state {key, counter}: 64-bit outputs take counter + i for
  row-major element i (ThreeFryRngBit64). 32-bit outputs
  (ThreeFryRngBit32): SplitShapeIntoHalves picks the first even dimension s
  (else the first largest; a scalar is [1]), the half shape has d_s ->
  ceil(d_s/2) and a new size-1 dimension after s, whose elements take
  counter + 0, 1, ...; CombineShapePair concatenates the two output words on
  that new dimension, reshapes and slices. New counter: + half elements.
  Philox: u64[3] state {key, lo, hi}; u64[2] state reversed
  (GetPhiloxStateOp: lo = state[1], hi = state[0]), only lo stored back.
  PhiloxRngBit32: ceil(n/4) blocks on the 128-bit counter + j, words
  interleaved (concat on dimension 1 of [blocks, 1] pieces). PhiloxRngBit64:
  ceil(2n/4) blocks, (w0 | w1 << 32, w2 | w3 << 32) interleaved.
  8/16-bit outputs: the 32-bit generation truncated; floats: the bits.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = 'tests/interp/rng/make_goldens.py'
M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1


# ---- block functions (SC'11 / Random123) -----------------------------------

def rotl32(v, r):
    return ((v << r) | (v >> (32 - r))) & M32


def threefry2x32_20(key, ctr):
    """Threefry-2x32 with 20 rounds: rotation constants R_32x2, a key
    injection after every fourth round (injection s adds ks[s % 3] and
    ks[(s + 1) % 3] + s), ks[2] = SKEIN_KS_PARITY32 ^ k0 ^ k1."""
    rot = (13, 15, 26, 6, 17, 29, 16, 24)
    ks = (key[0], key[1], 0x1BD11BDA ^ key[0] ^ key[1])
    x0 = (ctr[0] + ks[0]) & M32
    x1 = (ctr[1] + ks[1]) & M32
    for rnd in range(20):
        x0 = (x0 + x1) & M32
        x1 = rotl32(x1, rot[rnd % 8]) ^ x0
        if rnd % 4 == 3:
            s = rnd // 4 + 1
            x0 = (x0 + ks[s % 3]) & M32
            x1 = (x1 + ks[(s + 1) % 3] + s) & M32
    return x0, x1


def philox4x32_10(key, ctr):
    """Philox-4x32 with 10 rounds: multipliers M0 = 0xD2511F53 (on word 0)
    and M1 = 0xCD9E8D57 (on word 2), Weyl key bumps between rounds."""
    k0, k1 = key
    c = list(ctr)
    for rnd in range(10):
        if rnd > 0:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32,
             ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
    return tuple(c)


# Random123's kat_vectors (zeros, all ones, digits of pi).
assert threefry2x32_20((0, 0), (0, 0)) == (0x6b200159, 0x99ba4efe)
assert threefry2x32_20((M32, M32), (M32, M32)) == (0x1cb996fc, 0xbb002be7)
assert threefry2x32_20((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3)) == (0xc4923a9c, 0x483df7a0)
assert philox4x32_10((0, 0), (0, 0, 0, 0)) == (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)
assert philox4x32_10((M32, M32), (M32,) * 4) == (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)
assert philox4x32_10((0xa4093822, 0x299f31d0), (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344)) == \
    (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)


def split64(v):
    return v & M32, v >> 32


# ---- XLA's layouts -----------------------------------------------------------

def obj(a):
    return np.array(a, dtype=object)


def threefry(state, bits, dims):
    """(new state, unsigned bits as an object array of shape dims)."""
    key, ctr = state
    k = split64(key)
    n = int(np.prod(dims, dtype=np.int64))
    if bits == 64:
        out = []
        for i in range(n):
            x0, x1 = threefry2x32_20(k, split64((ctr + i) & M64))
            out.append(x0 | x1 << 32)
        return [key, (ctr + n) & M64], obj(out).reshape(dims)
    dims = list(dims)
    if not dims:
        half, s = [1], None
    else:
        even = [i for i, d in enumerate(dims) if d % 2 == 0]
        s = even[0] if even else int(np.argmax(dims))  # argmax: first largest
        half = dims[:s] + [(dims[s] + 1) // 2, 1] + dims[s + 1:]
    nh = int(np.prod(half, dtype=np.int64))
    w0, w1 = [], []
    for j in range(nh):
        x0, x1 = threefry2x32_20(k, split64((ctr + j) & M64))
        w0.append(x0)
        w1.append(x1)
    w0 = obj(w0).reshape(half)
    w1 = obj(w1).reshape(half)
    if s is None:
        out = w0.reshape(())
    else:
        cat = np.concatenate([w0, w1], axis=s + 1)
        full = dims[:s] + [2 * half[s]] + dims[s + 1:]
        out = cat.reshape(full)
        out = out[tuple(slice(0, d) for d in dims)]
    out = out & ((1 << bits) - 1) if bits < 32 else out
    return [key, (ctr + nh) & M64], out


def philox(state, bits, dims):
    if len(state) == 3:
        key, lo, hi = state
    else:
        key = state[0]
        lo, hi = state[::-1]
    k = split64(key)
    n = int(np.prod(dims, dtype=np.int64))
    nwords = 2 * n if bits == 64 else n
    blocks = (nwords + 3) // 4
    c128 = lo | hi << 64
    ws = []
    for j in range(blocks):
        c = (c128 + j) & ((1 << 128) - 1)
        ws.append(philox4x32_10(k, (c & M32, (c >> 32) & M32, (c >> 64) & M32, c >> 96)))
    ws = obj(ws).reshape(blocks, 4)
    if bits == 64:
        pairs = np.concatenate([(ws[:, 0:1] | ws[:, 1:2] << 32), (ws[:, 2:3] | ws[:, 3:4] << 32)], axis=1)
        out = pairs.reshape(-1)[:n].reshape(dims)
    else:
        out = ws.reshape(-1)[:n].reshape(dims)
        if bits < 32:
            out = out & ((1 << bits) - 1)
    c = (c128 + blocks) & ((1 << 128) - 1)
    new = [key, c & M64, c >> 64] if len(state) == 3 else [key, c & M64]
    return new, out


# ---- golden files --------------------------------------------------------------

BITS = {'u8': 8, 's8': 8, 'u16': 16, 's16': 16, 'u32': 32, 's32': 32, 'u64': 64, 's64': 64,
        'f16': 16, 'bf16': 16, 'f32': 32, 'f64': 64, 'f8e4m3fn': 8, 'f8e5m2': 8}
UINT = {8: 'u8', 16: 'u16', 32: 'u32', 64: 'u64'}


def lit(a):
    a = np.asarray(a, dtype=object)
    if a.ndim == 0:
        return str(int(a[()]))
    if a.ndim == 1:
        return '{' + ', '.join(str(int(v)) for v in a) + '}'
    return '{' + ', '.join(lit(x) for x in a) + '}'


def shp(ty, dims):
    return '%s[%s]' % (ty, ','.join(str(d) for d in dims))


def signed(a, bits):
    """Two's complement reading of unsigned values."""
    return np.vectorize(lambda v: v - (1 << bits) if v >> (bits - 1) else v, otypes=[object])(a)


def module(name, comment, cases):
    """cases: (alg, state, ty, dims[, chain]), one rng-bit-generator each;
    float outputs are bitcast back to the unsigned type of their width.
    chain=True feeds the previous case's new state instead of a constant."""
    lines, roots, shapes, expects = [], [], [], []
    prev = None
    for k, case in enumerate(cases):
        alg, state, ty, dims = case[:4]
        chain = len(case) > 4 and case[4]
        bits = BITS[ty]
        gen = threefry if alg == 'rng_three_fry' else philox  # rng_default: Philox, as XLA's CPU/GPU
        if chain:
            state, sname = prev
        else:
            sname = 's%d' % k
            lines.append('  %s = %s constant(%s)' % (sname, shp('u64', [len(state)]), lit(state)))
        new, out = gen(state, bits, dims)
        st = shp('u64', [len(state)])
        lines.append('  g%d = (%s, %s) rng-bit-generator(%s), algorithm=%s' % (k, st, shp(ty, dims), sname, alg))
        lines.append('  n%d = %s get-tuple-element(g%d), index=0' % (k, st, k))
        lines.append('  b%d = %s get-tuple-element(g%d), index=1' % (k, shp(ty, dims), k))
        prev = (new, 'n%d' % k)
        res, rty = 'b%d' % k, ty
        if ty.startswith(('f', 'bf')):
            rty = UINT[bits]
            lines.append('  c%d = %s bitcast-convert(b%d)' % (k, shp(rty, dims), k))
            res = 'c%d' % k
        elif ty.startswith('s'):
            out = signed(out, bits)
        roots += ['n%d' % k, res]
        shapes += [st, shp(rty, dims)]
        expects += [(st, new), (shp(rty, dims), out)]
    body = ['// Generated by %s (pure python + numpy); do not edit.' % SCRIPT]
    body += ['// ' + c for c in comment.split('\n')]
    body += ['HloModule %s' % name, '', 'ENTRY main {'] + lines
    body.append('  ROOT t = (%s) tuple(%s)' % (', '.join(shapes), ', '.join(roots)))
    body.append('}')
    body += ['// EXPECT: %s %s' % (s, lit(v)) for s, v in expects]
    with open(os.path.join(HERE, name + '.hlo'), 'w') as f:
        f.write('\n'.join(body) + '\n')


TF = 'rng_three_fry'
PH = 'rng_philox'
K1 = 0x0123456789ABCDEF
K2 = 0xDEADBEEFCAFEF00D


def main():
    module('threefry_u32',
           '32-bit ThreeFry outputs: the split dimension (first even; else first\n'
           'largest), odd tails, scalars, a counter wrapping past 2^64, chained\n'
           'states.',
           [(TF, [K1, 0], 'u32', [3, 4]),
            (TF, [K1, 7], 'u32', [5]),
            (TF, [K2, 100], 'u32', [3, 5]),
            (TF, [K2, 100], 'u32', [5, 3]),
            (TF, [K1, 1 << 40], 'u32', [2, 3]),
            (TF, [K2, 3], 'u32', [3, 1, 4]),
            (TF, [K2, 3], 's32', [7, 1]),
            (TF, [K1, 5], 'u32', []),
            (TF, [K2, M64 - 2], 'u32', [8]),
            (TF, None, 'u32', [2, 2], True)])
    module('threefry_u64',
           '64-bit ThreeFry outputs: element i on counter + i.',
           [(TF, [K1, 0], 'u64', [5]),
            (TF, [K2, 12345], 's64', [2, 3]),
            (TF, [K1, 77], 'u64', []),
            (TF, [K2, M64 - 1], 'u64', [4]),
            (TF, None, 'u64', [3], True)])
    module('threefry_narrow',
           '8- and 16-bit ThreeFry outputs (the 32-bit layout, truncated) and\n'
           'floating outputs (the bits, bitcast back to unsigned here).',
           [(TF, [K1, 0], 'u8', [7]),
            (TF, [K2, 1], 's8', [3, 3]),
            (TF, [K1, 2], 'u16', [2, 5]),
            (TF, [K2, 3], 's16', [5]),
            (TF, [K1, 4], 'f32', [3, 4]),
            (TF, [K2, 5], 'f64', [3]),
            (TF, [K1, 6], 'f16', [5]),
            (TF, [K2, 7], 'bf16', [2, 3]),
            (TF, [K1, 8], 'f8e4m3fn', [4]),
            (TF, [K2, 9], 'f8e5m2', [3, 1])])
    module('philox_u32',
           'Philox 32-bit outputs: partial blocks, a carry from counter_lo into\n'
           'counter_hi, the u64[2] state (reversed: lo = state[1], hi = key), chains.',
           [(PH, [K1, 0, 0], 'u32', [9]),
            (PH, [K2, 5, 9], 'u32', [2, 4]),
            (PH, [K1, 1, 2], 's32', [3]),
            (PH, [K2, 3, 4], 'u32', []),
            (PH, [K1, M64 - 1, 6], 'u32', [20]),
            (PH, [K2, M64, M64], 'u32', [5]),
            (PH, [K1, 11], 'u32', [6]),
            (PH, [K2, M64], 'u32', [2, 3]),
            (PH, None, 'u32', [4], True)])
    module('philox_u64',
           'Philox 64-bit outputs: two per block.',
           [(PH, [K1, 0, 0], 'u64', [5]),
            (PH, [K2, 7, 1], 's64', [2, 2]),
            (PH, [K1, M64 - 1, 0], 'u64', [6]),
            (PH, [K2, 3], 'u64', [3]),
            (PH, None, 'u64', [2], True)])
    module('philox_narrow',
           'Philox 8- and 16-bit outputs (the 32-bit layout, truncated) and\n'
           'floating outputs (the bits, bitcast back to unsigned here).',
           [(PH, [K1, 0, 0], 'u8', [10]),
            (PH, [K2, 1, 2], 's16', [3, 3]),
            (PH, [K1, 2, 0], 'f32', [2, 3]),
            (PH, [K2, 3, 0], 'f64', [3]),
            (PH, [K1, 4], 'f16', [5]),
            (PH, [K2, 5, 1], 'bf16', [2, 2]),
            (PH, [K1, 6, 1], 'f8e4m3fn', [5])])


if __name__ == '__main__':
    main()
