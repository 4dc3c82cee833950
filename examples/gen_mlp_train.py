#!/usr/bin/env python3
"""Writes one SGD training step of a two-layer MLP classifier as XLA HLO text,
sharded over a data x model device mesh, as JAX would dump it
(`jax.jit(train_step, in_shardings=..., out_shardings=..., donate_argnums=0)`,
before optimizations). Standard library only.

    examples/gen_mlp_train.py [--batch 64] [--in 256] [--hidden 512] [--classes 16]
                              [--lr 1.5] [--data 2] [--model 2] [-o FILE]

The step, in JAX terms (params = W1, b1, W2, b2; x the data batch):

    xc      = x - 0.5                            # inputs come uniform in (0, 1]
    T       = teacher(in, classes)               # fixed, built from iota
    target  = one_hot(argmax(xc @ T, axis=1))    # labels made in-graph
    h       = relu(xc @ W1 + b1)
    logits  = h @ (W2 - mean(W2, axis=1, keepdims=True)) + b2
    loss    = mean(-sum(target * log_softmax(logits), axis=1))
    params' = params - lr * grad(loss)(params)
    return loss, W1', b1', W2', b2'

teacher(i, c) = (((7 i + 13 c + 3 i c) mod 17) - 8) / 8, exact in f32, so the
labels are a deterministic function of the batch and the loss falls as the MLP
learns the teacher while every step feeds a fresh random batch.

Parameters 0..3 are the weights (outputs 1..4 alias them: the training loop
updates them in place), parameter 4 the batch. Shardings, mesh (data, model)
over devices iota(D*M).reshape(D, M): x and the batch dimension of every
activation split over `data`, the hidden dimension over `model` (Megatron
style: W1 column-split, b1 split, W2 row-split), b2 and the loss replicated.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hlo_emit import Builder, Mesh, training_step_args, write_module  # noqa: E402


def build(batch, n_in, hidden, classes, lr, data, model):
    mesh = Mesh([("data", data), ("model", model)])
    g = Builder("jit_train_step", "train_step")
    B, I, H, C = batch, n_in, hidden, classes

    s_w1 = mesh.sharding([None, "model"])
    s_b1 = mesh.sharding(["model"])
    s_w2 = mesh.sharding(["model", None])
    s_b2 = mesh.sharding([None])
    s_x = mesh.sharding(["data", None])
    w1 = g.parameter(0, "f32", (I, H), s_w1, "params[\\'w1\\']")
    b1 = g.parameter(1, "f32", (H,), s_b1, "params[\\'b1\\']")
    w2 = g.parameter(2, "f32", (H, C), s_w2, "params[\\'w2\\']")
    b2 = g.parameter(3, "f32", (C,), s_b2, "params[\\'b2\\']")
    x = g.parameter(4, "f32", (B, I), s_x, "x")

    # Inputs centred to (-0.5, 0.5]: uncentred inputs put a large eigenvalue
    # on the mean direction and would force a much smaller learning rate.
    root = g.scope
    g.scope = root + "/normalize"
    xc = g.binary("subtract", x, g.full(0.5, (B, I), "sub"), "sub")

    # The teacher's labels: no gradient flows through them.
    g.scope = root + "/labels"
    teacher = g.teacher(I, C)
    tlogits = g.dot(xc, teacher, (1,), (0,))
    tmax = g.reduce(tlogits, "maximum", (1,), "reduce_max")
    is_max = g.compare(tlogits, g.broadcast(tmax, (B, C), (0,), "eq"), "EQ", "eq")
    target = g.convert(is_max, "f32")

    # Forward.
    g.scope = root + "/jvp(mlp)"
    s_act = mesh.sharding(["data", "model"])
    hdot = g.constrain(g.dot(xc, w1, (1,), (0,)), s_act)
    hpre = g.binary("add", hdot, g.broadcast(b1, (B, H), (1,), "add"), "add")
    zeros_bh = g.full(0, (B, H), "max")
    h = g.binary("maximum", hpre, zeros_bh, "max")
    # W2 centred over the classes: the same model (softmax ignores a shift
    # shared by a row's logits), but the logits' common mode never enters the
    # f32 sums, so the step stays well conditioned even for large, all-positive
    # weights (tessera check feeds uniform (0, 1] ones).
    w2mean = g.binary("divide", g.reduce(w2, "add", (1,), "reduce_sum"),
                      g.full(float(C), (H,), "div"), "div")
    w2c = g.binary("subtract", w2, g.broadcast(w2mean, (H, C), (0,), "sub"), "sub")
    logits = g.binary("add", g.dot(h, w2c, (1,), (0,)), g.broadcast(b2, (B, C), (1,), "add"), "add")

    g.scope = root + "/jvp(log_softmax)"
    lmax = g.reduce(logits, "maximum", (1,), "reduce_max")
    shifted = g.binary("subtract", logits, g.broadcast(lmax, (B, C), (0,), "sub"), "sub")
    ex = g.unary("exponential", shifted, "exp")
    lse = g.unary("log", g.reduce(ex, "add", (1,), "reduce_sum"), "log")
    logp = g.binary("subtract", shifted, g.broadcast(lse, (B, C), (0,), "sub"), "sub")

    g.scope = root + "/loss"
    total = g.reduce(g.binary("multiply", target, logp, "mul"), "add", (0, 1), "reduce_sum")
    loss = g.binary("divide", g.unary("negate", total, "neg"), g.constant(float(B)), "div")

    # Backward (what JAX's transpose of the above emits, simplified only by
    # folding the scalar cotangent 1.0 of the loss).
    g.scope = root + "/transpose(jvp(log_softmax))"
    dlogp = g.binary("multiply", target, g.full(-1.0 / B, (B, C), "mul"), "mul")
    dsum = g.reduce(dlogp, "add", (1,), "reduce_sum")
    softmax = g.unary("exponential", logp, "exp")
    dlogits = g.binary("subtract", dlogp,
                       g.binary("multiply", softmax, g.broadcast(dsum, (B, C), (0,), "mul"), "mul"),
                       "sub")

    g.scope = root + "/transpose(jvp(mlp))"
    dw2c = g.dot(h, dlogits, (0,), (0,))
    db2 = g.reduce(dlogits, "add", (0,), "reduce_sum")
    dh = g.dot(dlogits, w2c, (1,), (1,))
    dhpre = g.select(g.compare(hpre, zeros_bh, "GT", "gt"), dh, zeros_bh)
    dw1 = g.dot(xc, dhpre, (0,), (0,))
    dmean = g.binary("divide", g.reduce(dw2c, "add", (1,), "reduce_sum"),
                     g.full(float(C), (H,), "div"), "div")
    dw2 = g.binary("subtract", dw2c, g.broadcast(dmean, (H, C), (0,), "sub"), "sub")
    db1 = g.reduce(dhpre, "add", (0,), "reduce_sum")

    g.scope = root + "/sgd"
    def step(p, grad):
        scaled = g.binary("multiply", grad, g.full(lr, p.dims, "mul"), "mul")
        return g.binary("subtract", p, scaled, "sub")
    new = [step(w1, dw1), step(b1, db1), step(w2, dw2), step(b2, db2)]

    return g.text([loss] + new, ["{replicated}", s_w1, s_b1, s_w2, s_b2],
                  aliases=[(1, 0), (2, 1), (3, 2), (4, 3)], num_partitions=mesh.size)


def main(argv):
    sizes = [("batch", 64, "global batch size"), ("in", 256, "input features"), ("hidden", 512, "hidden units"),
             ("classes", 16, "classes")]
    a = training_step_args(argv, __doc__, sizes, 1.5, [("batch", "data"), ("hidden", "model")])
    text = build(a.batch, a.n_in, a.hidden, a.classes, a.lr, a.data, a.model)
    write_module(text, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
