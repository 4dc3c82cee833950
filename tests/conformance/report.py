#!/usr/bin/env python3
"""XLA conformance: runs `tessera opt` over the corpus of XLA's own parser tests
(shared/corpus/xla_tests, see its SOURCES.md) and prints each failing case and
a count per folder:

    parser_valid N/281
    parser_invalid N/122
    real N/45

usage: report.py [--tessera BIN] [--corpus DIR] [--known FILE] [-v] [FOLDER...]

What a case must do to pass (README.md beside this script says why):
  parser_valid    exit 0 at --stage=verified (or --stage=parsed where
                  cases.jsonl says xla_check=parsed); for roundtrip_long and
                  roundtrip_short cases the printed module must equal the
                  input after canon() (whitespace and `%` only).
  parser_invalid  exit 2 (or any of expect_exit), nothing on stdout, a located
                  `file:line:col: error: ` message, and, where XLA's test names
                  a message, Tessera's message must contain it or the phrase
                  MESSAGE_MAP gives for it.
  real            exit 0 at --stage=verified.

With --known FILE, a failure listed there (one `folder/file  owner: why` a
line) is expected: the exit status is 1 only for failures not listed, and a
listed case that now passes is reported so the list can shrink. Exit 77 (the
CTest skip code) when the corpus is absent.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

# parser_invalid case -> Tessera's wording of the rejection XLA's test names,
# where the two differ (Tessera's messages, and the bad_input goldens that pin
# them, predate this corpus). Either spelling passes; a case with no entry must
# contain XLA's text. Each entry is the same reason in other words: read them.
MESSAGE_MAP = {
    # literals
    "LiteralDimensionsError.hlo": "expected '{' for dimension 0 of the constant (its shape has rank 2), got '}'",
    "LiteralDimensionsMismatch_1.hlo": "constant is nested deeper than the rank 1 of its shape",
    "LiteralDimensionsMismatch_2.hlo": "expected '{' for dimension 1 of the constant (its shape has rank 2), got '1'",
    "LiteralDimensionsMismatch_3.hlo": "too many elements in dimension 1 of the constant: expected 3",
    "ConstantU4Underflow.hlo": "value '-1' is out of range for u4",
    "ConstantU4Overflow.hlo": "value '16' is out of range for u4",
    "ConstantS4Underflow.hlo": "value '-9' is out of range for s4",
    "ConstantS4Overflow.hlo": "value '8' is out of range for s4",
    "ConstantUnsignedOverflow.hlo": "value '4294967296' is out of range for u32",
    # structure
    "PredecessorUndefined.hlo": "undefined control predecessor 'done'",
    "PaddingConfigIsNotWindowPad.hlo": "window padding '1_1_0' cannot have interior padding",
    "MultipleEntries.hlo": "second ENTRY computation 'c2'",
    "MultipleEntries_nocolon.hlo": "second ENTRY computation 'c2'",
    "MultipleRoots.hlo": "second ROOT instruction 'const2'",
    "MultipleRoots_nocolon.hlo": "second ROOT instruction 'const2'",
    "ComputationExists.hlo": "computation 'comp' defined twice (first at 2:1)",
    "CrossComputationLookup.hlo": "8:39: error: undefined operand 'aparam'",
    "CrossComputationLookup_nocolon.hlo": "8:39: error: undefined operand 'aparam'",
    "NegativeParameterNumber.hlo": "parameter number must not be negative, got -1",
    "NegativeParameterNumber_wrapped.hlo": "parameter number must not be negative, got -1",
    "DuplicateParameterNumberIsDetected_renamed.hlo": "parameter number 0 is used twice",
    "DuplicateParameterNumberIsDetected.hlo": "parameter number 0 is used twice",
    # XLA prints the declared shape with the default layout it assigns
    "ShapeMismatchInOperand.hlo": "The declared operand shape f32[2,5] is not compatible with the shape of the "
                                  "operand instruction f32[2,2]",
    # module header aliasing / donors
    "AliasingWrongIndex.hlo": "expected ',' or '}' in the shape index, got ':'",
    "AliasingShapeIndexNotNumerical.hlo": "expected an output shape index, got 'a'",
    "AliasingWrongFormatNoColon.hlo": "expected '{' to start a shape index, got '('",
    "AliasingWrongFormatTwoColons.hlo": "expected ',' or '}', got ':'",
    "AliasingWrongFormatAlphaParam.hlo": "expected an output shape index, got 'a'",
    "BufferDonorShapeIndexNotNumerical.hlo": "expected a parameter shape index, got 'a'",
    "BufferDonorWrongFormatAlphaParam.hlo": "expected parameter number, got 'zero'",
    # instruction rules
    "ParseDynamicReshapeMissingOperands.hlo": "dynamic-reshape takes at least 1 operand, got 0",
    "NontupleInfeed.hlo": "infeed result must be (data, token[]), got pred[]",
    "NontupleInfeed_nocolon.hlo": "infeed result must be (data, token[]), got pred[]",
    "CheckIndexedConditionalDimension.hlo": "conditional selector must be pred[] or s32[], got s32[2]",
    "CheckIndexedConditionalElementType.hlo": "conditional selector must be pred[] or s32[], got f32[]",
    # a pred selector takes true_computation/false_computation, not branch_computations
    "CheckPredicatedConditionalRequiresTrueAndFalseComputation.hlo": "conditional needs attribute true_computation",
    "DesugarParsingTest_AllReduceUpdate_Invalid.hlo": "unknown opcode 'all-reduce-update'",
    "DesugarParsingTest_AllGatherUpdate_Invalid.hlo": "unknown opcode 'all-gather-update'",
    "DesugarParsingTest_CollectivePermuteUpdate_Invalid.hlo": "unknown opcode 'collective-permute-update'",
    "DesugarParsingTest_CopyUpdate_Invalid.hlo": "unknown opcode 'copy-update'",
    "DesugarParsingTest_SendStart_Invalid.hlo": "unknown opcode 'send-start'",
    "DesugarParsingTest_SendUpdate_Invalid.hlo": "unknown opcode 'send-update'",
    "DesugarParsingTest_RecvStart_Invalid.hlo": "unknown opcode 'recv-start'",
    "DesugarParsingTest_RecvUpdate_Invalid.hlo": "unknown opcode 'recv-update'",
    # the operand count check comes first in Tessera; the reason is the same
    "AsyncDoneZeroOperandsRejected.hlo": "'async-done' takes 1 operand, got 0",
    # XLA's default recursion limit is 8192 levels, Tessera's 256
    "Gen_DeeplyNestedOperandsDoesNotStackOverflow.hlo": "nesting deeper than 256 levels",
    "Gen_DeeplyNestedShapes_20000.hlo": "nesting deeper than 256 levels",
    "Gen_DeeplyNestedTupleLiterals_20000.hlo": "nesting deeper than 256 levels",
    "Gen_DeeplyNestedInlineComputations_20000.hlo": "nesting deeper than 256 levels",
}


TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<lc>//[^\n\r]*) | (?P<bc>/\*.*?\*/)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<num>[-+]?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![A-Za-z_x]))
  | (?P<arrow>->)
  | (?P<id>%?[-A-Za-z0-9_.]+)
  | (?P<p><=|\.\.\.|.)
""", re.X | re.S)
TYPES = set("pred s1 s2 s4 s8 s16 s32 s64 u1 u2 u4 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128 token "
            "f8e5m2 f8e4m3 f8e4m3fn f8e4m3b11fnuz f8e5m2fnuz f8e4m3fnuz f8e3m4 f8e8m0fnu f4e2m1fn "
            "f6e2m3fn f6e3m2fn opaque".split())


