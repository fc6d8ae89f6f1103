"""What scripts/vs-logp-mpi and scripts/mpi-vs-bare share: one CPU lock for the whole comparison, every
MPI program launched the same way (scripts/mpirun-lab: Open MPI, 2 ranks, pml ob1, btl self,vader, plus
--bind-to core), each launch timed with mpirun included, LogP/MPI's driver built against the user's copy."""
import json
import os
import statistics
import subprocess
import sys
import time

from cpu_lock import hold_cpu_lock  # noqa: F401  held for the whole comparison; launches run the lab --no-lock
from ratios import median_of_ratios  # noqa: F401  the comparisons' one summary of their rounds

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"))
LPB = os.path.join(BUILD, "app", "logpbench")
BARE = os.path.join(BUILD, "bench", "mpi_bare_pingpong")
LAB = os.path.join(ROOT, "scripts", "mpirun-lab")
DRIVER_SRC = os.path.join(ROOT, "bench", "logp_mpi", "driver.c")
# The later --bind-to overrides the lab's --bind-to none (Open MPI takes the last): rank r on core r.
LAUNCH = ["-np", "2", "--no-lock", "--mpirun-arg=--bind-to", "--mpirun-arg=core"]
LAUNCH_TEXT = "Open MPI, 2 ranks, --bind-to core, pml ob1, btl self,vader (scripts/mpirun-lab)"
# Bare ping-pongs around a measurement must agree this closely for it to count: the VMs seen here switch
# between speed states 3-4x apart every few seconds, and a comparison across a switch is noise; within one
# state the medians of short bare runs were seen 20-25% apart (230 and 280 ns: five 10 ns TSC steps).
STATE_TOLERANCE = 1.5


def die(prog, msg, code=2):
    print(f"{prog}: {msg}", file=sys.stderr)
    sys.exit(code)


def need(prog, path, what):
    if not os.access(path, os.X_OK):
        die(prog, f"no {path}: {what}")


def mpirun(prog, cmd, log, timeout=900):
    """Runs cmd as 2 MPI ranks; returns the wall seconds, mpirun's start and end included."""
    full = [LAB] + LAUNCH + ["--timeout", str(timeout), "--"] + cmd
    t0 = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.run(full, stdout=f, stderr=subprocess.STDOUT)
    took = time.monotonic() - t0
    if p.returncode != 0:
        with open(log) as f:
            tail = f.read()[-1500:]
        die(prog, f"{' '.join(full)} exited {p.returncode}; its output ({log}) ends:\n{tail}", 1)
    return took


def build_driver(prog, logp_dir, out_dir):
    """Builds bench/logp_mpi/driver.c with mpicc against the user's LogP/MPI (never copied into the tree)."""
    logp_dir = os.path.abspath(logp_dir)
    for f in ("logp_mpi.h", "liblogp.a"):
        if not os.path.exists(os.path.join(logp_dir, f)):
            die(prog, f"no {f} in {logp_dir}: clone willtunnels/logp_mpi there and build it (make LDOPTS=-lm)")
    exe = os.path.join(out_dir, "logp_driver")
    cmd = ["mpicc", "-O3", "-Wall", "-I", logp_dir, DRIVER_SRC, "-L", logp_dir, "-llogp", "-lm", "-o", exe]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        die(prog, f"{' '.join(cmd)} failed:\n{p.stderr}", 1)
    return exe


def lpb_has(flag):
    p = subprocess.run([LPB, "--help"], capture_output=True, text=True)
    return flag in p.stdout + p.stderr


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def span(xs, scale=1e-3, fmt="{:.2f}"):
    """A figure's range over the rounds (µs by default), or "null" where a round reported none."""
    if not xs or any(x is None for x in xs):
        return "null"
    lo, hi = min(xs) * scale, max(xs) * scale
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def probe(prog, out, tag, iters=20000):
    """The bare MPI ping-pong's median RTT at 0 bytes (a short run): which speed state the VM is in."""
    js = os.path.join(out, f"probe-{tag}.json")
    mpirun(prog, [BARE, "--size", "0", "--iters", str(iters), "--json", js], os.path.join(out, f"probe-{tag}.log"))
    with open(js) as f:
        return json.load(f)["rtt"]["median_ns"]


def steady(medians):
    """The medians of bare runs around a measurement agree within STATE_TOLERANCE (scripts/raw-vs-mpi's pairs
    too): the machine stayed in one speed state."""
    return max(medians) <= STATE_TOLERANCE * min(medians)
