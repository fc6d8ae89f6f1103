#!/usr/bin/env python3
"""The poll model against the two o_r figures it explains, on one link in one sitting.

For each link: `--bench poll`, `--bench kielmann --sizes 8` and `--bench overlap --sizes 8`, each run holding the
CPU lock (scripts/lib/cpu_lock.py), then one row: the empty poll, a, b, the frames per poll of a flood and of a
stream that keeps a queue standing, Kielmann's o_r predicted (a + b) against measured, and the overlap test's
o_r predicted (a / f + b at the standing stream's f: past the knee, where Bell et al. 4.3 read it) against
measured. The relation the two must satisfy, o_r(Kielmann) - o_r(overlap) = a (1 - 1/f), is checked on the
measured pair against the predicted difference.

usage: compare.py LOGPBENCH OUTDIR LABEL='TRANSPORT OPTIONS' [LABEL='...' ...]
       compare.py --table OUTDIR LABEL [LABEL ...]   (the table again from OUTDIR's results)
  e.g. compare.py build/app/logpbench /tmp/pollcmp shm= memif='--transport dpdk' \\
         ofi-tcp='--transport ofi --provider tcp --ep msg' ofi-shm='--transport ofi --provider shm'
"""
import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from cpu_lock import hold_cpu_lock  # noqa: E402

BENCHES = {
    "poll": ["--bench", "poll", "--runs", "3"],
    "kielmann": ["--bench", "kielmann", "--sizes", "8", "--runs", "3", "--no-saturation-compare"],
    "overlap": ["--bench", "overlap", "--sizes", "8", "--runs", "1"],
}


def bench(binary, outdir, label, transport, name):
    out = os.path.join(outdir, f"{label}-{name}.json")
    cmd = [binary, "local", *shlex.split(transport), *BENCHES[name], "-q", "--json", out]
    lock = hold_cpu_lock("poll/compare.py")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    finally:
        lock.close()
    print("$", " ".join(shlex.quote(c) for c in cmd), f"-> exit {p.returncode}", flush=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)
        return None
    with open(out) as f:
        return json.load(f)


def fig(doc, key):
    if doc is None:
        return None, None
    p = doc.get("parameters", {}).get(key, {})
    return p.get("value_ns"), p.get("ci95_ns")


def poll_at(doc, f):
    """P(f) / f: the median time of the timed polls that handed up n frames (all runs pooled), interpolated
    linearly in n to the stream's f, per frame. Model-free: where the poll's time is not a + b n (tcp), the
    measured poll at the stream's batch still predicts the stream's cost per message."""
    if doc is None or not f:
        return None
    by = {}
    for r in doc.get("runs", []):
        t = r["poll"]["timed"]
        for n, ns in zip(t["frames"], t["ns"]):
            by.setdefault(n, []).append(ns)
    med = {n: sorted(v)[len(v) // 2] for n, v in by.items() if n > 0 and len(v) >= 8}
    if not med:
        return None
    ns = sorted(med)
    if f <= ns[0]:
        return med[ns[0]] / ns[0]
    if f >= ns[-1]:
        return med[ns[-1]] / ns[-1]
    lo = max(n for n in ns if n <= f)
    hi = min(n for n in ns if n >= f)
    p = med[lo] if hi == lo else med[lo] + (med[hi] - med[lo]) * (f - lo) / (hi - lo)
    return p / f


def text(v, ci=None):
    if v is None:
        return "n/a"
    return f"{v:.0f}" if ci is None else f"{v:.0f}±{ci:.0f}"


def columns():
    return """columns (ns): empty = poll_empty; a = poll_fixed; b = poll_per_frame (frames that waited);
b stream = o_r_backlog_measured - a/f (what a frame of a standing stream cost); f = frames per poll that
found something, in a flood and in a stream that keeps a queue standing; 1 frame / 1 reply = one poll
that handed up one waiting one-way frame / one waiting reply (Kielmann's path); K o_r pred = a + b;
K o_r meas = kielmann's o_r; ov o_r pred = a/f + b at the standing f; ov o_r meas = overlap's o_r;
ov o_r here = the standing stream's receive per message measured by poll; P(f)/f = the timed poll that
handed up the standing stream's f frames, per frame (no line assumed); K-ov = a (1 - 1/f)."""


def main():
    if sys.argv[1] == "--table":  # the table again from an OUTDIR's results, nothing run
        outdir = sys.argv[2]
        rows = []
        for spec in sys.argv[3:]:
            label = spec.partition("=")[0]
            docs = {}
            for name in BENCHES:
                path = os.path.join(outdir, f"{label}-{name}.json")
                docs[name] = json.load(open(path)) if os.path.exists(path) else None
            rows.append((label, docs))
        return table(rows)
    binary, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    rows = []
    for spec in sys.argv[3:]:
        label, _, transport = spec.partition("=")
        docs = {name: bench(binary, outdir, label, transport, name) for name in BENCHES}
        rows.append((label, docs))
    table(rows)


def table(rows):
    head = ["link", "empty", "a", "b", "b stream", "f flood", "f queue", "1 frame", "1 reply", "K o_r pred",
            "K o_r meas", "ov o_r pred", "ov o_r meas", "ov o_r here", "P(f)/f", "K-ov pred", "K-ov meas"]
    print("\n" + columns())
    print(" | ".join(head))
    print(" | ".join("-" * len(h) for h in head))
    for label, d in rows:
        p = d["poll"]
        sec = p.get("poll", {}) if p else {}
        a = fig(p, "poll_fixed")
        f_q = sec.get("frames_per_poll_backlog", {}).get("mean")
        k_pred, ov_pred = fig(p, "o_r_predicted"), fig(p, "o_r_backlog_predicted")
        # The overlap test's stream figure: o_r_stream since issue 36 item 1 named it apart, o_r before.
        ov_doc = d["overlap"]
        ov_key = "o_r_stream" if ov_doc and "o_r_stream" in ov_doc.get("parameters", {}) else "o_r"
        k_meas, ov_meas = fig(d["kielmann"], "o_r"), fig(ov_doc, ov_key)
        diff_pred = a[0] * (1 - 1 / f_q) if a[0] is not None and f_q else None
        diff_meas = k_meas[0] - ov_meas[0] if k_meas[0] is not None and ov_meas[0] is not None else None
        f_fl = sec.get("frames_per_poll_stream", {}).get("mean")
        print(" | ".join([label, text(*fig(p, "poll_empty")), text(*a), text(*fig(p, "poll_per_frame")),
                          text(*fig(p, "poll_per_frame_stream")), f"{f_fl:.2f}" if f_fl else "n/a",
                          f"{f_q:.2f}" if f_q else "n/a", text(*fig(p, "poll_one_frame")),
                          text(*fig(p, "poll_one_reply")), text(*k_pred), text(*k_meas), text(*ov_pred),
                          text(*ov_meas), text(*fig(p, "o_r_backlog_measured")), text(poll_at(p, f_q)),
                          text(diff_pred),
                          text(diff_meas)]))


if __name__ == "__main__":
    main()