def tokens(text):
    out = []
    for m in TOKEN.finditer(text):
        k = m.lastgroup
        v = m.group()
        if k in ("ws", "lc", "bc"):
            continue
        if k == "num":
            try:
                v = repr(float(int(v, 16)) if "x" in v.lower() else float(v))
            except ValueError:
                pass
        elif k == "id":
            v = v.lstrip("%")
            v = {"true": "1.0", "false": "0.0"}.get(v, v)
        out.append(v)
    return out


def closed(t, k, opening, closing):
    """One past the token that closes the `opening` at token k (len(t) when
    nothing does)."""
    depth, j = 0, k
    while j < len(t):
        depth += {opening: 1, closing: -1}.get(t[j], 0)
        j += 1
        if depth == 0:
            break
    return j


def shape_end(t, k):
    """One past the shape that starts at token k, or -1."""
    if k < len(t) and t[k] in TYPES and k + 1 < len(t) and t[k + 1] == "[":
        k += 2
        while k < len(t) and t[k] != "]":
            k += 1
        k += 1
        if k < len(t) and t[k] == "{":
            j = closed(t, k, "{", "}")
            if "=" not in t[k:j]:  # a layout, not the computation body after `-> f32[]`
                k = j
        return k
    if k < len(t) and t[k] == "(":
        k += 1
        if k < len(t) and t[k] == ")":
            return k + 1
        while True:
            k = shape_end(t, k)
            if k < 0 or k >= len(t):
                return -1
            if t[k] == ")":
                return k + 1
            if t[k] != ",":
                return -1
            k += 1
    return -1


