#!/usr/bin/env python3
"""Verbs transport tests against a real RDMA device (in this project: Soft-RoCE rxe0 inside the qemu
guest of scripts/rxe-lab). Without a device each test exits 77, which ctest reports as skipped.

usage: verbs_e2e.py LOGPBENCH SOURCE_DIR TEST
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, expect_fail, load, main, rdma_device, run  # noqa: E402

DEV = rdma_device()
TMP = tempfile.mkdtemp(prefix="logpb-verbs-")
# Under qemu's TCG the CPU reports no invariant TSC; the flag is recorded in the results.
BASE = ["--transport", "verbs", "-d", DEV, "--allow-variant-tsc", "-q"]


def one_way_room(t, window):
    """The credits the transport's queues allow (verbs/transport.cpp max_credits), from what it recorded."""
    r = t["one_way_room"]
    return min(r["peer_rq_depth"] - r["peer_recv_batch"] - 2 * window - 1, r["peer_header_slots"] - 2 * window)


def test_pingpong():
    out = os.path.join(TMP, "pp.json")
    # More credits than the peer's receive queue holds: the endpoint must be capped to what it holds.
    run(["local", "--bench", "pingpong", "-n", "2000", "--warmup", "200", "--runs", "1", "--credits", "4096",
         "--json", out] + BASE)
    doc = load(out)
    t = doc["meta"]["transport"]
    assert t["device"] == DEV and t["qp_type"] == "RC", t
    for k in ("max_inline", "signal_every", "recv_batch", "path_mtu", "gid_index", "gid_type", "completions",
              "medium_max_bytes", "store_switch_bytes", "local_completion", "header_slots"):
        assert k in t, k
    assert doc["parameters"]["rtt"]["value_ns"] > 0
    am = doc["meta"]["am"]
    assert am["credits"] == one_way_room(t, am["window"]), (am, t["one_way_room"])
    assert t["counters"]["sleeps"] == 0 and t["counters"]["cq_events"] == 0, t["counters"]  # busy polling
    print("rtt", doc["parameters"]["rtt"]["value_ns"], "ns; inline", t["max_inline"], "; gid", t["gid_index"], t["gid_type"])


def test_signature():
    out = os.path.join(TMP, "sig.json")
    run(["local", "--runs", "1", "--max-burst", "64", "-n", "1000", "--warmup", "100", "--max-point-seconds", "0.5",
         "--json", out] + BASE)
    doc = load(out)
    for k in ("o_s", "o_s_plus_o_r", "g", "L", "rtt"):
        p = doc["parameters"][k]
        assert "value_ns" in p and (p["value_ns"] is not None or p.get("error")), (k, p)
    # Under the guest's emulated CPU the Delta = 0 curve may still bend at the burst cap: then g is published
    # as a lower bound with its reason, never as a number (CI saw this once in six boots). Either is right;
    # what is wrong is neither, or a figure <= 0.
    for k in ("o_s", "g"):
        p = doc["parameters"][k]
        if p["value_ns"] is None:
            assert p.get("error") and (p.get("lower_bound_ns") or p.get("upper_bound_ns") or 0) > 0, (k, p)
        else:
            assert p["value_ns"] > 0, (k, p)
    print({k: doc["parameters"][k]["value_ns"] for k in ("o_s", "o_s_plus_o_r", "g", "L", "rtt")})


