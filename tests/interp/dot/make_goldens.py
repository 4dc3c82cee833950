#!/usr/bin/python3
"""Writes the numpy goldens of tests/interp/dot: dot with general dimension
numbers and convolution. Run: /usr/bin/python3 make_goldens.py (the hand
goldens in this folder are not written by it)."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ next to the goldens
sys.path.insert(0, os.path.join(HERE, '..', 'reduce'))
from goldens_lib import bf16, const, dilate_pad, write  # noqa: E402

SCRIPT = 'tests/interp/dot/make_goldens.py'
rng = np.random.default_rng(1129)
WRAP = {'s8': np.int8, 's16': np.int16, 's32': np.int32, 's64': np.int64, 'u8': np.uint8, 'u32': np.uint32}


def out(name):
    return os.path.join(HERE, name)


def shp(ty, dims):
    return '%s[%s]' % (ty, ','.join(str(d) for d in dims))


def wrap(a, ty):
    """Python ints (object arrays) to the type's width, two's complement."""
    bits = np.iinfo(WRAP[ty]).bits
    a = np.vectorize(lambda v: int(v) % (1 << bits))(np.asarray(a, dtype=object))
    if ty.startswith('s'):
        a = np.vectorize(lambda v: v - (1 << bits) if v >= 1 << (bits - 1) else v)(a)
    return np.asarray(a, dtype=object)


def dot_ref(l, r, lb=(), rb=(), lc=(), rc=()):
    """DotGeneral: result dims are batch, lhs free, rhs free (exact for
    object arrays)."""
    lf = [d for d in range(l.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(r.ndim) if d not in rb and d not in rc]
    L = np.transpose(l, list(lb) + lf + list(lc))
    R = np.transpose(r, list(rb) + list(rc) + rf)
    B = [l.shape[d] for d in lb]
    M = [l.shape[d] for d in lf]
    N = [r.shape[d] for d in rf]
    K = int(np.prod([l.shape[d] for d in lc]))
    nb, m, n = int(np.prod(B)), int(np.prod(M)), int(np.prod(N))
    L = L.reshape(nb, m, K)
    R = R.reshape(nb, K, n)
    res = np.empty((nb, m, n), dtype=l.dtype)
    for b in range(nb):
        res[b] = L[b].dot(R[b]) if K else np.zeros((m, n), dtype=l.dtype)
    return res.reshape(B + M + N)


def dims_attr(name, v):
    return ', %s={%s}' % (name, ','.join(map(str, v))) if v else ''


def dot_line(k, ty_out, res_shape, lname, rname, lb=(), rb=(), lc=(), rc=()):
    return ('  r%d = %s dot(%s, %s)%s%s%s%s' % (k, shp(ty_out, res_shape), lname, rname, dims_attr('lhs_batch_dims', lb),
                                              dims_attr('rhs_batch_dims', rb), dims_attr('lhs_contracting_dims', lc),
                                              dims_attr('rhs_contracting_dims', rc)))


def module(name, comment, lines, results):
    names = ['r%d' % k for k in range(len(results))]
    shapes = [shp(ty, np.shape(a)) for ty, a in results]
    body = 'HloModule %s\n\nENTRY main {\n%s\n  ROOT t = (%s) tuple(%s)\n}\n' % (
        name, '\n'.join(lines), ', '.join(shapes), ', '.join(names))
    return '// %s\n%s' % (comment, body)


def ints(shape, lo=-4, hi=5):
    return rng.integers(lo, hi, size=shape)


# ---- dot -----------------------------------------------------------------------

def dot_layouts(ty, fname):
    """Every layout class gemm sees: as is, transposed, batched, packed."""
    cases = [  # (lhs shape, rhs shape, lb, rb, lc, rc)
        ((3, 4), (4, 5), (), (), (1,), (0,)),          # [M,K] x [K,N]
        ((4, 3), (4, 5), (), (), (0,), (0,)),          # lhs transposed
        ((3, 4), (5, 4), (), (), (1,), (1,)),          # rhs transposed
        ((4, 3), (5, 4), (), (), (0,), (1,)),          # both
        ((2, 3, 4), (2, 4, 5), (0,), (0,), (2,), (1,)),  # leading batch
        ((3, 2, 4), (4, 5, 2), (1,), (2,), (2,), (0,)),  # batch elsewhere: packed
        ((3, 2, 4), (2, 4, 5), (), (), (1, 2), (0, 1)),  # two contracting dims
        ((3, 2, 4), (4, 2, 5), (), (), (2, 1), (0, 1)),  # contracting in another order
        ((6,), (6,), (), (), (0,), (0,)),               # vector . vector
        ((3, 6), (6,), (), (), (1,), (0,)),             # matrix . vector
        ((3,), (4,), (), (), (), ()),                   # outer product
        ((2, 3), (3, 2), (0,), (1,), (), ()),           # batch only
        ((3, 0), (0, 2), (), (), (1,), (0,)),           # K = 0: zeros
        ((2, 2, 3, 4), (2, 4, 2, 5), (0, 1), (0, 2), (3,), (1,)),  # two batch dims, rhs packed
    ]
    lines, results = [], []
    cplx = ty.startswith('c')
    for k, (ls, rs, lb, rb, lc, rc) in enumerate(cases):
        l = ints(ls).astype(np.float64)
        r = ints(rs).astype(np.float64)
        if cplx:
            l = l + 1j * ints(ls)
            r = r + 1j * ints(rs)
        lines.append(const('l%d' % k, ty, l))
        lines.append(const('q%d' % k, ty, r))
        res = dot_ref(l, r, lb, rb, lc, rc)
        lines.append(dot_line(k, ty, res.shape, 'l%d' % k, 'q%d' % k, lb, rb, lc, rc))
        results.append((ty, res))
    write(out(fname), SCRIPT, module(fname[:-4], 'Small integers: exact results.', lines, results), results)


def dot_int():
    lines, results = [], []
    k = 0

    def case(lty, rty, oty, l, r, lc=(1,), rc=(0,)):
        nonlocal k
        lines.append(const('l%d' % k, lty, l))
        lines.append(const('q%d' % k, rty, r))
        res = wrap(dot_ref(np.asarray(l, dtype=object), np.asarray(r, dtype=object), (), (), lc, rc), oty)
        lines.append(dot_line(k, oty, res.shape, 'l%d' % k, 'q%d' % k, (), (), lc, rc))
        results.append((oty, res))
        k += 1
    case('s32', 's32', 's32', [[2**30, 3], [-7, 2**31 - 1]], [[4, 1], [2**30, 5]])   # wraps
    case('s8', 's8', 's32', [[127, 127, -128, 100]], [[127], [127], [-128], [100]])  # s8 x s8 -> s32
    case('s8', 's8', 's8', [[100, 50]], [[3], [2]])                                # wraps in s8
    case('u8', 'u8', 'u8', [[200, 100], [1, 2]], [[2, 1], [3, 4]])
    case('u8', 'u8', 'u32', [[255, 255, 255]], [[255], [255], [255]])
    case('u32', 'u32', 'u32', [[4000000000, 3]], [[3], [5]])
    case('s64', 's64', 's64', [[2**40, -3], [5, 2**62]], [[2**30, 1], [7, 4]])
    case('s16', 's16', 's16', [[300, -2], [1, 1]], [[300, 1], [5, 1]], (0,), (0,))
    write(out('dot_int.hlo'), SCRIPT,
          module('dot_int', 'Integer dots accumulate in the result type and wrap; s8 x s8 -> s32 widens first.',
                 lines, results), results)


def dot_bf16():
    """bf16/f16 operands: products and sums in f32, one rounding at the end."""
    lines, results = [], []
    a = np.array([[256, 1, 1, 1, 1], [256, 1, 0, 0, 0], [256, 1, 1, 1, 0]], dtype=np.float32)
    b = np.ones((5, 1), dtype=np.float32)
    x = bf16(rng.uniform(-2, 2, size=(4, 8)))
    y = bf16(rng.uniform(-2, 2, size=(8, 3)))
    lines += [const('a', 'bf16', a), const('b', 'bf16', b), const('x', 'bf16', x), const('y', 'bf16', y),
              const('h', 'f16', a), const('hb', 'f16', b)]
    f32 = (x.astype(np.float64) @ y.astype(np.float64))
    lines.append('  r0 = bf16[3,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}')
    lines.append('  r1 = f32[3,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}')
    lines.append('  r2 = f32[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}')
    lines.append('  r3 = bf16[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}')
    lines.append('  r4 = f16[3,1] dot(h, hb), lhs_contracting_dims={1}, rhs_contracting_dims={0}')
    s = a.sum(1, keepdims=True)
    results = [('bf16', bf16(s)), ('f32', s), ('f32', f32.astype(np.float32)), ('bf16', bf16(f32.astype(np.float32))),
               ('f16', s.astype(np.float16))]
    write(out('dot_bf16.hlo'), SCRIPT,
          module('dot_bf16', 'bf16/f16 dots accumulate in f32 and round once: 260 stays 260 in bf16 (per-step '
                 'rounding would give 256), 257 rounds to 256, 259 to 260. bf16 x bf16 products are exact in f32.',
                 lines, results), results)


def dot_tolerance():
    a = rng.standard_normal((2, 17, 33)).astype(np.float32)
    b = rng.standard_normal((2, 33, 9)).astype(np.float32)
    c = rng.standard_normal((40, 70)).astype(np.float32)
    d = rng.standard_normal((40, 30)).astype(np.float64)
    e = rng.standard_normal((70, 30)).astype(np.float64)
    body = '''// Real-valued data through gemm (batched; transposed lhs; f64).
HloModule dot_tolerance

ENTRY main {
  a = f32[2,17,33] parameter(0)
  b = f32[2,33,9] parameter(1)
  c = f32[40,70] parameter(2)
  d = f64[40,30] parameter(3)
  e = f64[70,30] parameter(4)
  r0 = f32[2,17,9] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  r1 = f32[70,70] dot(c, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  r2 = f64[30,70] dot(d, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  r3 = f64[70,40] dot(e, d), lhs_contracting_dims={1}, rhs_contracting_dims={1}, operand_precision={highest,highest}
  ROOT t = (f32[2,17,9], f32[70,70], f64[30,70], f64[70,40]) tuple(r0, r1, r2, r3)
}
'''
    A, B, C, D, E = (v.astype(np.float64) for v in (a, b, c, d, e))
    c32 = C.astype(np.float32).astype(np.float64)
    results = [('f32', np.einsum('bmk,bkn->bmn', A, B)), ('f32', C.T @ C), ('f64', D.T @ c32), ('f64', E @ D.T)]
    write(out('dot_tolerance.hlo'), SCRIPT, body, results, params=[('f32', a), ('f32', b), ('f32', c), ('f64', d),
                                                                 ('f64', e)], tol=1e-5)


# ---- convolution ---------------------------------------------------------------

def parse_labels(s):
    lhs, rest = s.split('_')
    ker, outl = rest.split('->')
    return lhs, ker, outl


def conv_ref(l, r, labels, size_info, fgc=1, bgc=1):
    """Convolution from its definition: operands brought to [B,F,spatial] /
    [O,I,spatial], the lhs dilated and padded explicitly, the kernel reversed
    and dilated explicitly, then a strided correlation; groups by splitting
    and concatenating (StableHLO)."""
    lhs_l, ker_l, out_l = parse_labels(labels)
    ns = len(lhs_l) - 2
    sp = [str(i) for i in range(ns)]
    L = np.transpose(l, [lhs_l.index('b'), lhs_l.index('f')] + [lhs_l.index(c) for c in sp])
    R = np.transpose(r, [ker_l.index('o'), ker_l.index('i')] + [ker_l.index(c) for c in sp])
    stride = size_info.get('stride', [1] * ns)
    pads = size_info.get('pad', [(0, 0)] * ns)
    lhs_dil = size_info.get('lhs', [1] * ns)
    rhs_dil = size_info.get('rhs', [1] * ns)
    rev = size_info.get('rev', [0] * ns)
    for s in range(ns):
        if rev[s]:
            R = np.flip(R, axis=2 + s)
    Lp = np.stack([np.stack([dilate_pad(L[b, f], 0, lhs_dil, pads) for f in range(L.shape[1])])
                   for b in range(L.shape[0])]) if L.shape[0] and L.shape[1] else None
    Rd = np.stack([np.stack([dilate_pad(R[o, i], 0, rhs_dil, [(0, 0)] * ns) for i in range(R.shape[1])])
                   for o in range(R.shape[0])])

    def plain(Lp, Rd):
        Bn, Fn = Lp.shape[:2]
        On = Rd.shape[0]
        ksp = Rd.shape[2:]
        osp = [(n - k) // st + 1 if n >= k else 0 for n, k, st in zip(Lp.shape[2:], ksp, stride)]
        res = np.zeros([Bn, On] + osp, dtype=np.result_type(Lp, Rd))
        for b in range(Bn):
            for o in range(On):
                for pos in np.ndindex(*osp):
                    sl = tuple(slice(p * st, p * st + k) for p, st, k in zip(pos, stride, ksp))
                    res[(b, o) + pos] = np.sum(Lp[(b, slice(None)) + sl] * Rd[o])
        return res
    O = Rd.shape[0]
    if fgc > 1:
        fi, fo = Lp.shape[1] // fgc, O // fgc
        res = np.concatenate([plain(Lp[:, g * fi:(g + 1) * fi], Rd[g * fo:(g + 1) * fo]) for g in range(fgc)], axis=1)
    elif bgc > 1:
        bi, bo = Lp.shape[0] // bgc, O // bgc
        res = np.concatenate([plain(Lp[g * bi:(g + 1) * bi], Rd[g * bo:(g + 1) * bo]) for g in range(bgc)], axis=1)
    else:
        res = plain(Lp, Rd)
    # [B, O, spatial] -> output labels
    src = ['b', 'f'] + sp
    return np.transpose(res, [src.index(c) for c in out_l])


def window_attr(ns, info):
    if ns == 0:
        return ''
    size = info['size']
    parts = ['size=' + 'x'.join(map(str, size))]
    if 'stride' in info:
        parts.append('stride=' + 'x'.join(map(str, info['stride'])))
    if 'pad' in info:
        parts.append('pad=' + 'x'.join('%d_%d' % p for p in info['pad']))
    if 'lhs' in info:
        parts.append('lhs_dilate=' + 'x'.join(map(str, info['lhs'])))
    if 'rhs' in info:
        parts.append('rhs_dilate=' + 'x'.join(map(str, info['rhs'])))
    if 'rev' in info:
        parts.append('rhs_reversal=' + 'x'.join(map(str, info['rev'])))
    return ', window={%s}' % ' '.join(parts)


CONV_CASES = [  # (lhs shape, rhs shape, labels, window info, fgc, bgc)
    ((2, 5, 5, 3), (3, 3, 3, 4), 'b01f_01io->b01f', dict(size=[3, 3], stride=[2, 2], pad=[(1, 1), (1, 1)]), 1, 1),
    ((1, 3, 3, 2), (2, 2, 2, 3), 'b01f_01io->b01f', dict(size=[2, 2], lhs=[2, 2], pad=[(1, 1), (1, 2)]), 1, 1),
    ((1, 6, 5, 2), (2, 2, 2, 2), 'b01f_01io->b01f', dict(size=[2, 2], rhs=[2, 1], pad=[(0, 0), (1, 1)]), 1, 1),
    ((1, 4, 4, 1), (3, 2, 1, 2), 'b01f_01io->b01f', dict(size=[3, 2], rev=[1, 0]), 1, 1),
    ((1, 5, 5, 2), (2, 2, 2, 1), 'b01f_01io->b01f', dict(size=[2, 2], pad=[(-1, 0), (0, -1)]), 1, 1),
    ((2, 3, 7), (4, 3, 3), 'bf0_oi0->bf0', dict(size=[3], stride=[2], pad=[(1, 0)]), 1, 1),
    ((1, 4, 4, 6), (2, 2, 2, 6), 'b01f_01io->b01f', dict(size=[2, 2]), 3, 1),
    ((1, 4, 4, 3), (2, 2, 1, 3), 'b01f_01io->b01f', dict(size=[2, 2], pad=[(1, 0), (0, 1)]), 3, 1),
    ((4, 3, 3, 2), (2, 2, 2, 6), 'b01f_01io->b01f', dict(size=[2, 2]), 1, 2),
    ((3, 4), (4, 5), 'bf_io->bf', dict(), 1, 1),
    ((2, 4, 5, 3), (3, 2, 3, 2), 'b01f_io01->bf01', dict(size=[3, 2], stride=[1, 2], pad=[(1, 1), (0, 1)],
                                                          lhs=[1, 2], rhs=[2, 1]), 1, 1),
    ((2, 3, 4, 5), (2, 2, 2, 4), 'f01b_i01o->01bf', dict(size=[2, 2], stride=[2, 1]), 1, 1),
]


# Wide kernels (16 output features per group): f32 runs these through
# im2col + gemm, s32 through the direct loop.
WIDE_CASES = [
    ((1, 4, 4, 4), (2, 2, 2, 16), 'b01f_01io->b01f', dict(size=[2, 2], pad=[(0, 1), (1, 0)]), 2, 1),
    ((1, 6, 6, 2), (3, 2, 2, 16), 'b01f_01io->b01f', dict(size=[3, 2], stride=[2, 1], pad=[(1, 1), (0, 1)],
                                                          rhs=[1, 2], rev=[1, 1]), 1, 1),
    ((1, 3, 3, 2), (2, 2, 2, 16), 'b01f_01io->b01f', dict(size=[2, 2], lhs=[2, 2], pad=[(1, 1), (1, 1)]), 1, 1),
    ((2, 3, 7), (16, 3, 3), 'bf0_oi0->bf0', dict(size=[3], stride=[2], pad=[(1, 0)]), 1, 1),
    ((2, 3, 4, 5), (2, 2, 2, 16), 'f01b_i01o->01bf', dict(size=[2, 2], stride=[2, 1]), 1, 1),
    ((4, 3, 3, 2), (2, 2, 2, 16), 'b01f_01io->b01f', dict(size=[2, 2], pad=[(1, 0), (0, 0)]), 1, 2),
]


def conv_module(name, comment, ty_in, ty_out, cases, lo=-3, hi=4, kty=None):
    lines, results = [], []
    for k, (ls, rs, labels, info, fgc, bgc) in enumerate(cases):
        l = ints(ls, lo, hi).astype(np.int64)
        r = ints(rs, lo, hi).astype(np.int64)
        if ty_in.startswith('c'):
            l = l + 1j * ints(ls, lo, hi)
            r = r + 1j * ints(rs, lo, hi)
        lines.append(const('l%d' % k, ty_in, l))
        lines.append(const('q%d' % k, kty or ty_in, r))
        res = conv_ref(l.astype(object), r.astype(object), labels, info, fgc, bgc)
        if ty_out in WRAP:
            res = wrap(res, ty_out)
        elif ty_out == 'bf16':
            res = bf16(res.astype(np.float64))
        groups = (', feature_group_count=%d' % fgc if fgc > 1 else '') + \
            (', batch_group_count=%d' % bgc if bgc > 1 else '')
        lines.append('  r%d = %s convolution(l%d, q%d)%s, dim_labels=%s%s' % (
            k, shp(ty_out, res.shape), k, k, window_attr(len(ls) - 2, info), labels, groups))
        results.append((ty_out, res))
    write(out(name + '.hlo'), SCRIPT, module(name, comment, lines, results), results)


def conv_tolerance():
    l = rng.standard_normal((2, 7, 7, 4)).astype(np.float32)
    r = rng.standard_normal((3, 3, 4, 5)).astype(np.float32)
    res = conv_ref(l.astype(np.float64), r.astype(np.float64), 'b01f_01io->b01f',
                   dict(size=[3, 3], stride=[2, 2], pad=[(1, 1), (1, 1)]))
    body = '''// Real-valued NHWC convolution.
HloModule conv_tolerance

ENTRY main {
  l = f32[2,7,7,4] parameter(0)
  r = f32[3,3,4,5] parameter(1)
  ROOT c = f32[2,4,4,5] convolution(l, r), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
'''
    write(out('conv_tolerance.hlo'), SCRIPT, body, [('f32', res)], params=[('f32', l), ('f32', r)], tol=1e-5)


if __name__ == '__main__':
    dot_layouts('f32', 'dot_f32.hlo')
    dot_layouts('f64', 'dot_f64.hlo')
    dot_layouts('c64', 'dot_c64.hlo')
    dot_int()
    dot_bf16()
    dot_tolerance()
    conv_module('conv_f32', 'Small integers: exact. Strides, padding (negative too), lhs and rhs dilation, '
                'reversal, feature and batch groups, other dim_labels.', 'f32', 'f32', CONV_CASES + WIDE_CASES)
    conv_module('conv_s32', 'Integer convolutions accumulate in s32.', 's32', 's32', CONV_CASES[:3] + CONV_CASES[6:9] + WIDE_CASES)
    conv_module('conv_s8_s32', 's8 x s8 -> s32: operands widen, sums beyond s8.', 's8', 's32', CONV_CASES[:2],
                lo=100, hi=128)
    conv_module('conv_bf16', 'bf16 convolution: sums of products of integers in [-20, 20] are exact in f32 and '
                'round once to bf16.', 'bf16', 'bf16', CONV_CASES[:2] + CONV_CASES[6:7], lo=-20, hi=21)
    conv_module('conv_c128', 'c128 convolution with small complex integers.', 'c128', 'c128', CONV_CASES[5:7])
