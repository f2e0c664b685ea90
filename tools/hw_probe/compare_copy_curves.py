#!/usr/bin/env python3
"""p2psim's CUDA copies on the H200 preset against the recorded H200 curves, size by size.

    tools/hw_probe/compare_copy_curves.py [--p2psim build/tools/p2psim/p2psim] [--set KEY=VALUE ...]

For each size from 4 KiB to 256 MiB and each direction it runs
scenarios/validation/h200_cuda_copies.yaml and prints, beside the recordings of
tests/data/hw_probe:
  single  one asynchronous copy timed to its completion, against the median (and range) of
          the copies between CUDA events of every recording (copy_curves.txt 'single',
          sync_auto.txt's event column, and each run of direction*.txt);
  sync    one synchronous copy timed by its caller, against sync_auto.txt (sizes it has).
Errors are relative to the median; the last line gives the largest from 64 KiB up. --set
passes settings to every run (--set device.gpu0.copy_launch=0.3us, to try a calibration).
docs/architecture.md, "CUDA copy costs", cites the output.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data", "hw_probe")
SCENARIO = os.path.join(ROOT, "scenarios", "validation", "h200_cuda_copies.yaml")


def recordings():
    """{(dir, bytes): [single us, ...]}, {(dir, bytes): sync us}."""
    single, sync = {}, {}
    for path in glob.glob(os.path.join(DATA, "*", "*", "copy_curves.txt")):
        for line in open(path):
            f = line.split()
            if len(f) > 2 and f[0] in ("h2d", "d2h"):
                single.setdefault((f[0], int(f[1])), []).append(float(f[2]))
    for path in glob.glob(os.path.join(DATA, "*", "direction*.txt")):
        for line in open(path):
            f = line.split()
            if len(f) == 6 and f[0] in ("h2d", "d2h"):
                single.setdefault((f[0], int(f[1])), []).append(float(f[2]))
    for path in glob.glob(os.path.join(DATA, "*", "sync_auto.txt")):
        for line in open(path):
            f = line.split()
            if len(f) == 5 and f[0] in ("h2d", "d2h"):
                key = (f[0], int(f[1]))
                single.setdefault(key, []).append(float(f[3]))
                sync[key] = float(f[2])
    return single, sync


def simulate(p2psim, size, out, extra):
    sets = [a for s in extra for a in ("--set", s)]
    for name in ("h2d_single", "d2h_single", "h2d_sync", "d2h_sync"):
        sets += ["--set", "program.%s.size=%dB" % (name, size)]
    subprocess.run([p2psim, "run", SCENARIO, "--json", out] + sets, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    with open(out) as f:
        return {b["transfer"]: b["seconds"] * 1e6 for b in json.load(f)["bandwidth"] if "call" in b}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p2psim", default=os.path.join(ROOT, "build", "tools", "p2psim", "p2psim"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    worst = 0.0
    single, sync = recordings()
    print("%-4s %10s %11s %11s %17s %7s %11s %11s %7s" % (
        "dir", "bytes", "sim single", "median", "range", "error", "sim sync", "measured", "error"))
    with tempfile.TemporaryDirectory() as tmp:
        for exp in range(12, 29, 1):
            size = 1 << exp
            if not any(k[1] == size for k in single):
                continue
            sim = simulate(args.p2psim, size, os.path.join(tmp, "run.json"), args.set)
            for d in ("h2d", "d2h"):
                rec = single.get((d, size))
                if not rec:
                    continue
                med = statistics.median(rec)
                s = sim[d + "_single"]
                row = "%-4s %10d %11.2f %11.2f %8.2f..%-8.2f %+6.1f%%" % (
                    d, size, s, med, min(rec), max(rec), 100 * (s / med - 1))
                if size >= 65536:
                    worst = max(worst, abs(100 * (s / med - 1)))
                if (d, size) in sync:
                    y = sim[d + "_sync"]
                    row += " %11.2f %11.2f %+6.1f%%" % (y, sync[(d, size)], 100 * (y / sync[(d, size)] - 1))
                print(row)
    print("largest single-copy error from 64 KiB up: %.1f%%" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
