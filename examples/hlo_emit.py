"""A small writer of XLA HLO text in the style of a JAX `before_optimizations`
dump, shared by the example generators (gen_mlp_train.py,
gen_transformer_train.py, bench/gen_overlap.py). Standard library only.

What it imitates (see ../shared/corpus/real_hlo, e.g. the pjit dumps there):
instructions named `<opcode>.<N>` from one counter that runs across the whole
module, one `region_<K>.<N>` reducer computation per reduce, `Arg_<i>.<N>`
parameters, layouts on every array shape, `metadata={op_name=...}`, and GSPMD
shardings (`sharding={...}`) on the parameters and the root only, written in
XLA's canonical iota (V2) form over a named device mesh.
"""
import argparse
import os
import struct
import sys


def training_step_args(argv, doc, sizes, lr, divisible):
    """The command line of a training-step generator: `sizes` are the model's
    (flag, default, what) positive integers in --help's order, --classes
    (at least 2) among them, then --lr (default `lr`), the mesh's --data and
    --model axes and -o; `divisible` lists the (flag, by) pairs where flag's
    value must divide by by's. Returns the parsed arguments (--in as n_in)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    dests = []
    for flag, default, what in sizes:
        dests.append("n_in" if flag == "in" else flag)
        ap.add_argument("--" + flag, dest=dests[-1], type=int, default=default,
                        help="%s (default %d)" % (what, default))
    ap.add_argument("--lr", type=float, default=lr, help="SGD learning rate (default %g)" % lr)
    ap.add_argument("--data", type=int, default=2, help="data-parallel mesh axis size (default 2)")
    ap.add_argument("--model", type=int, default=2, help="model-parallel mesh axis size (default 2)")
    ap.add_argument("-o", "--output", help="output file (default: standard output)")
    a = ap.parse_args(argv)
    for name in dests + ["data", "model"]:
        if getattr(a, name) < 1:
            ap.error("--%s wants a positive integer" % name.replace("n_in", "in"))
    if a.classes < 2:
        ap.error("--classes wants at least 2")
    for flag, by in divisible:
        if getattr(a, flag) % getattr(a, by):
            ap.error("--%s %d is not divisible by --%s %d" % (flag, getattr(a, flag), by, getattr(a, by)))
    return a


def write_module(text, path):
    """Writes the module text to `path` atomically (a reader never sees a
    half-written module), or to standard output when path is None."""
    if path is None:
        sys.stdout.write(text)
        return
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def f32_text(x):
    """The shortest decimal that rounds back to the same float32, as XLA
    prints f32 literals (1 -> "1", 0.1 -> "0.1", 1/64 -> "0.015625")."""
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    want = struct.pack("<f", x)
    for digits in range(1, 10):
        s = "%.*g" % (digits, x)
        if struct.pack("<f", float(s)) == want:
            return s
    return "%.9g" % x


class Mesh:
    """A logical device mesh: named axes, major first, over device ids
    iota(prod(sizes)) reshaped to the sizes (jax.sharding.Mesh over
    jax.devices() in order)."""

    def __init__(self, axes):
        self.axes = [(name, int(size)) for name, size in axes]
        for name, size in self.axes:
            if size < 1:
                raise ValueError("mesh axis %s has size %d" % (name, size))

    @property
    def size(self):
        n = 1
        for _, s in self.axes:
            n *= s
        return n

    def sharding(self, dim_axes):
        """The canonical GSPMD sharding of a tensor whose dimension d is split
        over the mesh axes named in dim_axes[d] (a name, a tuple of names, or
        None), like NamedSharding(mesh, PartitionSpec(*dim_axes)).

        Axes of size 1 are dropped first (they split nothing). The tile
        assignment is the mesh iota transposed so the used axes come first,
        in dimension order, then the unused ones, which become the trailing
        replicated subgroup (last_tile_dim_replicate); with no transpose the
        iota is written plain (`<=[N]`). ../shared/reference/hlo_text_format.md
        §8.3 and §9 give the rule and examples."""
        live = [(n, s) for n, s in self.axes if s > 1]
        names = [n for n, _ in live]
        size = dict(live)
        tiles, used = [], []
        for entry in dim_axes:
            if entry is None:
                group = ()
            elif isinstance(entry, str):
                group = (entry,)
            else:
                group = tuple(entry)
            t = 1
            for a in group:
                if a not in dict(self.axes):
                    raise ValueError("unknown mesh axis %r" % a)
                if a in size:
                    if a in used:
                        raise ValueError("mesh axis %r used twice" % a)
                    used.append(a)
                    t *= size[a]
            tiles.append(t)
        if not used:
            return "{replicated}"
        unused = [a for a in names if a not in used]
        order = used + unused
        perm = [names.index(a) for a in order]
        if unused:
            rep = 1
            for a in unused:
                rep *= size[a]
            tiles.append(rep)
        dims = ",".join(str(t) for t in tiles)
        if perm == sorted(perm):
            devices = "<=[%d]" % self.size
        else:
            devices = "<=[%s]T(%s)" % (",".join(str(size[a]) for a in names),
                                      ",".join(str(p) for p in perm))
        tail = " last_tile_dim_replicate" if unused else ""
        return "{devices=[%s]%s%s}" % (dims, devices, tail)


class Value:
    """One instruction's result: its name, element type and dimensions."""

    def __init__(self, name, elem, dims):
        self.name, self.elem, self.dims = name, elem, tuple(dims)

    @property
    def shape(self):
        return shape_text(self.elem, self.dims)


