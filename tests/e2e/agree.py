#!/usr/bin/env python3
"""`logpbench agree` end to end: the signature, Kielmann, overlap and availability on one emulated link,
their shared parameters side by side. On a 1990s machine (g > o_s + o_r) every method sees the same
overheads; on a modern one (g < o_s, o_r) the signature's g is the request/reply steady state and
Kielmann's g(0) the one-way saturation, and agree must say they differ and why. Each subcommand is one
ctest test.

usage: agree.py LOGPBENCH_BINARY SOURCE_DIR TEST [TRANSPORT]
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-agree-")
METHODS = ("signature", "kielmann", "overlap", "availability")
PARAGON = "os=1.4us,or=2.2us,g=7.6us,L=6.3us"
MODERN = "os=1000ns,or=1200ns,g=200ns,L=2000ns"


def agree(args, name):
    out = os.path.join(TMP, name + ".json")
    t0 = time.time()
    p = run(["agree"] + args + ["--json", out, "-q"], timeout=150)
    wall = time.time() - t0
    doc = load(out)
    a = doc["agree"]
    for m in METHODS:
        assert a["seconds"][m] > 0 and m in a["budgets"], (m, a["seconds"], a["budgets"])
    for k in ("o_s", "o_r", "g", "rtt", "L"):
        assert a[k]["verdict"] in ("agree", "differ", "inconclusive", "not compared"), (k, a[k])
        assert k in doc["parameters"] and doc["parameters"][k].get("source"), (k, doc["parameters"].get(k))
    for head in ("value (us)", "95% CI (us)", "verdict"):
        assert head in p.stdout, p.stdout
    print(f"agree {name}: {wall:.1f} s wall ({a['seconds']['total']:.1f} s measuring)")
    for k in ("o_s", "o_r", "g", "rtt", "L"):
        vals = {m: v["value_ns"] for m, v in a[k]["methods"].items()}
        print(f"  {k}: {a[k]['verdict']} {vals}")
    return doc, p.stdout


def once(attempt):
    """One attempt: scripts/test's single rerun of a failed test is the only retry layer (it names the
    rerun in its summary), so a check here never votes over attempts of its own."""
    attempt(0)


def test_paragon(*transport):
    """g > o_s + o_r: every method's o_s and o_r is the emulated one."""
    def attempt(i):
        doc, out = agree(["--emulate", PARAGON] + list(transport), f"paragon-{i}")
        a = doc["agree"]
        for k in ("o_s", "o_r"):
            assert sorted(a[k]["methods"]) == sorted(METHODS), (k, a[k]["methods"])
            assert all(v["value_ns"] is not None for v in a[k]["methods"].values()), (k, a[k])
            assert a[k]["verdict"] == "agree", (k, a[k])
            assert a[k]["explanation"].startswith("agree within 10%"), a[k]
        assert "agree within 10%" in out, out
    once(attempt)


def test_modern(*transport):
    """g < o_s, o_r: the signature's steady state is o_s + o_r of a request/reply pair (about 2.2 us
    here), Kielmann's saturation max(g, o_s, o_r) = o_r (1.2 us); agree names the difference."""
    def attempt(i):
        doc, out = agree(["--emulate", MODERN] + list(transport), f"modern-{i}")
        g = doc["agree"]["g"]
        assert doc["parameters"]["g"]["source"] == "kielmann g0", doc["parameters"]["g"]
        sig, kiel = g["methods"]["signature"]["value_ns"], g["methods"]["kielmann"]["value_ns"]
        # Loose bounds around the emulated truth (the AM layer adds its own cost on a busy core).
        assert sig is not None and kiel is not None and 1800 < sig < 3000 and 1000 < kiel < 1600, (sig, kiel)
        assert g["max_rel_diff"] > 0.1, g
        for words in ("request/reply steady state", "one-way saturation"):
            assert words in g["explanation"], g["explanation"]
        # The verdict follows the intervals: "differ" where the difference beyond them passes the 10% tolerance;
        # where they cover it (one of Kielmann's seven streams interrupted on a busy core: its median's
        # order-statistic interval then spans that stream), "inconclusive", still naming both definitions.
        # Two narrow intervals (each under 10% of its value) must give "differ".
        ms = g["methods"]
        narrow = ms["signature"]["ci95_ns"] < 0.1 * sig and ms["kielmann"]["ci95_ns"] < 0.1 * kiel
        expected = "differ" if g["max_rel_diff_beyond_ci95"] > 0.1 else "inconclusive"
        assert g["verdict"] == expected and (not narrow or expected == "differ"), g
        assert ("differ by" if expected == "differ" else "inconclusive") in out and "one-way saturation" in out, out
    once(attempt)


def test_transport(transport):
    """No ground truth: it runs, and every verdict is one of the three (a real NI, as a user runs it)."""
    agree(["--transport", transport], transport)


def test_errors():
    two = (2,)
    expect_fail(["agree", "--bench", "signature"], "drop --bench", codes=two)
    expect_fail(["agree", "--sizes", "8,64"], "agree.budgets", codes=two)
    expect_fail(["agree", "--eps", "0.01"], "agree.budgets", codes=two)
    expect_fail(["agree", "-N", "4"], "agree measures one pair", codes=two)


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
