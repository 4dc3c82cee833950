#!/usr/bin/python3
"""The PyTorch peer of the transformer training step (examples/gen_transformer_train.py):
the same pre-LN block, sizes, parameter layout, initialiser and SGD, data parallel
under DistributedDataParallel over gloo, one process per rank. A benchmark peer only
(Debian's python3-torch); Tessera does not depend on it.

    bench/bench_ddp_torch.py [--batch 16] [--seq 128] [--in 16] [--dim 256] [--heads 8]
        [--mlp 1024] [--classes 64] [--lr 0.25] [--ranks 2] [--threads T] [--warmup 2]
        [--steps 20] [--print-loss K] [--inputs DIR] [--write-inputs DIR]

--batch is the global batch (each rank takes batch / ranks), as the generator's is;
--threads defaults to the cores this process may use / ranks, the share `tessera run`
gives each device, and rank r is bound to its share's cores (--no-bind: not).
--write-inputs DIR writes the initial weights and --print-loss K batches as
`tessera run --inputs DIR` reads them (DIR/param<i>.npy, DIR/step<k>/param15.npy)
and exits; --inputs DIR then trains from the same weights on the same batches, so
both print the same losses. Rank 0 prints `step K time_ms T loss L` for the first K
steps (the loss all-reduced over the ranks, outside the timed step), then
`torch_ddp median_step_ms X` over the --steps steps after --warmup.
"""
import argparse
import datetime
import math
import os
import socket
import statistics
import sys
import time

EPS = 1e-5
# The parameters in the generator's order and layout ([fan_in, fan_out]); the
# batch is parameter 15.
NAMES = ("embed", "ln1_scale", "ln1_bias", "wq", "wk", "wv", "wo", "ln2_scale", "ln2_bias",
         "w_up", "b_up", "w_down", "b_down", "head", "head_bias")


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, default in (("batch", 16), ("seq", 128), ("in", 16), ("dim", 256), ("heads", 8),
                          ("mlp", 1024), ("classes", 64), ("ranks", 2), ("warmup", 2), ("steps", 20)):
        ap.add_argument("--" + flag, dest="n_in" if flag == "in" else flag, type=int, default=default,
                        help="(default %d)" % default)
    ap.add_argument("--lr", type=float, default=0.25, help="SGD learning rate (default 0.25)")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads per rank (default cores / ranks)")
    ap.add_argument("--no-bind", dest="bind", action="store_false", help="do not bind ranks to cores")
    ap.add_argument("--print-loss", type=int, default=3, help="print the first K steps' losses (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights and batches (default 0)")
    ap.add_argument("--pool", type=int, default=8, help="random batches made before the run and cycled (default 8)")
    ap.add_argument("--timeout", type=float, default=300, help="deadline of every collective in s (default 300)")
    ap.add_argument("--inputs", metavar="DIR", help="weights and batches from DIR (see above)")
    ap.add_argument("--write-inputs", metavar="DIR", help="write weights and batches to DIR and exit")
    a = ap.parse_args(argv)
    for name in ("batch", "seq", "n_in", "dim", "heads", "mlp", "classes", "ranks", "steps"):
        if getattr(a, name) < 1:
            ap.error("--%s wants a positive integer" % name.replace("n_in", "in"))
    if a.warmup < 0 or a.print_loss < 0 or a.threads < 0 or a.pool < 1:
        ap.error("--warmup, --print-loss and --threads want a non-negative integer, --pool a positive one")
    if a.dim % a.heads:
        ap.error("--dim %d is not divisible by --heads %d" % (a.dim, a.heads))
    if a.batch % a.ranks:
        ap.error("--batch %d is not divisible by --ranks %d" % (a.batch, a.ranks))
    cores = sorted(os.sched_getaffinity(0))
    a.cores = cores
    if not a.threads:
        a.threads = max(1, len(cores) // a.ranks)
    return a


def shapes(a):
    D, F, C, HK = a.dim, a.mlp, a.classes, a.dim
    return ((a.n_in, D), (D,), (D,), (D, HK), (D, HK), (D, HK), (HK, D), (D,), (D,),
            (D, F), (F,), (F, D), (D,), (D, C), (C,))


def teacher(torch, rows, cols):
    """The generator's fixed teacher: ((7i + 13j + 3ij) mod 17 - 8) / 8."""
    i = torch.arange(rows).view(rows, 1)
    j = torch.arange(cols).view(1, cols)
    return (((7 * i + 13 * j + 3 * i * j) % 17) - 8).float() / 8


def make_model(torch, a):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        """The generator's step in PyTorch's words; the backward is autograd's."""

        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(a.seed)
            for name, dims in zip(NAMES, shapes(a)):
                w = torch.zeros(dims)
                if len(dims) == 2:  # the launcher's init: uniform in +-1/sqrt(fan_in), vectors 0
                    w.uniform_(-1 / math.sqrt(dims[0]), 1 / math.sqrt(dims[0]), generator=g)
                setattr(self, name, nn.Parameter(w))
            # A plain tensor, not a buffer: DDP would broadcast a buffer every step.
            self.teacher = teacher(torch, a.n_in, a.classes)

        def forward(self, x):
            B, S, _ = x.shape
            H = a.heads
            K = a.dim // H
            xc = x - 0.5
            with torch.no_grad():  # each token's label (no gradient through it)
                tl = (xc + xc.mean(dim=1, keepdim=True)) @ self.teacher
                target = (tl == tl.amax(dim=-1, keepdim=True)).float()
            h0 = xc @ self.embed
            a1 = F.layer_norm(h0, (a.dim,), 1 + self.ln1_scale, self.ln1_bias, EPS)

            def heads_of(w):  # [B, H, S, K]
                return (a1 @ w).view(B, S, H, K).transpose(1, 2)
            q, k, v = heads_of(self.wq), heads_of(self.wk), heads_of(self.wv)
            p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(K), dim=-1)
            ctx = (p @ v).transpose(1, 2).reshape(B, S, a.dim)
            h1 = h0 + ctx @ self.wo
            a2 = F.layer_norm(h1, (a.dim,), 1 + self.ln2_scale, self.ln2_bias, EPS)
            u = F.gelu(a2 @ self.w_up + self.b_up, approximate="tanh")
            h2 = h1 + u @ self.w_down + self.b_down
            logits = F.layer_norm(h2, (a.dim,), None, None, EPS) @ self.head + self.head_bias
            return -(target * F.log_softmax(logits, dim=-1)).sum(dim=-1).mean()

    return Block()


