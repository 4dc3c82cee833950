#!/usr/bin/env python3
"""Writes one SGD training step of a pre-LN transformer block as XLA HLO text,
sharded over a data x model device mesh (data parallel on the batch,
Megatron-style tensor parallel on the heads and the MLP), as JAX would dump
it before optimizations. Standard library only.

    examples/gen_transformer_train.py [--batch 8] [--seq 32] [--in 16] [--dim 64]
        [--heads 4] [--mlp 256] [--classes 8] [--lr 0.25] [--data 2] [--model 2]
        [-o FILE]

The step, in JAX terms (x: the data batch, [batch, seq, in], uniform in (0, 1]):

    xc      = x - 0.5
    T       = teacher(in, classes)                   # fixed, built from iota
    target  = one_hot(argmax((xc + mean(xc, axis=1, keepdims=True)) @ T))
    h0      = xc @ W_in                              # token embedding
    a1      = layernorm(h0) * (1 + g1) + b1
    q, k, v = split_heads(a1 @ Wq), ... Wk, ... Wv   # [batch, seq, heads, head_dim]
    p       = softmax(q k^T / sqrt(head_dim))        # per batch and head, over keys
    h1      = h0 + merge_heads(p v) @ Wo
    a2      = layernorm(h1) * (1 + g2) + b2
    h2      = h1 + gelu(a2 @ W_up + b_up) @ W_down + b_down
    logits  = layernorm(h2) @ W_head + b_head        # final layernorm, no affine
    loss    = mean over tokens of -sum(target * log_softmax(logits), axis=-1)
    params' = params - lr * grad(loss)(params)
    return loss, params'

Every token is classified (as a language model's head does) by the teacher's
argmax on the token plus its sequence's mean token: the residual path learns
the token's part, attention (uniform at first) the sequence's. teacher(i, c)
= (((7 i + 13 c + 3 i c) mod 17) - 8) / 8, exact in f32, so the labels are a
fixed function of the batch and the loss falls while every step feeds a fresh
random batch. gelu is the tanh approximation (GPT-2's); layernorm's epsilon is
1e-5. The layernorm gains are stored as offsets from 1 (g, used as 1 + g), so
that the launcher's zero init of rank-1 parameters starts them at the
identity; the final layernorm has no affine (the head's weights and bias
would absorb it).

Parameters 0..14 are the weights, in the order W_in, g1, b1, Wq, Wk, Wv, Wo,
g2, b2, W_up, b_up, W_down, b_down, W_head, b_head (output i + 1 aliases
parameter i: the training loop updates them in place); parameter 15 is the
batch. Every weight matrix is stored [fan_in, fan_out] (Wq/Wk/Wv as [dim,
heads * head_dim], Wo as [heads * head_dim, dim]), which the launcher's init
(uniform in +-1/sqrt(dims[0])) assumes. Shardings, mesh (data, model) over
devices iota(D*M).reshape(D, M): the batch dimension of x and of every
activation over `data`; Wq, Wk, Wv and W_up column-split over `model` (so
each device holds whole heads and a slice of the MLP's hidden units), b_up
split, Wo and W_down row-split (their products are partial sums, all-reduced
over `model`); the embedding, the layernorm parameters, b_down, the head and
the loss replicated. The weight gradients are all-reduced over `data`.
"""
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hlo_emit import Builder, Mesh, training_step_args, write_module  # noqa: E402

EPS = 1e-5
GELU_C = math.sqrt(2 / math.pi)
GELU_K = 0.044715


