#!/usr/bin/env python3
"""Goldens for test_costmodel_interp.c, computed from the documented rules
(costmodel/ts_costmodel.h, reference/cost_models.md §2) without the C code.
GEMMs: inverse-distance weights 1/d^2 in log2 coordinates over the cell around
the query. Collectives, weighted: time linear in size between the measured
sizes of the queried device count (the latency floor below, saturated
throughput beyond), then linear in log2(devices) between the nearest measured
counts. Both: XLA's per-dimension nearest snap. Prints the values the test
embeds."""
import itertools, math

# collective tables: all-reduce, contiguous groups; (bytes, devices) -> bytes/s
COLL = {(1024, 2): 1e9, (4096, 2): 4e9, (1024, 4): 0.5e9, (4096, 4): 2e9}
# times 2, 4, 8 us at 2 devices; 4.096 us at 4 (its only point); 4, 16 us at 8
COLL2 = {(1024, 2): 512e6, (4096, 2): 1024e6, (16384, 2): 2048e6, (4096, 4): 1e9,
         (1024, 8): 256e6, (16384, 8): 1024e6}
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

def count_time(table, g, b, skip=None):
    """Time of b bytes from the sizes measured at g devices, None if none."""
    s = sorted((p[0], p[0] / v) for p, v in table.items() if p[1] == g and p != skip)
    if not s: return None
    if b <= s[0][0]: return s[0][1]                 # latency floor
    if b >= s[-1][0]: return b * s[-1][1] / s[-1][0]  # saturated throughput
    for (b0, t0), (b1, t1) in zip(s, s[1:]):
        if b0 <= b <= b1: return t0 + (t1 - t0) * (b - b0) / (b1 - b0)

def coll_time(x, mode, skip=None, table=COLL):
    b, g = x
    if mode == "nearest":
        return b / snap(table, x, skip)
    t = count_time(table, g, b, skip)
    if t is not None: return t
    counts = sorted({p[1] for p in table if p != skip})
    lo = [c for c in counts if c < g]
    hi = [c for c in counts if c > g]
    if not hi: return count_time(table, lo[-1], b, skip)
    if not lo: return count_time(table, hi[0], b, skip)
    f = (math.log2(g) - math.log2(lo[-1])) / (math.log2(hi[0]) - math.log2(lo[-1]))
    return (1 - f) * count_time(table, lo[-1], b, skip) + f * count_time(table, hi[0], b, skip)

def loo(table, mode):
    apes = []
    for p, v in table.items():
        meas = p[0] / v
        pred = coll_time(p, mode, skip=p, table=table)
        apes.append(100 * abs(pred - meas) / meas)
    return sum(apes) / len(apes), max(apes), apes

for q in [(2048, 2), (1500, 2), (1024, 3), (32768, 2), (256, 2), (1024, 8), (1500, 3)]:
    print("coll weighted", q, repr(coll_time(q, "weighted")))
for q in [(2048, 2), (3072, 2), (2560, 2), (256, 2), (1024, 3), (32768, 4)]:
    print("coll nearest", q, repr(coll_time(q, "nearest")))
for mode in ("weighted", "nearest"):
    m, mx, _ = loo(COLL, mode)
    print("coll loo", mode, repr(m), repr(mx))
for q in [(2048, 2), (8192, 2), (2048, 3), (2048, 6), (65536, 2), (512, 8), (16384, 16), (3000, 4)]:
    print("coll2 weighted", q, repr(coll_time(q, "weighted", table=COLL2)))
m, mx, apes = loo(COLL2, "weighted")
print("coll2 loo weighted", repr(m), repr(mx), [round(a, 6) for a in apes])

# noise-free alpha-beta table: 20 us * log2(D) + S / 3 GB/s, S = 1K..64M
# doubling, D = 2, 4, 8, throughputs rounded to whole bytes/s as stored
AB = {(b, d): round(b / (20e-6 * math.log2(d) + b / 3e9))
      for d in (2, 4, 8) for b in (1024 << i for i in range(17))}
m, mx, _ = loo(AB, "weighted")
print("alpha-beta loo weighted", repr(m), repr(mx))
# the former rule, throughput averaged over the cell (1/d^2 in log2 units)
apes = [100 * abs(p[0] / cell(AB, p, skip=p) - p[0] / v) / (p[0] / v) for p, v in AB.items()]
print("alpha-beta loo, throughput averaged", repr(sum(apes) / len(apes)))

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