def test_ofi_rxm():
    """libfabric's verbs;ofi_rxm on the same device (--transport ofi): a ping-pong and a flood complete, with
    the universe size logpbench sets (at libfabric's default of 256, ofi_rxm asks rdma_rxe for a CQ it refuses)."""
    if subprocess.run(["fi_info", "-p", "verbs;ofi_rxm", "-t", "FI_EP_RDM"], capture_output=True).returncode != 0:
        print("SKIP: fi_info lists no verbs;ofi_rxm endpoint here")
        sys.exit(77)
    env = {k: v for k, v in os.environ.items() if k != "FI_UNIVERSE_SIZE"}
    ofi = ["--transport", "ofi", "--provider", "verbs;ofi_rxm", "--allow-variant-tsc", "-q"]
    for bench, extra in (("pingpong", ["-n", "2000"]), ("flood", ["--sizes", "16,4096", "--messages", "500"])):
        out = os.path.join(TMP, f"ofi-{bench}.json")
        p = subprocess.run([BIN, "local", "--bench", bench, "--runs", "1", "--json", out] + extra + ofi,
                           capture_output=True, text=True, timeout=600, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        doc = load(out)
        m = doc["meta"]["ofi"]
        assert m["provider"] == "verbs;ofi_rxm" and m["domain"] == DEV, m
        assert m["universe_size"] == {"value": "2", "from": "the job's ranks (FI_UNIVERSE_SIZE unset)"}, m
        assert doc["status"] == "complete", doc["status"]
        print(bench, {k: v.get("value_ns") for k, v in doc["parameters"].items() if isinstance(v, dict)})


def test_verify():
    out = os.path.join(TMP, "verify.json")
    run(["local", "--bench", "verify", "--json", out] + BASE)
    doc = load(out)
    cases = doc["runs"][0]["verify"]
    assert len(cases) >= 8 and all(c["store_ok"] and c["get_ok"] for c in cases), cases
    t = doc["meta"]["transport"]
    # The sizes straddle the medium/bulk switch: both protocols ran and landed byte for byte.
    medium = [c for c in cases if c["bytes"] <= t["medium_max_bytes"]]
    bulk = [c for c in cases if c["bytes"] > t["medium_max_bytes"]]
    assert medium and bulk, (t["medium_max_bytes"], cases)
    assert t["medium_max_bytes"] == int(t["path_mtu"]) - 64, t
    assert t["counters"]["medium_stores"] >= len(medium) and t["counters"]["stores"] >= len(bulk), t["counters"]
    assert t["counters"]["bad_medium"] == 0 and t["counters"]["bad_imm"] == 0, t["counters"]
    print(len(cases), "sizes up to", max(c["bytes"] for c in cases), "bytes exact;", len(medium),
          "medium (<=", t["medium_max_bytes"], "B)")
    # Without a get, the segment is registered without remote read.
    out2 = os.path.join(TMP, "pp2.json")
    run(["local", "--bench", "pingpong", "-n", "100", "--runs", "1", "--json", out2] + BASE)
    assert load(out2)["meta"]["transport"]["segment_remote_read"] is False


def test_medium():
    """Medium stores: one SEND each (frame + payload), inline when they fit, byte-exact (verify), and a
    store ping-pong on both sides of the switch from the segment (the two-SGE path)."""
    out = os.path.join(TMP, "verify-inline.json")
    run(["local", "--bench", "verify", "--inline", "256", "--json", out] + BASE)
    doc = load(out)
    t = doc["meta"]["transport"]
    assert all(c["store_ok"] and c["get_ok"] for c in doc["runs"][0]["verify"]), doc["runs"][0]["verify"]
    print("max_inline", t["max_inline"], "-> medium inline up to", t["medium_inline_max_bytes"], "B")
    m = t["medium_max_bytes"]
    for n, medium in ((8, True), (m, True), (m + 1, False)):
        out = os.path.join(TMP, f"pps{n}.json")
        run(["local", "--bench", "pingpong", "-s", str(n), "-n", "500", "--warmup", "50", "--runs", "1",
             "--json", out] + BASE)
        d = load(out)
        c = d["meta"]["transport"]["counters"]
        # One store per iteration (the reply is a small AM): one SEND if medium, two chained WRs if bulk.
        if medium:
            assert c["medium_stores"] >= 500 and c["stores"] == 0, (n, c)
        else:
            assert c["stores"] >= 500 and c["medium_stores"] == 0, (n, c)
        assert d["parameters"]["rtt"]["value_ns"] > 0
        print(f"-s {n}: rtt {d['parameters']['rtt']['value_ns'] / 1e3:.1f} us, WRs {c['sends']}, ops {c['ops_posted']}")


def test_oneway_check():
    """tests/verbs/oneway_check.cpp: one-way AMs, medium and bulk one-way stores, credits and local
    completion through the endpoint, checksummed at the receiver; busy polling and event mode."""
    check = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(BIN))), "tests", "verbs", "verbs_oneway_check")
    for extra in ([], ["--event"]):
        p = subprocess.run([check, DEV] + extra + ["30000"], capture_output=True, text=True, timeout=300)
        print(p.stdout.strip())
        assert p.returncode == 0, f"{check} {extra}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"


