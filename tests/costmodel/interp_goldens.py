#!/usr/bin/env python3
"""Goldens for test_costmodel_interp.c, computed from the documented rules
(costmodel/ts_costmodel.h, reference/cost_models.md §2) without the C code:
inverse-distance weights 1/d^2 in log2 coordinates over the cell around the
query, and XLA's per-dimension nearest snap. Prints the values the test embeds."""
import itertools, math

# collective table: all-reduce, contiguous groups; (bytes, devices) -> bytes/s
COLL = {(1024, 2): 1e9, (4096, 2): 4e9, (1024, 4): 0.5e9, (4096, 4): 2e9}
# GEMM table: bf16xbf16->bf16, (b, m, k, n) -> FLOP/s
GEMM = {(1, m, 256, n): f for (m, n), f in
        {(256, 256): 1e12, (256, 512): 2e12, (512, 256): 3e12, (512, 512): 6e12}.items()}

def cell(points, x, skip=None):
    pts = {p: v for p, v in points.items() if p != skip}
    dims = len(x)
    axes = [sorted({p[d] for p in points}) for d in range(dims)]
    xc = [min(max(x[d], axes[d][0]), axes[d][-1]) for d in range(dims)]
    lx = [math.log2(v) for v in xc]
    def box(wide):
        cands = []
        for d in range(dims):
            a = axes[d]
            below = [c for c in a if c < xc[d]]
            above = [c for c in a if c > xc[d]]
            c = []
            if xc[d] in a and not wide:
                c = [xc[d]]
            else:
                if below: c.append(below[-1])
                if xc[d] in a: c.append(xc[d])
                if above: c.append(above[0])
            cands.append(c)
        return itertools.product(*cands)
    for corners in (box(False), box(True), list(pts)):
        ws = vs = 0.0
        for c in corners:
            if c not in pts: continue
            d2 = sum((math.log2(c[d]) - lx[d]) ** 2 for d in range(dims))
            if d2 == 0: return pts[c]
            ws += 1 / d2; vs += pts[c] / d2
        if ws: return vs / ws
    return None

def snap(points, x, skip=None):
    pts = [p for p in points if p != skip]
    s = []
    for d in range(len(x)):
        m = [p for p in pts if list(p[:d]) == s]
        prev = [p[d] for p in m if p[d] < x[d]]
        nxt = [p[d] for p in m if p[d] >= x[d]]
        if prev and (not nxt or x[d] - max(prev) < min(nxt) - x[d]): s.append(max(prev))
        else: s.append(min(nxt))
    return points[tuple(s)]

def coll_time(x, mode, skip=None):
    b, g = x
    if mode == "nearest":
        return b / snap(COLL, x, skip)
    b = max(b, min(p[0] for p in COLL))
    return b / cell(COLL, (b, g), skip)

for q in [(2048, 2), (1500, 2), (1024, 3), (32768, 2), (256, 2), (1024, 8), (1500, 3)]:
    print("coll weighted", q, repr(coll_time(q, "weighted")))
for q in [(2048, 2), (3072, 2), (2560, 2), (256, 2), (1024, 3), (32768, 4)]:
    print("coll nearest", q, repr(coll_time(q, "nearest")))
for mode in ("weighted", "nearest"):
    apes = []
    for p, v in COLL.items():
        meas = p[0] / v
        pred = coll_time(p, mode, skip=p)
        apes.append(100 * abs(pred - meas) / meas)
    print("coll loo", mode, repr(sum(apes) / len(apes)), repr(max(apes)))

def gemm_time(b, m, n, k, mode="weighted"):
    x = (b, m, k, n)
    f = snap(GEMM, x) if mode == "nearest" else cell(GEMM, x)
    return 2 * b * m * n * k / f
for q in [(1, 256, 256, 256), (1, 362, 256, 256), (1, 362, 400, 256), (1, 1024, 512, 256), (4, 512, 512, 1024)]:
    print("gemm weighted", q, repr(gemm_time(*q)))
print("gemm nearest (1,362,400,256)", repr(gemm_time(1, 362, 400, 256, "nearest")))
# f32 has no table: bf16 at the shape with the same bytes per dim (x 4/2)
print("gemm f32 fallback (1,128,128,128)", repr(2 * 128 ** 3 / cell(GEMM, (1, 256, 256, 256))))
print("gemm f32 fallback (1,200,128,128)", repr(2 * 200 * 128 * 128 / cell(GEMM, (1, 400, 256, 256))))
