#!/usr/bin/env python3
"""Makes the golden of the MLP training-step example (tests/examples/mlp_step/):
the module, written by examples/gen_mlp_train.py at small sizes, its inputs
param<i>.npy and the expected outputs out<k>.npy of one step.

The expected outputs are computed here in float64 from the float32 inputs,
by the textbook formulas (softmax cross-entropy gradient (p - t)/B, plain
W2) rather than the HLO's exact op sequence, so that the golden checks the
generated program's math, not a transcription of it. The HLO centres W2
over the classes before the logits; softmax ignores that shift and the
gradient rows (p - t) sum to zero, so the results agree to rounding.

    /usr/bin/python3 tests/examples/make_goldens.py     (numpy needed; rerun
    after changing the generator, then commit mlp_step/)
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from step_golden import save_arrays, write_module  # noqa: E402

OUT = os.path.join(HERE, "mlp_step")

# Small enough that every file stays a few KB; a 2 x 2 mesh as the default.
B, I, H, C, LR = 16, 32, 64, 8, 1.5
GEN_ARGS = ["--batch", str(B), "--in", str(I), "--hidden", str(H), "--classes", str(C),
            "--lr", str(LR), "--data", "2", "--model", "2"]


def step(w1, b1, w2, b2, x):
    w1, b1, w2, b2, x = (a.astype(np.float64) for a in (w1, b1, w2, b2, x))
    i = np.arange(I)[:, None]
    c = np.arange(C)[None, :]
    teacher = ((7 * i + 13 * c + 3 * i * c) % 17 - 8) / 8.0
    xc = x - 0.5
    tl = xc @ teacher
    labels = tl.argmax(axis=1)
    # A tie would make the HLO's target row hold two ones; keep inputs clear of it.
    top2 = np.sort(tl, axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0]).min() > 1e-3, "teacher logits nearly tied"
    t = np.eye(C)[labels]
    hpre = xc @ w1 + b1
    h = np.maximum(hpre, 0)
    logits = h @ w2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(B), labels]))
    g = (p - t) / B
    dw2 = h.T @ g
    db2 = g.sum(axis=0)
    dh = (g @ w2.T) * (hpre > 0)
    dw1 = xc.T @ dh
    db1 = dh.sum(axis=0)
    outs = [loss, w1 - LR * dw1, b1 - LR * db1, w2 - LR * dw2, b2 - LR * db2]
    return [np.asarray(o, dtype=np.float32) for o in outs]


def main():
    write_module(OUT, "gen_mlp_train.py", GEN_ARGS, "mlp_train_small.hlo")
    rng = np.random.default_rng(20240607)
    # The launcher's init for the weights; biases nonzero so that their
    # broadcasts are exercised too; the batch uniform in (0, 1].
    w1 = rng.uniform(-1 / np.sqrt(I), 1 / np.sqrt(I), (I, H)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, H).astype(np.float32)
    w2 = rng.uniform(-1 / np.sqrt(H), 1 / np.sqrt(H), (H, C)).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, C).astype(np.float32)
    x = (1 - rng.random((B, I))).astype(np.float32)
    params = [w1, b1, w2, b2, x]
    save_arrays(OUT, "param", params)
    outs = step(*params)
    save_arrays(OUT, "out", outs)
    print("loss %.6f; wrote %s" % (float(outs[0]), OUT))


if __name__ == "__main__":
    main()
