#!/usr/bin/env python3
"""Soak: a long flood of one-way AMs over a transport, and the counters of both ends
compared frame for frame (the job's own check, "every frame sent was taken in", from meta.am.per_rank).

usage: soak.py LOGPBENCH SOURCE_DIR run TRANSPORT MESSAGES [-- EXTRA LOGPBENCH ARGS]
MESSAGES is the fewest one-way AMs the run must carry, both directions summed (the flood's bell runs,
calibration and measured runs; their credit frames and the requests and replies around them come on top).
The flood's --messages is sized from a short probe run.
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
    # Without the overlap test and the queue's doubling, whose message counts are budgets of their own that
    # do not grow with --messages: the probe's per-unit count then scales to the long run.
    # Two bell runs: 10^8 messages then need about 5 x 10^7 per run, within --messages' limit of 10^8.
    run(["local", "--transport", transport, "--bench", "flood", "--sizes", "8", "--bell-runs", "2", "--runs", "1",
         "--flood-overlap", "no", "--flood-queue", "fixed",
         "--messages", str(messages), "--json", out, "-q"] + extra, timeout=3600)
    took = time.time() - t0
    doc = load(out)
    assert doc["status"] == "complete", doc.get("error")
    check = [c for c in doc["checks"] if c["name"] == "every frame sent was taken in"]
    assert len(check) == 1, doc["checks"]
    per_rank = doc["meta"]["am"]["per_rank"]
    return doc, check[0], took, per_rank[0]["1"], per_rank[1]["0"]


def test_run(transport, messages_wanted, *rest):
    extra = list(rest[1:]) if rest and rest[0] == "--" else list(rest)
    want = int(float(messages_wanted))
    # A probe tells how many one-way AMs one unit of --messages costs here (bell runs, calibration, the
    # measured runs, both directions).
    probe, _, _, pa, pb = flood(transport, 100000, extra, os.path.join(TMP, "probe.json"))
    # A flood run whose core was taken is measured again (per_size[].segments.disturbed): those floods are no part of
    # what one unit costs. In the VM's fast state (10^5 messages in 1.5 ms) one interruption repeats a run, and
    # the probe read twice the cost per unit, so the long run carried 72% of what it should.
    repeats = probe["per_size"][0].get("segments", {}).get("disturbed", 0)
    per_unit = (pa["oneway_sent"] + pb["oneway_sent"]) / 100000 * 2 / (2 + repeats)
    # 10% over the probe's estimate: the calibration may choose fewer messages in the long run.
    messages = int(want / per_unit * 1.10) + 1
    doc, check, took, a, b = flood(transport, messages, extra, os.path.join(TMP, "soak.json"))
    assert check["ok"] and check.get("applies", True), check
    assert a["oneway_sent"] == b["oneway_received"] and b["oneway_sent"] == a["oneway_received"], (a, b)
    assert not a["rejected"] and not b["rejected"], (a, b)
    carried = a["oneway_sent"] + b["oneway_sent"]
    assert carried >= want, f"only {carried} one-way messages, wanted {want}"
    print(f"soak {transport}: {carried} one-way messages ({a['oneway_sent']} + {b['oneway_sent']}) in "
          f"{check['messages']} frames, {took:.0f} s, counted alike at both ends: {check['detail']}")


if __name__ == "__main__":
    main(globals(), sys.argv[3], *sys.argv[4:])
