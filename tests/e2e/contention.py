#!/usr/bin/env python3
"""Contention (Culler et al. 3.5, LoGPC 5.1) against emulated machines whose answer is known, and as
functional runs of 4 ranks over real transports.

usage: contention.py LOGPBENCH_BINARY SOURCE_DIR TEST [ARGS]

This machine has 2 cores. The emulated runs give their parameters in milliseconds (Culler's Table 3 in
ms instead of us): the emulated NI then sleeps through its overheads and idle ranks sleep on a doorbell
(shm/emulation.hpp, wait=auto), so 8 or 16 ranks share two cores without bending the emulated figures,
and the runs say so (meta.job.fit_for_timing). The functional runs over real NIs share cores while
busy-polling: their figures are not timing and their checks say so.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-contention-")

# Culler et al. Table 3 (us), here as ms; K and the measured ratio from their Table 4.
MACHINES = {
    "meiko": dict(os=1.7, orr=1.6, g=13.6, L=7.5, K=15, paper=16.8),
    "myrinet": dict(os=2.0, orr=2.6, g=12.4, L=11.1, K=3, paper=3.0),
    "paragon": dict(os=1.4, orr=2.2, g=7.6, L=6.3, K=7, paper=6.0),
}
# A machine whose replier is the bottleneck: turning a request into a reply costs o_r + h + o_s = 4.2 ms,
# the requester's own per-message cost is o_s + o_r = 3 ms, the NI's gap 1.5 ms.
REPLIER_BOUND = dict(os=1.5, orr=1.5, g=1.5, L=4.0, h=1.2)


def spec(t, C=8):
    s = f"os={t['os']}ms,or={t['orr']}ms,g={t['g']}ms,L={t['L']}ms,C={C}"
    if "h" in t:
        s += f",h={t['h']}ms"
    return s


def logpbench(ranks, bench, emulate, extra=(), timeout=300):
    out = os.path.join(TMP, f"{bench}-{ranks}.json")
    args = ["local", "-N", str(ranks), "--bench", bench, "--json", out, "-q"] + list(extra)
    if emulate:
        args += ["--emulate", emulate]
    run(args, timeout=timeout)
    doc = load(out)
    assert doc["status"] == "complete", doc.get("error")
    assert len(doc["meta"]["ranks"]) == ranks
    return doc


def fit(doc):
    """An emulated run on shared cores must say it slept and is fit for timing."""
    job = doc["meta"]["job"]
    assert job["fit_for_timing"], job
    assert doc["meta"]["transport"]["waiting"].startswith("sleep"), doc["meta"]["transport"]["waiting"]


def within(x, want, rel):
    return abs(x - want) <= rel * want


def test_table4(machine):
    """Culler et al. Table 4 on the emulated machine: each sender's g(K)/g(1) within 10% of K (LogP)."""
    t = MACHINES[machine]
    K = t["K"]
    doc = logpbench(K + 1, "k-to-one", spec(t), ["--k", f"1,{K}"])
    fit(doc)
    per_k = {e["k"]: e for e in doc["per_k"]}
    assert sorted(per_k) == [1, K], per_k.keys()
    g1 = per_k[1]["g"]["value_ns"]
    # Alone, a sender of these 1990s machines is held by the NI's gap (g > o_s + o_r, RTT / C).
    assert within(g1, t["g"] * 1e6, 0.05), (g1, t["g"])
    r = per_k[K]["ratio"]
    assert len(per_k[K]["senders"]) == K
    print(f"table4 {machine}: K {K}, LogP expectation {K}, measured g(K)/g(1) {r['value']:.2f} +- {r['ci95']:.2f}, "
          f"paper {t['paper']}; g(1) {g1 / 1e6:.3f} ms (set {t['g']} ms)")
    assert within(r["value"], K, 0.10), (r, K)
    for s in per_k[K]["senders"]:  # each sender, not only their mean
        assert within(s["value_ns"] / g1, K, 0.15), (s, g1)


