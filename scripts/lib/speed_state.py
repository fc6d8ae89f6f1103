"""The machine's speed state around a comparison's pair of runs, named: the bare cache-line ping-pong between
cores 0 and 1 (bench/shm_bare_pingpong, 20000 round trips, a few ms) before, between and after the pair.

The VMs seen here switch between a fast state (bare round trip 70-140 ns) and a slow one (400-560 ns) for
seconds to minutes (docs/mpi.md, tests/e2e/truth.py). A pair whose probes disagree by more than the
comparisons' one rule (scripts/lib/mpi_ref.py steady) ran across a switch, and its ratio compares the
machine with itself; the caller leaves it out (scripts/lib/ratios.py skip). The caller holds the CPU lock.
"""
import json
import os
import statistics
import subprocess

from mpi_ref import STATE_TOLERANCE, steady  # noqa: F401  the one rule for "the machine stayed in one state"

# Between the two states' bare round trips seen here (about their geometric mean): a name only; the figures
# are printed beside it, and on another machine they are what counts.
FAST_BELOW_NS = 250.0


def probe(build, iters=20000, cpus=(0, 1)):
    """The bare ping-pong's median round trip in ns; None where it is not built or failed."""
    exe = os.path.join(build, "bench", "shm_bare_pingpong")
    if not os.access(exe, os.X_OK):
        return None
    p = subprocess.run([exe, str(iters), str(cpus[0]), str(cpus[1])], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["rtt"]["median_ns"]


def name(probes):
    """(state, why_left_out): "fast" or "slow" where the probes agree, else "two states" with the reason
    to leave the pair out; "unknown" (kept) where a probe is missing."""
    shown = " / ".join("-" if x is None else f"{x:.0f}" for x in probes)
    if any(x is None for x in probes):
        return f"unknown (bare ping-pong {shown} ns)", None
    if not steady(probes):
        return (f"two states (bare ping-pong {shown} ns)",
                f"the machine changed speed during the pair (bare ping-pong {shown} ns)")
    which = "fast" if statistics.median(probes) < FAST_BELOW_NS else "slow"
    return f"{which} (bare ping-pong {shown} ns)", None
