#!/usr/bin/env python3
"""Writes a synthetic, verifiable HLO module of exactly N instructions for
bench_parse, shaped like a JAX before_optimizations dump: a stack of MLP-ish
blocks (dot, broadcast, add, maximum, reshape, reduce, transpose, compare,
select, convert) with layouts, metadata on every instruction and shardings on
the parameters, the dots and the result, in a few computations called from
ENTRY. With --shard params only the ENTRY parameters carry shardings (the
input batch-tiled, the weights replicated), so sharding propagation
(bench_propagate) has every other instruction to fill in.

    bench/gen_module.py [-n N] [--blocks B] [--partitions P] [--shard all|params] [-o FILE]
"""
import argparse
import sys

# Activation shape [BATCH, WIDTH]; WIDTH = GROUPS * GROUP for the reshape.
BATCH, WIDTH, GROUPS, GROUP = 64, 256, 16, 16
ACT = f"f32[{BATCH},{WIDTH}]{{1,0}}"
ACT3 = f"f32[{BATCH},{GROUPS},{GROUP}]{{2,1,0}}"
RED = f"f32[{BATCH},{GROUPS}]{{1,0}}"
W = f"f32[{WIDTH},{WIDTH}]{{1,0}}"
B = f"f32[{WIDTH}]{{0}}"
# Set from --partitions in main(); BATCH must be divisible by it.
TILED2 = "{devices=[4,1]<=[4]}"
TILED3 = "{devices=[4,1,1]<=[4]}"
ANNOTATE_ALL = True        # --shard all: dots, reshapes and the root annotated too

REGION_INSTRS = 3          # per reducer region
BLOCK_FIXED = 7            # 3 parameters, 2 constants, 2 broadcasts
STEP_INSTRS = 16           # instructions per step (see Gen.step)


def entry_fixed(blocks):
    # x, (w, b) per block, one call per block, zero, reduce, tuple
    return 1 + 2 * blocks + blocks + 3


