"""Shared by the make_goldens.py scripts of tests/interp/*: HLO literal text
from numpy values, shape strings, bf16 rounding, golden-file paths and
writing, a seeded run of golden groups, and numpy references for windowed
ops (independent of the C kernels: they build the dilated, padded operand
explicitly). Scripts import it after sys.path.insert(0, <this folder>)."""
import os

import numpy as np

INTS = {'s8', 's16', 's32', 's64', 'u8', 'u16', 'u32', 'u64'}


def real(x, whole='int'):
    """HLO text of a real value: nan (-nan with the sign bit), inf, -inf, and
    Python's repr otherwise. `whole` spells whole numbers: 'int' as integers
    (2, 0, -0), 'float' as repr but zeros as 0 and -0, 'repr' as repr (2.0,
    0.0, -0.0). The goldens of each folder keep the spelling they were
    first written with."""
    x = float(x)
    if np.isnan(x):
        return '-nan' if np.signbit(x) else 'nan'
    if np.isinf(x):
        return 'inf' if x > 0 else '-inf'
    if whole != 'repr' and x == 0:
        return '-0' if np.signbit(x) else '0'
    if whole == 'int' and x == int(x) and abs(x) < 2**53:
        return str(int(x))
    return repr(x)


def scalar(v, ty, whole='int'):
    if ty == 'pred':
        return 'true' if v else 'false'
    if ty in INTS:
        return str(int(v))
    if ty.startswith('c'):
        return '(%s, %s)' % (real(np.real(v), whole), real(np.imag(v), whole))
    return real(v, whole)


def lit(a, ty, whole='int'):
    """HLO literal text of an array (nested braces) or a scalar. Pass object
    arrays for integers beyond int64."""
    a = np.asarray(a)
    if a.ndim == 0:
        return scalar(a[()], ty, whole)

    def rec(x):
        if x.ndim == 1:
            return '{' + ', '.join(scalar(v, ty, whole) for v in x) + '}'
        return '{' + ', '.join(rec(s) for s in x) + '}'
    return rec(a)


def shape(ty, dims):
    return '%s[%s]' % (ty, ','.join(str(d) for d in dims))


def const(name, ty, a, whole='int'):
    """An HLO constant instruction line."""
    return '  %s = %s constant(%s)' % (name, shape(ty, np.shape(a)), lit(a, ty, whole))


def tuple_module(name, comment, lines, results):
    """A module whose entry is `lines` (defining r0, r1, ...) and a ROOT
    tuple of them; results are (ty, array) pairs giving the shapes."""
    names = ['r%d' % k for k in range(len(results))]
    shapes = [shape(ty, np.shape(a)) for ty, a in results]
    body = 'HloModule %s\n\nENTRY main {\n%s\n  ROOT t = (%s) tuple(%s)\n}\n' % (
        name, '\n'.join(lines), ', '.join(shapes), ', '.join(names))
    return '// %s\n%s' % (comment, body)


def entry_module(name, comment, comps, body):
    """A module: a comment line, the computations `comps` (text), then ENTRY
    main with the instruction lines `body` (unindented)."""
    lines = ['// ' + comment, 'HloModule ' + name, '']
    for c in comps:
        lines += c.split('\n') + ['']
    lines += ['ENTRY main {'] + ['  ' + b for b in body] + ['}']
    return '\n'.join(lines)


def bf16(x):
    """Rounds float values (an array or a scalar) to bf16, round to nearest
    even, through f32 as numpy has no bf16; the result is float32, of x's
    shape (float() of it for a scalar)."""
    a = np.asarray(x, dtype=np.float32)
    b = a.reshape(-1).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32).reshape(a.shape)


def write(path, head, body, expects=(), params=(), tol=None, error=None, whole='int'):
    """Writes one golden: `head` (comment lines naming the generating
    script), the module text, PARAM lines, TOLERANCE, and EXPECT lines
    ((ty, array) pairs) or an ERROR."""
    lines = [head, body.rstrip('\n')]
    for ty, a in params:
        lines.append('// PARAM: %s %s' % (shape(ty, np.shape(a)), lit(a, ty, whole)))
    if tol is not None:
        lines.append('// TOLERANCE: %g' % tol)
    for ty, a in expects:
        lines.append('// EXPECT: %s %s' % (shape(ty, np.shape(a)), lit(a, ty, whole)))
    if error:
        lines.append('// ERROR: %s' % error)
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def dilate_pad(x, fill, lhs_dil, pads):
    """x with (d-1) `fill` holes between elements per dim, then padded by
    (lo, hi) per dim with `fill` (negative pads crop)."""
    x = np.asarray(x)
    shp = [(n - 1) * d + 1 if n > 0 else 0 for n, d in zip(x.shape, lhs_dil)]
    y = np.full(shp, fill, dtype=x.dtype)
    y[tuple(slice(None, None, d) for d in lhs_dil)] = x
    for ax, (lo, hi) in enumerate(pads):
        if lo < 0:
            y = np.take(y, range(-lo, y.shape[ax]), axis=ax)
        if hi < 0:
            y = np.take(y, range(0, y.shape[ax] + hi), axis=ax)
        w = [(0, 0)] * y.ndim
        w[ax] = (max(lo, 0), max(hi, 0))
        y = np.pad(y, w, constant_values=fill)
    return y


def reduce_window(x, init, op, size, stride=None, pads=None, lhs_dil=None, rhs_dil=None):
    """StableHLO reduce_window: padding and holes hold `init`; op is a numpy
    ufunc-like binary function applied from init in window order."""
    x = np.asarray(x)
    r = x.ndim
    stride = stride or [1] * r
    pads = pads or [(0, 0)] * r
    lhs_dil = lhs_dil or [1] * r
    rhs_dil = rhs_dil or [1] * r
    y = dilate_pad(x, init, lhs_dil, pads)
    eff = [(s - 1) * d + 1 for s, d in zip(size, rhs_dil)]
    out_shape = [0 if e > n else (n - e) // st + 1 for n, e, st in zip(y.shape, eff, stride)]
    out = np.empty(out_shape, dtype=x.dtype)
    for o in np.ndindex(*out_shape):
        sl = tuple(slice(oi * st, oi * st + e, d) for oi, st, e, d in zip(o, stride, eff, rhs_dil))
        acc = np.asarray(init, dtype=x.dtype)[()]
        for v in y[sl].reshape(-1):
            acc = op(acc, v)
        out[o] = acc
    return out


def in_folder(script):
    """out(name): the path of golden `name` in the folder of `script` (the
    __file__ of a make_goldens.py)."""
    here = os.path.dirname(os.path.abspath(script))
    return lambda name: os.path.join(here, name)


def run(seed, *groups):
    """Writes the goldens of each group, in order, all drawing from one
    generator seeded with `seed` (so the bytes depend on the order)."""
    rng = np.random.default_rng(seed)
    for group in groups:
        group(rng)
