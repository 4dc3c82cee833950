#!/usr/bin/env python3
"""Makes the golden of the transformer training-step example
(tests/examples/transformer_step/): the module, written by
examples/gen_transformer_train.py at small sizes, its inputs param<i>.npy and
the expected outputs out<k>.npy of one step.

The expected outputs are computed here in float64 from the float32 inputs by
the textbook formulas, written independently of the generator's op sequence:
einsums over [batch, seq, heads, head_dim] tensors for attention and its
backward, the classic layernorm backward
dx = rstd / N * (N dxhat - sum(dxhat) - xhat sum(dxhat xhat)), the softmax
cross-entropy gradient (p - t) / (B S) over every token, and gelu's
derivative by the chain rule. Before writing anything, that backward is
checked against central finite differences of the loss (float64).

    python3 tests/examples/make_transformer_golden.py   (numpy needed; rerun
        after changing the generator, then commit transformer_step/)
    python3 tests/examples/make_transformer_golden.py --simulate [--steps 30]
        [--lr LR] [--seeds 3]   (no files: trains at the example's default
        sizes from the launcher's init on fresh random batches, printing the
        loss, to choose the learning rate; the generator's default 0.25
        takes the loss from about 2.2 to about 0.5 in 30 steps, 1.0 diverges)
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from step_golden import save_arrays, write_module  # noqa: E402

OUT = os.path.join(HERE, "transformer_step")

# Small enough that every file stays a few KB; a 2 x 2 mesh as the default.
SMALL = dict(batch=4, seq=8, n_in=8, dim=16, heads=4, mlp=32, classes=4)
LR = 0.5
EPS = 1e-5
NAMES = ["embed", "ln1_scale", "ln1_bias", "wq", "wk", "wv", "wo", "ln2_scale", "ln2_bias",
         "w_up", "b_up", "w_down", "b_down", "head", "head_bias"]


def gen_args(sz, lr):
    return ["--batch", str(sz["batch"]), "--seq", str(sz["seq"]), "--in", str(sz["n_in"]),
            "--dim", str(sz["dim"]), "--heads", str(sz["heads"]), "--mlp", str(sz["mlp"]),
            "--classes", str(sz["classes"]), "--lr", str(lr), "--data", "2", "--model", "2"]


def shapes(sz):
    I, D, F, C = sz["n_in"], sz["dim"], sz["mlp"], sz["classes"]
    return {"embed": (I, D), "ln1_scale": (D,), "ln1_bias": (D,), "wq": (D, D), "wk": (D, D),
            "wv": (D, D), "wo": (D, D), "ln2_scale": (D,), "ln2_bias": (D,), "w_up": (D, F),
            "b_up": (F,), "w_down": (F, D), "b_down": (D,), "head": (D, C), "head_bias": (C,)}


def ln_fwd(x, gain=None, bias=None):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(var + EPS)
    xhat = (x - mu) * rstd
    y = xhat if gain is None else xhat * (1 + gain) + bias
    return y, (xhat, rstd)


def ln_bwd(dy, cache, gain=None):
    xhat, rstd = cache
    n = xhat.shape[-1]
    dxhat = dy if gain is None else dy * (1 + gain)
    dx = rstd / n * (n * dxhat - dxhat.sum(-1, keepdims=True)
                     - xhat * (dxhat * xhat).sum(-1, keepdims=True))
    lead = tuple(range(dy.ndim - 1))
    return dx, (dy * xhat).sum(lead), dy.sum(lead)


def gelu(u):
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (u + 0.044715 * u ** 3))
    return 0.5 * u * (1 + t), 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * c * (1 + 3 * 0.044715 * u * u)


def step(params, x, heads, lr, tie_check=True):
    """One SGD step in float64. Returns [loss, new params...] (float64) and
    the labels."""
    p = {n: a.astype(np.float64) for n, a in zip(NAMES, params)}
    x = x.astype(np.float64)
    B, S, I = x.shape
    D = p["embed"].shape[1]
    C = p["head"].shape[1]
    H, K = heads, D // heads
    i = np.arange(I)[:, None]
    c = np.arange(C)[None, :]
    teacher = ((7 * i + 13 * c + 3 * i * c) % 17 - 8) / 8.0
    xc = x - 0.5
    # Each token's label: the teacher's argmax on the token plus its sequence's mean.
    tl = (xc + xc.mean(axis=1, keepdims=True)) @ teacher
    labels = tl.argmax(axis=-1)
    if tie_check:
        # Near a tie, float32 may pick another label than float64.
        top2 = np.sort(tl, axis=-1)[..., -2:]
        assert (top2[..., 1] - top2[..., 0]).min() > 1e-4, "teacher logits nearly tied"
    t = np.eye(C)[labels]

    # Forward.
    h0 = xc @ p["embed"]
    a1, c1 = ln_fwd(h0, p["ln1_scale"], p["ln1_bias"])
    q = (a1 @ p["wq"]).reshape(B, S, H, K)
    k = (a1 @ p["wk"]).reshape(B, S, H, K)
    v = (a1 @ p["wv"]).reshape(B, S, H, K)
    sc = np.einsum("bshk,bthk->bhst", q, k) / np.sqrt(K)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    pr = e / e.sum(-1, keepdims=True)
    ctx = np.einsum("bhst,bthk->bshk", pr, v).reshape(B, S, D)
    h1 = h0 + ctx @ p["wo"]
    a2, c2 = ln_fwd(h1, p["ln2_scale"], p["ln2_bias"])
    u = a2 @ p["w_up"] + p["b_up"]
    r, dr_du = gelu(u)
    h2 = h1 + r @ p["w_down"] + p["b_down"]
    f, cf = ln_fwd(h2)
    logits = f @ p["head"] + p["head_bias"]
    z = logits - logits.max(-1, keepdims=True)
    prob = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    loss = -np.mean(np.log((prob * t).sum(-1)))

    # Backward.
    g = {}
    dlog = (prob - t) / (B * S)
    g["head"] = np.einsum("bsd,bsc->dc", f, dlog)
    g["head_bias"] = dlog.sum((0, 1))
    dh2, _, _ = ln_bwd(dlog @ p["head"].T, cf)
    g["b_down"] = dh2.sum((0, 1))
    g["w_down"] = np.einsum("bsf,bsd->fd", r, dh2)
    du = (dh2 @ p["w_down"].T) * dr_du
    g["b_up"] = du.sum((0, 1))
    g["w_up"] = np.einsum("bsd,bsf->df", a2, du)
    dh1_ln, g["ln2_scale"], g["ln2_bias"] = ln_bwd(du @ p["w_up"].T, c2, p["ln2_scale"])
    dh1 = dh2 + dh1_ln
    g["wo"] = np.einsum("bsi,bsd->id", ctx, dh1)
    dctx = (dh1 @ p["wo"].T).reshape(B, S, H, K)
    dpr = np.einsum("bshk,bthk->bhst", dctx, v)
    dv = np.einsum("bhst,bshk->bthk", pr, dctx)
    dsc = pr * (dpr - (dpr * pr).sum(-1, keepdims=True)) / np.sqrt(K)
    dq = np.einsum("bhst,bthk->bshk", dsc, k).reshape(B, S, D)
    dk = np.einsum("bhst,bshk->bthk", dsc, q).reshape(B, S, D)
    dv = dv.reshape(B, S, D)
    g["wq"] = np.einsum("bsd,bse->de", a1, dq)
    g["wk"] = np.einsum("bsd,bse->de", a1, dk)
    g["wv"] = np.einsum("bsd,bse->de", a1, dv)
    da1 = dq @ p["wq"].T + dk @ p["wk"].T + dv @ p["wv"].T
    dh0_ln, g["ln1_scale"], g["ln1_bias"] = ln_bwd(da1, c1, p["ln1_scale"])
    g["embed"] = np.einsum("bsi,bsd->id", xc, dh1 + dh0_ln)
    return [loss] + [p[n] - lr * g[n] for n in NAMES], labels


def gradient_check(params, x, heads, rng, probes=6):
    """The backward above against central differences of the loss, a few
    coordinates per parameter (float64): the golden is only as good as it."""
    params = [a.astype(np.float64) for a in params]
    outs, _ = step(params, x, heads, 1.0)
    grads = [p - n for p, n in zip(params, outs[1:])]
    worst = 0.0
    for i, (p, gr) in enumerate(zip(params, grads)):
        for _ in range(probes):
            j = tuple(rng.integers(0, n) for n in p.shape)
            h = 1e-6
            plus = [a.copy() for a in params]
            minus = [a.copy() for a in params]
            plus[i][j] += h
            minus[i][j] -= h
            fd = (step(plus, x, heads, 0.0)[0][0] - step(minus, x, heads, 0.0)[0][0]) / (2 * h)
            err = abs(fd - gr[j]) / max(abs(fd), np.abs(gr).max(), 1e-12)
            assert err < 1e-5, "gradient of %s%s: backward %g, differences %g" % (NAMES[i], j, gr[j], fd)
            worst = max(worst, err)
    return worst


def launcher_init(rng, shape):
    """tessera run's init: rank >= 2 uniform in +-1/sqrt(dims[0]), rank 1 zeros."""
    if len(shape) >= 2:
        a = 1 / np.sqrt(shape[0])
        return rng.uniform(-a, a, shape)
    return np.zeros(shape)


