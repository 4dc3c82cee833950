#!/usr/bin/python3
"""Writes the numpy goldens of tests/interp/reduce: reduce, reduce-window and
select-and-scatter. Run from anywhere: /usr/bin/python3 make_goldens.py
(the hand-computed goldens in this folder are not written by it)."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ next to the goldens
sys.path.insert(0, HERE)
from goldens_lib import const, reduce_window, write  # noqa: E402

SCRIPT = 'tests/interp/reduce/make_goldens.py'
rng = np.random.default_rng(20261129)


def out(name):
    return os.path.join(HERE, name)


def comp(name, ty, op):
    return ('%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n'
            % (name, ty, ty, ty, op))


def entry(lines, root_names, root_shapes):
    body = 'ENTRY main {\n' + '\n'.join(lines) + '\n'
    body += '  ROOT t = (%s) tuple(%s)\n}\n' % (', '.join(root_shapes), ', '.join(root_names))
    return body


def shp(ty, dims):
    return '%s[%s]' % (ty, ','.join(str(d) for d in dims))


# ---- reduce ------------------------------------------------------------------

def reduce_f32_dims():
    x = rng.integers(-8, 9, size=(2, 3, 4)).astype(np.float32)
    p = rng.integers(1, 3, size=(2, 3, 4)).astype(np.float32)
    lines = [const('x', 'f32', x), const('p', 'f32', p),
             '  zero = f32[] constant(0)', '  one = f32[] constant(1)',
             '  ninf = f32[] constant(-inf)', '  pinf = f32[] constant(inf)']
    cases = [('add', 'zero', x, (2,)), ('add', 'zero', x, (0,)), ('add', 'zero', x, (1,)),
             ('add', 'zero', x, (0, 2)), ('add', 'zero', x, (0, 1, 2)), ('add', 'zero', x, ()),
             ('max', 'ninf', x, (1,)), ('min', 'pinf', x, (0, 2)), ('mul', 'one', p, (2,)),
             ('mul', 'one', p, (0, 1))]
    fn = {'add': np.add, 'max': np.maximum, 'min': np.minimum, 'mul': np.multiply}
    init = {'zero': 0, 'one': 1, 'ninf': -np.inf, 'pinf': np.inf}
    names, shapes, exp = [], [], []
    for k, (op, ini, a, dims) in enumerate(cases):
        src = 'x' if a is x else 'p'
        r = fn[op].reduce(a, axis=dims, initial=init[ini]).astype(np.float32) if dims else \
            fn[op](a, np.float32(init[ini]))
        s = shp('f32', r.shape)
        lines.append('  r%d = %s reduce(%s, %s), dimensions={%s}, to_apply=%s'
                     % (k, s, src, ini, ','.join(map(str, dims)), op))
        names.append('r%d' % k)
        shapes.append(s)
        exp.append(('f32', r))
    body = 'HloModule reduce_f32_dims\n\n' + comp('add', 'f32', 'add') + comp('max', 'f32', 'maximum') + \
        comp('min', 'f32', 'minimum') + comp('mul', 'f32', 'multiply') + '\n' + entry(lines, names, shapes)
    write(out('reduce_f32_dims.hlo'), SCRIPT, '// Small integers: every f32 result is exact.\n' + body, exp)


def reduce_real_tolerance():
    a = rng.standard_normal((33, 70)).astype(np.float32)
    b = rng.standard_normal((5, 129)).astype(np.float64)
    body = 'HloModule reduce_real_tolerance\n\n' + comp('add', 'f32', 'add') + comp('add64', 'f64', 'add') + '''
ENTRY main {
  a = f32[33,70] parameter(0)
  b = f64[5,129] parameter(1)
  z = f32[] constant(0)
  z64 = f64[] constant(0)
  r0 = f32[33] reduce(a, z), dimensions={1}, to_apply=add
  r1 = f32[70] reduce(a, z), dimensions={0}, to_apply=add
  r2 = f32[] reduce(a, z), dimensions={0,1}, to_apply=add
  r3 = f64[5] reduce(b, z64), dimensions={1}, to_apply=add64
  ROOT t = (f32[33], f32[70], f32[], f64[5]) tuple(r0, r1, r2, r3)
}
'''
    exp = [('f32', a.astype(np.float64).sum(1)), ('f32', a.astype(np.float64).sum(0)),
           ('f32', a.astype(np.float64).sum()), ('f64', b.sum(1))]
    write(out('reduce_real_tolerance.hlo'), SCRIPT, '// Real-valued data: sums match within tolerance.\n' + body,
          exp, params=[('f32', a), ('f64', b)], tol=1e-5)


def reduce_int():
    s32 = np.array([[2**31 - 1, 5, 7], [-2**31, -3, 2**30]], dtype=np.int32)
    u8 = np.array([[200, 100, 7], [1, 2, 255]], dtype=np.uint8)
    u32 = np.array([4000000000, 5, 2**31], dtype=np.uint32)
    s64 = np.array([[2**62, 2**62, 2**62], [-5, 6, -7]], dtype=np.int64)
    u64 = np.array([2**63 + 5, 3, 2**64 - 1], dtype=np.uint64)
    s8 = np.array([[-128, 5], [127, -1]], dtype=np.int8)
    s16 = np.array([[0x1234, 0x0F0F, -1], [7, 8, 9]], dtype=np.int16)
    pred = np.array([[True, False, True], [True, True, True]])
    with np.errstate(over='ignore'):
        exp = [
            ('s32', np.add.reduce(s32, axis=1, dtype=np.int32)),
            ('s32', np.multiply.reduce(s32, axis=0, dtype=np.int32)),
            ('s32', s32.max(axis=1)), ('s32', s32.min(axis=0)),
            ('s32', np.add.reduce(s32.reshape(-1), dtype=np.int32)),
            ('u8', np.add.reduce(u8, axis=0, dtype=np.uint8)), ('u8', u8.max(axis=1)),
            ('u32', u32.max()), ('u32', np.add.reduce(u32, dtype=np.uint32)),
            ('s64', np.add.reduce(s64, axis=1, dtype=np.int64)),
            ('u64', u64.max()), ('u64', u64.min()),
            ('s8', s8.min(axis=1)), ('s8', np.add.reduce(s8, axis=0, dtype=np.int8)),
            ('s16', np.bitwise_xor.reduce(s16, axis=1)), ('s16', np.bitwise_and.reduce(s16, axis=0)),
            ('pred', np.logical_and.reduce(pred, axis=1)), ('pred', np.logical_or.reduce(~pred, axis=1)),
        ]
    lines = [const('s32', 's32', s32), const('u8', 'u8', u8), const('u32', 'u32', u32),
             const('s64', 's64', s64), const('u64', 'u64', u64), const('s8', 's8', s8),
             const('s16', 's16', s16), const('p', 'pred', pred), const('np', 'pred', ~pred),
             '  z32 = s32[] constant(0)', '  o32 = s32[] constant(1)',
             '  lo32 = s32[] constant(-2147483648)', '  hi32 = s32[] constant(2147483647)',
             '  z8 = u8[] constant(0)', '  zu32 = u32[] constant(0)', '  z64 = s64[] constant(0)',
             '  zu64 = u64[] constant(0)', '  hu64 = u64[] constant(18446744073709551615)',
             '  hs8 = s8[] constant(127)', '  zs8 = s8[] constant(0)',
             '  z16 = s16[] constant(0)', '  m16 = s16[] constant(-1)',
             '  t = pred[] constant(true)', '  f = pred[] constant(false)']
    specs = [('s32', '{1}', 'add_s32', 'z32'), ('s32', '{0}', 'mul_s32', 'o32'), ('s32', '{1}', 'max_s32', 'lo32'),
             ('s32', '{0}', 'min_s32', 'hi32'), ('s32', '{0,1}', 'add_s32', 'z32'),
             ('u8', '{0}', 'add_u8', 'z8'), ('u8', '{1}', 'max_u8', 'z8'),
             ('u32', '{0}', 'max_u32', 'zu32'), ('u32', '{0}', 'add_u32', 'zu32'),
             ('s64', '{1}', 'add_s64', 'z64'), ('u64', '{0}', 'max_u64', 'zu64'), ('u64', '{0}', 'min_u64', 'hu64'),
             ('s8', '{1}', 'min_s8', 'hs8'), ('s8', '{0}', 'add_s8', 'zs8'),
             ('s16', '{1}', 'xor_s16', 'z16'), ('s16', '{0}', 'and_s16', 'm16'),
             ('p', '{1}', 'and_pred', 't'), ('np', '{1}', 'or_pred', 'f')]
    names, shapes = [], []
    for k, ((src, dims, fn, ini), (ty, r)) in enumerate(zip(specs, exp)):
        s = shp(ty, np.shape(r))
        lines.append('  r%d = %s reduce(%s, %s), dimensions=%s, to_apply=%s' % (k, s, src, ini, dims, fn))
        names.append('r%d' % k)
        shapes.append(s)
    comps = ''.join(comp(n, n.split('_')[1], {'add': 'add', 'mul': 'multiply', 'max': 'maximum', 'min': 'minimum',
                                              'xor': 'xor', 'and': 'and', 'or': 'or'}[n.split('_')[0]])
                    for n in sorted({s[2] for s in specs}))
    body = 'HloModule reduce_int\n\n' + comps + '\n' + entry(lines, names, shapes).replace('ROOT t =', 'ROOT res =')
    write(out('reduce_int.hlo'), SCRIPT, '// Integer reductions wrap in the element type; unsigned compares.\n' + body,
          exp)


# ---- reduce-window -----------------------------------------------------------

def rw_case(lines, names, shapes, exp, k, ty, src, x, init_name, init, fn_name, fn, size, stride=None, pads=None,
            lhs=None, rhs=None):
    r = reduce_window(x, init, fn, size, stride, pads, lhs, rhs)
    nd = len(size)
    stride = stride or [1] * nd
    pads = pads or [(0, 0)] * nd
    lhs = lhs or [1] * nd
    rhs = rhs or [1] * nd
    win = 'size=%s stride=%s pad=%s lhs_dilate=%s rhs_dilate=%s' % (
        'x'.join(map(str, size)), 'x'.join(map(str, stride)), 'x'.join('%d_%d' % p for p in pads),
        'x'.join(map(str, lhs)), 'x'.join(map(str, rhs)))
    s = shp(ty, r.shape)
    lines.append('  r%d = %s reduce-window(%s, %s), window={%s}, to_apply=%s' % (k, s, src, init_name, win, fn_name))
    names.append('r%d' % k)
    shapes.append(s)
    exp.append((ty, r))


def reduce_window_f32():
    x = rng.integers(-9, 10, size=(4, 6)).astype(np.float32)
    lines = [const('x', 'f32', x), '  zero = f32[] constant(0)', '  ninf = f32[] constant(-inf)',
             '  pinf = f32[] constant(inf)']
    names, shapes, exp = [], [], []
    cases = [
        dict(init_name='ninf', init=-np.inf, fn_name='max', fn=np.maximum, size=[2, 3], stride=[2, 3]),
        dict(init_name='ninf', init=-np.inf, fn_name='max', fn=np.maximum, size=[3, 3], pads=[(1, 1), (1, 1)]),
        dict(init_name='zero', init=0, fn_name='add', fn=np.add, size=[2, 2], stride=[2, 2], pads=[(1, 0), (0, 1)]),
        dict(init_name='zero', init=0, fn_name='add', fn=np.add, size=[2, 3], lhs=[2, 1], pads=[(1, 1), (0, 0)]),
        dict(init_name='zero', init=0, fn_name='add', fn=np.add, size=[2, 2], rhs=[2, 3]),
        dict(init_name='pinf', init=np.inf, fn_name='min', fn=np.minimum, size=[2, 2], pads=[(-1, 0), (0, -2)]),
        dict(init_name='zero', init=0, fn_name='add', fn=np.add, size=[3, 2], stride=[2, 3], pads=[(2, 1), (1, 2)],
             lhs=[2, 2], rhs=[2, 1]),
        dict(init_name='zero', init=0, fn_name='add', fn=np.add, size=[1, 1]),
    ]
    for k, c in enumerate(cases):
        rw_case(lines, names, shapes, exp, k, 'f32', 'x', x, **c)
    body = 'HloModule reduce_window_f32\n\n' + comp('add', 'f32', 'add') + comp('max', 'f32', 'maximum') + \
        comp('min', 'f32', 'minimum') + '\n' + entry(lines, names, shapes)
    write(out('reduce_window_f32.hlo'), SCRIPT,
          '// Pools with stride, padding (negative too), base and window dilation; exact integers.\n' + body, exp)


def reduce_window_int():
    x = rng.integers(-100, 100, size=(2, 5, 4)).astype(np.int32)
    u = rng.integers(0, 256, size=(6, 5)).astype(np.uint8)
    lines = [const('x', 's32', x), const('u', 'u8', u), '  z = s32[] constant(0)', '  z8 = u8[] constant(0)']
    names, shapes, exp = [], [], []
    rw_case(lines, names, shapes, exp, 0, 's32', 'x', x, 'z', 0, 'add', np.add, [1, 3, 2], [1, 2, 1],
            [(0, 0), (1, 1), (0, 1)], [1, 1, 2], [1, 1, 2])
    with np.errstate(over='ignore'):
        rw_case(lines, names, shapes, exp, 1, 'u8', 'u', u, 'z8', np.uint8(0), 'add8',
                lambda a, b: np.uint8(a + b), [3, 2], [1, 1])
    rw_case(lines, names, shapes, exp, 2, 'u8', 'u', u, 'z8', np.uint8(0), 'max8', np.maximum, [2, 3], [2, 1],
            [(1, 1), (0, 0)])
    body = 'HloModule reduce_window_int\n\n' + comp('add', 's32', 'add') + comp('add8', 'u8', 'add') + \
        comp('max8', 'u8', 'maximum') + '\n' + entry(lines, names, shapes)
    write(out('reduce_window_int.hlo'), SCRIPT, '// Integer windows: s32 sums, u8 sums that wrap, u8 max.\n' + body,
          exp)


def reduce_window_tolerance():
    x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    r = reduce_window(x.astype(np.float64), 0.0, np.add, [1, 3, 3, 1], [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)])
    body = 'HloModule reduce_window_tolerance\n\n' + comp('add', 'f32', 'add') + '''
ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2,5,5,3] reduce-window(x, z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=add
}
'''
    write(out('reduce_window_tolerance.hlo'), SCRIPT, '// Real-valued NHWC sum pool.\n' + body, [('f32', r)],
          params=[('f32', x)], tol=1e-5)


# ---- select-and-scatter --------------------------------------------------------

def select_and_scatter_ref(x, src, init, prefer, size, stride, pads):
    """For each window (in-bounds elements only, row-major window order) keep
    the first element, replacing it by each later one `prefer(cur, cand)`
    rejects; add the source value there."""
    res = np.full(x.shape, init, dtype=src.dtype)
    for o in np.ndindex(*src.shape):
        best = None
        for k in np.ndindex(*size):
            pos = tuple(oi * st + ki - lo for oi, st, ki, (lo, _) in zip(o, stride, k, pads))
            if any(p < 0 or p >= n for p, n in zip(pos, x.shape)):
                continue
            if best is None or not prefer(x[best], x[pos]):
                best = pos
        if best is not None:
            res[best] += src[o]
    return res


def select_and_scatter():
    x = rng.integers(0, 4, size=(5, 6)).astype(np.float32)  # many ties
    xi = rng.integers(-5, 5, size=(4, 4)).astype(np.int32)
    lines = [const('x', 'f32', x), const('xi', 's32', xi), '  z = f32[] constant(0)', '  zi = s32[] constant(0)']
    names, shapes, exp = [], [], []
    cases = [('x', x, 'f32', 'z', 'ge', lambda a, b: a >= b, [2, 2], [2, 2], [(0, 1), (0, 0)]),
             ('x', x, 'f32', 'z', 'gt', lambda a, b: a > b, [3, 3], [1, 1], [(1, 1), (1, 1)]),
             ('x', x, 'f32', 'z', 'le', lambda a, b: a <= b, [2, 3], [2, 1], [(1, 0), (0, 2)]),
             ('xi', xi, 's32', 'zi', 'ge_s32', lambda a, b: a >= b, [3, 2], [1, 2], [(1, 1), (0, 0)])]
    for k, (name, a, ty, init, sel, prefer, size, stride, pads) in enumerate(cases):
        win_shape = [(n + lo + hi - s) // st + 1 for n, s, st, (lo, hi) in zip(a.shape, size, stride, pads)]
        src = rng.integers(1, 10, size=win_shape).astype(a.dtype)
        lines.append(const('s%d' % k, ty, src))
        r = select_and_scatter_ref(a, src, 0, prefer, size, stride, pads)
        win = 'size=%s stride=%s pad=%s' % ('x'.join(map(str, size)), 'x'.join(map(str, stride)),
                                            'x'.join('%d_%d' % p for p in pads))
        s = shp(ty, a.shape)
        lines.append('  r%d = %s select-and-scatter(%s, s%d, %s), window={%s}, select=%s, scatter=%s'
                     % (k, s, name, k, init, win, sel, 'add' if ty == 'f32' else 'add_s32'))
        names.append('r%d' % k)
        shapes.append(s)
        exp.append((ty, r))

    def sel_comp(name, ty, d):
        return ('%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = pred[] compare(a, b), '
                'direction=%s\n}\n' % (name, ty, ty, d))
    body = 'HloModule select_and_scatter\n\n' + comp('add', 'f32', 'add') + comp('add_s32', 's32', 'add') + \
        sel_comp('ge', 'f32', 'GE') + sel_comp('gt', 'f32', 'GT') + sel_comp('le', 'f32', 'LE') + \
        sel_comp('ge_s32', 's32', 'GE') + '\n' + entry(lines, names, shapes)
    write(out('select_and_scatter.hlo'), SCRIPT,
          '// Max/min pooling gradients with ties (GE keeps the first, GT the last), padding, overlap.\n' + body, exp)


if __name__ == '__main__':
    reduce_f32_dims()
    reduce_real_tolerance()
    reduce_int()
    reduce_window_f32()
    reduce_window_int()
    reduce_window_tolerance()
    select_and_scatter()
