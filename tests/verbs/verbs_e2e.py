#!/usr/bin/env python3
"""Verbs transport tests against a real RDMA device (in this project: Soft-RoCE rxe0 inside the qemu
guest of scripts/rxe-lab). Without a device each test exits 77, which ctest reports as skipped.

usage: verbs_e2e.py LOGPBENCH SOURCE_DIR TEST
"""
import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, expect_fail, load, main, run  # noqa: E402

devs = sorted(os.path.basename(d) for d in glob.glob("/sys/class/infiniband/*"))
DEV = os.environ.get("LOGPB_RDMA_DEV") or (devs[0] if devs else None)
if not DEV:
    print("SKIP: no RDMA device here; scripts/rxe-lab runs these tests inside a Soft-RoCE guest")
    sys.exit(77)
TMP = tempfile.mkdtemp(prefix="logpb-verbs-")
# Under qemu's TCG the CPU reports no invariant TSC; the flag is recorded in the results.
BASE = ["--transport", "verbs", "-d", DEV, "--allow-variant-tsc", "-q"]


def test_pingpong():
    out = os.path.join(TMP, "pp.json")
    run(["local", "--bench", "pingpong", "-n", "2000", "--warmup", "200", "--runs", "1", "--json", out] + BASE)
    doc = load(out)
    t = doc["meta"]["transport"]
    assert t["device"] == DEV and t["qp_type"] == "RC", t
    for k in ("max_inline", "signal_every", "recv_batch", "path_mtu", "gid_index", "gid_type", "completions"):
        assert k in t, k
    assert doc["parameters"]["rtt"]["value_ns"] > 0
    print("rtt", doc["parameters"]["rtt"]["value_ns"], "ns; inline", t["max_inline"], "; gid", t["gid_index"], t["gid_type"])


def test_signature():
    out = os.path.join(TMP, "sig.json")
    run(["local", "--runs", "1", "--max-burst", "64", "-n", "1000", "--warmup", "100", "--max-point-seconds", "0.5",
         "--json", out] + BASE)
    doc = load(out)
    for k in ("o_s", "o_r", "g", "L", "rtt"):
        p = doc["parameters"][k]
        assert "value_ns" in p and (p["value_ns"] is not None or p.get("error")), (k, p)
    assert doc["parameters"]["o_s"]["value_ns"] > 0 and doc["parameters"]["g"]["value_ns"] > 0
    print({k: doc["parameters"][k]["value_ns"] for k in ("o_s", "o_r", "g", "L", "rtt")})


def test_verify():
    out = os.path.join(TMP, "verify.json")
    run(["local", "--bench", "verify", "--json", out] + BASE)
    doc = load(out)
    cases = doc["runs"][0]["verify"]
    assert len(cases) >= 8 and all(c["store_ok"] and c["get_ok"] for c in cases), cases
    assert doc["meta"]["transport"]["counters"]["stores"] >= len(cases)
    print(len(cases), "sizes up to", max(c["bytes"] for c in cases), "bytes exact")
    # Without a get, the segment is registered without remote read.
    out2 = os.path.join(TMP, "pp2.json")
    run(["local", "--bench", "pingpong", "-n", "100", "--runs", "1", "--json", out2] + BASE)
    assert load(out2)["meta"]["transport"]["segment_remote_read"] is False


def test_event_mode():
    out = os.path.join(TMP, "ev.json")
    run(["local", "--bench", "pingpong", "-n", "1000", "--runs", "1", "--event", "--json", out] + BASE)
    doc = load(out)
    assert doc["meta"]["transport"]["completions"] == "event"
    assert doc["parameters"]["rtt"]["value_ns"] > 0


def test_ud():
    out = os.path.join(TMP, "ud.json")
    run(["local", "--ud", "--bench", "pingpong", "-n", "2000", "--warmup", "200", "--runs", "1", "--json", out] + BASE)
    doc = load(out)
    assert doc["meta"]["transport"]["qp_type"] == "UD", doc["meta"]["transport"]
    assert doc["parameters"]["rtt"]["value_ns"] > 0
    assert doc["meta"]["am"]["loss_timeout_s"] > 0  # datagrams may be lost: the run re-measures, never hangs
    out2 = os.path.join(TMP, "udsig.json")
    run(["local", "--ud", "--runs", "1", "--max-burst", "32", "-n", "500", "--max-point-seconds", "0.5",
         "--json", out2] + BASE)
    assert load(out2)["parameters"]["g"]["value_ns"] > 0
    expect_fail(["local", "--ud", "--bench", "verify"] + BASE, "--ud carries small AMs only", (2,))
    print("UD rtt", doc["parameters"]["rtt"]["value_ns"], "ns")


def test_server_client():
    port = str(21000 + os.getpid() % 10000)
    srv = subprocess.Popen([BIN, "server", "--port", port, "--cpu", "1"] + BASE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        out = os.path.join(TMP, "sc.json")
        run(["client", "127.0.0.1", "--port", port, "--cpu", "0", "--bench", "verify", "--json", out] + BASE)
        _, err = srv.communicate(timeout=60)
        assert srv.returncode == 0, err
        assert all(c["store_ok"] and c["get_ok"] for c in load(out)["runs"][0]["verify"])
    finally:
        if srv.poll() is None:
            srv.kill()


def test_errors():
    args = [a for a in BASE]
    i = args.index("-d")
    wrong = args[:i] + ["-d", "nosuchdev0"] + args[i + 2:]
    expect_fail(["local", "--bench", "pingpong"] + wrong, "no RDMA device named 'nosuchdev0'", (2,))
    expect_fail(["local", "--bench", "pingpong", "-x", "200"] + BASE, "GID index 200 is not valid", (2,))
    expect_fail(["local", "--bench", "pingpong", "-i", "9"] + BASE, "port 9", (2,))
    took = expect_fail(["client", "127.0.0.1", "--port", "1", "--connect-timeout", "1"] + BASE, "no logpbench server", (3,))
    assert took < 30, took


def test_peer_death():
    out = os.path.join(TMP, "death.json")
    p = subprocess.Popen([BIN, "local", "--bench", "pingpong", "-n", "100000000", "--runs", "1", "--json", out] + BASE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    kids = []
    while time.time() < deadline and not kids:
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        time.sleep(0.1)
    assert kids, "no peer process"
    time.sleep(3)  # well into the run
    t0 = time.time()
    os.kill(int(kids[0]), 9)
    _, err = p.communicate(timeout=120)
    took = time.time() - t0
    assert p.returncode == 3, f"exit {p.returncode}: {err}"
    assert took < 30, f"took {took:.1f} s to notice"
    doc = load(out)
    assert doc["status"] == "failed", doc["status"]
    print(f"peer death noticed in {took:.2f} s: {doc['error']}")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
