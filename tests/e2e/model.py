#!/usr/bin/env python3
"""End-to-end test of `logpbench model` (LoGPC, Moritz & Frank): a real emulated signature run over shm,
then the model on its measured parameters. The predictions must equal the paper's formulas applied to
those parameters, computed here independently (eq. 7's fixed point as the root of its quadratic); bad input
must exit 2 with a clear message; scripts/report must add the model section.

usage: model.py LOGPBENCH_BINARY SOURCE_DIR all
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-model-")
SPEC = "os=1.4us,or=2.2us,g=7.6us,L=6.3us"  # Culler et al.'s Paragon
REL = 1e-9


def close(a, b, rel=REL):
    assert a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-30), (a, b)


def fixed_point(q, T, c, s, n, kd):
    """Eq. 7, m (T + c A m / (1 - b m)) = q, as (c A - T b) m^2 + (T + q b) m - q = 0; returns C_n."""
    A, b = (n + 1) * (kd - 1) * s * s / 2, s * kd / 2
    a2, a1, a0 = c * A - T * b, T + q * b, -q
    roots = [(-a1 + sg * math.sqrt(a1 * a1 - 4 * a2 * a0)) / (2 * a2) for sg in (1, -1)]
    m = [r for r in roots if 0 < r < 1 / b][0]
    return A * m / (1 - b * m)


def write(name, doc):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_all():
    res = os.path.join(TMP, "sig.json")
    run(["local", "--bench", "signature", "--emulate", SPEC, "--runs", "1", "--max-burst", "32", "--deltas", "0,20us", "--json", res, "-q"])
    par = load(res)["parameters"]
    # The signature's o_r is its o_r_remainder (o_s_plus_o_r - o_s), which `model` reads in its place.
    o_s, o_r, L, g = (par[k]["value_ns"] for k in ("o_s", "o_r_remainder", "L", "g"))
    assert None not in (o_s, o_r, L, g), par

    # A 4-ary 2-cube mesh (k_d = (16 - 1) / 12 per dimension), 64-byte messages, 0.5 ns per byte per channel.
    out = os.path.join(TMP, "model.json")
    p = run(["model", res, "--topology", "kary:k=4,n=2", "--bytes", "64", "--channel-ns-per-byte", "0.5", "--json", out])
    assert "synchronous" in p.stdout and "k-to-one" in p.stdout, p.stdout
    m = load(out)
    assert m["network"]["k_d"] == 15 / 12 and m["network"]["ranks"] == 16 and m["network"]["occupancy_ns"] == 32
    sy = m["predictions"]["all_to_all"]["synchronous"]
    logp = 2 * (o_s + L + o_r)
    close(sy["logp"]["value_ns"], logp)
    close(sy["lopc"]["value_ns"], logp + o_s + o_r)
    cn = fixed_point(2, logp + o_s + o_r, 2, 32, 2, 15 / 12)
    close(sy["C_n"]["value_ns"], cn, 1e-7)
    close(sy["logpc"]["value_ns"], logp + o_s + o_r + 2 * cn, 1e-7)
    # Intervals: the sum's half-width from the parameters' own (in quadrature).
    ci = math.sqrt(sum((2 * par[k]["ci95_ns"]) ** 2 for k in ("o_s", "L", "o_r_remainder")))
    close(sy["logp"]["ci95_ns"], ci, 1e-6)
    asy = m["predictions"]["all_to_all"]["asynchronous"]
    close(asy["logp"]["value_ns"], max(g, o_s + o_r))
    close(asy["logpc"]["value_ns"], max(g, o_s + o_r))
    assert asy["saturated"] is False
    # The signature measures no G: the long-message prediction is missing, and says why.
    assert m["parameters"]["G"]["value_ns"] is None and "G" in m["missing"]
    lg = m["predictions"]["all_to_all"]["long_message"]
    assert lg["T"]["value_ns"] is None and "G missing" in lg["T"]["error"], lg
    for r in m["predictions"]["k_to_one"]:
        close(r["logp"]["g"]["value_ns"], r["k"] * max(g, o_s + o_r))
    assert [r["k"] for r in m["predictions"]["k_to_one"]] == list(range(1, 16))

    # The crossbar: no switch contention, LoGPC = LoPC.
    xo = os.path.join(TMP, "xbar.json")
    run(["model", res, "--topology", "crossbar", "--ranks", "4", "--json", xo])
    x = load(xo)["predictions"]["all_to_all"]["synchronous"]
    assert x["C_n"]["value_ns"] == 0 and x["logpc"]["value_ns"] == x["lopc"]["value_ns"]

    # A null parameter is missing, never 0.
    doc = load(res)
    doc["parameters"]["o_s"] = {"value_ns": None, "ci95_ns": None, "error": "hidden in this regime"}
    nul = write("null_os.json", doc)
    no = os.path.join(TMP, "null_model.json")
    run(["model", nul, "--topology", "crossbar", "--ranks", "4", "--json", no])
    nm = load(no)
    assert nm["missing"] == ["o_s", "G"], nm["missing"]
    s2 = nm["predictions"]["all_to_all"]["synchronous"]["logp"]
    assert s2["value_ns"] is None and "o_s missing" in s2["error"] and "hidden in this regime" in s2["error"], s2

    # --measured: documents made by hand HERE, labelled as such (not measurements), to check the plumbing.
    kto = write("handmade_k_to_one.json", {
        "label": "hand-made by tests/e2e/model.py to test --measured; not a measurement",
        "meta": {"flags": {"bench": "k-to-one"}, "emulation": {"spec": SPEC}},
        "per_k": [{"k": 1, "g": {"value_ns": 8000, "ci95_ns": 50}, "ratio": {"value": 1.0, "ci95": 0.01}},
                  {"k": 3, "g": {"value_ns": 23000, "ci95_ns": 300}, "ratio": {"value": 2.9, "ci95": 0.05},
                   "senders": [{"rank": 1, "g": {"value_ns": 23000, "ci95_ns": 300}, "messages": 1000}]}]})
    a2a = write("handmade_all_to_all.json", {
        "label": "hand-made by tests/e2e/model.py to test --measured; not a measurement",
        "meta": {"flags": {"bench": "all-to-all"}},
        "all_to_all": {"ranks": 4, "bytes": 64, "synchronous": {"per_iteration": {"value_ns": 40000, "ci95_ns": 500}},
                       "asynchronous": {"per_iteration": {"value_ns": 9000, "ci95_ns": 100}}}})
    mo = os.path.join(TMP, "measured_model.json")
    p = run(["model", res, "--topology", "crossbar", "--measured", kto, "--measured", a2a, "--json", mo])
    mm = load(mo)
    assert mm["network"]["ranks"] == 4 and mm["network"]["ranks_from"] == a2a, mm["network"]
    rows = mm["comparison"]["k_to_one"]["per_k"]
    assert rows[1]["k"] == 3 and rows[1]["measured_g"]["value_ns"] == 23000 and rows[1]["expected_ratio_logp"] == 3
    close(rows[1]["predicted_g"]["value_ns"], 3 * max(g, o_s + o_r))
    assert mm["comparison"]["all_to_all"]["synchronous"]["measured"]["value_ns"] == 40000
    assert "40.000" in p.stdout and "23.000" in p.stdout, p.stdout

    # The report: a model section with its figure, beside the run's own sections.
    rep = os.path.join(TMP, "report")
    r = subprocess.run([os.path.join(SRC, "scripts", "report"), res, mo, rep], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    md = open(os.path.join(rep, "report.md")).read()
    assert "## Contention: model vs measurement" in md and "## LogGP side by side" in md, md
    assert "| synchronous |" in md and "| 3 |" in md, md
    assert os.path.getsize(os.path.join(rep, "measured_model-model.png")) > 10000

    # Bad input: exit 2 and a message that says what is wrong.
    expect_fail(["model", os.path.join(TMP, "nope.json"), "--topology", "crossbar", "--ranks", "4"], "cannot open", codes=(2,))
    nop = write("noparams.json", {"meta": {}, "status": "complete"})
    expect_fail(["model", nop, "--topology", "crossbar", "--ranks", "4"], "no 'parameters'", codes=(2,))
    expect_fail(["model", res, "--topology", "ring:k=4"], "--topology must be", codes=(2,))
    expect_fail(["model", res, "--topology", "kary:k=4"], "needs k >= 2 and n >= 1", codes=(2,))
    expect_fail(["model", res, "--topology", "kary:k=4,n=2,wrap=mesh,channels=uni"], "bidirectional", codes=(2,))
    expect_fail(["model", res, "--topology", "crossbar"], "needs --ranks", codes=(2,))
    expect_fail(["model", res, "--topology", "kary:k=2,n=2", "--ranks", "9"], "only 4 nodes", codes=(2,))
    expect_fail(["model", res, "--topology", "crossbar", "--ranks", "4", "--measured", res], "not a k-to-one", codes=(2,))
    expect_fail(["model", res], "--topology is required", codes=(2,))


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
