#!/usr/bin/env python3
"""Kill -9 a training run at chosen points, resume it, and compare the final
parameters byte for byte with an uninterrupted run of the same steps.

  kill_resume.py TESSERA MODULE WORK --launch devices:4|mpirun:4 --steps S
                 --every E --kill WHEN [--kill WHEN ...] [--mpirun PATH]
                 [--resume-module MODULE2 --resume-launch ...] [--tolerance R]

WHEN is step:K (the 'step K' line was printed), ckpt:K (checkpoint K was
committed) or write:K (checkpoint K is being written: its step-K.tmp/
exists; the writer is slowed by TESSERA_CHECKPOINT_WRITE_DELAY_MS so the
kill lands inside the write). Every process of the job gets SIGKILL from
here, by PID: with --devices the process itself, under mpirun every rank
(not mpirun: a launcher killed first is the user cancelling the job, for
which the hang detector writes no digest; every rank dying is a crash, and
mpirun then ends the job). The hang coordinator is left alive so that its
digest can be checked to name the newest complete checkpoint. With --resume-module the job resumes under
another module (another mesh): bitwise unless --tolerance R (relative) is
given. Standard library only."""
import argparse
import filecmp
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def launch_cmd(args, launch, module, extra):
    kind, n = launch.split(":")
    if kind == "devices":
        return [args.tessera, "run", "--devices", n] + extra + [module]
    return [args.mpirun, "-np", n, args.tessera, "run"] + extra + [module]


def is_rank(pid):
    """A tessera process (a rank), not mpirun or a shell."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "tessera"
    except OSError:
        return False


def descendants(root):
    """PIDs below root (by /proc ppid links), and which are hang coordinators."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append((int(d), argv))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for pid, argv in kids.get(p, []):
            out.append((pid, len(argv) > 1 and argv[1] == b"hang-coordinator"))
            todo.append(pid)
    return out


def run_ok(cmd, env=None, label=""):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    if r.returncode != 0:
        fail(f"{label}: exit {r.returncode}: {' '.join(cmd)}\n{r.stdout[-3000:]}")
    return r.stdout


def read_npy_f32(path):
    """(shape, values) of a little-endian f32 .npy (format 1.0), for --tolerance."""
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    if "'<f4'" not in header:
        return None
    return struct.unpack(f"<{(len(data) - 10 - hlen) // 4}f", data[10 + hlen:])


