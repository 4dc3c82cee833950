#!/usr/bin/env python3
"""Prints the constants of codegen/math.c's double-evaluated functions (erf,
pow, sine, cosine): polynomial fits and the split constants of pi/2 and 2/pi.

Each polynomial is mpmath's Chebyshev interpolant (chebyfit, near-minimax) of
the function over the stated interval, computed at 200 bits; the printed
error is the maximum over 2001 points (relative, or weighted as stated),
which is what the f32 results need: they round once from double, so a fit
error near 2^-33 adds about 2^-9 ULP. Run: python3 codegen/math_coeffs.py
(mpmath 1.3)."""
import mpmath as mp

mp.mp.prec = 200


def fit(name, f, a, b, n, weight):
    c = mp.chebyfit(f, [a, b], n)
    err = max(abs(mp.polyval(c, x) - f(x)) * weight(x) for x in mp.linspace(a, b, 2001))
    print("%s: %d coefficients on [%s, %s], error 2^%.1f" % (name, n, mp.nstr(a, 8), mp.nstr(b, 8), mp.log(err, 2)))
    print("  {" + ", ".join(mp.nstr(ci, 17, min_fixed=0, max_fixed=0) for ci in c) + "}")


def rel(f):
    return lambda x: 1 / abs(f(x))


# erf(x) = x P(x^2) for |x| < 1
erfx = lambda z: 2 / mp.sqrt(mp.pi) if z == 0 else mp.erf(mp.sqrt(z)) / mp.sqrt(z)
fit("erf: P(z), z = x^2, relative", erfx, 0, 1, 8, rel(erfx))
# erf(x) = 1 - exp(-x^2) R(|x| - 2.5) for 1 <= |x| <= 4; the error that
# matters is R's times exp(-x^2) (an absolute error in erf)
R = lambda u: mp.erfc(u + 2.5) * mp.exp((u + 2.5) ** 2)
fit("erf: R(u), u = |x| - 2.5, times exp(-x^2)", R, -1.5, 1.5, 14, lambda u: mp.exp(-(u + 2.5) ** 2))
# sin(r) = r S(r^2), cos(r) = C(r^2) for |r| <= pi/4
q = (mp.pi / 4) ** 2
sinr = lambda z: 1 if z == 0 else mp.sin(mp.sqrt(z)) / mp.sqrt(z)
cosr = lambda z: mp.cos(mp.sqrt(z))
fit("sin: S(z), z = r^2, relative", sinr, 0, q, 5, rel(sinr))
fit("cos: C(z), z = r^2, relative", cosr, 0, q, 5, rel(cosr))
# log(m) = 2 s A(s^2), s = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2))
smax = ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2
ath = lambda w: 1 if w == 0 else mp.atanh(mp.sqrt(w)) / mp.sqrt(w)
fit("log: A(w), w = s^2, relative", ath, 0, smax, 6, rel(ath))
# 2^t for |t| <= 1/2
p2 = lambda t: mp.power(2, t)
fit("exp2: E(t), relative", p2, -0.5, 0.5, 10, rel(p2))

# Cody-Waite: pi/2 = P1 + P2 + P3, P1 and P2 of 30 bits (k P1 and k P2 exact
# in double for k < 2^23), P3 rounded to double.
h = mp.pi / 2
p1 = mp.floor(h * 2 ** 29) / 2 ** 29
p2c = mp.floor((h - p1) * 2 ** 59) / 2 ** 59
p3 = h - p1 - p2c
print("pi/2 = %s + %s + %s" % tuple(float(v).hex() for v in (p1, p2c, p3)))
print("2/pi = %s, pi/2 = %s" % (float(2 / mp.pi).hex(), float(h).hex()))
# Payne-Hanek: the first 224 fraction bits of 2/pi in 32-bit words
with mp.workprec(300):
    bits = int(mp.floor(2 / mp.pi * mp.mpf(2) ** 224))
print("2/pi words: {" + ", ".join("0x%08x" % ((bits >> (32 * (6 - k))) & 0xFFFFFFFF) for k in range(7)) + "}")