def test_oneway_flood():
    """Bell's flood of one-way requests with local completion (send CQEs) and credits, across the
    medium/bulk switch."""
    out = os.path.join(TMP, "flood.json")
    run(["local", "--bench", "flood", "--sizes", "8,512,4096", "--messages", "3000", "--bell-runs", "2",
         "--queue-depth", "64", "--json", out] + BASE, timeout=600)
    doc = load(out)
    am = doc["meta"]["am"]["counters"]
    assert doc["status"] == "complete", doc.get("error")
    # The flood is one-way requests (Bell 4.2): a flood that sends none has fallen back to a request/reply
    # stream, whose time per message is not the gap. That is a regression to report, not a test to skip.
    assert am.get("oneway_sent", 0) > 0, f"the flood sent no one-way requests: {am}"
    t = doc["meta"]["transport"]
    c = t["counters"]
    assert sum(am["rejected"].values()) == 0, am
    assert c["ops_completed"] > 0 and c["medium_stores"] > 0 and c["stores"] > 0, c
    assert doc["meta"]["am"]["credits"] <= one_way_room(t, doc["meta"]["am"]["window"])
    g = doc["parameters"]["g"]
    assert g.get("value_ns") is not None or g.get("error"), g
    print("one-way sent", am["oneway_sent"], "credit frames", am["credit_frames_received"], "g", g.get("value_ns"))


def test_ranks():
    """tests/verbs/ranks_check.cpp: 4 ranks on one device through the connect step, every protocol to
    every peer at once (busy polling, then event mode), then a killed rank; and a 4-rank job of the app
    (--bench pairs: two pairs at once over one context each), and --ud refused beyond two ranks."""
    check = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(BIN))), "tests", "verbs", "verbs_ranks_check")
    for extra in ([], ["--event"], ["--kill"]):
        t0 = time.time()
        p = subprocess.run([check, DEV, "--ranks", "4"] + extra, capture_output=True, text=True, timeout=400)
        print(p.stdout.strip(), f"({time.time() - t0:.1f} s)")
        assert p.returncode == 0, f"{check} {extra}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    out = os.path.join(TMP, "pairs.json")
    run(["local", "-N", "4", "--bench", "pairs", "--pairs-bench", "pingpong", "-n", "500", "--warmup", "50",
         "--runs", "1", "--json", out] + BASE, timeout=600)
    doc = load(out)
    t = doc["meta"]["transport"]
    assert t["ranks"] == 4 and t["qps"] == 3 and len(t["per_peer"]) == 3, t
    assert t["counters"]["bad_src"] == 0 and t["counters"]["bad_imm"] == 0, t["counters"]
    assert len(doc["meta"]["ranks"]) == 4, doc["meta"]["ranks"]
    print("pairs (4 ranks, 2 pairs):", json.dumps(doc.get("pairs", {}).get("spread")))
    # Contention over verbs (Culler 3.5's K-to-1): the same code as on shm and DPDK,
    # 3 requesters to one replier, each rank on its own QPs; functional in a TCG guest.
    out = os.path.join(TMP, "kto.json")
    run(["local", "-N", "4", "--bench", "k-to-one", "--round-seconds", "0.2", "--json", out] + BASE, timeout=600)
    doc = load(out)
    assert doc["status"] == "complete", doc.get("error")
    assert [e["k"] for e in doc["per_k"]] == [1, 2, 3], doc["per_k"]
    for e in doc["per_k"]:
        assert e["g"]["value_ns"] > 0 and len(e["senders"]) == e["k"], e
    assert doc["meta"]["transport"]["counters"]["bad_src"] == 0, doc["meta"]["transport"]["counters"]
    print("k-to-one over verbs (4 ranks, functional):",
          [(e["k"], round(e["g"]["value_ns"]), round(e["ratio"]["value"], 2)) for e in doc["per_k"]])
    # --ud with more than two ranks: the options refuse it first (pairs carries no UD method); the
    # context's own refusal (verbs/context.cpp) is the guard for callers that skip the options.
    expect_fail(["local", "-N", "4", "--bench", "pairs", "--pairs-bench", "pingpong", "--ud"] + BASE,
                "--ud carries small AMs only", (2,))


def rtt_us(extra):
    out = os.path.join(TMP, "rtt.json")
    run(["local", "--bench", "pingpong", "-n", "2000", "--warmup", "200", "--runs", "1", "--json", out] + extra + BASE)
    doc = load(out)
    return doc["parameters"]["rtt"]["value_ns"] / 1e3, doc["meta"]["transport"]


