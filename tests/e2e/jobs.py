#!/usr/bin/env python3
"""Jobs of N ranks, end to end: `local -N K`, srun (scripts/slurm-lab) and mpirun (scripts/mpirun-lab)
running `--bench pairs` for real over shm, and a rank killed mid-run.

usage: jobs.py LOGPBENCH_BINARY SOURCE_DIR TEST [ARGS]
This machine has 2 cores: a 4-rank job here shares cores (meta.job.oversubscribed), which the results
must say; its figures are functional, not timing.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-jobs-")
PAIRS = ["--bench", "pairs", "--pairs-bench", "pingpong", "-n", "3000", "--warmup", "200", "--runs", "1", "-q"]


def check_pairs(doc, ranks):
    assert doc["status"] == "complete", doc.get("error")
    meta = doc["meta"]
    assert len(meta["ranks"]) == ranks, meta["ranks"]
    assert [r["rank"] for r in meta["ranks"]] == list(range(ranks))
    for r in meta["ranks"]:
        for k in ("host", "cpu", "numa_node", "pid"):
            assert k in r, (k, r)
    assert meta["job"]["size"] == ranks
    cores = os.cpu_count()
    # Ranks beyond the cores must be named unfit for timing, never silently timed.
    if ranks > cores:
        assert meta["job"]["oversubscribed"] and not meta["job"]["fit_for_timing"], meta["job"]
        assert any(c["name"] == "every rank had a core of its own" and not c["ok"] for c in doc["checks"])
    pairs = doc["pairs"]
    assert pairs["pairs"] == ranks // 2, pairs
    assert pairs["alone"]["requester"] == 0 and pairs["alone"]["replier"] == ranks // 2
    assert sorted(t["requester"] for t in pairs["together"]) == list(range(ranks // 2))
    for t in pairs["together"]:
        assert t["replier"] == t["requester"] + ranks // 2, t
        rtt = t["parameters"]["rtt"]["value_ns"]
        assert rtt and rtt > 0, t["parameters"]
        assert t["am_counters"]["rejected"] == {}, t["am_counters"]
    s = pairs["spread"]["rtt"]
    assert s["min_ns"] <= s["median_ns"] <= s["max_ns"], s
    assert doc["parameters"]["rtt"]["value_ns"] == pairs["alone"]["parameters"]["rtt"]["value_ns"]
    print({t["requester"]: round(t["parameters"]["rtt"]["value_ns"]) for t in pairs["together"]},
          "alone", round(doc["parameters"]["rtt"]["value_ns"]), "oversubscribed", meta["job"]["oversubscribed"])


def test_local_pairs(ranks="4", transport="shm"):
    out = os.path.join(TMP, f"local{ranks}-{transport}.json")
    run(["local", "-N", ranks, "--transport", transport] + PAIRS + ["--json", out], timeout=300)
    doc = load(out)
    check_pairs(doc, int(ranks))
    if transport == "dpdk":  # one memif per pair of ranks; interleaved senders must never look like loss
        c = doc["meta"]["transport"]["counters"]
        assert c["lost"] == 0 and c["reordered"] == 0, c


def test_errors():
    expect_fail(["local", "-N", "3", "--bench", "pairs"], "even number of ranks", codes=(2,), timeout=60)
    expect_fail(["local", "-N", "4", "--bench", "pingpong"], "measures one pair", codes=(2,), timeout=60)
    expect_fail(["local", "-N", "2", "--cpus", "0,4000"], "cannot run there", codes=(2,), timeout=60)
    expect_fail(["server", "-N", "4"], "-N is for local jobs", codes=(2,), timeout=60)


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(k) for k in out]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_rank_death(victim="3"):
    # A rank dies mid-run: the job ends within seconds with exit 3, rank 0 leaves valid JSON saying which
    # rank, and no rank outlives the job.
    out = os.path.join(TMP, "death.json")
    args = ["local", "-N", "4", "--bench", "pairs", "--pairs-bench", "pingpong", "-n", "100000000", "--runs", "1",
            "--json", out, "-q"]
    p = subprocess.Popen([BIN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    kids = []
    while time.time() < deadline and len(kids) < 3:
        kids = children(p.pid)
        time.sleep(0.05)
    assert len(kids) == 3, f"expected 3 forked ranks, saw {kids}"
    time.sleep(1.5)  # into the measurement (pair 0 alone: ranks 1 and 3 wait in a barrier, rank 2 serves)
    victim_pid = sorted(kids)[int(victim) - 1]
    t0 = time.time()
    os.kill(victim_pid, signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    took = time.time() - t0
    assert took < 10, f"took {took:.1f} s to end the job"
    assert p.returncode == 3, f"exit {p.returncode}: {err}"
    doc = load(out)
    assert doc["status"] == "failed", doc["status"]
    assert "rank" in doc["error"] or "peer" in doc["error"], doc["error"]
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(k) for k in kids):
        time.sleep(0.05)
    assert not [k for k in kids if alive(k)], "a rank outlived the job"
    print(f"killed rank {victim}: exit 3 after {took:.2f} s: {doc['error']}")


def lab_pairs(lab, count_flag, ranks):
    out = os.path.join(TMP, f"{os.path.basename(lab)}.json")
    cmd = [os.path.join(SRC, "scripts", lab), "--no-lock", count_flag, ranks, "--", BIN] + PAIRS + [
        "--json", out, "--rendezvous-dir", TMP]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    doc = load(out)
    check_pairs(doc, int(ranks))
    return doc


def test_slurm_pairs(ranks="4"):
    doc = lab_pairs("slurm-lab", "--ntasks", ranks)
    assert doc["meta"]["job"]["launcher"] == "srun", doc["meta"]["job"]


def test_mpirun_pairs(ranks="4"):
    doc = lab_pairs("mpirun-lab", "-np", ranks)
    assert doc["meta"]["job"]["launcher"] == "mpirun", doc["meta"]["job"]


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
