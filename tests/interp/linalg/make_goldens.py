#!/usr/bin/python3
"""Writes the numpy goldens of tests/interp/linalg: cholesky,
triangular-solve, fft and batch norm. Run: /usr/bin/python3 make_goldens.py
(the hand goldens in this folder are not written by it)."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ next to the goldens
sys.path.insert(0, os.path.join(HERE, '..', 'reduce'))
from goldens_lib import const, write  # noqa: E402

SCRIPT = 'tests/interp/linalg/make_goldens.py'
rng = np.random.default_rng(112926)


def out(name):
    return os.path.join(HERE, name)


def shp(ty, dims):
    return '%s[%s]' % (ty, ','.join(str(d) for d in dims))


def module(name, comment, lines, results):
    names = ['r%d' % k for k in range(len(results))]
    shapes = [shp(ty, np.shape(a)) for ty, a in results]
    body = 'HloModule %s\n\nENTRY main {\n%s\n  ROOT t = (%s) tuple(%s)\n}\n' % (
        name, '\n'.join(lines), ', '.join(shapes), ', '.join(names))
    return '// %s\n%s' % (comment, body)


def junk_other_triangle(a, lower, value=77):
    """a with the triangle the op must not read overwritten."""
    a = a.copy()
    n = a.shape[-1]
    mask = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    a[..., mask] = value
    return a


# ---- cholesky ------------------------------------------------------------------

def int_lower(n, batch=()):
    L = np.tril(rng.integers(-3, 4, size=batch + (n, n))).astype(np.float64)
    idx = np.arange(n)
    L[..., idx, idx] = rng.integers(1, 4, size=batch + (n,))
    return L


def cholesky():
    lines, results = [], []
    L = int_lower(3)
    A = L @ L.T
    lines.append(const('a0', 'f32', junk_other_triangle(A, True)))
    lines.append('  r0 = f32[3,3] cholesky(a0), lower=true')
    results.append(('f32', L))
    U = int_lower(4).T
    A = U.T @ U
    lines.append(const('a1', 'f32', junk_other_triangle(A, False)))
    lines.append('  r1 = f32[4,4] cholesky(a1), lower=false')
    results.append(('f32', U))
    Lb = int_lower(4, (2,))
    Ab = Lb @ np.swapaxes(Lb, -1, -2)
    lines.append(const('a2', 'f64', junk_other_triangle(Ab, True)))
    lines.append('  r2 = f64[2,4,4] cholesky(a2), lower=true')
    results.append(('f64', Lb))
    write(out('cholesky.hlo'), SCRIPT,
          module('cholesky', 'a = l l^T with small-integer l: exact. The unread triangle holds 77; the result\'s '
                 'other triangle is zero.', lines, results), results)


# ---- triangular-solve ------------------------------------------------------------

def tri(n, lower, unit, batch=()):
    a = rng.integers(-3, 4, size=batch + (n, n)).astype(np.float64)
    a = np.tril(a) if lower else np.triu(a)
    idx = np.arange(n)
    a[..., idx, idx] = 1 if unit else rng.choice([1, 2, 4, -2], size=batch + (n,))
    return a


def nonzero(shape):
    """Integers in [-5, 5] without 0 (a computed 0 may come out as -0)."""
    return rng.choice([-5, -4, -3, -2, -1, 1, 2, 3, 4, 5], size=shape).astype(np.float64)


def triangular_solve():
    lines, results = [], []
    k = 0
    for left in (True, False):
        for lower in (True, False):
            for trans in ('NO_TRANSPOSE', 'TRANSPOSE', 'ADJOINT'):
                for unit in (False, True):
                    if trans == 'ADJOINT' and unit:
                        continue
                    m, n = 4, 3
                    a = tri(m, lower, unit)
                    op = a.T if trans != 'NO_TRANSPOSE' else a
                    x = nonzero((m, n) if left else (n, m))
                    b = op @ x if left else x @ op
                    stored = junk_other_triangle(a, lower)
                    if unit:
                        stored[np.arange(m), np.arange(m)] = 5  # must not be read
                    lines.append(const('a%d' % k, 'f32', stored))
                    lines.append(const('b%d' % k, 'f32', b))
                    lines.append('  r%d = %s triangular-solve(a%d, b%d), left_side=%s, lower=%s, unit_diagonal=%s, '
                                 'transpose_a=%s' % (k, shp('f32', x.shape), k, k, str(left).lower(),
                                                     str(lower).lower(), str(unit).lower(), trans))
                    results.append(('f32', x))
                    k += 1
    a = tri(3, True, False, (2,))
    x = nonzero((2, 3, 2))
    lines.append(const('a%d' % k, 'f64', junk_other_triangle(a, True)))
    lines.append(const('b%d' % k, 'f64', a @ x))
    lines.append('  r%d = f64[2,3,2] triangular-solve(a%d, b%d), left_side=true, lower=true, unit_diagonal=false, '
                 'transpose_a=NO_TRANSPOSE' % (k, k, k))
    results.append(('f64', x))
    write(out('triangular_solve.hlo'), SCRIPT,
          module('triangular_solve', 'b = op(a) x or x op(a) with integer x and diagonals in {1,2,4,-2}: '
                 'substitution is exact. The unread triangle holds 77, a unit diagonal holds 5.', lines, results),
          results)


# ---- fft -------------------------------------------------------------------------

def fft():
    lines, results, params = [], [], []
    pn = 0

    def param(ty, a):
        nonlocal pn
        lines.append('  p%d = %s parameter(%d)' % (pn, shp(ty, a.shape), pn))
        params.append((ty, a))
        pn += 1
        return 'p%d' % (pn - 1)

    def cplx(shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    def case(ty_out, res, src, kind, length):
        k = len(results)
        lines.append('  r%d = %s fft(%s), fft_type=%s, fft_length={%s}' % (
            k, shp(ty_out, res.shape), src, kind, ','.join(map(str, length))))
        results.append((ty_out, res))

    x = cplx((8,))
    case('c64', np.fft.fft(x), param('c64', x), 'FFT', [8])
    case('c64', np.fft.ifft(x), 'p0', 'IFFT', [8])
    y = cplx((2, 6))
    case('c64', np.fft.fft(y), param('c64', y), 'FFT', [6])
    z = cplx((2, 4, 6))
    case('c64', np.fft.fft2(z), param('c64', z), 'FFT', [4, 6])
    case('c64', np.fft.ifft2(z), 'p2', 'IFFT', [4, 6])
    w = cplx((2, 3, 4))
    case('c64', np.fft.fftn(w), param('c64', w), 'FFT', [2, 3, 4])
    r = rng.standard_normal((3, 8)).astype(np.float32)
    case('c64', np.fft.rfft(r), param('f32', r), 'RFFT', [8])
    r7 = rng.standard_normal((7,)).astype(np.float32)
    case('c64', np.fft.rfft(r7), param('f32', r7), 'RFFT', [7])
    r2 = rng.standard_normal((4, 6)).astype(np.float32)
    case('c64', np.fft.rfft2(r2), param('f32', r2), 'RFFT', [4, 6])
    h = cplx((3, 5))
    case('f32', np.fft.irfft(h, 8), param('c64', h), 'IRFFT', [8])
    h7 = cplx((4,))
    case('f32', np.fft.irfft(h7, 7), param('c64', h7), 'IRFFT', [7])
    h2 = cplx((4, 4))
    case('f32', np.fft.irfft2(h2, (4, 6)), param('c64', h2), 'IRFFT', [4, 6])
    d = (rng.standard_normal((5,)) + 1j * rng.standard_normal((5,)))
    case('c128', np.fft.fft(d), param('c128', d), 'FFT', [5])
    body = module('fft', 'FFT/IFFT/RFFT/IRFFT over 1 to 3 axes, power-of-two and other lengths; '
                  'numpy.fft is the reference.', lines, results)
    write(out('fft.hlo'), SCRIPT, body, results, params=params, tol=1e-5)


# ---- batch norm --------------------------------------------------------------------

def batch_norm():
    lines, results, params = [], [], []
    eps = np.float64(np.float32(0.001))

    def p(ty, a):
        k = len(params)
        lines.append('  p%d = %s parameter(%d)' % (k, shp(ty, a.shape), k))
        params.append((ty, a))
        return 'p%d' % k

    def moveaxis_stats(x, f):
        axes = tuple(d for d in range(x.ndim) if d != f)
        return axes, [1 if d != f else x.shape[f] for d in range(x.ndim)]

    # training, f32, feature 1
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    g = rng.uniform(0.5, 2, 3).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    X = x.astype(np.float64)
    axes, bs = moveaxis_stats(X, 1)
    mean, var = X.mean(axes), X.var(axes)
    y = (X - mean.reshape(bs)) / np.sqrt(var.reshape(bs) + eps) * g.reshape(bs) + b.reshape(bs)
    px, pg, pb = p('f32', x), p('f32', g), p('f32', b)
    lines.append('  t0 = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(%s, %s, %s), epsilon=0.001, '
                 'feature_index=1' % (px, pg, pb))
    lines += ['  r0 = f32[2,3,4] get-tuple-element(t0), index=0', '  r1 = f32[3] get-tuple-element(t0), index=1',
              '  r2 = f32[3] get-tuple-element(t0), index=2']
    results += [('f32', y), ('f32', mean), ('f32', var)]
    # inference, f64, feature 0 of [5,4]
    x = rng.standard_normal((5, 4))
    g, b, m, v = rng.uniform(0.5, 2, 5), rng.standard_normal(5), rng.standard_normal(5), rng.uniform(0.1, 2, 5)
    e2 = np.float64(np.float32(0.01))
    y = (x - m[:, None]) / np.sqrt(v[:, None] + e2) * g[:, None] + b[:, None]
    names = [p('f64', a) for a in (x, g, b, m, v)]
    lines.append('  r3 = f64[5,4] batch-norm-inference(%s), epsilon=0.01, feature_index=0' % ', '.join(names))
    results.append(('f64', y))
    # grad, f32, feature 2 of [2,2,3]
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    g = rng.uniform(0.5, 2, 3).astype(np.float32)
    m = rng.standard_normal(3).astype(np.float32)
    v = rng.uniform(0.1, 2, 3).astype(np.float32)
    dy = rng.standard_normal((2, 2, 3)).astype(np.float32)
    X, G, M, V, DY = (a.astype(np.float64) for a in (x, g, m, v, dy))
    axes = (0, 1)
    N = 4
    rstd = 1 / np.sqrt(V + eps)
    xc = X - M
    grad_offset = DY.sum(axes)
    grad_scale = (DY * xc).sum(axes) * rstd
    grad_x = G * rstd * (DY - grad_offset / N - xc * (DY * xc).sum(axes) / N / (V + eps))
    names = [p('f32', a) for a in (x, g, m, v, dy)]
    lines.append('  t1 = (f32[2,2,3], f32[3], f32[3]) batch-norm-grad(%s), epsilon=0.001, feature_index=2'
                 % ', '.join(names))
    lines += ['  r4 = f32[2,2,3] get-tuple-element(t1), index=0', '  r5 = f32[3] get-tuple-element(t1), index=1',
              '  r6 = f32[3] get-tuple-element(t1), index=2']
    results += [('f32', grad_x), ('f32', grad_scale), ('f32', grad_offset)]
    write(out('batch_norm.hlo'), SCRIPT,
          module('batch_norm', 'Training (biased variance), inference and grad (XLA\'s formulas), epsilon as f32.',
                 lines, results), results, params=params, tol=1e-5)


if __name__ == '__main__':
    cholesky()
    triangular_solve()
    fft()
    batch_norm()
