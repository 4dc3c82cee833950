"""What the training-step goldens share (make_goldens.py,
make_transformer_golden.py): the example module written at small sizes by
its generator, and the arrays next to it as .npy files."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_module(out, generator, args, name):
    """Runs examples/GENERATOR with args, writing OUT/NAME, and records the
    args in OUT/gen_args (the check regenerates the module from them)."""
    os.makedirs(out, exist_ok=True)
    gen = os.path.join(ROOT, "examples", generator)
    subprocess.run([sys.executable, gen] + args + ["-o", os.path.join(out, name)], check=True)
    with open(os.path.join(out, "gen_args"), "w") as f:
        f.write(" ".join(args) + "\n")


def save_arrays(out, prefix, arrays):
    """OUT/PREFIX<i>.npy for each array, as float32."""
    for i, a in enumerate(arrays):
        np.save(os.path.join(out, "%s%d.npy" % (prefix, i)), np.asarray(a, dtype=np.float32))
