#!/usr/bin/env python3
"""Soak (issue 12, part 4): a long flood of one-way AMs over a transport, and the counters of both ends
compared frame for frame (the job's own check, "every frame sent was taken in", from meta.am.per_rank).

usage: soak.py LOGPBENCH SOURCE_DIR run TRANSPORT FRAMES [-- EXTRA LOGPBENCH ARGS]
FRAMES is the fewest frames the run must carry (both directions: one-way messages, their credit frames,
the requests and replies around them); the flood's --messages is sized from a short probe run.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-soak-")


def flood(transport, messages, extra, out):
    t0 = time.time()
    run(["local", "--transport", transport, "--bench", "flood", "--sizes", "8", "--bell-runs", "1", "--runs", "1",
         "--messages", str(messages), "--json", out, "-q"] + extra, timeout=3600)
    took = time.time() - t0
    doc = load(out)
    assert doc["status"] == "complete", doc.get("error")
    check = [c for c in doc["checks"] if c["name"] == "every frame sent was taken in"]
    assert len(check) == 1, doc["checks"]
    return doc, check[0], took


def test_run(transport, frames, *rest):
    extra = list(rest[1:]) if rest and rest[0] == "--" else list(rest)
    want = int(float(frames))
    # A probe tells how many frames one flood message costs here (queue depths, credits, calibration).
    _, probe, _ = flood(transport, 100000, extra, os.path.join(TMP, "probe.json"))
    per_message = probe["messages"] / 100000
    # 25% over the probe's estimate: the long run may take fewer credit frames per message than its probe
    # (a CI run with 5% fell 10% short: 89 981 527 frames for 10^8).
    messages = min(int(want / per_message * 1.25) + 1, 100000000)
    doc, check, took = flood(transport, messages, extra, os.path.join(TMP, "soak.json"))
    assert check["ok"] and check.get("applies", True), check
    assert check["messages"] >= want, f"only {check['messages']} frames, wanted {want}"
    per_rank = doc["meta"]["am"]["per_rank"]
    a, b = per_rank[0]["1"], per_rank[1]["0"]
    assert a["oneway_sent"] == b["oneway_received"] and b["oneway_sent"] == a["oneway_received"], (a, b)
    assert not a["rejected"] and not b["rejected"], (a, b)
    print(f"soak {transport}: {check['messages']} frames in {took:.0f} s ({a['oneway_sent']} + {b['oneway_sent']} "
          f"one-way), counted alike at both ends: {check['detail']}")


if __name__ == "__main__":
    main(globals(), sys.argv[3], *sys.argv[4:])
