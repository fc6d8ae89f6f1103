"""What the end-to-end test scripts share: running the logpbench binary, reading its JSON, checking
that a failure is clear. Each script is invoked as SCRIPT LOGPBENCH SOURCE_DIR TEST [ARGS]."""
import glob
import json
import os
import subprocess
import sys
import time

BIN, SRC = sys.argv[1], sys.argv[2]


def run(args, timeout=180, check=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"logpbench {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def load(path):
    with open(path) as f:
        return json.load(f)


def expect_fail(args, needle, codes=(1, 2, 3), timeout=120):
    """Runs a command that must fail: one of `codes`, a message containing `needle`, no crash.
    Returns how long it took."""
    t0 = time.time()
    p = run(args, timeout=timeout, check=False)
    msg = p.stdout + p.stderr
    assert p.returncode in codes, f"{args}: exit {p.returncode}, wanted one of {codes}\n{msg}"
    assert needle.lower() in msg.lower(), f"{args}: no '{needle}' in\n{msg}"
    assert "terminate called" not in msg and "Segmentation" not in msg and "Aborted" not in msg, msg
    return time.time() - t0


def probe_floor_ns():
    """The machine's own floor: half the bare cache-line ping-pong's median round trip between the two cores
    (bench/shm_bare_pingpong next to the binary's build), in ns; 0 where the probe is not built."""
    probe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(BIN))), "bench", "shm_bare_pingpong")
    if not os.access(probe, os.X_OK):
        return 0.0
    p = subprocess.run([probe, "20000", "0", "1"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return 0.0
    return json.loads(p.stdout)["rtt"]["median_ns"] / 2


def kill_peer_midrun(args, out, env=None, timeout=60):
    """Starts `logpbench ARGS` as a ping-pong of many runs writing `out`, SIGKILLs its forked peer rank once a
    run is on disk, and returns (the leader's exit code, its output, seconds from the kill to its exit)."""
    quiet = [] if "-q" in args else ["-q"]
    p = subprocess.Popen([BIN] + args + ["--bench", "pingpong", "-n", "200000", "--runs", "1000", "--json", out] + quiet,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.time() + timeout
        while not (os.path.exists(out) and load(out).get("runs")):
            assert time.time() < deadline and p.poll() is None, ("no run on disk", p.poll())
            time.sleep(0.1)
        child = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        assert child, "no forked peer rank"
        os.kill(int(child[0]), 9)
        t0 = time.time()
        text = p.communicate(timeout=timeout)[0]
        return p.returncode, text, time.time() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def params_present(doc, keys=("o_s", "o_s_plus_o_r", "g", "L", "rtt")):  # the signature's figures
    for k in keys:
        p = doc["parameters"][k]
        assert "value_ns" in p and "ci95_ns" in p, (k, p)
        assert p["value_ns"] is not None or p.get("error"), (k, p)


def rdma_device():
    """The RDMA device the tests use (LOGPB_RDMA_DEV, else the first /sys/class/infiniband lists); without one,
    exits 77, which ctest reports as skipped."""
    devs = sorted(os.path.basename(d) for d in glob.glob("/sys/class/infiniband/*"))
    dev = os.environ.get("LOGPB_RDMA_DEV") or (devs[0] if devs else None)
    if not dev:
        print("SKIP: no RDMA device here; scripts/rxe-lab runs these tests inside a Soft-RoCE guest")
        sys.exit(77)
    return dev


def main(namespace, name, *args):
    namespace["test_" + name](*args)
    print(f"{name} {' '.join(args)}: ok")