def test_one_to_k():
    """1-to-K: the bandwidth gain LogP predicts where the replier is the bottleneck (4.2/3 = 1.4, the
    paper's "roughly 1.4 times"), and none where the NI's gap binds both ends (emulated Meiko)."""
    t = REPLIER_BOUND
    doc = logpbench(4, "one-to-k", spec(t), ["--k", "1,2,3"])
    fit(doc)
    gains = {e["k"]: e["gain"]["value"] for e in doc["per_k"]}
    g1 = doc["per_k"][0]["g"]["value_ns"]
    replier, requester = t["orr"] + t["h"] + t["os"], t["os"] + t["orr"]
    print(f"one-to-k replier-bound: g(1) {g1 / 1e6:.3f} ms (expect {replier}), gains {gains}, "
          f"expect {replier / requester:.2f} for K >= 2")
    assert within(g1, replier * 1e6, 0.05), g1
    for k in (2, 3):
        assert within(gains[k], replier / requester, 0.10), (k, gains)
    m = MACHINES["meiko"]
    doc = logpbench(3, "one-to-k", spec(m), ["--k", "1,2"])
    gains = {e["k"]: e["gain"]["value"] for e in doc["per_k"]}
    print(f"one-to-k meiko: gains {gains}, expect 1 (the NI's gap binds the requester too)")
    assert within(gains[2], 1.0, 0.10), gains


def test_all_to_all():
    """The all-to-all remap on an emulated Paragon: per iteration, synchronous 2(o_s + L + o_r) and
    asynchronous max(g, o_s + o_r), as the emulated LogP machine defines them."""
    t = MACHINES["paragon"]
    doc = logpbench(4, "all-to-all", spec(t))
    fit(doc)
    a = doc["all_to_all"]
    sync, asyn = a["synchronous"]["per_iteration"]["value_ns"], a["asynchronous"]["per_iteration"]["value_ns"]
    want_sync = 2 * (t["os"] + t["L"] + t["orr"]) * 1e6
    want_async = max(t["g"], t["os"] + t["orr"]) * 1e6
    print(f"all-to-all paragon, 4 ranks: sync {sync / 1e6:.3f} ms (LogP {want_sync / 1e6:.3f}), "
          f"async {asyn / 1e6:.3f} ms (LogP {want_async / 1e6:.3f})")
    assert len(a["synchronous"]["per_rank"]) == 4 and len(a["asynchronous"]["per_rank"]) == 4
    assert within(asyn, want_async, 0.05), (asyn, want_async)
    # Serving the others' requests could add to the round trip (LoPC's C_r), but not in this pattern: each
    # rank receives one request per iteration at o_s + L (7.7 ms) and has served it by o_s + L + o_r + o_s
    # (11.3 ms), long before its own reply arrives (2 o_s + 2 L + o_r = 17.6 ms). So the emulated LogP
    # figure is exact here, as the asynchronous one is, and gets the same 5%; the emulator's sleeps run
    # short by up to 1.6% (async 7.480 ms for 7.6) and long by 0.9% (sync 19.97 ms for 19.8, the run in
    # docs/contention/) when the machine is quiet. Under a load of 13 on 2 cores it read 22.7 and 42.3 ms,
    # which the former 0.98-1.25 band did not hold either: a figure of an overloaded machine, not of LogP.
    assert within(sync, want_sync, 0.05), (sync, want_sync)


def test_functional(transport="shm"):
    """4 ranks of k-to-one over a real NI on two cores: a functional run, labelled unfit for timing."""
    doc = logpbench(4, "k-to-one", None, ["--transport", transport, "--round-seconds", "0.2"])
    per_k = doc["per_k"]
    assert [e["k"] for e in per_k] == [1, 2, 3], per_k
    for e in per_k:
        assert e["g"]["value_ns"] > 0 and len(e["senders"]) == e["k"], e
        assert e["ratio"]["value"] > 0
    job = doc["meta"]["job"]
    if job["oversubscribed"]:
        assert not job["fit_for_timing"]
        assert any(not c["ok"] and "core" in c["name"] for c in doc["checks"]), doc["checks"]
    print(f"k-to-one over {transport}, 4 ranks (functional):",
          [(e["k"], round(e["g"]["value_ns"]), round(e["ratio"]["value"], 2)) for e in per_k])


def test_errors():
    expect_fail(["local", "-N", "4", "--bench", "k-to-one", "--k", "1,5"], "room for 3")
    expect_fail(["local", "-N", "4", "--bench", "k-to-one", "--k", "2,1"], "ascending")
    expect_fail(["local", "--bench", "signature", "--k", "1,2"], "belongs to --bench")
    expect_fail(["local", "-N", "1", "--bench", "one-to-k"], "at least 2 ranks")
    expect_fail(["local", "-N", "3", "--bench", "all-to-all", "--round-seconds", "0"], "--round-seconds")
    expect_fail(["local", "--emulate", "os=1ms,wait=nap"], "wait must be")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