# Event mode costs a wakeup per message, not a timer tick. Measured in the TCG guest (scripts/rxe-lab,
# same boot): polling RTT ~27 us, our event RTT 170-210 us (ratio 6.3-7.2); perftest's own ib_send_lat -e
# gives 81-87 us one way against ~13 us polling (ratio 6.2), i.e. ~70 us per blocking wakeup here, two per
# round trip. On a host busy with other work, wakeups of the idle vCPU took 0.5-2 ms. The bound allows
# 4 x polling + 300 us (~400 us: about twice what two wakeups cost) and stays well under the 1 ms that a
# sleep until a poll timeout costs (the old bug: 1606 us). A loaded host only makes a pair slower, so the
# test takes the best of up to three alternated pairs: a real sleep-to-timeout fails all three.
EVENT_FACTOR, EVENT_SLACK_US = 4.0, 300.0


def test_event_mode():
    pairs = []
    for _ in range(3):
        poll, _t = rtt_us([])
        ev, t = rtt_us(["--event"])
        assert t["completions"] == "event", t
        c = t["counters"]
        assert c["sleeps"] > 0 and c["cq_events"] > 0, c
        print(f"polling rtt {poll:.1f} us, event rtt {ev:.1f} us; sleeps {c['sleeps']}, cq_events {c['cq_events']}, "
              f"timeouts {c['sleep_timeouts']}")
        pairs.append((poll, ev))
        if ev <= EVENT_FACTOR * poll + EVENT_SLACK_US:
            break
    poll, ev = min(pairs, key=lambda p: p[1] - EVENT_FACTOR * p[0])
    print(f"verbs event/poll rtt ratio: {ev / poll:.2f}")
    assert ev <= EVENT_FACTOR * poll + EVENT_SLACK_US, f"event rtt {ev:.1f} us > {EVENT_FACTOR} x {poll:.1f} + {EVENT_SLACK_US}"
    # Local completion and gets in event mode: the sleeper arms the send CQ too.
    out = os.path.join(TMP, "ev-verify.json")
    run(["local", "--bench", "verify", "--event", "--json", out] + BASE)
    assert all(c["store_ok"] and c["get_ok"] for c in load(out)["runs"][0]["verify"])


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
    # The signature over UD either gives g or, where the Delta = 0 curve has not settled within the short
    # bursts asked here, says so with a lower bound (under TCG, 1 run in 3 to 5: stalls bend T(M) past M = 25;
    # seen with the code before and after issue 37's refactor alike). Either is an honest answer; a null
    # without a bound is not.
    g = load(out2)["parameters"]["g"]
    if g["value_ns"] is None:
        assert g.get("lower_bound_ns", 0) > 0 and "steady state" in g.get("error", ""), g
    else:
        assert g["value_ns"] > 0, g
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
    # Queues too small for one-way requests beside the window: refused, naming the flags.
    expect_fail(["local", "--bench", "pingpong", "--window", "16", "--recv-batch", "16", "--rq-depth", "50"] + BASE,
                "raise --rq-depth", (2,))
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


# A QP forced into the error state mid-run: LOGPB_VERBS_FAULT (verbs/transport.hpp) moves
# one rank's QP to IBV_QPS_ERR after its N-th send. The run must end within seconds, with exit class 3
# (peer lost), an error naming the completion status (ibv_wc_status_str) and the QP's state, valid JSON
# from the leader with status "failed" and the fault recorded in meta; and the other rank must end too.
QP_ERROR_AFTER = 3000
QP_ERROR_BOUND_S = 15.0


def _watch(p, marker="fault hook", limit_s=180):
    """Reads p's stderr to its end (every writer gone); returns (text, time the marker appeared, end time).
    A process still running after limit_s is killed (the assertions then fail on its exit status)."""
    killer = threading.Timer(limit_s, p.kill)
    killer.start()
    lines, t_mark = [], None
    try:
        for line in p.stderr:
            lines.append(line)
            if t_mark is None and marker in line:
                t_mark = time.time()
    finally:
        killer.cancel()
    return "".join(lines), t_mark, time.time()


def _check_leader_doc(out, rank):
    doc = load(out)
    assert doc["status"] == "failed" and doc.get("error"), (doc["status"], doc.get("error"))
    fault = doc["meta"]["transport"].get("fault")
    assert fault and fault["rank"] == rank and fault["qp_error_after_ops"] == QP_ERROR_AFTER, fault
    return doc


