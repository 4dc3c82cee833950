#!/usr/bin/env python3
"""Offline check (numpy) that the training step gen_mlp_train.py writes makes
the loss fall under the conditions `tessera run --loop` trains it in: weights
initialised as the launcher does (rank >= 2: uniform in [-1/sqrt(d0),
1/sqrt(d0)], d0 the first dimension; rank 1: zeros) and a fresh batch uniform
in (0, 1] every step. Same math as the HLO (mlp_step below, in float32);
prints the loss of every step and a summary per seed.

    /usr/bin/python3 examples/simulate_training.py [--steps 50] [--seeds 3]
        [--batch 64] [--in 256] [--hidden 512] [--classes 16] [--lr 1.5]
"""
import argparse

import numpy as np


def teacher(n_in, classes):
    """The fixed teacher matrix the HLO builds from iota (exact in f32)."""
    i = np.arange(n_in, dtype=np.int64)[:, None]
    c = np.arange(classes, dtype=np.int64)[None, :]
    return ((((7 * i + 13 * c + 3 * i * c) % 17) - 8) / 8).astype(np.float32)


def mlp_step(w1, b1, w2, b2, x, lr):
    """One training step, as the HLO computes it. Returns (loss, w1', b1',
    w2', b2'), float32."""
    f32 = np.float32
    B = x.shape[0]
    C = w2.shape[1]
    xc = x - f32(0.5)
    tl = xc @ teacher(x.shape[1], C)
    target = (tl == tl.max(axis=1, keepdims=True)).astype(f32)
    hpre = xc @ w1 + b1
    h = np.maximum(hpre, f32(0))
    w2c = w2 - w2.sum(axis=1, keepdims=True) / f32(C)
    logits = h @ w2c + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -(target * logp).sum() / f32(B)
    # d loss / d logits for targets whose rows may sum to more than one (ties).
    dlogp = target * f32(-1.0 / B)
    dlogits = dlogp - np.exp(logp) * dlogp.sum(axis=1, keepdims=True)
    dw2c = h.T @ dlogits
    dw2 = dw2c - dw2c.sum(axis=1, keepdims=True) / f32(C)
    db2 = dlogits.sum(axis=0)
    dhpre = np.where(hpre > 0, dlogits @ w2c.T, f32(0))
    dw1 = xc.T @ dhpre
    db1 = dhpre.sum(axis=0)
    lr = f32(lr)
    return (f32(loss), w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2)


def launcher_init(rng, shape):
    if len(shape) >= 2:
        a = 1 / np.sqrt(shape[0])
        return rng.uniform(-a, a, shape).astype(np.float32)
    return np.zeros(shape, np.float32)


def train(steps, seed, B, I, H, C, lr):
    rng = np.random.default_rng(seed)
    params = [launcher_init(rng, s) for s in ((I, H), (H,), (H, C), (C,))]
    losses = []
    for _ in range(steps):
        x = (1 - rng.random((B, I))).astype(np.float32)   # (0, 1]
        loss, *params = mlp_step(*params, x, lr)
        losses.append(float(loss))
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--in", dest="n_in", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1.5)
    a = ap.parse_args()
    for seed in range(a.seeds):
        L = train(a.steps, seed, a.batch, a.n_in, a.hidden, a.classes, a.lr)
        print("seed %d: %s" % (seed, " ".join("%.3f" % v for v in L)))
        k = min(5, len(L))
        print("seed %d: mean loss of steps 1-%d %.3f, of steps %d-%d %.3f"
              % (seed, k, np.mean(L[:k]), len(L) - k + 1, len(L), np.mean(L[-k:])))


if __name__ == "__main__":
    main()
