#!/usr/bin/env python3
"""The UCX transport over an RDMA device (issue 38 item 6; in this project Soft-RoCE rxe0 inside the qemu
guest of scripts/rxe-lab): UCT's rc_verbs and ud_verbs, UCP over them, and Open MPI over pml ucx on them.
Exits 77 (skipped) without an RDMA device, without UCX (or MPI) in this build, or where UCX lists no such
transport on the device.

Under TCG each run is kept short: these check that the transport works and records what it chose, not
its speed.

usage: ucx_e2e.py LOGPBENCH SOURCE_DIR TEST
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, expect_fail, kill_peer_midrun, load, main, rdma_device, run  # noqa: E402

DEV = rdma_device()
UCX_DEV = DEV + ":1"  # UCX names an RDMA device by port
if "ucx" not in subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout.split("--transport", 1)[-1][:400]:
    print("SKIP: this logpbench has no --transport ucx (built without libucx-dev)")
    sys.exit(77)
TMP = tempfile.mkdtemp(prefix="logpb-ucx-")
COMMON = ["--allow-variant-tsc", "-q"]  # TCG: no invariant TSC; the flag is recorded in the results
PARAMS = ("o_s", "o_s_plus_o_r", "g", "L", "rtt")


def uct(tl):
    listed = subprocess.run(["ucx_info", "-d"], capture_output=True, text=True)
    if listed.returncode != 0 or f"Transport: {tl}" not in listed.stdout or f"Device: {UCX_DEV}" not in listed.stdout:
        print(f"SKIP: ucx_info -d lists no {tl} on {UCX_DEV} here")
        sys.exit(77)
    return ["--transport", "ucx", "--ucx-layer", "uct", "--ucx-tl", tl, "--ucx-dev", UCX_DEV] + COMMON


def check_doc(doc, layer, tl=None):
    assert doc["status"] == "complete", doc["status"]
    m = doc["meta"]["ucx"]
    assert m["layer"] == layer, m
    if tl:
        assert m["tl"] == tl and m["dev"] == UCX_DEV, (m["tl"], m["dev"])
    for k, p in doc["parameters"].items():
        if isinstance(p, dict) and p.get("value_ns") is not None:
            assert p["value_ns"] >= 0, (k, p)
    return m


def pingpong_and_signature(args, layer, tl=None):
    out = os.path.join(TMP, f"pp-{tl or layer}.json")
    run(["local", "--bench", "pingpong", "-n", "500", "--warmup", "50", "--runs", "1", "--json", out] + args,
        timeout=300)
    doc = load(out)
    m = check_doc(doc, layer, tl)
    assert doc["parameters"]["rtt"]["value_ns"] > 0, doc["parameters"]["rtt"]
    out = os.path.join(TMP, f"sig-{tl or layer}.json")
    run(["local", "--runs", "1", "--max-burst", "16", "-n", "200", "--warmup", "20", "--max-point-seconds", "0.3",
         "--json", out] + args, timeout=300)
    sig = load(out)
    check_doc(sig, layer, tl)
    for k in PARAMS:
        p = sig["parameters"][k]
        assert p["value_ns"] is not None or p.get("error"), (k, p)
    print(tl or layer, "rtt", doc["parameters"]["rtt"]["value_ns"], "ns;",
          {k: sig["parameters"][k]["value_ns"] for k in PARAMS})
    if layer == "uct":  # the bare UCT loop timed in the same job (UctConnection::measure_floor), or why not
        f = doc["meta"]["transport_floor"]
        assert (f["rtt"] or {}).get("value_ns", 0) > 0 or f.get("why"), f
        print(tl, "bare UCT loop in the job:", f["rtt"]["value_ns"] if f["rtt"] else f["why"])
    return doc, m


def verify(args, layer, tl=None):
    out = os.path.join(TMP, f"verify-{tl or layer}.json")
    run(["local", "--bench", "verify", "--json", out] + args, timeout=300)
    doc = load(out)
    check_doc(doc, layer, tl)
    cases = doc["runs"][0]["verify"]
    assert cases and all(c["store_ok"] and c["get_ok"] for c in cases), cases
    return doc


def test_ucx_rc():
    """UCT rc_verbs: connect-to-ep (each rank's endpoint address per peer through the bootstrap), am_short
    for a small AM, puts and gets into the peer's registered segment byte for byte."""
    args = uct("rc_verbs")
    _, m = pingpong_and_signature(args, "uct", "rc_verbs")
    assert m["connect"] == "to ep", m
    assert m["thresholds"]["small_am"] == "am_short", m["thresholds"]
    c = verify(args, "uct", "rc_verbs")["meta"]["transport"]["counters"]
    assert c["puts"] > 0 and c["gets"] > 0, c  # rc_verbs has put and get: stores beyond am_bcopy went by put
    killed_midrun(args, "rc_verbs")


def killed_midrun(args, tl):
    """The peer rank SIGKILLed mid-run (`tl` names the case): the run must end as a lost peer (exit 3), seen by
    the bootstrap, the watchdog or UCP's error handler, with no abort or assertion inside UCX."""
    rc, text, took = kill_peer_midrun(["local"] + args, os.path.join(TMP, f"lost-{tl}.json"), timeout=180)
    assert rc == 3 and "peer lost" in text and "Assertion" not in text and "Fatal" not in text, (rc, text[-2000:])
    print(f"{tl}: the peer killed mid-run, exit 3 after {took:.1f} s:", text.strip().splitlines()[-2][:160])


def soft_roce():
    return os.path.exists(f"/sys/class/infiniband/{DEV}/parent")


def test_ucx_ud():
    """UCT ud_verbs: UCX's own reliability over datagrams; AMs only (no put or get), so a method that gets is
    refused with a named reason. On Soft-RoCE UCX's destination-GID check drops every UD packet: logpbench
    turns it off where the user left it unset and records that; with the check forced on, the run ends with
    the lost peer named, in bounded time, rather than hanging."""
    args = uct("ud_verbs")
    _, m = pingpong_and_signature(args, "uct", "ud_verbs")
    if soft_roce():
        assert any("UCX_UD_VERBS_ETH_DGID_CHECK=n" in w for w in m.get("workarounds", [])), m
        p = subprocess.run([BIN, "local", "--bench", "pingpong", "-n", "50", "--warmup", "5", "--runs", "1"] + args,
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, UCX_UD_VERBS_ETH_DGID_CHECK="y"))
        assert p.returncode == 3 and "peer lost" in p.stdout + p.stderr, (p.returncode, (p.stdout + p.stderr)[-2000:])
    expect_fail(["local", "--bench", "verify"] + args, "has no get here", (2,))
    killed_midrun(args, "ud_verbs")