def shape_text(elem, dims):
    """`f32[64,256]{1,0}`: an array shape with XLA's default (major-to-minor)
    layout; scalars carry no layout (`f32[]`)."""
    dims = tuple(dims)
    if not dims:
        return "%s[]" % elem
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    return "%s[%s]{%s}" % (elem, ",".join(str(d) for d in dims), layout)


def listing(items):
    """Comma-separated, with XLA's `/*index=5*/` marker before every fifth
    element of a long tuple (shapes, shardings, layouts)."""
    out = []
    for i, x in enumerate(items):
        out.append(("/*index=%d*/" % i if i and i % 5 == 0 else "") + x)
    return ", ".join(out)


def ints(xs):
    return "{" + ",".join(str(x) for x in xs) + "}"


class Builder:
    """Builds one module: reducer regions and the ENTRY computation.

    `scope` is the op_name prefix of the metadata that the next instructions
    get, e.g. "jit(train_step)/jit(main)/jvp(mlp)"; set it as the program
    moves from forward to backward to the update."""

    def __init__(self, module_name, fn_name):
        self.module_name = module_name
        self.scope = "jit(%s)/jit(main)" % fn_name
        self.next_id = 1
        self.regions = []     # text of each reducer computation
        self.region_count = 0
        self.lines = []       # ENTRY instructions
        self.params = []      # (number, Value)
        self._consts = {}

    def _name(self, base):
        n = "%s.%d" % (base, self.next_id)
        self.next_id += 1
        return n

    def _emit(self, base, elem, dims, text, op=None):
        v = Value(self._name(base), elem, dims)
        meta = ""
        if op is not None:
            meta = ', metadata={op_name="%s/%s"}' % (self.scope, op)
        self.lines.append("  %s = %s %s%s" % (v.name, v.shape, text, meta))
        return v

    # --- leaves ---------------------------------------------------------
    def parameter(self, number, elem, dims, sharding, op_name):
        v = Value(self._name("Arg_%d" % number), elem, dims)
        self.lines.append('  %s = %s parameter(%d), sharding=%s, metadata={op_name="%s"}'
                          % (v.name, v.shape, number, sharding, op_name))
        self.params.append((number, v))
        return v

    def constant(self, value, elem="f32"):
        """A scalar constant (one per value and type, as JAX's lowering
        shares them)."""
        text = f32_text(value) if elem in ("f32", "f64") else str(int(value))
        key = (elem, text)
        if key not in self._consts:
            self._consts[key] = self._emit("constant", elem, (), "constant(%s)" % text)
        return self._consts[key]

    def full(self, value, dims, op, elem="f32"):
        """A broadcast scalar: jnp.full(dims, value)."""
        return self.broadcast(self.constant(value, elem), dims, (), op)

    def iota(self, elem, dims, dimension, op="iota"):
        return self._emit("iota", elem, dims, "iota(), iota_dimension=%d" % dimension, op)

    # --- shape ops --------------------------------------------------------
    def broadcast(self, v, dims, dimensions, op):
        return self._emit("broadcast", v.elem, dims,
                          "broadcast(%s), dimensions=%s" % (v.name, ints(dimensions)), op)

    def reshape(self, v, dims, op="reshape"):
        return self._emit("reshape", v.elem, dims, "reshape(%s)" % v.name, op)

    def transpose(self, v, perm, op="transpose"):
        dims = [v.dims[p] for p in perm]
        return self._emit("transpose", v.elem, dims,
                          "transpose(%s), dimensions=%s" % (v.name, ints(perm)), op)

    def convert(self, v, elem, op="convert_element_type"):
        return self._emit("convert", elem, v.dims, "convert(%s)" % v.name, op)

    def constrain(self, v, sharding, op="sharding_constraint"):
        """jax.lax.with_sharding_constraint: an identity that pins the
        sharding of an intermediate (XLA's `Sharding` custom-call)."""
        return self._emit("custom-call", v.elem, v.dims,
                          'custom-call(%s), custom_call_target="Sharding", sharding=%s'
                          % (v.name, sharding), op)

    # --- elementwise ------------------------------------------------------
    def unary(self, opcode, v, op=None):
        return self._emit(opcode, v.elem, v.dims, "%s(%s)" % (opcode, v.name), op or opcode)

    def binary(self, opcode, a, b, op=None):
        if a.dims != b.dims or a.elem != b.elem:
            raise ValueError("%s: %s vs %s" % (opcode, a.shape, b.shape))
        return self._emit(opcode, a.elem, a.dims, "%s(%s, %s)" % (opcode, a.name, b.name),
                          op or opcode)

    def compare(self, a, b, direction, op):
        if a.dims != b.dims:
            raise ValueError("compare: %s vs %s" % (a.shape, b.shape))
        return self._emit("compare", "pred", a.dims,
                          "compare(%s, %s), direction=%s" % (a.name, b.name, direction), op)

    def select(self, p, a, b, op="select_n"):
        return self._emit("select", a.elem, a.dims,
                          "select(%s, %s, %s)" % (p.name, a.name, b.name), op)

    # --- reductions and contractions -------------------------------------
    def _region(self, kind, elem):
        """A reducer computation `region_K.N { Arg_0, Arg_1; ROOT kind }`."""
        name = "region_%d.%d" % (self.region_count, self.next_id)
        self.region_count += 1
        self.next_id += 1
        a = "Arg_0.%d" % self.next_id
        b = "Arg_1.%d" % (self.next_id + 1)
        r = "%s.%d" % (kind, self.next_id + 2)
        self.next_id += 3
        s = "%s[]" % elem
        self.regions.append("%s {\n  %s = %s parameter(0)\n  %s = %s parameter(1)\n"
                            "  ROOT %s = %s %s(%s, %s)\n}\n"
                            % (name, a, s, b, s, r, s, kind, a, b))
        return name

    def reduce(self, v, kind, dimensions, op):
        """reduce_sum (kind "add") or reduce_max (kind "maximum") over
        `dimensions`."""
        init = self.constant(0 if kind == "add" else float("-inf"), v.elem)
        region = self._region(kind, v.elem)
        dims = [d for i, d in enumerate(v.dims) if i not in dimensions]
        return self._emit("reduce", v.elem, dims,
                          "reduce(%s, %s), dimensions=%s, to_apply=%s"
                          % (v.name, init.name, ints(dimensions), region), op)

    def dot(self, a, b, lc, rc, lb=(), rb=(), op="dot_general"):
        """dot_general: result dims are batch, lhs free, rhs free."""
        for i, j in zip(lc, rc):
            if a.dims[i] != b.dims[j]:
                raise ValueError("dot: contracting %s vs %s" % (a.shape, b.shape))
        dims = [a.dims[i] for i in lb]
        dims += [d for i, d in enumerate(a.dims) if i not in lc and i not in lb]
        dims += [d for i, d in enumerate(b.dims) if i not in rc and i not in rb]
        attrs = ""
        if lb:
            attrs += ", lhs_batch_dims=%s" % ints(lb)
        attrs += ", lhs_contracting_dims=%s" % ints(lc)
        if rb:
            attrs += ", rhs_batch_dims=%s" % ints(rb)
        attrs += ", rhs_contracting_dims=%s" % ints(rc)
        return self._emit("dot", a.elem, dims, "dot(%s, %s)%s" % (a.name, b.name, attrs), op)

    # --- the module -------------------------------------------------------
    def teacher(self, rows, cols):
        """The examples' fixed teacher weights, f32[rows, cols], computed in
        the module (no parameter): ((7i + 13j + 3ij) mod 17 - 8) / 8. The
        goldens' scripts (tests/examples) compute the same matrix."""
        ii = self.iota("s32", (rows, cols), 0)
        ic = self.iota("s32", (rows, cols), 1)

        def imul(a, k):
            return self.binary("multiply", a, self.full(k, (rows, cols), "mul", "s32"), "mul")
        mix = self.binary("add", self.binary("add", imul(ii, 7), imul(ic, 13), "add"),
                          imul(self.binary("multiply", ii, ic, "mul"), 3), "add")
        rem = self.binary("remainder", mix, self.full(17, (rows, cols), "rem", "s32"), "rem")
        cen = self.binary("subtract", rem, self.full(8, (rows, cols), "sub", "s32"), "sub")
        return self.binary("multiply", self.convert(cen, "f32"), self.full(0.125, (rows, cols), "mul"), "mul")

    def text(self, results, result_shardings, aliases, num_partitions):
        """The whole module. `results` are the root tuple's elements,
        `result_shardings` their shardings, `aliases` (output index,
        parameter number) pairs for input_output_alias (JAX's donated
        arguments), `num_partitions` the header's partition count."""
        root = Value("tuple.%d" % self.next_id, None, ())
        self.next_id += 1
        tuple_shape = "(%s)" % listing(v.shape for v in results)
        shardings = listing(result_shardings)
        entry_name = "main.%d" % self.next_id
        self.next_id += 1
        params = [v for _, v in sorted(self.params, key=lambda p: p[0])]
        layout = "{(%s)->%s}" % (listing(v.shape for v in params), tuple_shape)
        header = "HloModule %s" % self.module_name
        if aliases:
            header += ", input_output_alias={ %s }" % ", ".join(
                "{%d}: (%d, {}, may-alias)" % (o, p) for o, p in aliases)
        header += ", entry_computation_layout=%s" % layout
        if num_partitions > 1:
            header += ", num_partitions=%d" % num_partitions
        out = [header, ""]
        for r in self.regions:
            out.append(r)
        out.append("ENTRY %s {" % entry_name)
        out.extend(self.lines)
        out.append("  ROOT %s = %s tuple(%s), sharding={%s}"
                   % (root.name, tuple_shape, ", ".join(v.name for v in results), shardings))
        out.append("}")
        return "\n".join(out) + "\n"