class Ops:
    """Shorthands over a Builder for the elementwise algebra of the step:
    scalars broadcast to the other operand's shape, reductions over trailing
    dimensions broadcast back."""

    def __init__(self, g):
        self.g = g

    def scalar(self, v, like, op):
        return self.g.full(v, like.dims, op)

    def add(self, a, b):
        return self.g.binary("add", a, b, "add")

    def sub(self, a, b):
        return self.g.binary("subtract", a, b, "sub")

    def mul(self, a, b):
        return self.g.binary("multiply", a, b, "mul")

    def mul_s(self, a, s):
        return self.mul(a, self.scalar(s, a, "mul"))

    def add_s(self, a, s):
        return self.add(a, self.scalar(s, a, "add"))

    def bcast_last(self, v, like, op):
        """v (like's shape without its last dimension) broadcast along it."""
        return self.g.broadcast(v, like.dims, tuple(range(len(like.dims) - 1)), op)

    def bcast_vec(self, v, dims, op):
        """A vector broadcast along the last of dims (over the others)."""
        return self.g.broadcast(v, dims, (len(dims) - 1,), op)

    def sum_last(self, v):
        return self.g.reduce(v, "add", (len(v.dims) - 1,), "reduce_sum")

    def mean_last(self, v):
        s = self.sum_last(v)
        return self.g.binary("divide", s, self.g.full(float(v.dims[-1]), s.dims, "div"), "div")

    def sum_leading(self, v):
        """Sum over every dimension but the last (a bias's gradient)."""
        return self.g.reduce(v, "add", tuple(range(len(v.dims) - 1)), "reduce_sum")

    def matmul(self, a, w):
        """a [..., k] @ w [k, n]."""
        return self.g.dot(a, w, (len(a.dims) - 1,), (0,))

    def matmul_t(self, a, w):
        """a [..., n] @ w[k, n]^T: the input gradient of matmul."""
        return self.g.dot(a, w, (len(a.dims) - 1,), (1,))

    def weight_grad(self, a, d):
        """a [..., k]^T d [..., n] over every leading dimension: w's gradient."""
        lead = tuple(range(len(a.dims) - 1))
        return self.g.dot(a, d, lead, lead)


def layernorm(o, x, gain, bias):
    """Forward layernorm over x's last dimension; gain/bias None for none.
    Returns (y, saved) with what the backward needs."""
    g = o.g
    xm = o.sub(x, o.bcast_last(o.mean_last(x), x, "sub"))
    var = o.mean_last(o.mul(xm, xm))
    rstd = g.unary("rsqrt", g.binary("add", var, g.full(EPS, var.dims, "add"), "add"))
    xhat = o.mul(xm, o.bcast_last(rstd, xm, "mul"))
    y = xhat
    scale = None
    if gain is not None:
        scale = g.binary("add", gain, g.full(1.0, gain.dims, "add"), "add")
        y = o.add(o.mul(xhat, o.bcast_vec(scale, xhat.dims, "mul")), o.bcast_vec(bias, xhat.dims, "add"))
    return y, (xhat, rstd, scale)


def layernorm_grad(o, dy, saved):
    """Backward of layernorm: (dx, dgain, dbias), the last two None without
    an affine. dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))."""
    xhat, rstd, scale = saved
    dgain = dbias = None
    dxhat = dy
    if scale is not None:
        dgain = o.sum_leading(o.mul(dy, xhat))
        dbias = o.sum_leading(dy)
        dxhat = o.mul(dy, o.bcast_vec(scale, dy.dims, "mul"))
    c1 = o.bcast_last(o.mean_last(dxhat), dxhat, "sub")
    c2 = o.mul(xhat, o.bcast_last(o.mean_last(o.mul(dxhat, xhat)), xhat, "mul"))
    dx = o.mul(o.bcast_last(rstd, xhat, "mul"), o.sub(o.sub(dxhat, c1), c2))
    return dx, dgain, dbias