def simulate(a):
    sz = dict(batch=8, seq=32, n_in=16, dim=64, heads=4, mlp=256, classes=8)
    shp = shapes(sz)
    for seed in range(a.seeds):
        rng = np.random.default_rng(seed)
        params = [launcher_init(rng, shp[n]) for n in NAMES]
        losses = []
        for _ in range(a.steps):
            x = 1 - rng.random((sz["batch"], sz["seq"], sz["n_in"]))
            outs, _ = step(params, x, sz["heads"], a.lr, tie_check=False)
            losses.append(outs[0])
            params = outs[1:]
        head = " ".join("%.3f" % v for v in losses[:5])
        tail = " ".join("%.3f" % v for v in losses[-5:])
        print("seed %d lr %g: %s ... %s  (first 5 mean %.3f, last 5 mean %.3f)"
              % (seed, a.lr, head, tail, np.mean(losses[:5]), np.mean(losses[-5:])))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args(argv)
    if a.simulate:
        simulate(a)
        return 0
    write_module(OUT, "gen_transformer_train.py", gen_args(SMALL, LR), "transformer_train_small.hlo")
    rng = np.random.default_rng(20240611)
    shp = shapes(SMALL)
    params = []
    for n in NAMES:
        if len(shp[n]) >= 2:
            a_ = 1 / np.sqrt(shp[n][0])
            params.append(rng.uniform(-a_, a_, shp[n]).astype(np.float32))
        else:
            # Gains, biases nonzero so that their broadcasts are exercised.
            params.append(rng.uniform(-0.2, 0.2, shp[n]).astype(np.float32))
    x = (1 - rng.random((SMALL["batch"], SMALL["seq"], SMALL["n_in"]))).astype(np.float32)
    save_arrays(OUT, "param", params + [x])
    worst = gradient_check(params, x, SMALL["heads"], np.random.default_rng(1))
    outs, labels = step(params, x, SMALL["heads"], LR)
    save_arrays(OUT, "out", outs)
    print("gradient check: worst relative error %.2g" % worst)
    print("loss %.6f labels %s; wrote %s" % (outs[0], labels.tolist(), OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
