#!/usr/bin/python3
"""Writes the transcendental elementwise goldens (the other files in this
folder are computed by hand). Expected values come from numpy / Python's math
in double precision on the inputs as rounded to the operand type, then rounded
to the result type: independent of the C kernels. Run from anywhere:
    /usr/bin/python3 tests/interp/elementwise/make_goldens.py
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ next to the goldens
sys.path.insert(0, os.path.dirname(HERE))
from goldens_lib import bf16, const, shape, write as write_golden  # noqa: E402

ROUND = {
    "f32": lambda x: float(np.float32(x)),
    "f64": float,
    "bf16": lambda x: float(bf16(x)),
    "f16": lambda x: float(np.float16(x)),
}


def logistic(x):
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


UNARY = [  # (HLO op, function on a double, inputs)
    ("exponential", math.exp, [-10, -1, -0.5, 0, 0.5, 1, 10, 80]),
    ("exponential-minus-one", math.expm1, [-1, -1e-5, 0, 1e-5, 0.5, 2]),
    ("log", math.log, [1e-5, 0.5, 1, 2, 10, 1e10]),
    ("log-plus-one", math.log1p, [-0.5, -1e-5, 0, 1e-5, 1, 100]),
    ("logistic", logistic, [-20, -1, 0, 1, 20, 100]),
    ("sine", math.sin, [-3, -1, 0, 0.5, 1, 3, 100]),
    ("cosine", math.cos, [-3, -1, 0, 0.5, 1, 3, 100]),
    ("tan", math.tan, [-3, -1, 0, 0.5, 1, 3, 100]),
    ("tanh", math.tanh, [-20, -1, -0.1, 0, 0.1, 1, 20]),
    ("atan", math.atan, [-100, -1, 0, 0.5, 1, 100]),
    ("sinh", math.sinh, [-5, -1, 0, 0.5, 1, 5]),
    ("cosh", math.cosh, [-5, -1, 0, 0.5, 1, 5]),
    ("asin", math.asin, [-1, -0.5, 0, 0.5, 1]),
    ("acos", math.acos, [-1, -0.5, 0, 0.5, 1]),
    ("asinh", math.asinh, [-10, -1, 0, 1, 10]),
    ("acosh", math.acosh, [1, 1.5, 10, 1000]),
    ("atanh", math.atanh, [-0.9, -0.5, 0, 0.5, 0.9]),
    ("erf", math.erf, [-3, -1, -0.1, 0, 0.1, 1, 3]),
    ("cbrt", math.cbrt, [-27, -2, 0, 0.001, 8, 1000]),
    ("sqrt", math.sqrt, [0, 2, 3, 1e-10]),
    ("rsqrt", lambda x: 1 / math.sqrt(x), [0.5, 2, 3, 100]),
]

BINARY = [
    ("atan2", math.atan2, [(1, 1), (1, -1), (-1, -1), (0, -1), (3, 0), (0.5, 2)]),
    ("power", math.pow, [(2, 0.5), (10, -2.5), (0.5, 3.3), (1.5, 100), (-2, 3)]),
    ("remainder", math.fmod, [(5.5, 2), (-5.5, 2), (1e10, 3), (0.3, 0.1)]),
]


def real_module(t, tol, ops):
    r = ROUND[t]
    body, outs, expects = [], [], []
    for k, (op, fn, xs) in enumerate(UNARY):
        if op not in ops:
            continue
        xs = [r(x) for x in xs]
        n = len(xs)
        body.append(const("x%d" % k, t, xs, whole="repr"))
        body.append("  y%d = %s %s(x%d)" % (k, shape(t, [n]), op, k))
        outs.append(("y%d" % k, shape(t, [n])))
        expects.append((t, [r(fn(x)) for x in xs]))
    for k, (op, fn, ps) in enumerate(BINARY):
        if op not in ops:
            continue
        a = [r(p[0]) for p in ps]
        b = [r(p[1]) for p in ps]
        n = len(ps)
        body.append(const("a%d" % k, t, a, whole="repr"))
        body.append(const("b%d" % k, t, b, whole="repr"))
        body.append("  z%d = %s %s(a%d, b%d)" % (k, shape(t, [n]), op, k, k))
        outs.append(("z%d" % k, shape(t, [n])))
        expects.append((t, [r(fn(x, y)) for x, y in zip(a, b)]))
    return body, outs, expects, tol


COMPLEX_UNARY = [
    ("exponential", np.exp),
    ("exponential-minus-one", lambda z: np.expm1(z.real) * np.cos(z.imag) - 2 * np.sin(z.imag / 2) ** 2
     + 1j * np.exp(z.real) * np.sin(z.imag)),
    ("log", np.log),
    ("log-plus-one", lambda z: np.log(1 + z)),
    ("sqrt", np.sqrt),
    ("rsqrt", lambda z: 1 / np.sqrt(z)),
    ("sine", np.sin),
    ("cosine", np.cos),
    ("tan", np.tan),
    ("tanh", np.tanh),
    ("sinh", np.sinh),
    ("cosh", np.cosh),
    ("atan", np.arctan),
    ("asin", np.arcsin),
    ("acos", np.arccos),
    ("asinh", np.arcsinh),
    ("acosh", np.arccosh),
    ("atanh", np.arctanh),
    ("logistic", lambda z: 1 / (1 + np.exp(-z))),
    ("sign", lambda z: z / abs(z)),
]


def complex_module(t, tol):
    part = ROUND["f32" if t == "c64" else "f64"]
    zs = [complex(part(re), part(im)) for re, im in [(0.5, 0.25), (-1, 2), (3, -0.5)]]
    n = len(zs)
    body = [const("x", t, zs, whole="repr")]
    outs, expects = [], []

    def rounded(w):
        return complex(part(w.real), part(w.imag))

    for k, (op, fn) in enumerate(COMPLEX_UNARY):
        body.append("  y%d = %s %s(x)" % (k, shape(t, [n]), op))
        outs.append(("y%d" % k, shape(t, [n])))
        expects.append((t, [rounded(complex(fn(np.complex128(z)))) for z in zs]))
    ws = [complex(part(re), part(im)) for re, im in [(2, 0), (0.5, -1), (-0.25, 0.75)]]
    body.append(const("w", t, ws, whole="repr"))
    body.append("  p = %s power(x, w)" % shape(t, [n]))
    outs.append(("p", shape(t, [n])))
    expects.append((t, [rounded(complex(np.complex128(z) ** np.complex128(w))) for z, w in zip(zs, ws)]))
    return body, outs, expects, tol


def write(name, comment, module):
    """These goldens carry TOLERANCE above the module and spell floats as
    Python's repr (0.0, 2.0)."""
    body, outs, expects, tol = module
    head = "// Generated by make_goldens.py (numpy %s): %s\n// TOLERANCE: %g" % (np.__version__, comment, tol)
    lines = ["HloModule %s" % name, "", "ENTRY main {"] + body
    lines.append("  ROOT t = (%s) tuple(%s)" % (", ".join(s for _, s in outs), ", ".join(v for v, _ in outs)))
    lines.append("}")
    write_golden(os.path.join(HERE, name + ".hlo"), head, "\n".join(lines), expects, whole="repr")


ALL = {op for op, _, _ in UNARY} | {op for op, _, _ in BINARY}
write("transcendental_f32", "f32 transcendental unary ops, atan2, power, remainder "
      "(libm's f32 functions are within a few ulp)", real_module("f32", 2e-6, ALL))
write("transcendental_f64", "f64 transcendental unary ops, atan2, power, remainder",
      real_module("f64", 1e-14, ALL))
write("transcendental_bf16", "bf16 ops compute in f32 and round once to bf16 (tolerance: one bf16 ulp)",
      real_module("bf16", 8e-3, {"exponential", "log", "tanh", "logistic", "sine", "sqrt", "atan2", "power"}))
write("transcendental_f16", "f16 ops compute in f32 and round once to f16 (tolerance: one f16 ulp)",
      real_module("f16", 1e-3, {"exponential", "log", "tanh", "erf", "cosine", "rsqrt", "atan2"}))
write("transcendental_c64", "c64 unary ops and power (computed in double, rounded to f32 parts)",
      complex_module("c64", 1e-6))
write("transcendental_c128", "c128 unary ops and power", complex_module("c128", 1e-13))