def canon(text):
    """The token stream both sides are compared as (see README.md): comments,
    blanks and the `%` before names dropped; numbers compared by value
    (500 == 5e+02, true == 1); and the declared shape in front of an operand
    (`add(f32[] x, ...)`, XLA's long form) dropped, since Tessera prints the
    short form. Everything else, names, attribute order and spelling, layouts,
    shardings, must match."""
    t = tokens(text)
    out = []
    k = 0
    while k < len(t):
        if t[k] == "(" and (not out or out[-1] not in ("(", ",", "=")) and k + 2 < len(t) and \
                (t[k + 1] == ")" or t[k + 2] == ":"):
            # a computation's signature `(x: f32[]) -> f32[]`: XLA's short form
            # leaves it out; its content is the parameters and the root.
            j = closed(t, k, "(", ")")
            if j < len(t) and t[j] == "->":
                e = shape_end(t, j + 1)
                if e > 0 and e < len(t) and t[e] == "{":
                    k = e
                    continue
        if out and out[-1] in ("(", ","):
            e = shape_end(t, k)
            if e > k and e < len(t) and re.match(r"[A-Za-z_]", t[e]) and t[e] not in TYPES and \
                    (e + 1 >= len(t) or t[e + 1] != "("):
                k = e
                continue
        out.append(t[k])
        k += 1
    return out


def load_cases(folder):
    path = os.path.join(folder, "cases.jsonl")
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def run(tessera, args, timeout=60):
    try:
        p = subprocess.run([tessera, "opt"] + args, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after %ds" % timeout


def first_line(s):
    return s.strip().split("\n")[0][:200] if s.strip() else "(no message)"


def check_valid(tessera, d, c):
    path = os.path.join(d, c["file"])
    stage = "parsed" if c.get("xla_check") == "parsed" else "verified"
    args = ["--stage=" + stage]
    if c.get("replica_count", 1) != 1:
        args += ["--replica-count", str(c["replica_count"])]
    rc, out, err = run(tessera, args + [path])
    if rc != 0:
        return "exit %d: %s" % (rc, first_line(err))
    if c.get("kind") in ("roundtrip_long", "roundtrip_short"):
        with open(path, encoding="utf-8", errors="replace") as f:
            want = canon(f.read())
        got = canon(out)
        if got != want:
            k = 0
            while k < min(len(want), len(got)) and want[k] == got[k]:
                k += 1
            ctx = lambda t: " ".join(t[max(0, k - 8):k + 8])
            return "round-trip differs at token %d:\n      want: %s\n      got:  %s" % (k, ctx(want), ctx(got))
    return None


LOCATED = re.compile(r"^[^\n]*:\d+:\d+: error: ", re.M)


def check_invalid(tessera, d, c):
    path = os.path.join(d, c["file"])
    rc, out, err = run(tessera, ["--stage=verified", path])
    want_rc = c.get("expect_exit") or [2]
    if rc not in want_rc:
        return "exit %d, want %s%s" % (rc, "/".join(map(str, want_rc)), ": " + first_line(err) if err.strip() else "")
    if rc == 0:
        return None
    if out.strip():
        return "wrote to stdout on error"
    if not LOCATED.search(err):
        return "message not located (file:line:col: error:): " + first_line(err)
    want = c.get("xla_expected_substr") or []
    mapped = MESSAGE_MAP.get(c["file"])
    if mapped and mapped in err:
        return None
    for s in want:
        if s not in err:
            return "message lacks %r%s: %s" % (s, " (or %r)" % mapped if mapped else "", first_line(err))
    return None


def check_real(tessera, d, c):
    path = os.path.join(d, c["file"])
    args = ["--stage=verified"]
    rc, out, err = run(tessera, args + [path], timeout=300)
    if rc != 0:
        return "exit %d: %s" % (rc, first_line(err))
    return None


CHECKS = {"parser_valid": check_valid, "parser_invalid": check_invalid, "real": check_real}


def load_known(path):
    known = {}
    if not path:
        return known
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, why = line.partition(" ")
                known[name] = why.strip()
    return known


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "launcher", "tessera"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus", "xla_tests"))
    ap.add_argument("--known", help="file of expected failures (folder/file owner: why)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    ap.add_argument("folders", nargs="*", default=list(CHECKS))
    a = ap.parse_args()
    if not os.path.isdir(a.corpus):
        print("skipped: %s not found" % a.corpus)
        return SKIP
    known = load_known(a.known)
    unexpected = 0
    summary = []
    for name in a.folders:
        d = os.path.join(a.corpus, name)
        if not os.path.isdir(d):
            print("skipped: %s not found" % d)
            return SKIP
        cases = load_cases(d)
        npass = 0
        for c in cases:
            key = name + "/" + c["file"]
            why = CHECKS[name](a.tessera, d, c)
            if why is None:
                npass += 1
                if key in known:
                    print("NOW PASSES (drop it from the known list): %s" % key)
                elif a.verbose:
                    print("ok   %s" % key)
            else:
                tag = "KNOWN" if key in known else "FAIL "
                if key not in known:
                    unexpected += 1
                print("%s %s: %s%s" % (tag, key, why, ("\n      known: " + known[key]) if key in known else ""))
        summary.append("%s %d/%d" % (name, npass, len(cases)))
    print("\n".join(summary))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
