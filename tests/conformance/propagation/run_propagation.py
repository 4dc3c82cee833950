#!/usr/bin/env python3
"""XLA sharding-propagation conformance: runs `tessera opt --stage=propagated`
on every module of shared/corpus/xla_tests/propagation and compares each
named instruction's sharding with what XLA's ShardingPropagation gives it
(expectations.jsonl, taken from sharding_propagation_test.cc).

Both sides are compared as placements, not as text: explicit and iota
device lists, last_tile_dim_replicate and last_tile_dims={replicated},
size-1 subgroup dims and the device order inside a replication group do not
matter; metadata is ignored.

The pass's options of each XLA test (xla_options) that a real module would
carry in its header (allow_spmd_sharding_propagation_to_output /
_to_parameters) are written into the header of a temporary copy.

usage: run_propagation.py TESSERA CORPUS_DIR [--min-modules M] [--min-expect E]
       [--only FILE] [--verbose]
Exit 0 when both counts are at or above the floors, 1 below, 77 when the
corpus is absent (ctest SKIP). Expectations listed in EXCLUDED.md (beside this
script) are reported but still counted against the total.
Python 3 standard library only."""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# ---- sharding text -> placement ---------------------------------------------


class Bad(Exception):
    pass


def split_top(s, sep=","):
    """Splits s at `sep` outside braces/brackets/parens."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def strip_braced(s, key):
    """Removes `key={...}` (balanced) from s."""
    while True:
        i = s.find(key + "={")
        if i < 0:
            return s
        j, depth = i + len(key) + 1, 0
        while j < len(s):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        s = s[:i] + s[j + 1:]


def iota_devices(reshape, perm):
    n = 1
    for d in reshape:
        n *= d
    if not perm:
        return list(range(n))
    # transpose iota(n).reshape(reshape) by perm, flatten
    r = len(reshape)
    strides = [1] * r
    for k in range(r - 2, -1, -1):
        strides[k] = strides[k + 1] * reshape[k + 1]
    tdims = [reshape[p] for p in perm]
    out = []
    idx = [0] * r
    for _ in range(n):
        src = 0
        for k in range(r):
            src += idx[k] * strides[perm[k]]
        out.append(src)
        for k in range(r - 1, -1, -1):
            idx[k] += 1
            if idx[k] < tdims[k]:
                break
            idx[k] = 0
    return out


def ints(s):
    s = s.strip()
    return [int(t) for t in s.split(",") if t.strip()] if s else []


def parse_leaf(body):
    """One non-tuple sharding body (inside the outer braces) -> canonical key."""
    body = strip_braced(body, "metadata")
    body = re.sub(r"\bshard_(as|like)\s+\d+", "", body).strip()
    if body in ("replicated", ""):
        return ("replicated",)
    if body == "manual":
        return ("manual",)
    if body == "unknown":
        return ("unknown",)
    if body == "unreduced":
        return ("unreduced",)
    m = re.match(r"maximal\s+device=(\d+)", body)
    if m:
        return ("maximal", int(m.group(1)))
    m = re.match(r"devices=\[([\d,\s]*)\]\s*(.*)$", body, re.S)
    if not m:
        raise Bad("unreadable sharding {%s}" % body)
    dims = ints(m.group(1))
    rest = m.group(2).strip()
    mi = re.match(r"<=\[([\d,\s]*)\](?:\s*T\(([\d,\s]*)\))?\s*(.*)$", rest, re.S)
    if mi:
        devices = iota_devices(ints(mi.group(1)), ints(mi.group(2) or ""))
        rest = mi.group(3)
    else:
        me = re.match(r"([\d,\s]+)(.*)$", rest, re.S)
        if not me:
            raise Bad("no device list in {%s}" % body)
        devices = ints(me.group(1))
        rest = me.group(2)
    rest = rest.strip()
    kinds = []
    if rest.startswith("last_tile_dim_replicate"):
        kinds = ["replicated"]
    else:
        ml = re.match(r"last_tile_dims=\{([^}]*)\}", rest)
        if ml:
            kinds = [k.strip() for k in ml.group(1).split(",") if k.strip()]
    n = 1
    for d in dims:
        n *= d
    if n != len(devices):
        raise Bad("device count %d != %d in {%s}" % (len(devices), n, body))
    return canon(dims, devices, kinds)


def canon(dims, devices, kinds):
    """XLA's canonical form as a placement: subgroup dims of size 1 dropped,
    same kinds merged, replicated last, replication groups sorted."""
    nd = len(dims) - len(kinds)
    data = dims[:nd]
    order = {"manual": 0, "unreduced": 1, "replicated": 2}
    # Reorder the array so subgroups go manual, unreduced, replicated, and
    # merge equal kinds: a transpose of the trailing dims.
    r = len(dims)
    strides = [1] * r
    for k in range(r - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    sub = sorted(range(len(kinds)), key=lambda k: order.get(kinds[k], 3))
    perm = list(range(nd)) + [nd + k for k in sub]
    tdims = [dims[p] for p in perm]
    out = []
    idx = [0] * r
    for _ in range(len(devices)):
        src = sum(idx[k] * strides[perm[k]] for k in range(r))
        out.append(devices[src])
        for k in range(r - 1, -1, -1):
            idx[k] += 1
            if idx[k] < tdims[k]:
                break
            idx[k] = 0
    skinds = [kinds[k] for k in sub]
    sdims = tdims[nd:]
    mk, md = [], []
    for k, d in zip(skinds, sdims):
        if d == 1:
            continue
        if mk and mk[-1] == k:
            md[-1] *= d
        else:
            mk.append(k)
            md.append(d)
    ntile = 1
    for d in data:
        ntile *= d
    if ntile == 1 and not mk:
        return ("replicated",) if len(out) <= 1 else ("tiled", tuple(data), tuple(out), ())
    if ntile == 1 and mk == ["replicated"]:
        return ("replicated",)
    if ntile == 1 and mk == ["manual"]:
        return ("manual",)
    if mk and mk[-1] == "replicated":
        g = md[-1]
        out = [d for k in range(0, len(out), g) for d in sorted(out[k:k + g])]
    return ("tiled", tuple(data + md), tuple(out), tuple(mk))


def parse_sharding(text):
    """`{...}` -> ("tuple", [leaf...]) or a leaf key."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise Bad("not a sharding: %s" % text)
    body = t[1:-1].strip()
    if body.startswith("{"):
        return ("tuple", [parse_leaf(p.strip()[1:-1]) for p in split_top(body) if p.strip()])
    if body == "":
        return ("tuple", [])
    return parse_leaf(body)