def compare(ref, got, tolerance, label):
    names = sorted(n for n in os.listdir(ref) if n.endswith(".npy"))
    if not names:
        fail(f"{label}: no outputs in {ref}")
    worst = 0.0
    for n in names:
        a, b = os.path.join(ref, n), os.path.join(got, n)
        if not os.path.exists(b):
            fail(f"{label}: {b} missing")
        if filecmp.cmp(a, b, shallow=False):
            continue
        if tolerance is None:
            fail(f"{label}: {n} differs from the uninterrupted run")
        x, y = read_npy_f32(a), read_npy_f32(b)
        if x is None or y is None or len(x) != len(y):
            fail(f"{label}: {n} differs (not comparable as f32)")
        scale = max(max(abs(v) for v in x), 1e-30)
        rel = max(abs(p - q) for p, q in zip(x, y)) / scale
        worst = max(worst, rel)
        if rel > tolerance:
            fail(f"{label}: {n} differs by {rel:.3g} relative (> {tolerance})")
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera")
    ap.add_argument("module")
    ap.add_argument("work")
    ap.add_argument("--launch", default="devices:4")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--kill", action="append", default=[])
    ap.add_argument("--resume-module")
    ap.add_argument("--resume-launch")
    ap.add_argument("--tolerance", type=float)
    ap.add_argument("--delay-ms", default="400")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    common = ["--steps", str(args.steps), "--loop"]
    rmod = args.resume_module or args.module
    rlaunch = args.resume_launch or args.launch

    ref = os.path.join(args.work, "ref")
    run_ok(launch_cmd(args, rlaunch, rmod, common + ["--outputs", ref]), label="uninterrupted run")

    for when in args.kill:
        kind, k = when.split(":")
        k = int(k)
        tag = f"{kind}{k}"
        ck = os.path.join(args.work, "ckpt-" + tag)
        digest = os.path.join(args.work, "digest-" + tag + ".json")
        env = dict(os.environ)
        if kind == "write":
            env["TESSERA_CHECKPOINT_WRITE_DELAY_MS"] = args.delay_ms
        cmd = launch_cmd(args, args.launch, args.module,
                         common + ["--checkpoint-dir", ck, "--checkpoint-every", str(args.every),
                                   "--hang-digest", digest])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True)
        want = {"step": f"step {k} ", "ckpt": f"checkpoint: step {k} committed"}.get(kind)
        deadline = time.time() + 300
        seen = []
        if want:
            for line in p.stdout:
                seen.append(line)
                if line.startswith(want):
                    break
            else:
                fail(f"{tag}: the run ended before '{want}':\n{''.join(seen[-30:])}")
        else:
            tmp = os.path.join(ck, f"step-{k}.tmp")
            while not os.path.isdir(tmp):
                if p.poll() is not None or time.time() > deadline:
                    fail(f"{tag}: {tmp} never appeared")
                time.sleep(0.005)
        procs = descendants(p.pid)
        coords = [pid for pid, is_coord in procs if is_coord]
        if args.launch.startswith("mpirun"):
            victims = [pid for pid, is_coord in procs if not is_coord and is_rank(pid)]
        else:
            victims = [p.pid] + [pid for pid, is_coord in procs if not is_coord]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
        p.stdout.close()
        if kind == "write" and os.path.isdir(os.path.join(ck, f"step-{k}")):
            fail(f"{tag}: step-{k} was committed before the kill landed (raise --delay-ms)")
        steps = sorted(int(n[5:]) for n in os.listdir(ck) if n.startswith("step-") and n[5:].isdigit()) \
            if os.path.isdir(ck) else []
        # The coordinator saw the ranks die: its digest names the newest complete checkpoint.
        # (Unless the job had finished before the kill landed: the last step's
        # checkpoint exists and the workers said goodbye, no hang to report.)
        finished = bool(steps) and steps[-1] == args.steps
        t0 = time.time()
        digest_note = "no hang coordinator"
        while coords and not os.path.exists(digest) and time.time() - t0 < (5 if finished else 60):
            time.sleep(0.05)
        if coords and os.path.exists(digest):
            with open(digest) as f:
                d = json.load(f)
            named = d.get("checkpoint", "")
            expect = f"{ck}/step-{steps[-1]}" if steps else ""
            if named != expect:
                fail(f"{tag}: the digest names checkpoint '{named}', the newest complete one is '{expect}'")
            digest_note = f"digest names '{named}'"
        elif coords and finished:
            digest_note = "the job had finished: no digest"
        elif coords:
            fail(f"{tag}: the hang coordinator wrote no digest within 60 s")
        for pid in coords:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out = os.path.join(args.work, "out-" + tag)
        log = run_ok(launch_cmd(args, rlaunch, rmod,
                                common + ["--resume", ck, "--checkpoint-dir", ck, "--checkpoint-every",
                                          str(args.every), "--outputs", out]), label=f"{tag}: resume")
        resumed = [l for l in log.splitlines() if l.startswith("checkpoint: resumed from")]
        frm = resumed[0].split()[3] if resumed else "(step 1)"
        # The newest complete one before --steps (a kill that landed after the
        # last step leaves step-S, which holds no step left to run).
        usable = [s for s in steps if s < args.steps]
        if usable and frm != f"{ck}/step-{usable[-1]}":
            fail(f"{tag}: resumed from {frm}, the newest complete checkpoint before --steps is step-{usable[-1]}")
        worst = compare(ref, out, args.tolerance, tag)
        how = "bitwise equal" if worst == 0 else f"within {worst:.3g} relative"
        print(f"ok {tag}: killed with checkpoints {steps} ({digest_note}), resumed from {frm}: final parameters {how}",
              flush=True)


if __name__ == "__main__":
    main()