def test_qp_error():
    spec = f"qp-error-after={QP_ERROR_AFTER}"
    long_run = ["--bench", "pingpong", "-n", "100000000", "--warmup", "200", "--runs", "1"]
    # 1. The leader's own QP (local job: rank 0 writes the JSON, its forked peer is rank 1).
    out = os.path.join(TMP, "qperr-local.json")
    p = subprocess.Popen([BIN, "local"] + long_run + ["--json", out] + BASE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ, LOGPB_VERBS_FAULT=spec + ",rank=0"))
    err, t_fault, t_end = _watch(p)  # the pipe closes once both ranks have exited
    rc = p.wait(timeout=60)
    assert t_fault is not None, f"the fault hook never fired (exit {rc}):\n{err}"
    took = t_end - t_fault
    assert rc == 3, f"exit {rc}, expected 3 (peer lost):\n{err}"
    assert took < QP_ERROR_BOUND_S, f"both ranks ended {took:.1f} s after the fault:\n{err}"
    doc = _check_leader_doc(out, 0)
    assert "Work Request Flushed Error" in doc["error"] and "state ERR" in doc["error"], doc["error"]
    print(f"local, leader's QP forced to ERR: both ranks gone {took:.2f} s later, exit {rc}: {doc['error']}")
    # 2. The peer's QP, apart: server (rank 0, fault) and client (rank 1, the leader, writes the JSON) are
    # separate processes, so each must notice on its own.
    port = str(22000 + os.getpid() % 10000)
    srv = subprocess.Popen([BIN, "server", "--port", port, "--cpu", "1"] + BASE, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, env=dict(os.environ, LOGPB_VERBS_FAULT=spec + ",rank=0"))
    out = os.path.join(TMP, "qperr-sc.json")
    try:
        # The client carries the same hook (it names rank 0, so the client only records it in meta).
        cli = subprocess.Popen([BIN, "client", "127.0.0.1", "--port", port, "--cpu", "0"] + long_run + ["--json", out] + BASE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, LOGPB_VERBS_FAULT=spec + ",rank=0"))
        serr, t_fault, t_srv = _watch(srv)
        cerr, _, t_cli = _watch(cli)
        src, crc = srv.wait(timeout=60), cli.wait(timeout=60)
    finally:
        for q in (srv, cli):
            if q.poll() is None:
                q.kill()
    assert t_fault is not None, f"the fault hook never fired (server exit {src}):\n{serr}"
    assert src == 3 and crc == 3, f"exits server {src}, client {crc}; expected 3 and 3:\n{serr}\n{cerr}"
    assert "Work Request Flushed Error" in serr and "state ERR" in serr, serr
    took = max(t_srv, t_cli) - t_fault
    assert took < QP_ERROR_BOUND_S, f"the ranks ended {took:.1f} s after the fault:\n{serr}\n{cerr}"
    doc = _check_leader_doc(out, 0)
    print(f"server/client, server's QP forced to ERR: server gone {t_srv - t_fault:.2f} s, client {t_cli - t_fault:.2f} s "
          f"later, exits {src}/{crc}; server: {serr.strip().splitlines()[-1]}; client's JSON: {doc['error']}")
    # A malformed hook is refused, not ignored.
    p = subprocess.run([BIN, "local", "--bench", "pingpong", "-n", "100", "--runs", "1"] + BASE, capture_output=True,
                       text=True, env=dict(os.environ, LOGPB_VERBS_FAULT="qp-error-after=soon"), timeout=120)
    assert p.returncode != 0 and "LOGPB_VERBS_FAULT" in p.stderr, (p.returncode, p.stderr)


def test_faults(count="100"):
    # A rank SIGKILLed at a random moment (tests/e2e/faults.py), over verbs: LAB_TESTS=faults in the guest;
    # FAULT_TRIALS=100 for the full count.
    count = os.environ.get("FAULT_TRIALS", count)
    faults = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "faults.py")
    p = subprocess.run([sys.executable, faults, BIN, sys.argv[2], "trials", "verbs", count, "5", "--", "-d", DEV,
                        "--allow-variant-tsc"], capture_output=True, text=True, timeout=3600)
    print(p.stdout[-3000:], p.stderr[-2000:])
    assert p.returncode == 0, "fault trials failed"


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