def same(got, want):
    if got == want:
        return True
    # A single sharding on a tuple means every leaf (XLA's rule).
    if got[0] == "tuple" and want[0] != "tuple":
        return all(l == want for l in got[1]) and len(got[1]) > 0
    if want[0] == "tuple" and got[0] != "tuple":
        return all(l == got for l in want[1]) and len(want[1]) > 0
    return False


def show(k):
    if k[0] == "tuple":
        return "{" + ", ".join(show(l) for l in k[1]) + "}"
    if k[0] == "tiled":
        return "{devices=%s %s%s}" % (list(k[1]), list(k[2]) if len(k[2]) <= 16 else "...",
                                      " " + ",".join(k[3]) if k[3] else "")
    return "{" + " ".join(str(x) for x in k) + "}"


# ---- the printed module -----------------------------------------------------

INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=")


def instr_shardings(text):
    """name -> sharding text, from tessera's printed module."""
    out = {}
    for line in text.splitlines():
        m = INSTR.match(line)
        if not m:
            continue
        i = line.find("sharding={")
        while i > 0 and (line[i - 1].isalnum() or line[i - 1] == "_"):  # not e.g. out_sharding=
            i = line.find("sharding={", i + 1)
        if i < 0:
            continue
        j, depth = i + len("sharding="), 0
        k = j
        while k < len(line):
            if line[k] == "{":
                depth += 1
            elif line[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out[m.group(1)] = line[j:k + 1]
    return out


# ---- options ----------------------------------------------------------------


def header_flags(opts):
    """The header attributes for ShardingPropagation(is_spmd, metadata,
    {to_output...}, {to_parameters...}, ...)."""
    inner = opts[opts.find("(") + 1:opts.rfind(")")]
    args = [a.strip() for a in split_top(inner)]
    flags = []
    if len(args) >= 1 and args[0] == "true":
        for pos, name in ((2, "allow_spmd_sharding_propagation_to_output"),
                          (3, "allow_spmd_sharding_propagation_to_parameters")):
            if len(args) > pos and args[pos].startswith("{"):
                vals = [v.strip() for v in args[pos].strip("{}").split(",")]
                if any(v == "true" or v.startswith("GetParam") for v in vals):
                    vals = ["true" if v.startswith("GetParam") else v for v in vals]
                    flags.append("%s={%s}" % (name, ",".join(vals)))
    return flags


def with_header(text, flags):
    if not flags:
        return text
    m = re.search(r"^\s*HloModule\s+[^\s,]+", text, re.M)
    if not m:
        return text
    return text[:m.end()] + ", " + ", ".join(flags) + text[m.end():]


def excluded(path):
    """(file, instr) pairs from EXCLUDED.md rows `| FILE | INSTR | reason |`."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].endswith(".hlo"):
            out[(cells[0], cells[1].strip("`"))] = cells[2]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera")
    ap.add_argument("corpus")
    ap.add_argument("--min-modules", type=int, default=0)
    ap.add_argument("--min-expect", type=int, default=0)
    ap.add_argument("--only")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    jl = os.path.join(a.corpus, "expectations.jsonl")
    if not os.path.exists(jl):
        print("skipped: %s not found" % jl)
        return 77
    excl = excluded(os.path.join(os.path.dirname(os.path.abspath(__file__)), "EXCLUDED.md"))
    rows = [json.loads(l) for l in open(jl) if l.strip()]
    mods_ok = exp_ok = exp_total = 0
    nexcl = parse_fail = 0
    tmp = tempfile.mkdtemp(prefix="tessera-prop-")
    for r in rows:
        if a.only and r["file"] != a.only:
            continue
        trivial = set(r.get("already_annotated_in_input", []))
        nontriv = [k for k in r["expect"] if k not in trivial]
        exp_total += len(nontriv)
        src = open(os.path.join(a.corpus, r["file"])).read()
        path = os.path.join(tmp, r["file"])
        with open(path, "w") as f:
            f.write(with_header(src, header_flags(r["xla_options"])))
        cmd = [a.tessera, "opt", "--stage=propagated"]
        if r.get("num_partitions", 1) > 1:
            cmd += ["--num-partitions", str(r["num_partitions"])]
        p = subprocess.run(cmd + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        if p.returncode != 0:
            parse_fail += 1
            err = (p.stderr.strip().splitlines() or ["(no message)"])[0]
            print("FAIL %s: tessera exit %d: %s" % (r["file"], p.returncode, err))
            continue
        got = instr_shardings(p.stdout)
        bad = []
        for name, want in r["expect"].items():
            if want is None:  # op::NoSharding(): Tessera gives everything one
                bad.append((name, got.get(name, "(none)"), "(no sharding)", name in trivial))
                continue
            try:
                w = parse_sharding(want)
                g = parse_sharding(got[name]) if name in got else None
            except Bad as e:
                bad.append((name, str(e), want, name in trivial))
                continue
            if g is not None and same(g, w):
                if name not in trivial:
                    exp_ok += 1
                continue
            bad.append((name, got.get(name, "(none)"), want, name in trivial))
        if not bad:
            mods_ok += 1
        for name, g, w, triv in bad:
            why = excl.get((r["file"], name))
            if why:
                nexcl += 1
            tag = "excluded (%s)" % why if why else ("trivial" if triv else "mismatch")
            print("%-8s %s %s [%s]\n    got  %s\n    want %s" % (
                "EXCL" if why else "MISMATCH", r["file"], name, tag, g, w))
        if a.verbose and not bad:
            print("ok       %s" % r["file"])
    n = len(rows) if not a.only else 1
    print("propagation: modules %d/%d, non-trivial expectations %d/%d (%d failed to run, %d mismatches excluded)"
          % (mods_ok, n, exp_ok, exp_total, parse_fail, nexcl))
    if mods_ok < a.min_modules or exp_ok < a.min_expect:
        print("below the floor: modules >= %d, expectations >= %d" % (a.min_modules, a.min_expect))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