def build(batch, seq, n_in, dim, heads, mlp, classes, lr, data, model):
    mesh = Mesh([("data", data), ("model", model)])
    g = Builder("jit_train_step", "train_step")
    o = Ops(g)
    B, S, I, D, H, F, C = batch, seq, n_in, dim, heads, mlp, classes
    K = dim // heads  # head dimension
    HK = H * K

    rep = mesh.sharding([None])
    rep2 = mesh.sharding([None, None])
    col = mesh.sharding([None, "model"])
    row = mesh.sharding(["model", None])
    s_vec_split = mesh.sharding(["model"])
    # Activations: [batch, seq, features], [batch, seq, heads, head_dim],
    # [batch, heads, seq, seq].
    s_act = mesh.sharding(["data", None, None])
    s_act_split = mesh.sharding(["data", None, "model"])
    s_heads = mesh.sharding(["data", None, "model", None])
    s_scores = mesh.sharding(["data", "model", None, None])

    specs = [("embed", (I, D), rep2), ("ln1_scale", (D,), rep), ("ln1_bias", (D,), rep),
             ("wq", (D, HK), col), ("wk", (D, HK), col), ("wv", (D, HK), col), ("wo", (HK, D), row),
             ("ln2_scale", (D,), rep), ("ln2_bias", (D,), rep),
             ("w_up", (D, F), col), ("b_up", (F,), s_vec_split),
             ("w_down", (F, D), row), ("b_down", (D,), rep),
             ("head", (D, C), rep2), ("head_bias", (C,), rep)]
    P = {}
    for i, (name, dims, sh) in enumerate(specs):
        P[name] = g.parameter(i, "f32", dims, sh, "params[\\'%s\\']" % name)
    x = g.parameter(len(specs), "f32", (B, S, I), s_act, "x")

    root = g.scope
    g.scope = root + "/normalize"
    xc = o.sub(x, g.full(0.5, x.dims, "sub"))

    # Each token's label: the teacher's argmax on the token plus its
    # sequence's mean token (no gradient flows through the labels).
    g.scope = root + "/labels"
    teacher = g.teacher(I, C)
    xmean = g.binary("divide", g.reduce(xc, "add", (1,), "reduce_sum"), g.full(float(S), (B, I), "div"), "div")
    tin = o.add(xc, g.broadcast(xmean, xc.dims, (0, 2), "add"))
    tlogits = o.matmul(tin, teacher)
    tmax = g.reduce(tlogits, "maximum", (2,), "reduce_max")
    is_max = g.compare(tlogits, o.bcast_last(tmax, tlogits, "eq"), "EQ", "eq")
    target = g.convert(is_max, "f32")

    # ---- forward -------------------------------------------------------
    g.scope = root + "/jvp(embed)"
    h0 = g.constrain(o.matmul(xc, P["embed"]), s_act)

    g.scope = root + "/jvp(ln1)"
    a1, ln1 = layernorm(o, h0, P["ln1_scale"], P["ln1_bias"])

    g.scope = root + "/jvp(attention)"

    def heads_of(a, w):
        flat = g.constrain(o.matmul(a, w), s_act_split)
        return g.constrain(g.reshape(flat, (B, S, H, K)), s_heads)
    q = heads_of(a1, P["wq"])
    k = heads_of(a1, P["wk"])
    v = heads_of(a1, P["wv"])
    # scores[b, h, s, t] = q[b, s, h, :] . k[b, t, h, :] / sqrt(K)
    scores = o.mul_s(g.constrain(g.dot(q, k, (3,), (3,), (0, 2), (0, 2)), s_scores), 1 / math.sqrt(K))
    smax = g.reduce(scores, "maximum", (3,), "reduce_max")
    sexp = g.unary("exponential", o.sub(scores, o.bcast_last(smax, scores, "sub")), "exp")
    probs = g.binary("divide", sexp, o.bcast_last(o.sum_last(sexp), sexp, "div"), "div")
    # ctx[b, h, s, :] = sum_t probs[b, h, s, t] v[b, t, h, :]
    ctx = g.dot(probs, v, (3,), (1,), (0, 1), (0, 2))
    ctx_flat = g.constrain(g.reshape(g.transpose(ctx, (0, 2, 1, 3)), (B, S, HK)), s_act_split)
    attn = g.constrain(o.matmul(ctx_flat, P["wo"]), s_act)
    h1 = o.add(h0, attn)

    g.scope = root + "/jvp(ln2)"
    a2, ln2 = layernorm(o, h1, P["ln2_scale"], P["ln2_bias"])

    g.scope = root + "/jvp(mlp)"
    u = g.constrain(o.add(o.matmul(a2, P["w_up"]), o.bcast_vec(P["b_up"], (B, S, F), "add")), s_act_split)
    u3 = o.mul(o.mul(u, u), u)
    tnh = g.unary("tanh", o.mul_s(o.add(u, o.mul_s(u3, GELU_K)), GELU_C))
    r = o.mul(o.mul_s(u, 0.5), o.add_s(tnh, 1.0))
    down = g.constrain(o.matmul(r, P["w_down"]), s_act)
    h2 = o.add(h1, o.add(down, o.bcast_vec(P["b_down"], down.dims, "add")))

    g.scope = root + "/jvp(ln_f)"
    f, lnf = layernorm(o, h2, None, None)

    g.scope = root + "/jvp(head)"
    logits = o.add(o.matmul(f, P["head"]), o.bcast_vec(P["head_bias"], (B, S, C), "add"))

    g.scope = root + "/jvp(log_softmax)"
    lmax = g.reduce(logits, "maximum", (2,), "reduce_max")
    shifted = o.sub(logits, o.bcast_last(lmax, logits, "sub"))
    lse = g.unary("log", o.sum_last(g.unary("exponential", shifted, "exp")), "log")
    logp = o.sub(shifted, o.bcast_last(lse, shifted, "sub"))

    g.scope = root + "/loss"
    total = g.reduce(o.mul(target, logp), "add", (0, 1, 2), "reduce_sum")
    loss = g.binary("divide", g.unary("negate", total, "neg"), g.constant(float(B * S)), "div")

    # ---- backward (JAX's transpose of the above, by hand; the scalar
    # cotangent 1.0 of the loss folded) -----------------------------------
    g.scope = root + "/transpose(jvp(log_softmax))"
    dlogp = o.mul_s(target, -1.0 / (B * S))
    dsum = o.sum_last(dlogp)
    dlogits = o.sub(dlogp, o.mul(g.unary("exponential", logp, "exp"), o.bcast_last(dsum, dlogp, "mul")))

    g.scope = root + "/transpose(jvp(head))"
    d_head = o.weight_grad(f, dlogits)
    d_head_bias = o.sum_leading(dlogits)
    df = o.matmul_t(dlogits, P["head"])

    g.scope = root + "/transpose(jvp(ln_f))"
    dh2, _, _ = layernorm_grad(o, df, lnf)

    g.scope = root + "/transpose(jvp(mlp))"
    d_b_down = o.sum_leading(dh2)
    d_w_down = o.weight_grad(r, dh2)
    dr = g.constrain(o.matmul_t(dh2, P["w_down"]), s_act_split)
    # gelu'(u) = 0.5 (1 + t) + 0.5 u (1 - t^2) c (1 + 3 k u^2)
    u2 = o.mul(u, u)
    dinner = o.mul_s(o.add_s(o.mul_s(u2, 3 * GELU_K), 1.0), GELU_C)
    sech2 = o.sub(o.scalar(1.0, tnh, "sub"), o.mul(tnh, tnh))
    dgelu = o.add(o.mul_s(o.add_s(tnh, 1.0), 0.5), o.mul(o.mul(o.mul_s(u, 0.5), sech2), dinner))
    du = g.constrain(o.mul(dr, dgelu), s_act_split)
    d_b_up = o.sum_leading(du)
    d_w_up = o.weight_grad(a2, du)
    da2 = g.constrain(o.matmul_t(du, P["w_up"]), s_act)

    g.scope = root + "/transpose(jvp(ln2))"
    dh1_ln, d_ln2_scale, d_ln2_bias = layernorm_grad(o, da2, ln2)
    dh1 = o.add(dh2, dh1_ln)

    g.scope = root + "/transpose(jvp(attention))"
    d_wo = o.weight_grad(ctx_flat, dh1)
    dctx = g.constrain(g.reshape(g.constrain(o.matmul_t(dh1, P["wo"]), s_act_split), (B, S, H, K)), s_heads)
    # dprobs[b, h, s, t] = dctx[b, s, h, :] . v[b, t, h, :]
    dprobs = g.dot(dctx, v, (3,), (3,), (0, 2), (0, 2))
    # dv[b, h, t, :] = sum_s probs[b, h, s, t] dctx[b, s, h, :]
    dv = g.dot(probs, dctx, (2,), (1,), (0, 1), (0, 2))
    # Softmax: dscores = probs * (dprobs - sum_t probs * dprobs), then the scale.
    psum = o.bcast_last(o.sum_last(o.mul(probs, dprobs)), probs, "sub")
    dscores = o.mul_s(o.mul(probs, o.sub(dprobs, psum)), 1 / math.sqrt(K))
    # dq[b, h, s, :] = sum_t dscores[b, h, s, t] k[b, t, h, :]; dk likewise over s.
    dq = g.dot(dscores, k, (3,), (1,), (0, 1), (0, 2))
    dk = g.dot(dscores, q, (2,), (1,), (0, 1), (0, 2))

    def flat_heads(d):
        """[b, h, s, k] -> [b, s, h * k], the layout of a1 @ W."""
        return g.constrain(g.reshape(g.transpose(d, (0, 2, 1, 3)), (B, S, HK)), s_act_split)
    dq, dk, dv = flat_heads(dq), flat_heads(dk), flat_heads(dv)
    d_wq, d_wk, d_wv = o.weight_grad(a1, dq), o.weight_grad(a1, dk), o.weight_grad(a1, dv)
    da1 = o.add(o.add(o.matmul_t(dq, P["wq"]), o.matmul_t(dk, P["wk"])), o.matmul_t(dv, P["wv"]))
    da1 = g.constrain(da1, s_act)

    g.scope = root + "/transpose(jvp(ln1))"
    dh0_ln, d_ln1_scale, d_ln1_bias = layernorm_grad(o, da1, ln1)
    dh0 = o.add(dh1, dh0_ln)

    g.scope = root + "/transpose(jvp(embed))"
    d_embed = o.weight_grad(xc, dh0)

    grads = {"embed": d_embed, "ln1_scale": d_ln1_scale, "ln1_bias": d_ln1_bias,
             "wq": d_wq, "wk": d_wk, "wv": d_wv, "wo": d_wo,
             "ln2_scale": d_ln2_scale, "ln2_bias": d_ln2_bias,
             "w_up": d_w_up, "b_up": d_b_up, "w_down": d_w_down, "b_down": d_b_down,
             "head": d_head, "head_bias": d_head_bias}

    g.scope = root + "/sgd"
    new = []
    for name, _, _ in specs:
        p = P[name]
        new.append(o.sub(p, o.mul_s(grads[name], lr)))

    return g.text([loss] + new, ["{replicated}"] + [sh for _, _, sh in specs],
                  aliases=[(i + 1, i) for i in range(len(specs))], num_partitions=mesh.size)


def main(argv):
    sizes = [("batch", 8, "global batch size"), ("seq", 32, "sequence length"), ("in", 16, "input features per token"),
             ("dim", 64, "model dimension"), ("heads", 4, "attention heads"), ("mlp", 256, "MLP hidden units"),
             ("classes", 8, "classes")]
    a = training_step_args(argv, __doc__, sizes, 0.25,
                           [("dim", "heads"), ("batch", "data"), ("heads", "model"), ("mlp", "model")])
    text = build(a.batch, a.seq, a.n_in, a.dim, a.heads, a.mlp, a.classes, a.lr, a.data, a.model)
    write_module(text, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