def test_ucx_ucp():
    """UCP with UCX_TLS=self,rc_verbs,ud_verbs and UCX_NET_DEVICES=DEV:1 (rc_verbs needs an auxiliary
    transport for wire-up; ud_verbs is it): what UCP chose is recorded, and stores and gets land exactly."""
    uct("rc_verbs")  # skip where UCX has no verbs transport here
    env = dict(os.environ, UCX_TLS="self,rc_verbs,ud_verbs", UCX_NET_DEVICES=UCX_DEV)
    args = ["--transport", "ucx", "--ucx-layer", "ucp"] + COMMON
    old = os.environ.copy()
    os.environ.update(env)
    try:
        doc, m = pingpong_and_signature(args, "ucp")
        assert m["environment"].get("UCX_TLS") == env["UCX_TLS"], m["environment"]
        info = " ".join(m["endpoint"]["info"])
        assert "verbs" in info, info
        if soft_roce():  # ud_verbs may carry UCP's wire-up: the same check off, recorded
            assert any("UCX_UD_VERBS_ETH_DGID_CHECK=n" in w for w in m.get("workarounds", [])), m
        verify(args, "ucp")
        if soft_roce():
            # With the check forced on, UCP's wire-up over ud_verbs never answers: the run must end as a lost
            # peer (exit 3), not in std::terminate (a callback's exception through UCX) or a segfault (the
            # worker's teardown calling back into a destroyed transport), as before fcfb12e and c420a18.
            # UCX's own UD timeout (UCX_UD_VERBS_TIMEOUT, 30 s) counts from the endpoint's creation and, in UCP's
            # default error mode, aborts the process (SIGABRT, "ud_ep.c: unhandled timeout error"); logpbench's
            # watchdog (10 s without progress) counts from the wait. In the TCG guest the start-up between them
            # once took the 20 s apart, and UCX aborted first. This checks logpbench's watchdog, so UCX's is set
            # past it.
            p = subprocess.run([BIN, "local", "--bench", "pingpong", "-n", "50", "--warmup", "5", "--runs", "1"] + args,
                               capture_output=True, text=True, timeout=240,
                               env=dict(os.environ, UCX_UD_VERBS_ETH_DGID_CHECK="y", UCX_UD_VERBS_TIMEOUT="180s"))
            assert p.returncode == 3 and "peer lost" in p.stdout + p.stderr, (p.returncode, (p.stdout + p.stderr)[-2000:])
        # --ucp-err-mode peer (UCP_ERR_HANDLING_MODE_PEER) over the same transports: the methods run to their
        # end, and a peer SIGKILLed mid-run ends the run as a lost peer (exit 3), by UCX's error handler or the
        # bootstrap, whichever sees it first, with no abort inside UCX. (Where wire-up never completes, with the
        # destination-GID check forced on, UCX 1.13.1 itself fails an assertion in this mode, ucp_request.c:684
        # "got REQ message", SIGABRT: docs/results/lab-notes.md; not tested, being UCX's.)
        peer = args + ["--ucp-err-mode", "peer"]
        doc, m = pingpong_and_signature(peer, "ucp")
        assert m["err_mode"] == "peer", m["err_mode"]
        killed_midrun(peer, "ucp-peer")
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_ucx_mpi():
    """Open MPI over pml ucx on the same device (the ladder's top rung in the guest): scripts/mpirun-lab turns
    UCX's UD destination-GID check off on Soft-RoCE, as logpbench's own UCX transport does, and the ranks
    record it with UCX_TLS in meta.mpi.ucx_from_environment. With the check forced on, UCX itself fails there:
    pml ucx's wire-up over ud_verbs never hears back, and UCX aborts the rank in its own progress
    ("ud_ep.c ... Fatal: UD endpoint ...: unhandled timeout error"), which logpbench cannot catch."""
    uct("rc_verbs")
    helped = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    if "--mpi-bulk" not in helped:
        print("SKIP: this logpbench has no --transport mpi (built without MPI)")
        sys.exit(77)
    lab = os.path.join(SRC, "scripts", "mpirun-lab")
    tls = "self,rc_verbs,ud_verbs"

    def mpirun(out, env, timeout):
        cmd = [lab, "--no-lock", "-np", "2", "--timeout", str(timeout), "--pml-ucx", tls,
               "--mpirun-arg=-x", f"--mpirun-arg=UCX_NET_DEVICES={UCX_DEV}", "--", BIN, "--transport", "mpi",
               "--rendezvous-dir", TMP, "--bench", "pingpong", "-n", "200", "--warmup", "20", "--runs", "1",
               "--json", out] + COMMON
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60, env=env)

    out = os.path.join(TMP, "pp-mpi.json")
    p = mpirun(out, dict(os.environ), 300)
    if p.returncode != 0 and "no pml ucx" in p.stderr:
        print("SKIP: this Open MPI has no pml ucx")
        sys.exit(77)
    assert p.returncode == 0, (p.returncode, (p.stdout + p.stderr)[-3000:])
    doc = load(out)
    assert doc["status"] == "complete", doc["status"]
    mpi = doc["meta"]["mpi"]
    assert mpi["mca_from_environment"].get("pml") == "ucx", mpi["mca_from_environment"]
    env = mpi["ucx_from_environment"]
    assert env.get("UCX_TLS") == tls and env.get("UCX_NET_DEVICES") == UCX_DEV, env
    assert doc["parameters"]["rtt"]["value_ns"] > 0, doc["parameters"]["rtt"]
    if not soft_roce():
        return
    assert env.get("UCX_UD_VERBS_ETH_DGID_CHECK") == "n", env
    assert "UCX_UD_VERBS_ETH_DGID_CHECK=n given to the ranks" in p.stderr, p.stderr[-2000:]
    # The check on (the user's setting is kept); UD's timeout shortened from its 30 s so the failure comes soon.
    forced = dict(os.environ, UCX_UD_VERBS_ETH_DGID_CHECK="y", UCX_UD_VERBS_TIMEOUT="5s")
    p = mpirun(os.path.join(TMP, "pp-mpi-check.json"), forced, 180)
    text = p.stdout + p.stderr
    assert p.returncode not in (0, 124), (p.returncode, text[-3000:])
    assert "given to the ranks" not in p.stderr, p.stderr[-2000:]
    assert "unhandled timeout error" in text, (p.returncode, text[-3000:])
    print("mpi over pml ucx: rtt", doc["parameters"]["rtt"]["value_ns"], "ns; with the check on, exit",
          p.returncode, "and UCX's own 'unhandled timeout error'")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