class Gen:
    def __init__(self, out):
        self.out = out
        self.next_id = 1
        self.line = 100
        self.count = 0

    def name(self, base):
        n = f"{base}.{self.next_id}"
        self.next_id += 1
        return n

    def meta(self, scope, op):
        self.line += 1
        return (f'metadata={{op_name="jit(train_step)/jit(main)/{scope}/{op}" '
                f'source_file="/workspace/model.py" source_line={self.line}}}')

    def emit(self, base, shape, rhs, scope, op, root=False, attrs=""):
        n = self.name(base)
        prefix = "ROOT " if root else ""
        extra = f", {attrs}" if attrs else ""
        self.out.write(f"  {prefix}{n} = {shape} {rhs}{extra}, {self.meta(scope, op)}\n")
        self.count += 1
        return n

    def region(self, opcode):
        cname = self.name(f"region_{opcode}")
        self.out.write(f"{cname} {{\n")
        a = self.emit("Arg_0", "f32[]", "parameter(0)", "reducer", "arg")
        b = self.emit("Arg_1", "f32[]", "parameter(1)", "reducer", "arg")
        self.emit(opcode, "f32[]", f"{opcode}({a}, {b})", "reducer", opcode, root=True)
        self.out.write("}\n\n")
        return cname

    def step(self, scope, h, w, b, zero, z, half, add_region, last):
        """One layer: 16 instructions from h: ACT to a new ACT."""
        e = self.emit
        dot_attrs = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
        d = e("dot", ACT, f"dot({h}, {w})", scope, "dot_general",
              attrs=dot_attrs + (f", sharding={TILED2}" if ANNOTATE_ALL else ""))
        bb = e("broadcast", ACT, f"broadcast({b})", scope, "broadcast_in_dim", attrs="dimensions={1}")
        a = e("add", ACT, f"add({d}, {bb})", scope, "add")
        r = e("maximum", ACT, f"maximum({a}, {z})", scope, "jit(relu)/max")
        rs = e("reshape", ACT3, f"reshape({r})", scope, "reshape",
               attrs=f"sharding={TILED3}" if ANNOTATE_ALL else "")
        red = e("reduce", RED, f"reduce({rs}, {zero})", scope, "reduce_sum",
                attrs=f"dimensions={{2}}, to_apply={add_region}")
        bc = e("broadcast", ACT3, f"broadcast({red})", scope, "broadcast_in_dim",
               attrs="dimensions={0,1}")
        sub = e("subtract", ACT3, f"subtract({rs}, {bc})", scope, "sub")
        ex = e("exponential", ACT3, f"exponential({sub})", scope, "exp")
        t = e("transpose", ACT3, f"transpose({ex})", scope, "transpose", attrs="dimensions={0,2,1}")
        back = e("reshape", ACT, f"reshape({t})", scope, "reshape")
        cmp = e("compare", f"pred[{BATCH},{WIDTH}]{{1,0}}", f"compare({back}, {z})", scope, "gt",
                attrs="direction=GT")
        sel = e("select", ACT, f"select({cmp}, {back}, {h})", scope, "select_n")
        lo = e("convert", f"bf16[{BATCH},{WIDTH}]{{1,0}}", f"convert({sel})", scope,
               "convert_element_type")
        hi = e("convert", ACT, f"convert({lo})", scope, "convert_element_type")
        return e("multiply", ACT, f"multiply({hi}, {half})", scope, "mul", root=last)

    def block(self, k, body, add_region):
        """A called computation (h, w, b) -> ACT with BLOCK_FIXED + body instructions."""
        cname = self.name(f"block_{k}")
        scope = f"block_{k}"
        self.out.write(f"{cname} {{\n")
        h = self.emit("Arg_0", ACT, "parameter(0)", scope, "arg")
        w = self.emit("Arg_1", W, "parameter(1)", scope, "arg")
        b = self.emit("Arg_2", B, "parameter(2)", scope, "arg")
        zero = self.emit("constant", "f32[]", "constant(0)", scope, "const")
        halfc = self.emit("constant", "f32[]", "constant(0.5)", scope, "const")
        z = self.emit("broadcast", ACT, f"broadcast({zero})", scope, "broadcast_in_dim",
                      attrs="dimensions={}")
        half = self.emit("broadcast", ACT, f"broadcast({halfc})", scope, "broadcast_in_dim",
                         attrs="dimensions={}")
        steps, fill = divmod(body, STEP_INSTRS)
        for s in range(steps):
            h = self.step(f"{scope}/layer_{s}", h, w, b, zero, z, half, add_region,
                          last=(s == steps - 1 and fill == 0))
        for f in range(fill):
            h = self.emit("add", ACT, f"add({h}, {z})", f"{scope}/residual", "add",
                          root=(f == fill - 1))
        self.out.write("}\n\n")
        return cname


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100000, help="instructions in the module (default 100000)")
    ap.add_argument("--blocks", type=int, default=4, help="called block computations (default 4)")
    ap.add_argument("--partitions", type=int, default=4,
                    help=f"num_partitions, the batch tiling (default 4; must divide {BATCH})")
    ap.add_argument("--shard", choices=("all", "params"), default="all",
                    help="annotate parameters, dots, reshapes and the result (all, default) "
                         "or the ENTRY parameters only (params)")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args()
    global TILED2, TILED3, ANNOTATE_ALL
    p = args.partitions
    if p < 2 or BATCH % p:
        sys.exit(f"gen_module: --partitions must be at least 2 and divide {BATCH}")
    TILED2 = f"{{devices=[{p},1]<=[{p}]}}"
    TILED3 = f"{{devices=[{p},1,1]<=[{p}]}}"
    ANNOTATE_ALL = args.shard == "all"
    nb = args.blocks
    fixed = 2 * REGION_INSTRS + entry_fixed(nb) + nb * BLOCK_FIXED
    if nb < 1 or args.n < fixed + nb:
        sys.exit(f"gen_module: -n must be at least {fixed + nb} with {nb} blocks")
    body = args.n - fixed

    out = sys.stdout if args.output == "-" else open(args.output, "w")
    params = [ACT] + [W] * nb + [B] * nb
    out.write(f"HloModule gen_{args.n}, entry_computation_layout={{({', '.join(params)})"
              f"->({ACT}, f32[])}}, num_partitions={p}\n\n")
    g = Gen(out)
    add_region = g.region("add")
    g.region("maximum")  # an unused reducer, as dumps often carry
    blocks = []
    for k in range(nb):
        share = body // nb + (1 if k < body % nb else 0)
        blocks.append(g.block(k, share, add_region))

    out.write(f"ENTRY {g.name('main')} {{\n")
    x = g.emit("Arg_0", ACT, "parameter(0)", "entry", "x", attrs=f"sharding={TILED2}")
    ws = [g.emit(f"Arg_{1 + k}", W, f"parameter({1 + k})", "entry", f"params[\\'w{k}\\']",
                 attrs="sharding={replicated}") for k in range(nb)]
    bs = [g.emit(f"Arg_{1 + nb + k}", B, f"parameter({1 + nb + k})", "entry",
                 f"params[\\'b{k}\\']", attrs="sharding={replicated}") for k in range(nb)]
    h = x
    for k in range(nb):
        h = g.emit("call", ACT, f"call({h}, {ws[k]}, {bs[k]})", "entry", f"block_{k}",
                   attrs=f"to_apply={blocks[k]}")
    zero = g.emit("constant", "f32[]", "constant(0)", "entry", "const")
    loss = g.emit("reduce", "f32[]", f"reduce({h}, {zero})", "entry", "reduce_sum",
                  attrs=f"dimensions={{0,1}}, to_apply={add_region}")
    g.emit("tuple", f"({ACT}, f32[])", f"tuple({h}, {loss})", "entry", "tuple", root=True,
           attrs=f"sharding={{{TILED2}, {{replicated}}}}" if ANNOTATE_ALL else "")
    out.write("}\n")
    if out is not sys.stdout:
        out.close()
    assert g.count == args.n, (g.count, args.n)
    print(f"gen_module: wrote {g.count} instructions to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