def write_inputs(torch, a):
    import numpy as np
    model = make_model(torch, a)
    os.makedirs(a.write_inputs, exist_ok=True)
    for i, name in enumerate(NAMES):
        np.save(os.path.join(a.write_inputs, "param%d.npy" % i), getattr(model, name).detach().numpy())
    g = torch.Generator().manual_seed(a.seed + 1)
    for k in range(1, max(1, a.print_loss) + 1):
        x = (1 - torch.rand((a.batch, a.seq, a.n_in), generator=g)).numpy()  # uniform in (0, 1]
        d = a.write_inputs if k == 1 else os.path.join(a.write_inputs, "step%d" % k)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "param%d.npy" % len(NAMES)), x)


def batches_of(torch, a, rank):
    """This rank's slice of each step's global batch: from --inputs, else a pool of
    random ones made before the run (the generator off the timed step, as
    tessera's input feeder is)."""
    local = a.batch // a.ranks
    if a.inputs:
        import numpy as np
        out = []
        for k in range(1, a.warmup + a.steps + 1):
            d = a.inputs if k == 1 else os.path.join(a.inputs, "step%d" % k)
            path = os.path.join(d, "param%d.npy" % len(NAMES))
            if k > 1 and not os.path.exists(path):
                break
            out.append(torch.from_numpy(np.load(path))[rank * local:(rank + 1) * local].contiguous())
        return out
    g = torch.Generator().manual_seed(a.seed + 1 + rank)
    return [1 - torch.rand((local, a.seq, a.n_in), generator=g) for _ in range(a.pool)]


def worker(rank, a, port):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if a.bind and len(a.cores) >= a.ranks * a.threads:
        os.sched_setaffinity(0, a.cores[rank * a.threads:(rank + 1) * a.threads])
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=a.ranks,
                            timeout=datetime.timedelta(seconds=a.timeout))
    model = make_model(torch, a)
    if a.inputs:
        import numpy as np
        with torch.no_grad():
            for i, name in enumerate(NAMES):
                getattr(model, name).copy_(torch.from_numpy(np.load(os.path.join(a.inputs, "param%d.npy" % i))))
    ddp = DDP(model)  # broadcasts rank 0's weights; gradients all-reduced (averaged) in backward
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
    xs = batches_of(torch, a, rank)
    nparams = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print("torch_ddp torch %s ranks %d threads_per_rank %d batch_per_rank %d params %d bind %s"
              % (torch.__version__, a.ranks, a.threads, a.batch // a.ranks, nparams,
                 "yes" if a.bind and len(a.cores) >= a.ranks * a.threads else "no"), flush=True)
    dist.barrier()
    times = []
    for step in range(1, a.warmup + a.steps + 1):
        if a.inputs and step > len(xs):
            break
        x = xs[(step - 1) % len(xs)]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = ddp(x)
        loss.backward()  # returns after DDP's gradient all-reduce
        opt.step()
        ms = (time.perf_counter() - t0) * 1e3
        if step > a.warmup:
            times.append(ms)
        if step <= a.print_loss:
            total = loss.detach().clone()
            dist.all_reduce(total)
            if rank == 0:
                print("step %d time_ms %.3f loss %.9g" % (step, ms, total.item() / a.ranks), flush=True)
    if rank == 0 and times:
        print("torch_ddp median_step_ms %.3f steps %d..%d min_ms %.3f"
              % (statistics.median(times), a.warmup + 1, a.warmup + len(times), min(times)), flush=True)
    dist.destroy_process_group()


def check_inputs(a):
    """One clear error for --inputs files that are missing or of the wrong
    shape (before the ranks start), else None."""
    import numpy as np
    want = list(shapes(a)) + [(a.batch, a.seq, a.n_in)]
    for i, dims in enumerate(want):
        path = os.path.join(a.inputs, "param%d.npy" % i)
        try:
            got = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            return "%s: cannot read (%s)" % (path, e)
        if got.shape != tuple(dims) or got.dtype != np.float32:
            return "%s: %s%s, the model wants float32%s" % (path, got.dtype, list(got.shape), list(dims))
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    a = parse(argv)
    # Before torch loads OpenBLAS (pthreads) and OpenMP: they read these once.
    # The spawned ranks inherit them.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as e:
        sys.stderr.write("bench_ddp_torch: cannot import torch (%s): apt-get install python3-torch "
                         "(a benchmark peer only)\n" % e)
        return 77
    if a.write_inputs:
        write_inputs(torch, a)
        return 0
    if a.inputs:
        bad = check_inputs(a)
        if bad:
            sys.stderr.write("bench_ddp_torch: %s\n" % bad)
            return 2
    mp.spawn(worker, args=(a, free_port()), nprocs=a.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
