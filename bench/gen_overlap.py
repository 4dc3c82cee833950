#!/usr/bin/env python3
"""Writes one data-parallel SGD step of a deep ReLU MLP as sharded XLA HLO
text: the workload of bench/bench_overlap.sh, where every layer's gradient
all-reduce can overlap the backward compute of the layers below it.
Standard library only (the builder of examples/hlo_emit.py).

    bench/gen_overlap.py [--layers 8] [--width 256] [--batch 256] [--data 4]
                         [--lr 0.05] [--no-loss] [-o FILE]

The step, in JAX terms (params = W1..WL, each width x width; x the batch):

    a0     = x - 0.5
    z_i    = a_{i-1} @ W_i ;  a_i = relu(z_i)         for i = 1..L
    loss   = sum(a_L ** 2) / (2 * batch)
    g      = a_L / batch
    for i = L..1:
        gz   = g * (z_i > 0)
        dW_i = a_{i-1}^T @ gz          # contracts the batch: one all-reduce
        g    = gz @ W_i^T              # (not for i = 1)
    W_i'   = W_i - lr * dW_i
    return loss, W_1', ..., W_L'

Mesh (data,) over `--data` devices: x and every activation split over the
batch, the weights replicated. The partitioner turns each dW_i into a local
dot plus an all-reduce over every device, so with `tessera run --slices 2`
each gradient crosses slices; the scheduler can start the all-reduce of
layer i as soon as dW_i exists and finish it just before W_i's update,
hiding it behind the backward of layers i-1..1. The backward of a layer
costs about twice its forward (two dots against one), so communication can
hide behind at most (L-1) layers' backward: about 2/3 of the compute.

Outputs 1..L alias parameters 0..L-1 (the training loop updates the weights
in place); parameter L is the batch. --no-loss drops the loss output (its
reduction is one more all-reduce across slices).
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from hlo_emit import Builder, Mesh, write_module  # noqa: E402


def build(layers, width, batch, data, lr, with_loss):
    mesh = Mesh([("data", data)])
    g = Builder("jit_train_step", "train_step")
    L, H, B = layers, width, batch
    s_w = mesh.sharding([None, None])
    s_x = mesh.sharding(["data", None])
    ws = [g.parameter(i, "f32", (H, H), s_w, "params[%d]" % i) for i in range(L)]
    x = g.parameter(L, "f32", (B, H), s_x, "x")

    root = g.scope
    g.scope = root + "/normalize"
    a = [g.binary("subtract", x, g.full(0.5, (B, H), "sub"), "sub")]
    zeros = g.full(0, (B, H), "max")

    g.scope = root + "/jvp(mlp)"
    z = [None]
    for i in range(1, L + 1):
        zi = g.constrain(g.dot(a[i - 1], ws[i - 1], (1,), (0,)), s_x)
        z.append(zi)
        a.append(g.binary("maximum", zi, zeros, "max"))

    results, shardings = [], []
    if with_loss:
        g.scope = root + "/loss"
        sq = g.reduce(g.binary("multiply", a[L], a[L], "mul"), "add", (0, 1), "reduce_sum")
        loss = g.binary("divide", sq, g.constant(float(2 * B)), "div")
        results.append(loss)
        shardings.append("{replicated}")

    # Backward: dW_i first, then the cotangent for the layer below, so each
    # gradient exists as early as program order allows.
    g.scope = root + "/transpose(jvp(mlp))"
    grad = g.binary("divide", a[L], g.full(float(B), (B, H), "div"), "div")
    dws = [None] * (L + 1)
    for i in range(L, 0, -1):
        gz = g.select(g.compare(z[i], zeros, "GT", "gt"), grad, zeros)
        dws[i] = g.dot(a[i - 1], gz, (0,), (0,))
        if i > 1:
            grad = g.constrain(g.dot(gz, ws[i - 1], (1,), (1,)), s_x)

    g.scope = root + "/sgd"
    for i in range(1, L + 1):
        w = ws[i - 1]
        scaled = g.binary("multiply", dws[i], g.full(lr, w.dims, "mul"), "mul")
        results.append(g.binary("subtract", w, scaled, "sub"))
        shardings.append(s_w)

    off = 1 if with_loss else 0
    aliases = [(i + off, i) for i in range(L)]
    return g.text(results, shardings, aliases=aliases, num_partitions=mesh.size)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=8, help="layers (default 8)")
    ap.add_argument("--width", type=int, default=256, help="units per layer (default 256)")
    ap.add_argument("--batch", type=int, default=256, help="global batch size (default 256)")
    ap.add_argument("--data", type=int, default=4, help="data-parallel devices (default 4)")
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (default 0.05)")
    ap.add_argument("--no-loss", dest="loss", action="store_false", help="no loss output")
    ap.add_argument("-o", "--output", help="output file (default: standard output)")
    a = ap.parse_args(argv)
    for name in ("layers", "width", "batch", "data"):
        if getattr(a, name) < 1:
            ap.error("--%s wants a positive integer" % name)
    if a.batch % a.data:
        ap.error("--batch %d is not divisible by --data %d" % (a.batch, a.data))
    text = build(a.layers, a.width, a.batch, a.data, a.lr, a.loss)
    write_module(text, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
